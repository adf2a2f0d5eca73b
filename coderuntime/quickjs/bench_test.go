package quickjs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/internal/cputime"
)

func benchRun(b *testing.B, rt *Runtime, program string, bindings []coderuntime.Namespace, want string) {
	b.Helper()
	b.ReportAllocs()
	// The host's CPU time and that of the worker processes reaped meanwhile (each serves
	// one run: its start-up and its run; the last may be reaped after the loop), per run.
	// The CPU time moves less than the wall time on a busy machine.
	defer cputime.PerOp(b, "cpu-ns/op", 1)()
	if !rt.cfg.InProcess {
		defer cputime.ChildrenPerOp(b, "worker-cpu-ns/op", 1)()
	}
	for b.Loop() {
		if rt.pool != nil && rt.cfg.Pool > 1 {
			// Warm: the worker this run takes has prepared, as in an agent loop, where
			// runs are seconds apart; the wait is not timed.
			b.StopTimer()
			if !rt.pool.waitReady(nil) {
				b.Fatal("the pool has no ready worker")
			}
			b.StartTimer()
		}
		res, err := rt.Run(context.Background(), coderuntime.Request{Program: program, Bindings: bindings})
		if err != nil || res.Error != nil {
			b.Fatalf("Run: %v %v", err, res.Error)
		}
		if got := jsonOf(b, res.Value); got != want {
			b.Fatalf("value %s, want %s", got, want)
		}
	}
}

// benchModes runs f on a runtime of each process model: a worker started per run
// ("process"), a pool of one (runs back to back: each waits for the worker started after
// the previous one, so this is the start-up throughput), a warm pool of two (each run takes
// a worker that has prepared; the wait for it is not timed: the latency a run has in an
// agent loop), and in process.
func benchModes(b *testing.B, f func(b *testing.B, rt *Runtime)) {
	modes := []struct {
		name string
		cfg  Config
	}{
		{"process", Config{}},
		{"pool-back-to-back", Config{Pool: 1}},
		{"pool-warm", Config{Pool: 2}},
		{"in-process", Config{InProcess: true}},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			f(b, newRuntime(b, m.cfg))
		})
	}
}

// BenchmarkTrivialRun is one whole run: strip, start the worker, run, settle, reap.
func BenchmarkTrivialRun(b *testing.B) {
	benchModes(b, func(b *testing.B, rt *Runtime) {
		benchRun(b, rt, `const x: number = 1; return x + 1`, nil, "2")
	})
}

// BenchmarkSequentialCalls is 1,000 binding round trips awaited one after another.
func BenchmarkSequentialCalls(b *testing.B) {
	bindings := tools(map[string]coderuntime.Func{"inc": func(_ context.Context, args any) (any, error) {
		return args.(float64) + 1, nil
	}})
	benchModes(b, func(b *testing.B, rt *Runtime) {
		// How many of the calls the output reader carried itself (the worker's idle frame
		// had arrived with the call), per run.
		var carried atomic.Int64
		rt.onReaderCarry = func() { carried.Add(1) }
		benchRun(b, rt, `let n = 0; for (let i = 0; i < 1000; i++) n = await tools.inc(n); return n`, bindings, "1000")
		b.ReportMetric(float64(carried.Load())/float64(b.N), "reader-carried/op")
	})
}

// BenchmarkConcurrentCalls is 100 binding calls in flight at once, each taking 10 ms.
func BenchmarkConcurrentCalls(b *testing.B) {
	bindings := tools(map[string]coderuntime.Func{"wait": func(ctx context.Context, args any) (any, error) {
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
		}
		return args, nil
	}})
	benchModes(b, func(b *testing.B, rt *Runtime) {
		benchRun(b, rt, `const r = await Promise.all(Array.from({ length: 100 }, (_, i) => tools.wait(i))); return r.length`, bindings, "100")
	})
}

// BenchmarkConsoleLog is 10,000 console.log calls streamed to the host.
func BenchmarkConsoleLog(b *testing.B) {
	benchModes(b, func(b *testing.B, rt *Runtime) {
		benchRun(b, rt, `for (let i = 0; i < 10000; i++) console.log("line", i); return 1`, nil, "1")
	})
}
