// Package contain runs a function so that neither a panic nor runtime.Goexit in it can take
// the caller's goroutine down with it.
//
// A deferred recover stops a panic but not runtime.Goexit: a function that calls Goexit (as
// testing.T.FailNow does) ends the goroutine it runs on after running its deferred calls, so
// a caller waiting for its result would wait forever. Call runs the function on a goroutine
// of its own and reports how it ended.
package contain

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
func Call(f func()) (stop *Stop) {
	done := make(chan struct{})
	go func() {
		returned := false
		defer func() {
			if !returned {
				// Since Go 1.21 panic(nil) panics with a *runtime.PanicNilError, so a nil
				// recover here can only mean runtime.Goexit.
				if p := recover(); p != nil {
					stop = &Stop{Value: p}
				} else {
					stop = &Stop{Goexit: true}
				}
			}
			close(done)
		}()
		f()
		returned = true
	}()
	<-done
	return stop
}
