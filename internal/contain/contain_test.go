package contain

import (
	"errors"
	"runtime"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCall(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name   string
		f      func()
		value  any
		goexit bool
		ok     bool
	}{
		{"returns", func() {}, nil, false, true},
		{"panics", func() { panic(boom) }, boom, false, false},
		{"panics with a string", func() { panic("s") }, "s", false, false},
		{"calls Goexit", func() { runtime.Goexit() }, nil, true, false},
		{"calls Goexit after a recovered panic", func() {
			defer runtime.Goexit()
			panic("first")
		}, nil, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deferred := false
			stop := Call(func() {
				defer func() { deferred = true }()
				tt.f()
			})
			if !deferred {
				t.Error("Call returned before f's deferred calls ran")
			}
			if tt.ok {
				if stop != nil {
					t.Fatalf("stop = %+v, want nil", stop)
				}
				return
			}
			if stop == nil || stop.Goexit != tt.goexit || stop.Value != tt.value {
				t.Fatalf("stop = %+v, want value %v, goexit %v", stop, tt.value, tt.goexit)
			}
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
	boom := errors.New("boom")
	tests := []struct {
		name   string
		f      func()
		value  any
		goexit bool
		ok     bool
	}{
		{"returns", func() {}, nil, false, true},
		{"panics", func() { panic(boom) }, boom, false, false},
		{"calls Goexit", func() { runtime.Goexit() }, nil, true, false},
		{"calls Goexit after a recovered panic", func() {
			defer runtime.Goexit()
			panic("first")
		}, nil, true, false},
	}
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
			if !a.deferred {
				t.Errorf("%s (round %d): Call returned before f's deferred calls ran", tt.name, round)
			}
			if tt.ok {
				if stop != nil {
					t.Errorf("%s (round %d): stop = %+v, want nil", tt.name, round, stop)
				}
				continue
			}
			if stop == nil || stop.Goexit != tt.goexit || stop.Value != tt.value {
				t.Errorf("%s (round %d): stop = %+v, want value %v, goexit %v", tt.name, round, stop, tt.value, tt.goexit)
			}
		}
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
