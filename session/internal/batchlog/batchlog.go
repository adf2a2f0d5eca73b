// Package batchlog is the write path every session store shares: a session's single writer
// keeps its events in order in memory and stores them in batches. A live event is stored
// with the next batch, at most a delay after the first event that is waiting; a durable
// append, a flush and Close store everything waiting at once. A failed write leaves its
// events waiting, so the next flush retries them and reports.
//
// The store supplies how events are stamped and how a batch is written; the file store and
// the PostgreSQL store both use a Log, so they batch, retry and close alike.
package batchlog

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Config is what a store supplies to a Log.
type Config[E any] struct {
	// Delay is how long live events are coalesced before they are written.
	Delay time.Duration
	// Stamp validates an appended event and returns it as the log keeps it at position
	// seq (its sequence number, its time, a private copy of its data).
	Stamp func(e E, seq int) (E, error)
	// Write stores pending, the events after the last stored one, in order. Calls never
	// overlap. An error leaves the events pending.
	Write func(ctx context.Context, pending []E) error
	// Closed is the error of an append or flush after Close.
	Closed error
	// Timer starts the batch timer: it returns a channel that receives when the batch is
	// due and a function that stops the timer. Nil means a real timer; tests pass their
	// own to decide when a batch is due.
	Timer func(time.Duration) (<-chan time.Time, func())
	// Batched, when set, is called from the writer goroutine with the outcome of each
	// batch it wrote because its delay was up.
	Batched func(error)
	// Every, when positive, makes the writer goroutine call Tick at that interval while
	// the log is open (the PostgreSQL store renews its lease so).
	Every time.Duration
	// Tick is the periodic call Every asks for.
	Tick func()
}

// Log holds one session's events and writes them in batches. It starts a writer goroutine
// that Close or Abandon stops. All methods are safe for concurrent use.
type Log[E any] struct {
	cfg Config[E]

	mu      sync.Mutex // guards the fields below
	events  []E
	written int  // events stored
	closed  bool // Close or Abandon has begun
	armed   bool // a live batch is scheduled

	writeMu sync.Mutex // serializes Write and the release at Close
	ended   bool       // the release has run: nothing more is written (guarded by writeMu)

	kick   chan struct{} // a live event is waiting
	done   chan struct{} // closed when the log closes
	exited chan struct{} // closed when the writer goroutine returns
}

// New returns a log holding stored, the events already on stable storage, and starts its
// writer goroutine.
func New[E any](cfg Config[E], stored []E) *Log[E] {
	if cfg.Timer == nil {
		cfg.Timer = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTimer(d)
			return t.C, func() { t.Stop() }
		}
	}
	l := &Log[E]{
		cfg:     cfg,
		events:  stored,
		written: len(stored),
		kick:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		exited:  make(chan struct{}),
	}
	go l.run()
	return l
}

// run writes live batches: the first live event after a write arms a timer of the batch
// delay, and the batch is written when it fires.
func (l *Log[E]) run() {
	defer close(l.exited)
	var (
		fire <-chan time.Time
		stop func()
		tick <-chan time.Time
	)
	if l.cfg.Every > 0 && l.cfg.Tick != nil {
		t := time.NewTicker(l.cfg.Every)
		defer t.Stop()
		tick = t.C
	}
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		select {
		case <-l.kick:
			if fire == nil {
				fire, stop = l.cfg.Timer(l.cfg.Delay)
			}
		case <-fire:
			fire, stop = nil, nil
			l.mu.Lock()
			l.armed = false
			n := len(l.events)
			l.mu.Unlock()
			// A failed batch stays pending: the next flush retries it and reports.
			err := l.flush(context.Background(), n)
			if l.cfg.Batched != nil {
				l.cfg.Batched(err)
			}
		case <-tick:
			l.cfg.Tick()
		case <-l.done:
			return
		}
	}
}

// Append stamps and appends a live event; it is written with the next batch.
func (l *Log[E]) Append(e E) (E, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, err := l.appendLocked(e, l.cfg.Stamp)
	if err != nil {
		return e, err
	}
	if !l.armed {
		l.armed = true
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
	return e, nil
}

// AppendDurable stamps and appends an event and writes it, with every earlier pending
// event, before returning. If the write fails the event stays pending.
func (l *Log[E]) AppendDurable(ctx context.Context, e E) (E, error) {
	l.mu.Lock()
	e, err := l.appendLocked(e, l.cfg.Stamp)
	n := len(l.events)
	l.mu.Unlock()
	if err != nil {
		return e, err
	}
	return e, l.flush(ctx, n)
}

// AppendAll appends events, each passed through stamp (nil keeps them as given), and
// writes them with every earlier pending event before returning. Stores use it for the
// events they add themselves: an import's events, the recovery events of a resumed session.
func (l *Log[E]) AppendAll(ctx context.Context, events []E, stamp func(e E, seq int) (E, error)) error {
	if stamp == nil {
		stamp = func(e E, _ int) (E, error) { return e, nil }
	}
	l.mu.Lock()
	var err error
	for _, e := range events {
		if _, err = l.appendLocked(e, stamp); err != nil {
			break
		}
	}
	n := len(l.events)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	return l.flush(ctx, n)
}

func (l *Log[E]) appendLocked(e E, stamp func(E, int) (E, error)) (E, error) {
	var zero E
	if l.closed {
		return zero, l.cfg.Closed
	}
	e, err := stamp(e, len(l.events))
	if err != nil {
		return zero, err
	}
	l.events = append(l.events, e)
	return e, nil
}

// Events returns the events appended so far (shared, read-only).
func (l *Log[E]) Events() []E {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clip(l.events)
}

// Len returns the number of events.
func (l *Log[E]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// Durable returns how many events are stored.
func (l *Log[E]) Durable() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.written
}

// Flush writes every pending event.
func (l *Log[E]) Flush(ctx context.Context) error {
	l.mu.Lock()
	closed, n := l.closed, len(l.events)
	l.mu.Unlock()
	if closed {
		return l.cfg.Closed
	}
	return l.flush(ctx, n)
}

// Close writes the pending events, stops the writer goroutine, then calls release (when
// not nil) to free the store's resources; it returns the first error of the two. Only the
// first Close does anything; a later one returns nil.
func (l *Log[E]) Close(ctx context.Context, release func() error) error {
	if !l.stop() {
		return nil
	}
	l.mu.Lock()
	n := len(l.events)
	l.mu.Unlock()
	err := l.flush(ctx, n)
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.ended = true
	if release != nil {
		if rerr := release(); err == nil {
			err = rerr
		}
	}
	return err
}

// Abandon stops a log that failed to open without writing anything more, then calls
// release (when not nil).
func (l *Log[E]) Abandon(release func()) {
	if !l.stop() {
		return
	}
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.ended = true
	if release != nil {
		release()
	}
}

// stop marks the log closed and waits for the writer goroutine to return; it reports
// whether this call closed it.
func (l *Log[E]) stop() bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	l.closed = true
	l.mu.Unlock()
	close(l.done)
	<-l.exited
	return true
}

// flush writes every pending event unless the first upto events are stored already.
func (l *Log[E]) flush(ctx context.Context, upto int) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	if l.written >= upto {
		l.mu.Unlock()
		return nil
	}
	pending := l.events[l.written:]
	n := len(l.events)
	l.mu.Unlock()
	if l.ended {
		return l.cfg.Closed
	}
	if err := l.cfg.Write(ctx, pending); err != nil {
		return err
	}
	l.mu.Lock()
	l.written = n
	l.mu.Unlock()
	return nil
}
