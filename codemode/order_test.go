package codemode_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

const losslessRejection = "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"

// registerRead registers a concurrency-safe tool "read" that returns "content of <path>".
func registerRead(tb testing.TB, e *env) {
	tb.Helper()
	def, err := tool.New("read", "Reads a file.", func(_ context.Context, _ *tool.Call, in struct {
		FilePath string `json:"file_path"`
	}) (string, error) {
		return "content of " + in.FilePath, nil
	}, tool.ConcurrencySafe())
	e.register(tb, def, err)
}

// starts renders the start events as "<sub-call id> <arguments>".
func starts(tb testing.TB, l *recLog) []string {
	tb.Helper()
	var out []string
	for _, ev := range l.all() {
		if ev.kind != "start" {
			continue
		}
		b, err := jsonv.Marshal(ev.start.Arguments)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, ev.start.SubCallID+" "+string(b))
	}
	return out
}

// wantStarts is the start events of reads of files submitted as call-1:code:1, 2, ….
func wantStarts(files ...string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = "call-1:code:" + strconv.Itoa(i+1) + ` {"file_path":"` + f + `"}`
	}
	return out
}

// orderEnv is an env whose Runner reports, for each numbered binding call, when it parks
// (waits for an earlier call) and when it releases its number, and counts the releases.
type orderEnv struct {
	*env
	progress chan uint64 // numbers that parked or released

	mu       sync.Mutex
	releases map[uint64]int
}

func newOrderEnv(tb testing.TB, cfg codemode.Config) *orderEnv {
	tb.Helper()
	o := &orderEnv{env: newEnv(tb, tool.ModeCode, cfg), progress: make(chan uint64, 1024), releases: map[uint64]int{}}
	registerRead(tb, o.env)
	codemode.SetParkedHook(o.runner(), func(seq uint64) { o.progress <- seq })
	codemode.SetReleasedHook(o.runner(), func(seq uint64) {
		o.mu.Lock()
		o.releases[seq]++
		o.mu.Unlock()
		o.progress <- seq
	})
	return o
}

// releasedOnce checks that exactly the numbers seqs were released, once each.
func (o *orderEnv) releasedOnce(tb testing.TB, seqs ...uint64) {
	tb.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	want := map[uint64]int{}
	for _, s := range seqs {
		want[s] = 1
	}
	if len(o.releases) != len(want) {
		tb.Errorf("released %v, want %v", o.releases, want)
		return
	}
	for s, n := range o.releases {
		if want[s] != n {
			tb.Errorf("released %v, want %v", o.releases, want)
			return
		}
	}
}

// spawnNumbered calls a binding the way a numbering runtime does: with its number on the
// call's context, without waiting for it.
func spawnNumbered(p *program, seq uint64, name string, args any) *pending {
	c := &pending{done: make(chan struct{})}
	ctx := coderuntime.WithCallSeq(p.bctx, seq)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(c.done)
		c.value, c.err = p.fns[name](ctx, args)
	}()
	return c
}

// launch makes the read calls args[0], args[1], … numbered 0, 1, … in the order given by
// order, each once the one launched before it has parked or released its number (or
// returned), so that a later number deterministically reaches the runner first.
func (o *orderEnv) launch(p *program, args []any, order []int) []*pending {
	calls := make([]*pending, len(args))
	for _, i := range order {
		c := spawnNumbered(p, uint64(i), "read", args[i])
		calls[i] = c
		for waiting := true; waiting; {
			select {
			case s := <-o.progress:
				waiting = s != uint64(i)
			case <-c.done:
				waiting = false
			}
		}
	}
	return calls
}

// outcome renders a binding call's result or error.
func outcome(c *pending) string {
	v, err := c.wait()
	if err != nil {
		return "error: " + err.Error()
	}
	b, _ := jsonv.Marshal(v)
	return string(b)
}

func TestNumberedCallsQueueInProgramOrder(t *testing.T) {
	files := []string{"a", "b", "c", "d", "e"}
	tests := []struct {
		name  string
		order []int        // the order in which the numbered calls reach the runner
		bad   map[int]bool // calls whose arguments are not lossless JSON
	}{
		{"in order", []int{0, 1, 2, 3, 4}, nil},
		{"reversed", []int{4, 3, 2, 1, 0}, nil},
		{"shuffled", []int{1, 3, 0, 4, 2}, nil},
		{"rejected in the middle, arriving first", []int{2, 4, 3, 1, 0}, map[int]bool{2: true}},
		{"rejected in the middle, arriving last", []int{4, 3, 1, 0, 2}, map[int]bool{2: true}},
		{"rejected first, arriving last", []int{1, 2, 3, 4, 0}, map[int]bool{0: true}},
		{"every other rejected", []int{4, 2, 0, 3, 1}, map[int]bool{1: true, 3: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOrderEnv(t, codemode.Config{})
			args := make([]any, len(files))
			var good, want, got []string
			for i, f := range files {
				if tt.bad[i] {
					args[i] = obj("file_path", math.NaN())
					want = append(want, "error: "+losslessRejection)
					continue
				}
				args[i] = obj("file_path", f)
				good = append(good, f)
				want = append(want, `"content of `+f+`"`)
			}
			o.rt.setProgram(func(p *program) (coderuntime.Result, error) {
				for _, c := range o.launch(p, args, tt.order) {
					got = append(got, outcome(c))
				}
				return ok(nil)
			})
			value(t, o.run(context.Background(), o.agent, "numbered"))
			if !slices.Equal(got, want) {
				t.Errorf("outcomes %q, want %q", got, want)
			}
			if got := starts(t, o.log); !slices.Equal(got, wantStarts(good...)) {
				t.Errorf("starts %q, want %q", got, wantStarts(good...))
			}
			if got, want := o.log.ids("settle"), o.log.ids("start"); !slices.Equal(got, want) {
				t.Errorf("settles %v, starts %v", got, want)
			}
			o.releasedOnce(t, 0, 1, 2, 3, 4)
		})
	}
}

// A number that never arrives (a backend that broke the contract) holds up the calls after
// it only until the run settles; they are then rejected, not left waiting.
func TestNumberedCallWithoutPredecessor(t *testing.T) {
	t.Run("program settles", func(t *testing.T) {
		o := newOrderEnv(t, codemode.Config{})
		var orphan *pending
		o.rt.setProgram(func(p *program) (coderuntime.Result, error) {
			orphan = spawnNumbered(p, 2, "read", obj("file_path", "c"))
			for s := range o.progress {
				if s == 2 {
					break
				}
			}
			first := outcome(spawnNumbered(p, 0, "read", obj("file_path", "a")))
			return ok(first)
		})
		if got := value(t, o.run(context.Background(), o.agent, "gap")); got != `{"logs":[],"result":"\"content of a\""}` {
			t.Errorf("value %s", got)
		}
		if got, want := outcome(orphan), "error: run_code run is over (program settled); read not dispatched"; got != want {
			t.Errorf("orphan: %s, want %s", got, want)
		}
		if got := starts(t, o.log); !slices.Equal(got, wantStarts("a")) {
			t.Errorf("starts %q", got)
		}
		o.releasedOnce(t, 0, 2)
	})
	t.Run("run cancelled", func(t *testing.T) {
		o := newOrderEnv(t, codemode.Config{})
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		var got []string
		o.rt.setProgram(func(p *program) (coderuntime.Result, error) {
			parked := spawnNumbered(p, 1, "read", obj("file_path", "b"))
			for s := range o.progress {
				if s == 1 {
					break
				}
			}
			cancel(errors.New("user-cancel"))
			got = append(got, outcome(parked), outcome(spawnNumbered(p, 0, "read", obj("file_path", "a"))))
			return ok(nil)
		})
		o.run(ctx, o.agent, "gap")
		want := []string{
			"error: run_code run is over (user-cancel); read not dispatched",
			"error: run_code run is over (user-cancel); read not dispatched",
		}
		if !slices.Equal(got, want) {
			t.Errorf("outcomes %q, want %q", got, want)
		}
		if n := len(o.log.all()); n != 0 {
			t.Errorf("%d events logged", n)
		}
		o.releasedOnce(t, 0, 1)
	})
}

// Calls without a number keep the order in which they reach the runner.
func TestUnnumberedCallsQueueOnArrival(t *testing.T) {
	o := newOrderEnv(t, codemode.Config{})
	o.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		for _, f := range []string{"e", "d", "c"} {
			if _, err := p.call("read", obj("file_path", f)); err != nil {
				return coderuntime.Result{}, err
			}
		}
		return ok(nil)
	})
	o.run(context.Background(), o.agent, "unnumbered")
	if got, want := starts(t, o.log), wantStarts("e", "d", "c"); !slices.Equal(got, want) {
		t.Errorf("starts %q, want %q", got, want)
	}
	o.releasedOnce(t)
}

// TestNumberedOrderProperty: whatever order numbered calls reach the runner in, and
// whichever of them are rejected, the accepted ones are numbered <n> and started in
// program order, each rejected one gets the lossless-JSON rejection, and every number is
// released exactly once.
func TestNumberedOrderProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 8).Draw(rt, "calls")
		bad := rapid.SliceOfN(rapid.Bool(), n, n).Draw(rt, "bad")
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		order := rapid.Permutation(idx).Draw(rt, "arrival")
		maxPar := rapid.IntRange(1, 3).Draw(rt, "maxParallel")

		o := newOrderEnv(t, codemode.Config{MaxParallelSubCalls: maxPar})
		args := make([]any, n)
		var good, want, got []string
		var all []uint64
		for i := range n {
			f := "f" + strconv.Itoa(i)
			all = append(all, uint64(i))
			if bad[i] {
				args[i] = obj("file_path", math.Inf(1))
				want = append(want, "error: "+losslessRejection)
				continue
			}
			args[i] = obj("file_path", f)
			good = append(good, f)
			want = append(want, `"content of `+f+`"`)
		}
		o.rt.setProgram(func(p *program) (coderuntime.Result, error) {
			for _, c := range o.launch(p, args, order) {
				got = append(got, outcome(c))
			}
			return ok(nil)
		})
		res := o.run(context.Background(), o.agent, "property")
		if res.IsError {
			rt.Fatalf("run failed: %s", res.Error.Message)
		}
		if !slices.Equal(got, want) {
			rt.Fatalf("outcomes %q, want %q", got, want)
		}
		if got := starts(t, o.log); !slices.Equal(got, wantStarts(good...)) {
			rt.Fatalf("starts %q, want %q", got, wantStarts(good...))
		}
		o.releasedOnce(t, all...)
	})
}

// noise holds a binding call up before it is submitted, as a busy machine might: nothing,
// a yield, or a pause of up to 300µs.
func noise(string) {
	switch rand.IntN(4) {
	case 0:
	case 1:
		runtime.Gosched()
	default:
		time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
	}
}

// TestQuickJSParallelCallsKeepProgramOrder runs calls a program makes at once on the real
// QuickJS runtime, under scheduling noise: they are numbered and started in the program's
// order every time. A call the worker refuses (undefined arguments) takes no number.
func TestQuickJSParallelCallsKeepProgramOrder(t *testing.T) {
	programs := []struct{ name, code, want string }{
		{"parallel reads", `return await Promise.all(["a", "b", "c", "d", "e"].map(f => tools.read({ file_path: f })));`,
			`{"logs":[],"result":["content of a","content of b","content of c","content of d","content of e"]}`},
		{"a refused call among them", `const a = tools.read({ file_path: "a" });
const b = tools.read({ file_path: "b" });
const refused = tools.read(undefined as never).catch((e: Error) => e.message);
return await Promise.all([a, b, refused, ...["c", "d", "e"].map(f => tools.read({ file_path: f }))]);`,
			`{"logs":[],"result":["content of a","content of b","binding arguments must be lossless JSON","content of c","content of d","content of e"]}`},
	}
	for _, mode := range []struct {
		name      string
		inProcess bool
		runs      int
	}{{"in-process", true, 50}, {"subprocess", false, 4}} {
		t.Run(mode.name, func(t *testing.T) {
			e := quickjsEnv(t, mode.inProcess)
			registerRead(t, e)
			codemode.SetEnterHook(e.runner(), noise)
			for i := range mode.runs {
				p := programs[i%len(programs)]
				e.log.reset()
				if got := value(t, e.run(context.Background(), e.agent, p.code)); got != p.want {
					t.Fatalf("run %d (%s): value %s, want %s", i, p.name, got, p.want)
				}
				want := wantStarts("a", "b", "c", "d", "e")
				if got := starts(t, e.log); !slices.Equal(got, want) {
					t.Fatalf("run %d (%s): starts\n%q\nwant\n%q", i, p.name, got, want)
				}
				if got, want := e.log.ids("settle"), e.log.ids("start"); !slices.Equal(got, want) {
					t.Fatalf("run %d (%s): settles %v, starts %v", i, p.name, got, want)
				}
			}
		})
	}
}
