package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-go/dsh/jsonv"
)

// Store is where sessions are kept: the seam between the agent loop and a storage engine.
// FileStore keeps one file per session on the local disk; package session/pgstore keeps
// them in PostgreSQL. Every Store records the same events with the same payload bytes, and
// Load recovers an interrupted turn the same way (RecoveryEvents), so a session reads
// alike from either.
//
// A Store admits one writer per session at a time: Create and Resume hand out the Writer,
// and a second Create or Resume of the same session while it is held is refused.
type Store interface {
	// Create starts a new session and returns its log, ready for appends. An empty h.ID
	// is filled with NewID, a zero h.CreatedAt with the current time; h.Version is always
	// FormatVersion. An id that already has a log is refused.
	Create(ctx context.Context, h Header) (Writer, error)
	// Load reads a session without modifying it: its events followed by the recovery
	// events that close a crash-interrupted turn.
	Load(ctx context.Context, id string) (*Loaded, error)
	// Resume reopens a session for appending: it durably records the recovery events
	// Load would add and returns the log positioned after them.
	Resume(ctx context.Context, id string) (Writer, error)
	// Reopen reopens a session for appending as it stands, without recovery: an open
	// turn stays open and no synthetic result closes its calls. It is for a writer that
	// owns the turn a crashed writer left open and will write the rest of it itself (a
	// durable session's workflow taking over on a new worker). Single-writer rules are
	// those of Resume; a torn final batch is still cut off.
	Reopen(ctx context.Context, id string) (Writer, error)
	// List describes every stored session, ordered by creation time (then id).
	List(ctx context.Context) ([]Info, error)
	// Resolve returns the full id of the session id names: an exact id or a unique
	// prefix (*AmbiguousError when several match; ErrNotFound when none).
	Resolve(ctx context.Context, id string) (string, error)
	// Remove deletes a stored session (a full id). A session held by a writer is refused.
	Remove(ctx context.Context, id string) error
	// Import stores a session read elsewhere exactly as given: the header and the events
	// with their seqs and times (contiguous from 0). An id that already exists is refused
	// and nothing is written.
	Import(ctx context.Context, h Header, events []Event) error
	// CheckWritable verifies that a session created for cwd could be written, so callers
	// fail before doing work whose log could not be kept.
	CheckWritable(cwd string) error
	// Root names where the store keeps its sessions, for messages: a directory, or a URL
	// without its password.
	Root() string
}

// Writer is the log of one session, open for appending: the session's single writer
// until Close.
type Writer interface {
	Log
	// Header returns the session's header.
	Header() Header
	// Path says where the log is kept, for messages: the file for a FileStore, the store
	// and the session id for a database.
	Path() string
	// Attachments returns the session's attachment store.
	Attachments() Attachments
	// Durable returns how many events are on stable storage.
	Durable() int
}

// ErrConflict is returned (wrapped) when a session already has a writer: a second Create
// or Resume while one holds it, or an append at a seq another writer filled first.
var ErrConflict = errors.New("session: another writer holds the session")

// Stamp validates e and returns it as a log records it at seq and time t (Unix
// milliseconds): with a private snapshot of its data. An event an OwnedEvent constructor
// built and nobody changed since is handed over instead: its data, fresh and checked when
// it was built, is kept as it is, without the copy and the payload check. Every Log of this
// package and the stores use it, so that every store checks and encodes events alike.
func Stamp(e Event, seq, t int64) (Event, error) { return stamp(nil, e, seq, t) }

// stamp is Stamp, copying the data into arena when it is not nil, so that the payloads of
// one log lie one after the other.
func stamp(arena *jsonv.Arena, e Event, seq, t int64) (Event, error) {
	if owned := e.owned; owned != nil {
		e.owned = nil
		if ownedIntact(&e, owned) {
			e.Seq, e.Time = seq, t
			if err := checkMeta(&e); err != nil {
				return Event{}, err
			}
			return e, nil
		}
	}
	e, err := snapshotEvent(arena, e)
	if err != nil {
		return Event{}, err
	}
	e.Seq, e.Time = seq, t
	if err := checkEvent(&e); err != nil {
		return Event{}, err
	}
	return e, nil
}

// EncodeEvent returns the JSON line (without its newline) FileStore writes for e: the
// payload bytes every store keeps.
func EncodeEvent(e Event) ([]byte, error) { return appendEventJSON(nil, &e) }

// ParseEvent decodes and checks one event line as EncodeEvent wrote it.
func ParseEvent(line []byte) (Event, error) { return parseCheckedEvent(nil, line) }

// parseCheckedEvent is ParseEvent, into arena when it is not nil.
func parseCheckedEvent(arena *jsonv.Arena, line []byte) (Event, error) {
	e, err := parseEventLine(arena, line)
	if err != nil {
		return Event{}, err
	}
	if err := checkEvent(&e); err != nil {
		return Event{}, fmt.Errorf("event seq %d: %w", e.Seq, err)
	}
	return e, nil
}

// EventArena parses and stamps the events of one log so that their payloads lie one after
// the other in memory, in log order, instead of one scattered block per payload: reading a
// whole log (DeriveMessages, a resume) then reads memory mostly sequentially. Its
// ParseEvent and Stamp accept and return exactly what the package's functions of the same
// names do. The payloads of one arena keep each other's memory alive, so an arena suits the
// events of one log, which live and die together. The zero value is ready to use; an
// EventArena is not safe for concurrent use (a store calls it under the lock that orders
// its log).
type EventArena struct {
	arena jsonv.Arena
}

// ParseEvent is the package's ParseEvent, laying the payload out in a.
func (a *EventArena) ParseEvent(line []byte) (Event, error) {
	return parseCheckedEvent(&a.arena, line)
}

// Stamp is the package's Stamp, copying the data into a when it copies it (an event an
// OwnedEvent constructor built is still handed over as it is).
func (a *EventArena) Stamp(e Event, seq, t int64) (Event, error) {
	return stamp(&a.arena, e, seq, t)
}

// EncodeHeader returns the header line (without its newline) that opens a session log.
// It fails for a header that does not validate.
func EncodeHeader(h Header) ([]byte, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	line, err := h.line()
	if err != nil {
		return nil, err
	}
	return line[:len(line)-1], nil
}

// ParseHeader decodes a header line as EncodeHeader wrote it.
func ParseHeader(line []byte) (Header, error) { return parseHeaderLine(line) }

// NewLoaded returns a session as Load returns it: the stored events followed by the
// recovery events that close an interrupted turn. where fills Loaded.Path.
func NewLoaded(h Header, where string, events []Event) *Loaded {
	rec := RecoveryEvents(events)
	return &Loaded{Header: h, Path: where, Events: append(events, rec...), Recovered: len(rec)}
}

// CheckImport verifies what Import is given: a valid header and events that are valid,
// contiguous from seq 0. The events are returned stamped (with private data snapshots).
func CheckImport(h Header, events []Event) (Header, []Event, error) {
	if err := h.validate(); err != nil {
		return Header{}, nil, fmt.Errorf("session: import: %w", err)
	}
	out := make([]Event, len(events))
	for i, e := range events {
		if e.Seq != int64(i) {
			return Header{}, nil, fmt.Errorf("session: import %q: seq gap: expected seq %d, got %d", h.ID, i, e.Seq)
		}
		s, err := Stamp(e, e.Seq, e.Time)
		if err != nil {
			return Header{}, nil, fmt.Errorf("session: import %q: event seq %d: %w", h.ID, i, err)
		}
		out[i] = s
	}
	return h, out, nil
}

var _ Store = (*FileStore)(nil)
var _ Writer = (*FileLog)(nil)
