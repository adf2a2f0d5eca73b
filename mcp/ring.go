package mcp

import (
	"sync"
)

// tailBuffer keeps the last limit bytes written to it: a server's stderr, which a crashing or
// chatty server may produce without bound. It is safe for concurrent use.
type tailBuffer struct {
	mu      sync.Mutex
	limit   int
	buf     []byte // at most limit bytes, oldest first
	dropped int64
}

func newTailBuffer(limit int) *tailBuffer {
	return &tailBuffer{limit: limit}
}

// Write appends p, dropping the oldest bytes beyond the limit. It never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.limit <= 0 {
		t.dropped += int64(n)
		return n, nil
	}
	if len(p) >= t.limit {
		t.dropped += int64(len(t.buf) + len(p) - t.limit)
		t.buf = append(t.buf[:0], p[len(p)-t.limit:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.limit; over > 0 {
		t.dropped += int64(over)
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// Bytes returns a copy of the retained tail and how many earlier bytes were dropped.
func (t *tailBuffer) Bytes() ([]byte, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...), t.dropped
}

// noteLog keeps the last limit diagnostic notes of a mount. It is safe for concurrent use.
type noteLog struct {
	mu    sync.Mutex
	limit int
	notes []string
}

func (l *noteLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.notes) >= l.limit {
		l.notes = append(l.notes[:0], l.notes[len(l.notes)-l.limit+1:]...)
	}
	l.notes = append(l.notes, s)
}

func (l *noteLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.notes...)
}
