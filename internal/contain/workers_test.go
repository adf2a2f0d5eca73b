package contain

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
	"pgregory.net/rapid"
)

// workerModes are the two ways Workers hand a call over: through the scheduler
// (NewWorkers) and by a direct switch (NewSwitchWorkers).
var workerModes = []struct {
	name string
	new  func(idle int) (*Workers, error)
}{
	{"scheduled", NewWorkers},
	{"switch", NewSwitchWorkers},
}

// forEachMode runs f as a subtest for each of workerModes.
func forEachMode(t *testing.T, f func(t *testing.T, newWorkers func(int) (*Workers, error))) {
	for _, m := range workerModes {
		t.Run(m.name, func(t *testing.T) { f(t, m.new) })
	}
}

func newTestWorkers(t *testing.T, newWorkers func(int) (*Workers, error), idle int) *Workers {
	t.Helper()
	ws, err := newWorkers(idle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ws.Close)
	return ws
}

func TestNewWorkersRefusesNonPositive(t *testing.T) {
	for _, m := range workerModes {
		for _, n := range []int{0, -1} {
			if ws, err := m.new(n); err == nil || ws != nil {
				t.Errorf("%s: new Workers(%d) = %v, %v; want an error", m.name, n, ws, err)
			}
		}
	}
}

// idleWorkers returns the idle goroutines' states, in order.
func idleWorkers(ws *Workers) []*worker {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return append([]*worker(nil), ws.idle...)
}

func TestWorkersStops(t *testing.T) {
	forEachMode(t, func(t *testing.T, newWorkers func(int) (*Workers, error)) {
		tests := stopCases()
		type arg struct {
			f        func()
			deferred bool
		}
		ws := newTestWorkers(t, newWorkers, 1)
		r := NewRunnerOn(ws, func(a *arg) {
			defer func() { a.deferred = true }()
			a.f()
		})
		// Each case runs twice, and the runs alternate, so that a goroutine reused after a
		// panic, and the one started after a Goexit, are seen to start clean.
		for round := range 2 {
			for _, tt := range tests {
				before := idleWorkers(ws)
				a := &arg{f: tt.f}
				stop := r.Call(a)
				checkStop(t, fmt.Sprintf("%s (round %d)", tt.name, round), a.deferred, stop, tt.ok, tt.value, tt.goexit)
				// The goroutine a Goexit ended is not kept; any other is, and a call after a
				// Goexit starts a new one.
				after := idleWorkers(ws)
				if want := map[bool]int{false: 1, true: 0}[tt.ends]; len(after) != want {
					t.Fatalf("%s (round %d): %d idle goroutines after the call, want %d", tt.name, round, len(after), want)
				}
				if len(before) == 1 && len(after) == 1 && before[0] != after[0] {
					t.Errorf("%s (round %d): the idle goroutine was not reused", tt.name, round)
				}
			}
		}
	})
}

// TestWorkersGoexitEndsGoroutine checks that a goroutine a Goexit ended is gone, not parked.
func TestWorkersGoexitEndsGoroutine(t *testing.T) {
	forEachMode(t, func(t *testing.T, newWorkers func(int) (*Workers, error)) {
		defer goleak.VerifyNone(t)
		ws := newTestWorkers(t, newWorkers, 2)
		r := NewRunnerOn(ws, func(f func()) { f() })
		if stop := r.Call(runtime.Goexit); stop == nil || !stop.Goexit {
			t.Fatalf("stop = %+v, want a Goexit", stop)
		}
		if n := len(idleWorkers(ws)); n != 0 {
			t.Fatalf("%d idle goroutines after a Goexit, want 0", n)
		}
		ws.Close() // nothing idle: every goroutine must already be ending
	})
}

func TestWorkersClose(t *testing.T) {
	forEachMode(t, func(t *testing.T, newWorkers func(int) (*Workers, error)) {
		defer goleak.VerifyNone(t)
		ws, err := newWorkers(4)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		r := NewRunnerOn(ws, func(p *int) { *p++ })
		runConcurrently(t, r, 4, 50)
		if got := len(idleWorkers(ws)); got == 0 || got > 4 {
			t.Fatalf("%d idle goroutines, want 1 to 4", got)
		}
		ws.Close()
		if got := len(idleWorkers(ws)); got != 0 {
			t.Fatalf("%d idle goroutines after Close, want 0", got)
		}
		// A call after Close still runs, on a goroutine that ends after it.
		if stop := r.Call(&n); stop != nil || n != 1 {
			t.Fatalf("call after Close: stop = %+v, n = %d", stop, n)
		}
		if got := len(idleWorkers(ws)); got != 0 {
			t.Fatalf("%d idle goroutines after a call after Close, want 0", got)
		}
		ws.Close() // idempotent
	})
}

// TestWorkersKeep checks that no more goroutines than asked for wait idle after a burst of
// concurrent calls, and that the ones that ended are gone.
func TestWorkersKeep(t *testing.T) {
	forEachMode(t, func(t *testing.T, newWorkers func(int) (*Workers, error)) {
		defer goleak.VerifyNone(t)
		ws, err := newWorkers(2)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		r := NewRunnerOn(ws, func(p *int) { *p++ })
		// Eight calls held inside f at once need eight goroutines.
		var entered sync.WaitGroup
		release := make(chan struct{})
		held := NewRunnerOn(ws, func(*int) {
			entered.Done()
			<-release
		})
		var calls sync.WaitGroup
		for range 8 {
			entered.Add(1)
			calls.Add(1)
			go func() {
				defer calls.Done()
				var n int
				held.Call(&n)
			}()
		}
		entered.Wait()
		close(release)
		calls.Wait()
		if got := len(idleWorkers(ws)); got != 2 {
			t.Fatalf("%d idle goroutines after the burst, want 2", got)
		}
		runConcurrently(t, r, 2, 20)
	})
}

func TestWorkersConcurrent(t *testing.T) {
	forEachMode(t, func(t *testing.T, newWorkers func(int) (*Workers, error)) {
		ws := newTestWorkers(t, newWorkers, 3)
		r := NewRunnerOn(ws, func(p *int) { *p++ })
		runConcurrently(t, r, 8, 200)
	})
}

// runConcurrently makes calls calls on each of n goroutines and checks that each ran f once.
func runConcurrently(t *testing.T, r *Runner[*int], n, calls int) {
	t.Helper()
	done := make(chan []int, n)
	for range n {
		go func() {
			got := make([]int, calls)
			for i := range got {
				if stop := r.Call(&got[i]); stop != nil {
					t.Errorf("stop = %+v", stop)
				}
			}
			done <- got
		}()
	}
	for range n {
		for i, c := range <-done {
			if c != 1 {
				t.Fatalf("call %d ran f %d times, want 1", i, c)
			}
		}
	}
}

// TestWorkersThreadLocks checks the two thread-lock cases: a caller locked to its thread
// (as a GUI's main goroutine is) hands calls off as any other, and a function that returns
// with its thread locked leaves a goroutine that still runs later calls, which Close ends.
func TestWorkersThreadLocks(t *testing.T) {
	defer goleak.VerifyNone(t)
	ws, err := NewWorkers(1)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunnerOn(ws, func(f func()) { f() })
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ran := 0
		for range 3 {
			if stop := r.Call(func() { ran++ }); stop != nil {
				done <- errors.New("a call from a locked caller stopped")
				return
			}
		}
		if ran != 3 {
			done <- errors.New("a call from a locked caller did not run")
			return
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if stop := r.Call(runtime.LockOSThread); stop != nil {
		t.Fatalf("locking call: stop = %+v", stop)
	}
	locked := idleWorkers(ws)
	ran := 0
	for range 3 {
		if stop := r.Call(func() { ran++ }); stop != nil || len(idleWorkers(ws)) != 1 || idleWorkers(ws)[0] != locked[0] {
			t.Fatalf("call on the locked goroutine: stop = %+v", stop)
		}
	}
	if ran != 3 {
		t.Fatalf("the locked goroutine ran %d of 3 calls", ran)
	}
	ws.Close()
}

// TestSwitchWorkersThreadLocks checks what switching Workers do with a function that
// returns with its thread locked once: the lock is undone, the call reports a normal return,
// and the same goroutine runs later calls. A function that locks and unlocks its thread is
// an ordinary call. One that locks its thread and panics or calls runtime.Goexit ends as
// any panic or Goexit does (the lock is undone before the switch back).
func TestSwitchWorkersThreadLocks(t *testing.T) {
	defer goleak.VerifyNone(t)
	ws, err := NewSwitchWorkers(1)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunnerOn(ws, func(f func()) { f() })
	calls := []struct {
		name string
		f    func()
	}{
		{"locks once", runtime.LockOSThread},
		{"locks and unlocks", func() {
			runtime.LockOSThread()
			runtime.UnlockOSThread()
		}},
		{"locks twice, unlocks once", func() {
			runtime.LockOSThread()
			runtime.LockOSThread()
			runtime.UnlockOSThread()
		}},
	}
	var kept *worker
	for _, c := range calls {
		for range 2 {
			if stop := r.Call(c.f); stop != nil {
				t.Fatalf("%s: stop = %+v, want nil", c.name, stop)
			}
			idle := idleWorkers(ws)
			if len(idle) != 1 || kept != nil && idle[0] != kept {
				t.Fatalf("%s: the goroutine was not kept for the next call", c.name)
			}
			kept = idle[0]
		}
	}
	for range 2 {
		if stop := r.Call(func() { runtime.LockOSThread(); panic("locked") }); stop == nil || stop.Value != "locked" {
			t.Fatalf("locks and panics: stop = %+v, want the panic", stop)
		}
		if stop := r.Call(func() { runtime.LockOSThread(); runtime.Goexit() }); stop == nil || !stop.Goexit {
			t.Fatalf("locks and calls Goexit: stop = %+v, want a Goexit", stop)
		}
	}
	if stop := r.Call(func() {}); stop != nil {
		t.Fatalf("after the locked endings: stop = %+v", stop)
	}
	ws.Close()
}

// TestSwitchWorkersFatalThreadLocks checks the two cases NewSwitchWorkers documents as ending
// the process, in a child process each: a caller locked to its thread, and a function that
// returns with its thread locked twice. Both are Go's rule for direct switches between
// goroutines; the test pins that they fail loudly, with the runtime's message.
func TestSwitchWorkersFatalThreadLocks(t *testing.T) {
	if mode := os.Getenv("CONTAIN_FATAL_LOCK"); mode != "" {
		fatalThreadLock(mode)
		t.Fatalf("CONTAIN_FATAL_LOCK=%s: the process went on", mode)
	}
	for _, mode := range []string{"locked-caller", "locked-twice"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSwitchWorkersFatalThreadLocks$", "-test.count=1")
			cmd.Env = append(os.Environ(), "CONTAIN_FATAL_LOCK="+mode)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("the child ended with %v, want exit status 2 (a fatal error); output:\n%s", err, out)
			}
			if want := "OS thread locking must match"; !strings.Contains(string(out), want) {
				t.Fatalf("the child's output lacks %q:\n%s", want, out)
			}
		})
	}
}

// fatalThreadLock makes, in a child process, the switch TestSwitchWorkersFatalThreadLocks
// expects to end the process.
func fatalThreadLock(mode string) {
	ws, err := NewSwitchWorkers(1)
	if err != nil {
		panic(err)
	}
	r := NewRunnerOn(ws, func(f func()) { f() })
	switch mode {
	case "locked-caller":
		runtime.LockOSThread()
		r.Call(func() {})
	case "locked-twice":
		r.Call(func() {
			runtime.LockOSThread()
			runtime.LockOSThread()
		})
	}
}

// TestPropWorkersMatchRunner checks that a Runner on Workers reports every way a function
// ends exactly as a Runner with a goroutine per call does, over random sequences of calls
// on one Workers (so that goroutines are reused after panics and replaced after Goexits).
func TestPropWorkersMatchRunner(t *testing.T) {
	ends := []func(v int){
		func(int) {},                   // returns
		func(v int) { panic(v) },       // panics
		func(int) { runtime.Goexit() }, // calls Goexit
		func(v int) { // panics while a Goexit is under way
			defer func() { panic(v) }()
			runtime.Goexit()
		},
		func(v int) { // calls Goexit after a recovered panic
			defer runtime.Goexit()
			panic(v)
		},
	}
	rapid.Check(t, func(t *rapid.T) {
		mode := rapid.SampledFrom(workerModes).Draw(t, "mode")
		ws, err := mode.new(rapid.IntRange(1, 3).Draw(t, "idle"))
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		type call struct{ end, v int }
		f := func(c call) { ends[c.end](c.v) }
		fresh, kept := NewRunner(f), NewRunnerOn(ws, f)
		for i, end := range rapid.SliceOfN(rapid.IntRange(0, len(ends)-1), 1, 20).Draw(t, "ends") {
			c := call{end: end, v: i}
			want, got := fresh.Call(c), kept.Call(c)
			if (want == nil) != (got == nil) || want != nil && *want != *got {
				t.Fatalf("call %d (end %d): Workers stop %+v, Runner stop %+v", i, end, got, want)
			}
		}
	})
}
