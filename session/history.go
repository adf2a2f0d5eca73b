package session

import (
	"sync"
	"sync/atomic"

	"github.com/dsh-go/dsh/content"
)

// history is the model history of a run of surface events, in order: their kept messages,
// shared by every DeriveMessages call over those events or a prefix of them. The first call
// over a log's events places their messages in a new history; a later call over the same
// log grown by a few events appends only the new messages; a call over the same events, or
// a prefix of them, returns a prefix of the history without copying or allocating
// anything. A garbage-free derivation is what keeps a long session's steps linear: every
// allocation the size of the history would make the collector mark the whole log again
// every few steps.
type history struct {
	mu  sync.Mutex        // serialises appends
	buf []content.Message // under mu; buf[:len(*pub)] is never written again
	// pub is the clipped slice of the messages placed so far, published after each append.
	pub atomic.Pointer[[]content.Message]
}

// sharedHistory returns the model history of events without copying it, when events are a
// log's run from its start (each event's Seq is its index), every surface event keeps its
// message, and those messages stand, or can be appended, at consecutive positions of one
// history from its start. ok is false otherwise: the caller derives a fresh copy. Requiring
// a log's run keeps a selection of a log's events (a suffix, two logs' events joined) from
// placing messages where the log's own run would not find them.
func sharedHistory(events []Event) (msgs []content.Message, ok bool) {
	var h *history
	n := 0 // the messages met so far, at positions 0..n-1 of h
	for i := range events {
		e := &events[i]
		if e.Seq != int64(i) {
			return nil, false
		}
		k := surfaceOf(e)
		if k == kindNone {
			continue
		}
		v := e.derived
		m := v.of(e, k)
		if m == nil {
			return nil, false
		}
		if usageOnly(e, m) {
			continue
		}
		ph := v.hist.Load()
		if ph == nil {
			return extendHistory(h, n, events[i:])
		}
		if n == 0 {
			h = ph
		}
		if ph != h || v.pos.Load() != int64(n)+1 {
			return nil, false
		}
		n++
	}
	if n == 0 {
		return nil, true
	}
	s := h.pub.Load()
	if s == nil || len(*s) < n {
		return nil, false // cannot happen: a placement is stored after its publication
	}
	return (*s)[:n:n], true
}

// extendHistory appends the messages of the surface events in rest, none placed yet, to h
// (a new history when h is nil), which holds the n messages before them, and returns the
// first n+len(new) messages of h. It gives up, placing nothing, when one of them cannot be
// placed (a message changed since the log kept it, or placed elsewhere meanwhile) or when
// h grew past n meanwhile.
func extendHistory(h *history, n int, rest []Event) ([]content.Message, bool) {
	// rest[0] is a surface event with a kept message that is part of the history.
	var claimed *derivation
	if h == nil {
		// A new history claims its first message before anything else, so that two first
		// derivations at once cannot split a log's messages between two histories: the
		// one that loses the claim copies. The position comes after the publication, so a
		// reader that sees the claim first finds no position yet and copies too.
		h, claimed = new(history), rest[0].derived
		if !claimed.hist.CompareAndSwap(nil, h) {
			return nil, false
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.buf) != n {
		return nil, false // grown meanwhile (never so for a new history)
	}
	// giveUp undoes what was not published: the messages appended, the claim.
	giveUp := func() ([]content.Message, bool) {
		h.buf = h.buf[:n]
		if claimed != nil {
			claimed.hist.Store(nil)
		}
		return nil, false
	}
	// First the messages, then their publication, then the placements: a reader that sees
	// a placement always sees a publication that covers it.
	for i := range rest {
		e := &rest[i]
		if e.Seq != rest[0].Seq+int64(i) {
			return giveUp()
		}
		k := surfaceOf(e)
		if k == kindNone {
			continue
		}
		v := e.derived
		m := v.of(e, k)
		if m == nil || (v != claimed && v.hist.Load() != nil) {
			return giveUp()
		}
		if !usageOnly(e, m) {
			h.buf = append(h.buf, *m)
		}
	}
	s := h.buf[:len(h.buf):len(h.buf)]
	h.pub.Store(&s)
	pos := int64(n)
	for i := range rest {
		e := &rest[i]
		if !onSurface(e) || usageOnly(e, &e.derived.msg) {
			continue
		}
		pos++
		// A message placed meanwhile in another history stays there: later calls over
		// these events copy, with the same result. Its position is stored after its
		// history, so a reader may see the history without the position (and copies),
		// never a wrong position.
		if v := e.derived; v == claimed || v.hist.CompareAndSwap(nil, h) {
			v.pos.Store(pos)
		}
	}
	return s, true
}

// usageOnly reports whether m, the message of e, is an assistant message with no content,
// which only carries usage and is not part of the history.
func usageOnly(e *Event, m *content.Message) bool {
	return e.Type == TypeAssistantMessage && len(m.Content) == 0
}
