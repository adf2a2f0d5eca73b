package quickjs

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/internal/testwait"
)

// countReaderCarries makes rt count the binding calls its runs' output readers carry
// themselves.
func countReaderCarries(rt *Runtime) *atomic.Int32 { return countHook(&rt.onReaderCarry) }

// forgedRuntime is a runtime whose worker plays a forged scenario (see forgedWorker),
// whose ceilings never fire unless the test sets wall.
func forgedRuntime(t *testing.T, scenario string, wall *manualTimer) *Runtime {
	t.Helper()
	rt := newRuntime(t, Config{WorkerCommand: []string{testExe(t), forgeArg, scenario}})
	rt.wallTimer, rt.graceTimer = neverTimer, neverTimer
	if wall != nil {
		rt.wallTimer = wall.start
	}
	return rt
}

// TestIdleFrames: a call whose idle frame follows it is carried by the reader; every other
// idle frame — before any call, for an unknown call, repeated, not right after its call,
// with several calls outstanding, malformed — changes nothing, and frames a worker sends
// after its idle frame are handled as always.
func TestIdleFrames(t *testing.T) {
	rt := forgedRuntime(t, "idle", nil)
	carried, carriers := countReaderCarries(rt), countCarriers(rt)
	res := run(t, rt, "return 'ignored'", tools(map[string]coderuntime.Func{
		"echo": func(_ context.Context, args any) (any, error) { return args, nil },
	}))
	reply := func(id, v string) string { return `{"type":"reply","id":` + id + `,"ok":true,"value":"` + v + `"}` }
	wantValue(t, res, "["+reply("1", "a")+","+reply("2", "b")+","+reply("3", "c")+","+reply("4", "d")+","+reply("5", "e")+"]")
	if len(res.Logs) != 1 || res.Logs[0] != "after idle" {
		t.Errorf("logs = %q, want the log sent after an idle frame", res.Logs)
	}
	// Calls 1, 2 and 5 were followed by their idle frames; 3 and 4 were not.
	if n := carried.Load(); n != 3 {
		t.Errorf("the reader carried %d calls, want 3", n)
	}
	if n := carriers.Load(); n < 1 || n > 2 {
		t.Errorf("%d carriers started for the 2 calls the reader did not carry", n)
	}
}

// TestReaderCarriedCallEnds: while the reader carries a call whose binding does not
// return, the run still settles on cancellation and on its wall-clock ceiling, and the
// binding's context is cancelled so that it returns before the run does.
func TestReaderCarriedCallEnds(t *testing.T) {
	for _, end := range []string{"cancel", "wall"} {
		t.Run(end, func(t *testing.T) {
			wall := newManualTimer()
			rt := forgedRuntime(t, "idle-slow", wall)
			carried := countReaderCarries(rt)
			ctx, cancel := context.WithCancel(testwait.Context(t))
			defer cancel()
			var returned atomic.Bool
			bindings := tools(map[string]coderuntime.Func{
				"slow": func(callCtx context.Context, _ any) (any, error) {
					defer returned.Store(true)
					if end == "cancel" {
						cancel()
					} else {
						wall.fire()
					}
					<-callCtx.Done()
					return nil, context.Cause(callCtx)
				},
			})
			res := runCtx(t, ctx, rt, "return 'ignored'", bindings)
			if end == "cancel" {
				wantFailure(t, res, coderuntime.FailureAbort, coderuntime.AbortMessage(ctx))
			} else {
				wantFailure(t, res, coderuntime.FailureTimeout, "wall-clock ceiling reached (600000ms)")
			}
			if n := carried.Load(); n != 1 {
				t.Errorf("the reader carried %d calls, want 1", n)
			}
			if !returned.Load() {
				t.Error("the run settled before its binding call returned")
			}
		})
	}
}

// TestWorkerSaysIdle: the worker sends an idle frame for a call exactly when it is about to
// wait with that call as the only thing it waits for — no other call outstanding, no timer
// armed, no job left — and once per call.
func TestWorkerSaysIdle(t *testing.T) {
	tests := []struct {
		name, program string
		calls         int
		idles         []int64
	}{
		{"sequential", `let n = 0; for (let i = 0; i < 3; i++) n += await tools.echo(1); return n`, 3, []int64{1, 2, 3}},
		// Both calls are outstanding when the program first waits; once call 1's reply is
		// in, call 2 is all it waits for.
		{"concurrent", `const r = await Promise.all([tools.echo(1), tools.echo(2)]); return r[0] + r[1]`, 2, []int64{2}},
		// An armed timer may run code before the reply; once it is cleared it cannot.
		{"timer", `const t = setTimeout(() => console.log("late"), 60000); await tools.echo(1); clearTimeout(t); return await tools.echo(2)`, 2, []int64{2}},
		// A call the program does not wait for, while it computes: it is outstanding when
		// the turn ends, and the only thing left.
		{"compute", `const p = tools.echo(1); let s = 0; for (let i = 0; i < 1000; i++) s += i; return s + await p`, 1, []int64{1}},
		{"none", `return 1`, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLoopback(t, tt.program, "echo")
			if code := runWorker(l, l, true, time.Now); code != 0 {
				t.Fatalf("worker exit status %d", code)
			}
			if l.err != nil {
				t.Fatal(l.err)
			}
			if l.done == nil || l.calls != tt.calls {
				t.Fatalf("done %s after %d calls, want a done frame after %d", l.done, l.calls, tt.calls)
			}
			if !slices.Equal(l.idles, tt.idles) {
				t.Errorf("idle frames for calls %v, want %v", l.idles, tt.idles)
			}
		})
	}
}
