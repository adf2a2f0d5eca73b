package testwait

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ended is a testing.TB whose test has already ended, recording Fatalf instead of stopping.
type ended struct {
	testing.TB
	ctx    context.Context
	failed string
}

func newEnded(t *testing.T) *ended {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return &ended{TB: t, ctx: ctx}
}

func (e *ended) Context() context.Context          { return e.ctx }
func (e *ended) Fatalf(format string, args ...any) { e.failed = fmt.Sprintf(format, args...) }
func (e *ended) Helper()                           {}
func (e *ended) Cleanup(func())                    {}

func TestContextEndsBeforeTheBinaryDeadline(t *testing.T) {
	ctx := Context(t)
	deadline, ok := t.Deadline()
	got, has := ctx.Deadline()
	if ok != has || ok && !got.Before(deadline) {
		t.Errorf("context deadline %v (%v), test binary deadline %v (%v)", got, has, deadline, ok)
	}
	if ctx.Err() != nil {
		t.Errorf("a live test's context is done: %v", ctx.Err())
	}
}

func TestRecv(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := Recv(t, ch, "seven"); got != 7 {
		t.Errorf("Recv = %d", got)
	}
	e := newEnded(t)
	if got := Recv(e, make(chan int), "a value that never comes"); got != 0 || e.failed != "gave up waiting for a value that never comes: context canceled" {
		t.Errorf("Recv on an ended test = %d, failure %q", got, e.failed)
	}
}

func TestUntil(t *testing.T) {
	n := 0
	Until(t, "three polls", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("polled %d times", n)
	}
	e := newEnded(t)
	Until(e, "a condition that never holds", func() bool { return false })
	if e.failed != "gave up waiting for a condition that never holds: context canceled" {
		t.Errorf("failure %q", e.failed)
	}
}

func TestBarrier(t *testing.T) {
	const n = 4
	wait := Barrier(t, n)
	errs := make(chan error, n)
	for range n {
		go func() { errs <- wait(context.Background()) }()
	}
	for range n {
		if err := Recv(t, errs, "a barrier wait to end"); err != nil {
			t.Errorf("wait = %v", err)
		}
	}
	// A wait that never sees the others ends with its context, naming the barrier.
	lone := Barrier(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := lone(ctx); err == nil || err.Error() != "barrier of 2: context canceled" {
		t.Errorf("cancelled wait = %v", err)
	}
}
