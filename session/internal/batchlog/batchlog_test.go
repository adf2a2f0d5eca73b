package batchlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/internal/testwait"
)

var errClosed = errors.New("log is closed")

// store is a fake store: it records every batch written, and fails writes while failing
// is set. Its timer is driven by the test.
type store struct {
	mu      sync.Mutex
	batches [][]string
	failing error

	armed   chan chan time.Time // the writer armed its batch timer
	delays  chan time.Duration
	batched chan error // a timer-driven batch was written
	ticks   chan struct{}
}

func newStore() *store {
	return &store{
		armed:   make(chan chan time.Time, 16),
		delays:  make(chan time.Duration, 16),
		batched: make(chan error, 16),
		ticks:   make(chan struct{}, 16),
	}
}

// config returns a Config whose events are strings stamped "<seq>:<text>".
func (s *store) config() Config[string] {
	return Config[string]{
		Delay: 200 * time.Millisecond,
		Stamp: func(e string, seq int) (string, error) {
			if strings.HasPrefix(e, "bad") {
				return "", fmt.Errorf("event %q is refused", e)
			}
			return fmt.Sprintf("%d:%s", seq, e), nil
		},
		Write: func(_ context.Context, pending []string) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.failing != nil {
				return s.failing
			}
			s.batches = append(s.batches, slices.Clone(pending))
			return nil
		},
		Closed: errClosed,
		Timer: func(d time.Duration) (<-chan time.Time, func()) {
			ch := make(chan time.Time, 1)
			s.delays <- d
			s.armed <- ch
			return ch, func() {}
		},
		Batched: func(err error) { s.batched <- err },
	}
}

func (s *store) fail(err error) {
	s.mu.Lock()
	s.failing = err
	s.mu.Unlock()
}

func (s *store) written() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches)
}

// fire waits for the writer to arm its timer, fires it and returns the batch's outcome.
func (s *store) fire(t *testing.T) error {
	t.Helper()
	ch := testwait.Recv(t, s.armed, "the writer to arm its batch timer")
	ch <- time.Time{}
	return testwait.Recv(t, s.batched, "the timer-driven batch")
}

func mustAppend(t *testing.T, l *Log[string], e string) {
	t.Helper()
	if _, err := l.Append(e); err != nil {
		t.Fatalf("Append(%q): %v", e, err)
	}
}

func TestLiveEventsAreWrittenTogetherWhenTheDelayIsUp(t *testing.T) {
	s := newStore()
	l := New(s.config(), []string{"0:stored"})
	defer l.Close(t.Context(), nil)
	mustAppend(t, l, "a")
	mustAppend(t, l, "b")
	if got := testwait.Recv(t, s.delays, "the batch delay"); got != 200*time.Millisecond {
		t.Errorf("timer armed for %v, want the configured 200ms", got)
	}
	if n := l.Durable(); n != 1 {
		t.Errorf("Durable before the batch = %d, want 1 (the stored event)", n)
	}
	if err := s.fire(t); err != nil {
		t.Fatal(err)
	}
	if got, want := s.written(), [][]string{{"1:a", "2:b"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches = %q, want %q", got, want)
	}
	if l.Durable() != 3 || l.Len() != 3 {
		t.Errorf("Durable %d Len %d, want 3 and 3", l.Durable(), l.Len())
	}
	// The next live event arms a new timer.
	mustAppend(t, l, "c")
	if err := s.fire(t); err != nil {
		t.Fatal(err)
	}
	if got := s.written(); len(got) != 2 || !slices.Equal(got[1], []string{"3:c"}) {
		t.Errorf("batches = %q, want a second batch of 3:c", got)
	}
}

func TestDurableAppendWritesEverythingPending(t *testing.T) {
	s := newStore()
	l := New(s.config(), nil)
	defer l.Close(t.Context(), nil)
	mustAppend(t, l, "live")
	e, err := l.AppendDurable(t.Context(), "durable")
	if err != nil || e != "1:durable" {
		t.Fatalf("AppendDurable = %q, %v", e, err)
	}
	if got := s.written(); len(got) != 1 || !slices.Equal(got[0], []string{"0:live", "1:durable"}) {
		t.Errorf("batches = %q, want one batch of both events", got)
	}
	// The armed timer now finds nothing to write.
	if err := s.fire(t); err != nil {
		t.Fatal(err)
	}
	if got := s.written(); len(got) != 1 {
		t.Errorf("the timer wrote again: %q", got)
	}
	if got := l.Events(); !slices.Equal(got, []string{"0:live", "1:durable"}) {
		t.Errorf("Events = %q", got)
	}
}

func TestFailedWriteStaysPendingAndIsRetried(t *testing.T) {
	s := newStore()
	l := New(s.config(), nil)
	defer l.Close(t.Context(), nil)
	down := errors.New("disk full")
	s.fail(down)
	if _, err := l.AppendDurable(t.Context(), "a"); !errors.Is(err, down) {
		t.Fatalf("AppendDurable with a failing store = %v, want %v", err, down)
	}
	mustAppend(t, l, "b")
	if err := s.fire(t); !errors.Is(err, down) {
		t.Fatalf("timer-driven batch with a failing store = %v, want %v", err, down)
	}
	if l.Durable() != 0 || l.Len() != 2 {
		t.Fatalf("after failed writes: Durable %d Len %d, want 0 and 2", l.Durable(), l.Len())
	}
	s.fail(nil)
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := s.written(); len(got) != 1 || !slices.Equal(got[0], []string{"0:a", "1:b"}) {
		t.Errorf("batches = %q, want the retried events as one batch", got)
	}
	if l.Durable() != 2 {
		t.Errorf("Durable = %d, want 2", l.Durable())
	}
}

func TestRefusedEventsAreNotAppended(t *testing.T) {
	s := newStore()
	l := New(s.config(), nil)
	defer l.Close(t.Context(), nil)
	if _, err := l.Append("bad live"); err == nil || !strings.Contains(err.Error(), `"bad live" is refused`) {
		t.Errorf("Append of a refused event = %v", err)
	}
	if _, err := l.AppendDurable(t.Context(), "bad durable"); err == nil {
		t.Error("AppendDurable of a refused event succeeded")
	}
	err := l.AppendAll(t.Context(), []string{"x", "bad", "y"}, nil)
	if err != nil {
		t.Fatalf("AppendAll without a stamp checks nothing, got %v", err)
	}
	keep := func(e string, seq int) (string, error) {
		if e == "bad" {
			return "", errors.New("refused")
		}
		return e, nil
	}
	if err := l.AppendAll(t.Context(), []string{"z", "bad", "w"}, keep); err == nil {
		t.Error("AppendAll with a refusing stamp succeeded")
	}
	// The events before the refused one are kept (and stay pending); the rest are not.
	if got, want := l.Events(), []string{"x", "bad", "y", "z"}; !slices.Equal(got, want) {
		t.Errorf("Events = %q, want %q", got, want)
	}
	if got := s.written(); len(got) != 1 || !slices.Equal(got[0], []string{"x", "bad", "y"}) {
		t.Errorf("batches = %q, want the first AppendAll's events", got)
	}
}

func TestCloseWritesPendingThenReleasesOnce(t *testing.T) {
	s := newStore()
	l := New(s.config(), nil)
	mustAppend(t, l, "a")
	released := 0
	release := func() error { released++; return nil }
	if err := l.Close(t.Context(), release); err != nil {
		t.Fatal(err)
	}
	if got := s.written(); len(got) != 1 || !slices.Equal(got[0], []string{"0:a"}) {
		t.Errorf("batches = %q, want the pending event written at Close", got)
	}
	if err := l.Close(t.Context(), release); err != nil || released != 1 {
		t.Errorf("second Close = %v, released %d times, want nil and once", err, released)
	}
	if _, err := l.Append("late"); !errors.Is(err, errClosed) {
		t.Errorf("Append after Close = %v, want %v", err, errClosed)
	}
	if _, err := l.AppendDurable(t.Context(), "late"); !errors.Is(err, errClosed) {
		t.Errorf("AppendDurable after Close = %v, want %v", err, errClosed)
	}
	if err := l.AppendAll(t.Context(), []string{"late"}, nil); !errors.Is(err, errClosed) {
		t.Errorf("AppendAll after Close = %v, want %v", err, errClosed)
	}
	if err := l.Flush(t.Context()); !errors.Is(err, errClosed) {
		t.Errorf("Flush after Close = %v, want %v", err, errClosed)
	}
}

func TestCloseReportsTheFirstError(t *testing.T) {
	tests := []struct {
		name        string
		writeErr    error
		releaseErr  error
		wantRelease bool
	}{
		{"clean", nil, nil, true},
		{"write fails", errors.New("write failed"), nil, true},
		{"release fails", nil, errors.New("close failed"), true},
		{"both fail", errors.New("write failed"), errors.New("close failed"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore()
			l := New(s.config(), nil)
			mustAppend(t, l, "a")
			s.fail(tt.writeErr)
			released := false
			err := l.Close(t.Context(), func() error { released = true; return tt.releaseErr })
			want := tt.writeErr
			if want == nil {
				want = tt.releaseErr
			}
			if !errors.Is(err, want) || (want == nil) != (err == nil) {
				t.Errorf("Close = %v, want %v", err, want)
			}
			if released != tt.wantRelease {
				t.Errorf("released = %v, want %v", released, tt.wantRelease)
			}
			// What Close could not write is never written later.
			if tt.writeErr != nil {
				s.fail(nil)
				if _, err := l.AppendDurable(t.Context(), "late"); !errors.Is(err, errClosed) {
					t.Errorf("AppendDurable after a failed Close = %v, want %v", err, errClosed)
				}
				if got := s.written(); len(got) != 0 {
					t.Errorf("batches after a failed Close = %q, want none", got)
				}
			}
		})
	}
}

func TestAbandonWritesNothing(t *testing.T) {
	s := newStore()
	l := New(s.config(), nil)
	mustAppend(t, l, "a")
	released := 0
	l.Abandon(func() { released++ })
	l.Abandon(func() { released++ })
	if released != 1 {
		t.Errorf("release ran %d times, want once", released)
	}
	if got := s.written(); len(got) != 0 {
		t.Errorf("batches = %q, want none after Abandon", got)
	}
	if err := l.Close(t.Context(), func() error { released++; return nil }); err != nil || released != 1 {
		t.Errorf("Close after Abandon = %v (released %d times), want nil and nothing more", err, released)
	}
}

func TestTickRunsWhileOpen(t *testing.T) {
	s := newStore()
	cfg := s.config()
	cfg.Every = time.Nanosecond // any positive interval; the test waits for the calls, not the time
	cfg.Tick = func() {
		select {
		case s.ticks <- struct{}{}:
		default:
		}
	}
	l := New(cfg, nil)
	testwait.Recv(t, s.ticks, "the first periodic call")
	testwait.Recv(t, s.ticks, "the second periodic call")
	if err := l.Close(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentAppendsKeepOrder(t *testing.T) {
	s := newStore()
	cfg := s.config()
	cfg.Timer = nil // a real timer: batches come whenever they come
	cfg.Delay = time.Microsecond
	cfg.Batched = nil
	l := New(cfg, nil)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				var err error
				if (g+i)%7 == 0 {
					_, err = l.AppendDurable(t.Context(), "d")
				} else {
					_, err = l.Append("l")
				}
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := l.Close(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, b := range s.written() {
		all = append(all, b...)
	}
	if len(all) != 200 {
		t.Fatalf("%d events written, want 200", len(all))
	}
	for i, e := range all {
		if !strings.HasPrefix(e, fmt.Sprintf("%d:", i)) {
			t.Fatalf("event %d written as %q: batches out of order or repeated", i, e)
		}
	}
}
