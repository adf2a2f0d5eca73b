// Package contain runs a function so that neither a panic nor runtime.Goexit in it can take
// the caller's goroutine down with it.
//
// A deferred recover stops a panic but not runtime.Goexit: a function that calls Goexit (as
// testing.T.FailNow does) ends the goroutine it runs on after running its deferred calls, so
// a caller waiting for its result would wait forever. Call runs the function on a goroutine
// of its own and reports how it ended. A Runner does the same for one function called again
// and again; on Workers it hands the calls to goroutines kept parked between calls.
package contain

import "sync"

// Stop says how a contained function ended without returning.
type Stop struct {
	// Value is the panic value; nil when the function called runtime.Goexit.
	Value any
	// Goexit reports that the function called runtime.Goexit.
	Goexit bool
}

// Call runs f on a new goroutine and waits until it has ended. It returns nil when f
// returned normally, or how it stopped: a panic (recovered, with its value) or
// runtime.Goexit. Call never abandons f: it returns only after f's goroutine has run all of
// its deferred calls.
func Call(f func()) *Stop {
	return CallWith(f, func(f func()) { f() })
}

// CallWith is Call for f(arg). On hot paths it saves the closure Call's caller would
// allocate: f can be a plain function and arg a pointer to state the caller holds anyway.
func CallWith[T any](arg T, f func(T)) *Stop {
	c := &call[T]{f: f, arg: arg}
	c.wg.Add(1)
	go c.run()
	c.wg.Wait()
	return c.stop
}

// call is one contained run; a single allocation holds all of its state.
type call[T any] struct {
	f    func(T)
	arg  T
	wg   sync.WaitGroup
	stop *Stop
}

func (c *call[T]) run() {
	returned := false
	defer func() {
		if !returned {
			// Since Go 1.21 panic(nil) panics with a *runtime.PanicNilError, so a nil
			// recover here can only mean runtime.Goexit.
			if p := recover(); p != nil {
				c.stop = &Stop{Value: p}
			} else {
				c.stop = &Stop{Goexit: true}
			}
		}
		c.wg.Done()
	}()
	c.f(c.arg)
	returned = true
}

// Runner is CallWith for one function called again and again, as on a hot path. It keeps the
// state of finished runs (the new goroutine's start function and the signal that it ended)
// for the next call, so that a call allocates nothing once the runner is warm. The goroutine
// itself is new for every call, or, for a Runner made with NewRunnerOn, one of its Workers:
// either way a function that calls runtime.Goexit ends only the goroutine it ran on.
//
// A Runner is safe for concurrent use; its zero value is not usable, use NewRunner.
type Runner[T any] struct {
	f    func(T)
	free sync.Pool // of *slot[T]

	ws   *Workers  // nil: a new goroutine for every call
	anyF func(any) // f for the Workers' goroutines
}

// NewRunner returns a Runner that runs f.
func NewRunner[T any](f func(T)) *Runner[T] {
	return &Runner[T]{f: f}
}

// NewRunnerOn returns a Runner that runs f on the goroutines of ws, or, when ws is nil, on a
// new goroutine for every call as NewRunner's does. Several Runners can share one Workers.
// With Workers, a call allocates nothing when T is a pointer (or another type that fits in
// an interface value without allocating).
func NewRunnerOn[T any](ws *Workers, f func(T)) *Runner[T] {
	r := &Runner[T]{f: f, ws: ws}
	if ws != nil {
		r.anyF = func(a any) { f(a.(T)) }
	}
	return r
}

// Call runs f(arg) on another goroutine and waits until it has ended, like CallWith: nil when
// f returned normally, or how it stopped.
func (r *Runner[T]) Call(arg T) *Stop {
	if r.ws != nil {
		return r.ws.call(r.anyF, arg)
	}
	s, _ := r.free.Get().(*slot[T])
	if s == nil {
		s = &slot[T]{r: r, done: make(chan struct{}, 1)}
		s.start = s.run // made once per slot, so that starting a goroutine allocates nothing
	}
	s.arg = arg
	go s.start()
	<-s.done
	stop := s.stop
	var zero T
	s.arg, s.stop = zero, nil // hold no reference while the slot waits for reuse
	r.free.Put(s)
	return stop
}

// slot is the reusable state of one Runner call.
type slot[T any] struct {
	r     *Runner[T]
	arg   T
	stop  *Stop
	done  chan struct{} // receives one token when the run has ended
	start func()
}

func (s *slot[T]) run() {
	returned := false
	defer func() {
		if !returned {
			if p := recover(); p != nil {
				s.stop = &Stop{Value: p}
			} else {
				s.stop = &Stop{Goexit: true}
			}
		}
		// The last use of s on this goroutine: after the token, the slot may be reused.
		s.done <- struct{}{}
	}()
	growStack()
	s.r.f(s.arg)
	returned = true
}

// stackReserve is how much stack a Runner's goroutine reserves before it calls f.
const stackReserve = 8 << 10

// growStack makes the goroutine's stack at least stackReserve bytes while it is still
// shallow. A new goroutine starts with a small stack and grows it by copying, which costs
// in proportion to the frames already on it: a pipeline stage several calls deep would pay
// that on every call, growing here costs one copy of two frames.
//
//go:noinline
func growStack() {
	var buf [stackReserve - 1<<10]byte // a frame this large makes the prologue grow the stack
	touch(buf[:])
}

//go:noinline
func touch(b []byte) { b[0] = 0 }
