// Package contain runs a function so that neither a panic nor runtime.Goexit in it can take
// the caller's goroutine down with it.
//
// A deferred recover stops a panic but not runtime.Goexit: a function that calls Goexit (as
// testing.T.FailNow does) ends the goroutine it runs on after running its deferred calls, so
// a caller waiting for its result would wait forever. Call runs the function on a goroutine
// of its own and reports how it ended.
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
