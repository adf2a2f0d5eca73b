package session

import (
	"slices"
	"sync"
	"time"

	"github.com/dsh-go/dsh/jsonv"
)

// Log is an append-only session event log. It assigns each appended event the next seq
// (contiguous from 0) and the current time, and keeps a lossless-JSON snapshot of its
// data, so the caller may reuse or mutate what it passed in. All methods are safe for
// concurrent use.
type Log interface {
	// Append validates and appends a live event and returns it as logged. A file-backed
	// log writes live events in batches (at most WriteBatchMaxDelay later); the event is
	// durable after the next batch, Flush or durable append.
	Append(e Event) (Event, error)
	// AppendDurable appends an event and returns only once it and every earlier event are
	// on stable storage (written and fsynced). The agent loop uses it for tool/call, so
	// the log never claims less than happened. If writing fails the event stays in the
	// log and a later flush retries it; the error is returned.
	AppendDurable(e Event) (Event, error)
	// Events returns the events appended so far. The slice and the events' data are
	// shared with the log and must not be modified.
	Events() []Event
	// Len returns the number of events, which is also the next seq.
	Len() int
	// Flush makes every appended event durable.
	Flush() error
	// Close flushes, releases the log's resources and stops its background writer.
	// Appending after Close returns ErrClosed. Close is idempotent.
	Close() error
}

func nowOrDefault(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

// Memory is a Log kept only in memory: for tests, demos and sessions that are not
// persisted. AppendDurable and Flush have nothing to make durable.
type Memory struct {
	mu     sync.Mutex
	events []Event
	arena  jsonv.Arena // the events' payloads, one after the other (guarded by mu)
	now    func() time.Time
	closed bool
}

// NewMemory returns an empty in-memory log whose event times come from now (time.Now
// when nil).
func NewMemory(now func() time.Time) *Memory {
	return &Memory{now: nowOrDefault(now)}
}

// Append validates and appends e.
func (m *Memory) Append(e Event) (Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Event{}, ErrClosed
	}
	e, err := stamp(&m.arena, e, int64(len(m.events)), m.now().UnixMilli())
	if err != nil {
		return Event{}, err
	}
	m.events = append(m.events, e)
	return e, nil
}

// AppendDurable is Append: memory has no stable storage.
func (m *Memory) AppendDurable(e Event) (Event, error) { return m.Append(e) }

// Events returns the events appended so far (shared, read-only).
func (m *Memory) Events() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clip(m.events)
}

// Len returns the number of events.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.events)
}

// Flush does nothing (after Close it returns ErrClosed).
func (m *Memory) Flush() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	return nil
}

// Close marks the log closed.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
