package contain

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// stopCase is a function run contained and how its call must stop: not at all (ok), or
// with value and goexit. ends marks a function that ends its goroutine (a Goexit that goes
// on), which Workers must not keep.
type stopCase struct {
	name   string
	f      func()
	value  any
	goexit bool
	ok     bool
	ends   bool
}

// stopCases are the ways a contained function ends, for Call, Runner and Workers alike.
func stopCases() []stopCase {
	boom := errors.New("boom")
	return []stopCase{
		{"returns", func() {}, nil, false, true, false},
		{"panics", func() { panic(boom) }, boom, false, false, false},
		{"panics with a string", func() { panic("s") }, "s", false, false, false},
		{"calls Goexit", func() { runtime.Goexit() }, nil, true, false, true},
		{"calls Goexit after a recovered panic", func() {
			defer runtime.Goexit()
			panic("first")
		}, nil, true, false, true},
		// The panic is recovered as any other, but the Goexit under it goes on.
		{"panics after a Goexit began", func() {
			defer func() { panic(boom) }()
			runtime.Goexit()
		}, boom, false, false, true},
	}
}

func TestCall(t *testing.T) {
	for _, tt := range stopCases() {
		t.Run(tt.name, func(t *testing.T) {
			deferred := false
			stop := Call(func() {
				defer func() { deferred = true }()
				tt.f()
			})
			checkStop(t, tt.name, deferred, stop, tt.ok, tt.value, tt.goexit)
		})
	}
	t.Run("panic(nil)", func(t *testing.T) {
		stop := Call(func() { panic(nil) })
		var pe *runtime.PanicNilError
		if stop == nil || stop.Goexit {
			t.Fatalf("stop = %+v", stop)
		}
		if err, ok := stop.Value.(error); !ok || !errors.As(err, &pe) {
			t.Fatalf("value = %#v, want a *runtime.PanicNilError", stop.Value)
		}
	})
}

func BenchmarkCall(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Call(func() {})
	}
}

func TestRunner(t *testing.T) {
	tests := stopCases()
	type arg struct {
		f        func()
		deferred bool
	}
	r := NewRunner(func(a *arg) {
		defer func() { a.deferred = true }()
		a.f()
	})
	// Each case runs twice, and the runs alternate, so that a slot reused after a panic or
	// a Goexit is seen to start clean.
	for round := range 2 {
		for _, tt := range tests {
			a := &arg{f: tt.f}
			stop := r.Call(a)
			checkStop(t, fmt.Sprintf("%s (round %d)", tt.name, round), a.deferred, stop, tt.ok, tt.value, tt.goexit)
		}
	}
}

// checkStop checks one contained call: its deferred calls ran before Call returned
// (deferred), and it stopped as expected: not at all when ok, else with value and goexit.
func checkStop(t *testing.T, name string, deferred bool, stop *Stop, ok bool, value any, goexit bool) {
	t.Helper()
	if !deferred {
		t.Errorf("%s: Call returned before f's deferred calls ran", name)
	}
	if ok {
		if stop != nil {
			t.Errorf("%s: stop = %+v, want nil", name, stop)
		}
		return
	}
	if stop == nil || stop.Goexit != goexit || stop.Value != value {
		t.Errorf("%s: stop = %+v, want value %v, goexit %v", name, stop, value, goexit)
	}
}

func TestRunnerConcurrent(t *testing.T) {
	runConcurrently(t, NewRunner(func(p *int) { *p++ }), 8, 200)
}

func BenchmarkRunner(b *testing.B) {
	r := NewRunner(func(*int) {})
	var n int
	b.ReportAllocs()
	for b.Loop() {
		r.Call(&n)
	}
}
