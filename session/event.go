package session

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/dsh-go/dsh/jsonv"
)

// Event is one entry of a session log (docs/behaviour.md §9.1). On the wire it is the JSON object
//
//	{"type":…,"seq":…,"time":…,"data":…,"sourceEventSeqs":[…],"surfaceOp":"append","ignorable":true}
//
// where the last three members are present only when set (SourceEventSeqs non-nil,
// SurfaceOp non-empty, Ignorable true).
//
// A Log assigns Seq (contiguous from 0) and Time when the event is appended and stores a
// lossless-JSON snapshot of Data. Events returned by a Log share their Data with the log:
// treat them as read-only (jsonv.Clone gives a private copy).
type Event struct {
	// Type names the event, e.g. "tool/call".
	Type string
	// Seq is the event's position in the log, assigned by the log.
	Seq int64
	// Time is the append time in Unix epoch milliseconds, assigned by the log.
	Time int64
	// Data is the payload, a jsonv value (usually a *jsonv.Object).
	Data any
	// SourceEventSeqs cites earlier events this one derives from (surface events only),
	// e.g. the tool/call a tool/result answers. Nil means absent; an empty non-nil slice
	// is kept as [] (allowed on assistant/message only).
	SourceEventSeqs []int64
	// SurfaceOp is "append" for events on the model-visible surface and empty otherwise.
	SurfaceOp string
	// Ignorable marks an event a reader that does not know its Type may skip.
	Ignorable bool

	// owned is Data when an OwnedEvent constructor built it for a log to keep as it is
	// (see Stamp); nil otherwise, and always in an event a log returns.
	owned *jsonv.Object
	// derived is the model-history message of a surface event, derived when the event was
	// checked (as a log appends or loads it); nil for an event built by hand.
	derived *derivation
}

// Event types known to dsh. A log holding an event of another type is refused on load
// unless that event is marked ignorable, because silently skipping a required event could
// reconstruct a wrong session.
const (
	TypeTurnStart         = "turn/start"
	TypeTurnEnd           = "turn/end"
	TypeStepStart         = "step/start"
	TypeStepEnd           = "step/end"
	TypeUserMessage       = "user/message"
	TypeAssistantChunk    = "assistant/chunk"
	TypeAssistantMessage  = "assistant/message"
	TypeToolCall          = "tool/call"
	TypeToolResult        = "tool/result"
	TypeCodeDispatchStart = "tool/code-dispatch-start"
	TypeCodeDispatch      = "tool/code-dispatch"
	TypeApprovalAsked     = "approval/asked"
	TypeApprovalDecided   = "approval/decided"
	TypeTodoWrite         = "todo/write"
	TypeRequestHeader     = "request/header"
	TypeRequestContext    = "request/context"
	TypeEndSeed           = "session/end-seed"
)

// SurfaceAppend is the only surface operation dsh writes: the event's message is added
// to the tail of the model-visible history.
const SurfaceAppend = "append"

// KnownType reports whether t is an event type this package understands: the types above
// plus the rest of the reference harness's vocabulary, so that logs written with those
// events stay loadable.
func KnownType(t string) bool {
	switch t {
	case TypeTurnStart, TypeTurnEnd, TypeStepStart, TypeStepEnd, TypeUserMessage,
		TypeAssistantChunk, TypeAssistantMessage, TypeToolCall, TypeToolResult,
		TypeCodeDispatchStart, TypeCodeDispatch, TypeApprovalAsked, TypeApprovalDecided,
		TypeTodoWrite, TypeRequestHeader, TypeRequestContext, TypeEndSeed,
		"agent-preset/selected", "agent/inbox/spliced", "approval/policy", "command/done",
		"command/run", "compaction/end", "compaction/prune", "compaction/start",
		"compaction/summary", "feedback/record", "goal/change", "hook/invoked", "hook/result",
		"llm/retry", "llm/retry-started", "permission/preset", "plan/mode", "sandbox/mode",
		"schedule/change", "session/title", "session/title-llm-request", "subagent/descriptor",
		"team/member", "team/message/delivered", "team/message/queued", "team/task",
		"tool-workflow/agent-end", "tool-workflow/agent-start", "tool-workflow/run-end",
		"tool-workflow/run-start", "web/deepseek-search-llm-request":
		return true
	}
	return false
}

// internType returns the package's constant for one of dsh's own event types and t itself
// otherwise. A loaded log then holds no copy of its type names per event, and comparing an
// event's type with a constant finds the same bytes (the common case costs no memory read).
func internType(t string) string {
	switch t {
	case TypeTurnStart:
		return TypeTurnStart
	case TypeTurnEnd:
		return TypeTurnEnd
	case TypeStepStart:
		return TypeStepStart
	case TypeStepEnd:
		return TypeStepEnd
	case TypeUserMessage:
		return TypeUserMessage
	case TypeAssistantChunk:
		return TypeAssistantChunk
	case TypeAssistantMessage:
		return TypeAssistantMessage
	case TypeToolCall:
		return TypeToolCall
	case TypeToolResult:
		return TypeToolResult
	case TypeCodeDispatchStart:
		return TypeCodeDispatchStart
	case TypeCodeDispatch:
		return TypeCodeDispatch
	case TypeApprovalAsked:
		return TypeApprovalAsked
	case TypeApprovalDecided:
		return TypeApprovalDecided
	case TypeTodoWrite:
		return TypeTodoWrite
	case TypeRequestHeader:
		return TypeRequestHeader
	case TypeRequestContext:
		return TypeRequestContext
	case TypeEndSeed:
		return TypeEndSeed
	}
	return t
}

// surfaceEligible reports whether events of type t produce model messages and may carry
// surface metadata.
func surfaceEligible(t string) bool {
	return t == TypeUserMessage || t == TypeAssistantMessage || t == TypeToolResult
}

// DataError reports event data that is not lossless JSON. Its message is exactly
// `session event "<type>" carries non-JSON-serializable data`; Err says why.
type DataError struct {
	Type string
	Err  error
}

// Error returns the fixed message naming the event type.
func (e *DataError) Error() string {
	return `session event "` + e.Type + `" carries non-JSON-serializable data`
}

// Unwrap returns the reason the data was rejected.
func (e *DataError) Unwrap() error { return e.Err }

// ErrClosed is returned by a Log's append and flush methods after Close.
var ErrClosed = errors.New("session: log is closed")

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER: seqs, times and counters stay
// exactly representable for every reader of the log.
const maxSafeInteger = 1<<53 - 1

// snapshotEvent validates and copies e's data into the lossless model, in arena when it is
// not nil.
func snapshotEvent(arena *jsonv.Arena, e Event) (Event, error) {
	snapshot := jsonv.Snapshot
	if arena != nil {
		snapshot = arena.Snapshot
	}
	data, err := snapshot(e.Data)
	if err != nil {
		return Event{}, &DataError{Type: e.Type, Err: err}
	}
	e.Data = data
	if e.SourceEventSeqs != nil {
		e.SourceEventSeqs = append(make([]int64, 0, len(e.SourceEventSeqs)), e.SourceEventSeqs...)
	}
	return e, nil
}

// checkEvent validates an event about to take position e.Seq in a log: its type is known
// (or the event is ignorable), its surface metadata is allowed for its type and cites only
// earlier events, and the payload of every core event type has the shape recovery and
// DeriveMessages rely on.
func checkEvent(e *Event) error {
	if err := checkMeta(e); err != nil {
		return err
	}
	if err := checkPayload(e); err != nil {
		return fmt.Errorf(`session event "%s": %w`, e.Type, err)
	}
	return nil
}

// checkMeta is checkEvent without the payload check: the type and the surface metadata.
func checkMeta(e *Event) error {
	if e.Type == "" {
		return errors.New("session event has an empty type")
	}
	if !KnownType(e.Type) && !e.Ignorable {
		return fmt.Errorf(`session event type "%s" is unknown to this dsh and not marked ignorable (written by a newer version?)`, e.Type)
	}
	if !surfaceEligible(e.Type) {
		if e.SurfaceOp != "" {
			return fmt.Errorf(`session event "%s" is not surface-eligible and cannot carry surfaceOp`, e.Type)
		}
		if e.SourceEventSeqs != nil {
			return fmt.Errorf(`session event "%s" is not surface-eligible and cannot carry sourceEventSeqs`, e.Type)
		}
	} else {
		switch e.SurfaceOp {
		case SurfaceAppend:
		case "":
			return fmt.Errorf(`session event "%s" is surface-eligible and requires a surfaceOp marker`, e.Type)
		default:
			return fmt.Errorf(`session event "%s" carries an unsupported surfaceOp %q (only "append" is supported)`, e.Type, e.SurfaceOp)
		}
	}
	if e.SourceEventSeqs != nil {
		if len(e.SourceEventSeqs) == 0 && e.Type != TypeAssistantMessage {
			return errors.New("sourceEventSeqs must not be empty except on assistant/message")
		}
		seen := make(map[int64]bool, len(e.SourceEventSeqs))
		for _, s := range e.SourceEventSeqs {
			if s < 0 {
				return fmt.Errorf(`session event "%s" sourceEventSeqs must contain non-negative integers`, e.Type)
			}
			if s >= e.Seq {
				return fmt.Errorf("sourceEventSeqs must reference earlier events: %d >= current seq %d", s, e.Seq)
			}
			if seen[s] {
				return errors.New("sourceEventSeqs must not contain duplicates")
			}
			seen[s] = true
		}
	}
	return nil
}

// appendEventJSON appends e's wire form (one line, without the newline) to dst.
func appendEventJSON(dst []byte, e *Event) ([]byte, error) {
	typ, err := jsonv.Marshal(e.Type)
	if err != nil {
		return dst, fmt.Errorf("session event type %q: %w", e.Type, err)
	}
	data, err := jsonv.Marshal(e.Data)
	if err != nil {
		return dst, &DataError{Type: e.Type, Err: err}
	}
	dst = append(dst, `{"type":`...)
	dst = append(dst, typ...)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = append(dst, `,"time":`...)
	dst = strconv.AppendInt(dst, e.Time, 10)
	dst = append(dst, `,"data":`...)
	dst = append(dst, data...)
	if e.SourceEventSeqs != nil {
		dst = append(dst, `,"sourceEventSeqs":[`...)
		for i, s := range e.SourceEventSeqs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, s, 10)
		}
		dst = append(dst, ']')
	}
	if e.SurfaceOp != "" {
		op, err := jsonv.Marshal(e.SurfaceOp)
		if err != nil {
			return dst, fmt.Errorf("session event surfaceOp %q: %w", e.SurfaceOp, err)
		}
		dst = append(dst, `,"surfaceOp":`...)
		dst = append(dst, op...)
	}
	if e.Ignorable {
		dst = append(dst, `,"ignorable":true`...)
	}
	return append(dst, '}'), nil
}

// MarshalJSON encodes e in its wire form.
func (e Event) MarshalJSON() ([]byte, error) { return appendEventJSON(nil, &e) }

// UnmarshalJSON decodes e from its wire form, strictly: the text must be lossless JSON and
// the envelope well formed. It does not check the payload; a Log does that on load.
func (e *Event) UnmarshalJSON(data []byte) error {
	v, err := jsonv.Parse(data)
	if err != nil {
		return fmt.Errorf("session event: %w", err)
	}
	ev, err := eventFromValue(v)
	if err != nil {
		return err
	}
	*e = ev
	return nil
}

// eventFromValue decodes the event envelope from a parsed line.
func eventFromValue(v any) (Event, error) {
	o, ok := v.(*jsonv.Object)
	if !ok {
		return Event{}, fmt.Errorf("invalid event envelope: a %s, not an object", jsonv.KindOf(v))
	}
	var e Event
	var hasType, hasSeq, hasTime, hasData bool
	for _, m := range o.Members() {
		switch m.Name {
		case "type":
			s, ok := m.Value.(string)
			if !ok || s == "" {
				return Event{}, errors.New(`invalid event envelope: "type" must be a non-empty string`)
			}
			e.Type, hasType = internType(s), true
		case "seq":
			n, ok := safeInt(m.Value)
			if !ok || n < 0 {
				return Event{}, errors.New(`invalid event envelope: "seq" must be a non-negative integer`)
			}
			e.Seq, hasSeq = n, true
		case "time":
			n, ok := safeInt(m.Value)
			if !ok {
				return Event{}, errors.New(`invalid event envelope: "time" must be an integer`)
			}
			e.Time, hasTime = n, true
		case "data":
			e.Data, hasData = m.Value, true
		case "sourceEventSeqs":
			arr, ok := m.Value.([]any)
			if !ok {
				return Event{}, errors.New(`invalid event envelope: "sourceEventSeqs" must be an array`)
			}
			e.SourceEventSeqs = make([]int64, len(arr))
			for i, x := range arr {
				n, ok := safeInt(x)
				if !ok || n < 0 {
					return Event{}, errors.New(`invalid event envelope: "sourceEventSeqs" must contain non-negative integers`)
				}
				e.SourceEventSeqs[i] = n
			}
		case "surfaceOp":
			s, ok := m.Value.(string)
			if !ok {
				if _, isObj := m.Value.(*jsonv.Object); isObj {
					return Event{}, errors.New(`unsupported event envelope: surface replacement ("surfaceOp" object) is not supported by dsh`)
				}
				return Event{}, errors.New(`invalid event envelope: "surfaceOp" must be "append"`)
			}
			if s == SurfaceAppend {
				s = SurfaceAppend // the constant, not a copy per event
			}
			e.SurfaceOp = s
		case "ignorable":
			if m.Value != true {
				return Event{}, errors.New(`invalid event envelope: "ignorable" must be true when present`)
			}
			e.Ignorable = true
		default:
			return Event{}, fmt.Errorf("invalid event envelope: unexpected member %q", m.Name)
		}
	}
	switch {
	case !hasType:
		return Event{}, errors.New(`invalid event envelope: missing "type"`)
	case !hasSeq:
		return Event{}, errors.New(`invalid event envelope: missing "seq"`)
	case !hasTime:
		return Event{}, errors.New(`invalid event envelope: missing "time"`)
	case !hasData:
		return Event{}, errors.New(`invalid event envelope: missing "data"`)
	}
	return e, nil
}

// safeInt returns v as an integer when it is a JSON number holding a safe integer.
func safeInt(v any) (int64, bool) {
	f, ok := v.(float64)
	if !ok || f > maxSafeInteger || f < -maxSafeInteger || f != math.Trunc(f) {
		return 0, false
	}
	return int64(f), true
}
