package session

import (
	"sync/atomic"
	"unicode/utf8"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
)

// OwnedEvent returns the tool/code-dispatch-start event Event returns, built to be handed
// over to a log: Append keeps its data as it is, without the private snapshot and the
// payload check it otherwise makes, which for two events per Code Mode binding call were
// about a third of the call's allocations.
//
// p.Arguments goes over with the event: it must be a jsonv value (a result of jsonv.Parse
// or jsonv.Snapshot) that nobody changes afterwards, because the log, and every reader of
// its events, share it. It is checked here (jsonv.Check), not copied; everything else in
// the data is built here. When anything would not pass the log's checks — arguments that
// are not a jsonv value, an empty call id, a string that is not valid UTF-8 — the event
// is the one Event returns, which the log copies, checks and refuses as always.
func (p CodeDispatchStart) OwnedEvent() Event {
	if !ownableDispatch(&p) {
		return p.Event()
	}
	o := dispatchValue(p)
	return Event{Type: TypeCodeDispatchStart, Data: o, owned: o}
}

// DispatchBoxes builds the Code Mode dispatch events as OwnedEvent does, and keeps the
// values of their id and name members for the events that follow. The binding calls of
// one run_code call share its root and parent call ids and mostly one tool's name, and a
// call's tool/code-dispatch event follows its start with the same sub-call id: a string
// put into an event's data is a value of its own (an allocation), and reusing them saves
// six of the eight a sequential binding call's two events made. The zero value is ready to
// use, and it is safe for concurrent use: a shared value is an immutable string.
type DispatchBoxes struct {
	last atomic.Pointer[boxedIDs]
}

// boxedIDs is the ids and the name of the last event a DispatchBoxes built, as strings and
// as the values its data held. It is never changed once stored.
type boxedIDs struct {
	root, parent, sub, name     string
	rootV, parentV, subV, nameV any
}

// box returns the members' values for p, reusing those of the last event for the strings
// that are equal.
func (b *DispatchBoxes) box(p *CodeDispatchStart) *boxedIDs {
	last := b.last.Load()
	if last != nil && last.sub == p.SubCallID && last.root == p.RootCallID && last.parent == p.ParentCallID && last.name == p.Name {
		return last
	}
	n := &boxedIDs{root: p.RootCallID, parent: p.ParentCallID, sub: p.SubCallID, name: p.Name}
	if last == nil {
		// Nothing to reuse: a zero boxedIDs would take an empty name for its nil values.
		n.rootV, n.parentV, n.subV, n.nameV = p.RootCallID, p.ParentCallID, p.SubCallID, p.Name
		b.last.Store(n)
		return n
	}
	n.rootV = reuse(last, p.RootCallID)
	if p.ParentCallID == p.RootCallID {
		n.parentV = n.rootV
	} else {
		n.parentV = reuse(last, p.ParentCallID)
	}
	n.subV = reuse(last, p.SubCallID)
	n.nameV = reuse(last, p.Name)
	b.last.Store(n)
	return n
}

// reuse returns a value of last that holds s, or s made a value.
func reuse(last *boxedIDs, s string) any {
	switch s {
	case last.root:
		return last.rootV
	case last.parent:
		return last.parentV
	case last.sub:
		return last.subV
	case last.name:
		return last.nameV
	}
	return s
}

// StartEvent returns the tool/code-dispatch-start event p.OwnedEvent returns, with the id
// and name values shared with the events built before where the strings are equal.
func (b *DispatchBoxes) StartEvent(p CodeDispatchStart) Event {
	if !ownableDispatch(&p) {
		return p.Event()
	}
	ids := b.box(&p)
	o := startObject(ids.rootV, ids.parentV, ids.subV, ids.nameV, p.Arguments)
	return Event{Type: TypeCodeDispatchStart, Data: o, owned: o}
}

// SettleEvent returns the tool/code-dispatch event p.OwnedEvent returns, with the id and
// name values shared as StartEvent shares them.
func (b *DispatchBoxes) SettleEvent(p CodeDispatch) Event {
	start, blocks, ok := p.ownable()
	if !ok {
		return p.Event()
	}
	ids := b.box(&start)
	o := settleObject(ids.rootV, ids.parentV, ids.subV, ids.nameV, p.Arguments, p.IsError, blocks)
	return Event{Type: TypeCodeDispatch, Data: o, owned: o}
}

// OwnedEvent returns the tool/code-dispatch event Event returns, built to be handed over
// to a log like CodeDispatchStart.OwnedEvent: p.Arguments goes over with it, and the
// content is built afresh from p.Content. Content other than text and reasoning blocks
// (whose values may share memory with p.Content) gives the event Event returns.
func (p CodeDispatch) OwnedEvent() Event {
	_, blocks, ok := p.ownable()
	if !ok {
		return p.Event()
	}
	o := p.object(blocks)
	return Event{Type: TypeCodeDispatch, Data: o, owned: o}
}

// ownable reports whether p's event can be built to be handed over (OwnedEvent,
// DispatchBoxes.SettleEvent), with p's start fields and its content built afresh.
func (p *CodeDispatch) ownable() (CodeDispatchStart, []any, bool) {
	start := CodeDispatchStart{RootCallID: p.RootCallID, ParentCallID: p.ParentCallID, SubCallID: p.SubCallID, Name: p.Name, Arguments: p.Arguments}
	if !ownableDispatch(&start) {
		return start, nil, false
	}
	blocks, ok := ownedContent(p.Content)
	return start, blocks, ok
}

// ownedIntact reports whether e still is the event an OwnedEvent constructor built with
// the data owned: the same data, and the type it was built as.
func ownedIntact(e *Event, owned *jsonv.Object) bool {
	if d, ok := e.Data.(*jsonv.Object); !ok || d != owned {
		return false
	}
	switch e.Type {
	case TypeCodeDispatchStart:
		return owned.Len() == 5
	case TypeCodeDispatch:
		return owned.Len() == 7
	}
	return false
}

// ownableDispatch reports whether the members of a dispatch event pass the log's payload
// check: non-empty ids, a name, all valid UTF-8, and arguments that are a jsonv value.
func ownableDispatch(p *CodeDispatchStart) bool {
	for _, id := range [...]string{p.RootCallID, p.ParentCallID, p.SubCallID} {
		if id == "" || !utf8.ValidString(id) {
			return false
		}
	}
	return utf8.ValidString(p.Name) && ownableValue(p.Arguments)
}

// ownableValue reports whether v is a jsonv value a log may keep as it is. Nil containers
// are refused: a snapshot makes them empty ones. A flat object of scalars, the common
// shape of a tool's arguments, is checked without allocating.
func ownableValue(v any) bool {
	switch v := v.(type) {
	case *jsonv.Object:
		return v != nil && jsonv.Check(v) == nil && noNilContainer(v)
	case []any:
		return v != nil && jsonv.Check(v) == nil && noNilContainer(v)
	}
	return jsonv.Check(v) == nil
}

// noNilContainer reports whether a checked jsonv value holds no nil *jsonv.Object or nil
// []any below its top.
func noNilContainer(v any) bool {
	stack := []any{v}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch v := v.(type) {
		case *jsonv.Object:
			if v == nil {
				return false
			}
			for _, m := range v.Members() {
				stack = pushContainer(stack, m.Value)
			}
		case []any:
			if v == nil {
				return false
			}
			for _, e := range v {
				stack = pushContainer(stack, e)
			}
		}
	}
	return true
}

// pushContainer pushes v onto stack when it is a container: scalars need no visit, so a
// flat object's walk never grows the stack.
func pushContainer(stack []any, v any) []any {
	switch v.(type) {
	case *jsonv.Object, []any:
		return append(stack, v)
	}
	return stack
}

// ownedContent returns blocks in their wire shape, as content.ListValue does, when they are
// all text or reasoning blocks with valid UTF-8 text: values built here that share nothing
// mutable with blocks.
func ownedContent(blocks []content.Block) ([]any, bool) {
	out := make([]any, len(blocks))
	for i := range blocks {
		b := &blocks[i]
		var typ any
		switch b.Type {
		case content.TypeText:
			typ = content.TypeText
		case content.TypeReasoning:
			typ = content.TypeReasoning
		default:
			return nil, false
		}
		if !utf8.ValidString(b.Text) {
			return nil, false
		}
		// One allocation for the object and its two members (NewObjectCopy of a small object).
		out[i] = jsonv.NewObjectCopy([]jsonv.Member{{Name: "type", Value: typ}, {Name: "text", Value: b.Text}})
	}
	return out, true
}
