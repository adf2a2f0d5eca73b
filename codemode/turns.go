package codemode

import (
	"context"
	"sync"
)

// turns admits a run's numbered binding calls (coderuntime.CallSeq) to submission in
// number order, whatever order their goroutines run in: call k is submitted only once
// every call numbered below k has released its number, by being queued or by being
// rejected. It relies on the backend contract that the numbers of a run are dense from 0;
// should one never arrive, the calls after it wait until the run settles and are then
// rejected, so nothing waits forever.
type turns struct {
	mu       sync.Mutex
	next     uint64              // the lowest number not released yet
	released map[uint64]struct{} // numbers above next, released out of order
	moved    chan struct{}       // closed when next advances; nil when nobody waits
}

// wait blocks until every number below n has been released. It returns the context that
// ended the wait, call's (the runtime settled the run) or run's (Code Mode settled it), or
// nil when it is n's turn. parked, when not nil, is called once if the call has to wait.
// When both have ended it returns call's: a solo call's watch (lane.watch) ends the run
// because the call's context ended, so the call's cause is the one that says why.
func (t *turns) wait(call, run context.Context, n uint64, parked func()) context.Context {
	for {
		t.mu.Lock()
		if t.next >= n {
			t.mu.Unlock()
			return nil
		}
		if t.moved == nil {
			t.moved = make(chan struct{})
		}
		moved := t.moved
		t.mu.Unlock()
		if parked != nil {
			parked()
			parked = nil
		}
		select {
		case <-moved:
		case <-run.Done():
			if call.Err() != nil {
				return call
			}
			return run
		case <-call.Done():
			return call
		}
	}
}

// release marks n as queued or rejected and wakes the calls waiting for it. Each number is
// released once.
func (t *turns) release(n uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n != t.next {
		if n > t.next {
			if t.released == nil {
				t.released = map[uint64]struct{}{}
			}
			t.released[n] = struct{}{}
		}
		return
	}
	t.next++
	for len(t.released) > 0 {
		if _, ok := t.released[t.next]; !ok {
			break
		}
		delete(t.released, t.next)
		t.next++
	}
	if t.moved != nil {
		close(t.moved)
		t.moved = nil
	}
}
