// Package testwait bounds the waits of tests by the test's own deadline, so a test whose
// awaited event never comes fails with a message naming what it waited for instead of
// hanging until the test binary's timeout kills every test at once.
package testwait

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// margin is the share of the time left before the test binary's deadline that a wait may
// use; the rest is left for reporting the failure and running cleanups.
const margin = 10

// Context returns a context that ends when tb ends or shortly before the test binary's
// deadline (go test -timeout), whichever comes first.
func Context(tb testing.TB) context.Context {
	tb.Helper()
	ctx := tb.Context()
	t, ok := tb.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return ctx
	}
	deadline, ok := t.Deadline()
	if !ok {
		return ctx
	}
	left := time.Until(deadline)
	ctx, cancel := context.WithDeadline(ctx, deadline.Add(-left/margin))
	tb.Cleanup(cancel)
	return ctx
}

// Recv receives one value from ch, failing tb when the wait outlasts Context(tb).
func Recv[T any](tb testing.TB, ch <-chan T, what string) T {
	tb.Helper()
	ctx := Context(tb)
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		tb.Fatalf("gave up waiting for %s: %v", what, context.Cause(ctx))
		var zero T
		return zero
	}
}

// Until polls cond until it holds, failing tb when the wait outlasts Context(tb). It is for
// conditions with no event to wait on; a failing test reports what it waited for.
func Until(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	ctx := Context(tb)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			tb.Fatalf("gave up waiting for %s: %v", what, context.Cause(ctx))
			return
		case <-tick.C:
		}
	}
}

// Barrier returns a wait that n callers make: each returns once all n have arrived, so a
// test can show that n operations run at once without timing them. A wait ends early with
// an error when its ctx or Context(tb) ends first; it may be called from any goroutine.
func Barrier(tb testing.TB, n int) func(ctx context.Context) error {
	tb.Helper()
	deadline := Context(tb)
	all := make(chan struct{})
	var mu sync.Mutex
	arrived := 0
	return func(ctx context.Context) error {
		mu.Lock()
		if arrived++; arrived == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("barrier of %d: %w", n, context.Cause(ctx))
		case <-deadline.Done():
			return fmt.Errorf("barrier of %d: %w", n, context.Cause(deadline))
		}
	}
}
