package contain

import (
	"fmt"
	"iter"
	"runtime"
	"sync"
)

// Workers keeps goroutines alive between contained calls, so that a call on a hot path hands
// its function to a goroutine that is already running, parked and with its stack grown,
// instead of starting one. A function that calls runtime.Goexit still ends only the goroutine
// it ran on: that goroutine is not reused, and the next call that finds no idle goroutine
// starts a new one.
//
// The goroutines belong to the Workers: Close ends the idle ones. Until then at most the
// number given to NewWorkers wait idle; a goroutine finishing a call when that many already
// wait ends instead.
//
// A function that returns with its thread still locked (runtime.LockOSThread without
// UnlockOSThread) leaves its goroutine locked to that thread: later calls on the goroutine
// run on that thread, and the thread is ended only when the goroutine ends (a Goexit, Close,
// or the goroutine finding enough others idle). A Runner without Workers ends the thread
// right after the call.
//
// Workers made with NewSwitchWorkers hand each call over by switching to the kept goroutine
// directly, the way iter.Pull's next does, instead of through the scheduler (see
// NewSwitchWorkers).
//
// Workers is safe for concurrent use; create it with NewWorkers or NewSwitchWorkers.
type Workers struct {
	keep   int
	direct bool // hand calls over by a direct switch (NewSwitchWorkers)

	mu     sync.Mutex
	idle   []*worker
	closed bool
}

// NewWorkers returns Workers that keep up to idle goroutines waiting between calls; idle
// must be positive.
func NewWorkers(idle int) (*Workers, error) {
	if idle <= 0 {
		return nil, fmt.Errorf("contain: the number of idle goroutines must be positive, got %d", idle)
	}
	return &Workers{keep: idle, idle: make([]*worker, 0, idle)}, nil
}

// NewSwitchWorkers is NewWorkers for Workers that hand each call to a kept goroutine by
// switching to it directly, and back when it ends, as iter.Pull's coroutines do. A hand-off
// through the scheduler makes the kept goroutine runnable, and while another processor is
// idle the runtime wakes a second thread to look for that work, for every call; on a
// machine with few cores that thread takes the core other work was waiting for. A direct
// switch runs the call on the caller's thread and wakes nothing.
//
// Go's rule for such switches comes with it: the goroutine and thread-lock state must match
// at each switch. So a caller locked to its thread (runtime.LockOSThread) must not use
// these Workers: the switch ends the process with a fatal error. A function that ends (by
// returning, panicking or runtime.Goexit) with its thread locked once is unlocked
// (runtime.UnlockOSThread) before the switch back, and its thread returns to the runtime's
// pool; one that ends locked more than once ends the process. Use NewWorkers where either
// can happen.
func NewSwitchWorkers(idle int) (*Workers, error) {
	ws, err := NewWorkers(idle)
	if err != nil {
		return nil, err
	}
	ws.direct = true
	return ws, nil
}

// Close ends the idle goroutines and waits until they have returned. A goroutine running a
// call when Close is called ends when that call has finished. Calls after Close still run,
// each on a goroutine that ends after the call. Close is idempotent.
func (ws *Workers) Close() {
	ws.mu.Lock()
	idle := ws.idle
	ws.idle, ws.closed = nil, true
	ws.mu.Unlock()
	for _, w := range idle {
		w.quit()
	}
	for _, w := range idle {
		if w.exited != nil {
			<-w.exited
		}
	}
}

// call runs f(arg) on one of the goroutines and waits until it has returned or stopped.
func (ws *Workers) call(f func(any), arg any) *Stop {
	w := ws.get()
	w.f, w.arg = f, arg
	if w.next != nil {
		w.next()
		if w.ended {
			w.finish()
		}
	} else {
		w.wake <- struct{}{}
		<-w.done
	}
	stop := w.stop
	w.f, w.arg, w.stop = nil, nil, nil // hold no reference while the goroutine waits
	if !w.ended {
		ws.put(w)
	}
	return stop
}

// get takes an idle goroutine, or starts one.
func (ws *Workers) get() *worker {
	ws.mu.Lock()
	if n := len(ws.idle); n > 0 {
		w := ws.idle[n-1]
		ws.idle[n-1] = nil
		ws.idle = ws.idle[:n-1]
		ws.mu.Unlock()
		return w
	}
	ws.mu.Unlock()
	if ws.direct {
		w := &worker{}
		w.next, w.end = iter.Pull(w.switched)
		return w
	}
	w := &worker{wake: make(chan struct{}, 1), done: make(chan struct{}, 1), exited: make(chan struct{})}
	go w.loop()
	return w
}

// put makes w idle again, or ends it when the Workers are closed or enough goroutines wait.
func (ws *Workers) put(w *worker) {
	ws.mu.Lock()
	if !ws.closed && len(ws.idle) < ws.keep {
		ws.idle = append(ws.idle, w)
		ws.mu.Unlock()
		return
	}
	ws.mu.Unlock()
	w.quit()
}

// worker is one goroutine of a Workers and the state of the call it runs. A worker of
// switching Workers is a coroutine (next, end); any other is a goroutine woken through its
// channels.
type worker struct {
	f      func(any)
	arg    any
	stop   *Stop
	ended  bool          // the call ended the goroutine (runtime.Goexit)
	ending bool          // the goroutine is to return instead of waiting for another call
	wake   chan struct{} // receives a token for each call, or for the end
	done   chan struct{} // receives a token when a call has returned or stopped
	exited chan struct{} // closed when the goroutine returns (not when a call ends it)

	next func() (struct{}, bool) // switches to the coroutine to run f(arg), and back
	end  func()                  // makes the coroutine return, or finish a Goexit
}

// quit tells the idle goroutine of w to return.
func (w *worker) quit() {
	if w.end != nil {
		w.end() // the coroutine returns; end returns once it has
		return
	}
	w.ending = true
	w.wake <- struct{}{}
}

// switched is the body of a switching worker's coroutine: it runs one call each time next
// switches to it, and switches back when the call has ended. A call that ends the goroutine
// (runtime.Goexit) switches back from the deferred function, in the middle of the Goexit,
// so that the caller gets the outcome at once; finish lets the Goexit complete.
func (w *worker) switched(yield func(struct{}) bool) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if w.stop == nil {
			w.stop = &Stop{Goexit: true}
		}
		w.ended = true
		runtime.UnlockOSThread() // as after a return (below): the switch back needs it
		yield(struct{}{})        // resumed only by finish
	}()
	growStack()
	for {
		w.run()
		// A function that returned with its thread locked would make the switch back fail
		// (the caller's thread-lock state must match); one lock is undone here.
		runtime.UnlockOSThread()
		if !yield(struct{}{}) {
			returned = true
			return
		}
	}
}

// finish lets a coroutine that a call's Goexit is ending run the rest of it, and waits
// until it has ended. iter.Pull passes a Goexit on to the goroutine that resumes the
// coroutine, so that is a goroutine of its own, which ends with it.
func (w *worker) finish() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.end()
	}()
	<-done
}

func (w *worker) loop() {
	returned := false
	defer func() {
		if returned {
			close(w.exited)
			return
		}
		// A call ended the goroutine: runtime.Goexit, or a panic recovered while a Goexit
		// was under way (the Goexit goes on after the recovery). run has recorded which.
		if w.stop == nil {
			w.stop = &Stop{Goexit: true}
		}
		w.ended = true
		w.done <- struct{}{} // the last use of w on this goroutine
	}()
	growStack()
	for {
		<-w.wake
		if w.ending {
			returned = true
			return
		}
		w.run()
		w.done <- struct{}{}
	}
}

// run runs one call and records how it stopped. A panic is recovered and the goroutine goes
// on; a runtime.Goexit goes on past run and ends the goroutine (see loop).
func (w *worker) run() {
	returned := false
	defer func() {
		if returned {
			return
		}
		// Since Go 1.21 panic(nil) panics with a *runtime.PanicNilError, so a nil
		// recover here can only mean runtime.Goexit.
		if p := recover(); p != nil {
			w.stop = &Stop{Value: p}
		} else {
			w.stop = &Stop{Goexit: true}
		}
	}()
	w.f(w.arg)
	returned = true
}
