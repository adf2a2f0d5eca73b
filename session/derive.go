package session

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
)

// DeriveMessages rebuilds the model history from a log: the messages of the
// user/message, assistant/message and tool/result events on the surface (SurfaceOp
// "append"), in log order. Every other event — tool/call, tool/code-dispatch-start,
// tool/code-dispatch, boundaries, audits — is ignored, and so is an assistant/message with
// no content (it only carries usage).
//
// The messages are shared and read-only: neither the slice nor the messages' blocks and
// sources may be modified in place (Clone a message to change it; appending to the slice or
// to a message's content is safe, as their capacities are their lengths). A log derives
// each surface event's message once, when it checks the event on append or load, and keeps
// it with the event; the first derivation over a log's events places those messages in one
// history that every later derivation over the same events, or over the log grown since,
// shares: it appends only the new messages and otherwise reads the events' own fields, no
// payload, and allocates nothing, so a long session's steps cost no garbage the size of the
// history. Events built by hand, a copy of a log's event whose Type or Data was changed, and
// any selection of events other than a log's run from its start (each event's Seq its
// index) are derived into a fresh slice instead (from their payloads when they keep no
// message).
//
// A malformed payload on the surface fails the derivation with an error naming the event's
// seq, exactly as the event's Decode function reports it.
func DeriveMessages(events []Event) ([]content.Message, error) {
	if msgs, ok := sharedHistory(events); ok {
		if len(msgs) == 0 {
			return nil, nil
		}
		return msgs, nil
	}
	// The counting pass reads only the events' own fields (a sequential scan of the slice),
	// never their payloads, so that sizing the result costs no pointer chasing.
	surface := 0
	for i := range events {
		if onSurface(&events[i]) {
			surface++
		}
	}
	if surface == 0 {
		return nil, nil
	}
	// d derives the messages of events without a kept message (hand-built ones), set up
	// when the first is met.
	var d deriver
	deriving := false
	// A kept message is copied into its slot whole (four pointer words). A message derived
	// from its payload is written field by field into its zeroed slot rather than built
	// apart and copied in: while the collector marks, copying a whole struct runs a bulk
	// write barrier over all its pointer words, where a field store pays only its own.
	out := make([]content.Message, surface)
	n := 0
	for i := range events {
		e := &events[i]
		k := surfaceOf(e)
		if k == kindNone {
			continue
		}
		dst := &out[n]
		if m := e.derived.of(e, k); m != nil {
			if usageOnly(e, m) {
				continue
			}
			*dst = *m
			n++
			continue
		}
		if !deriving {
			d, deriving = newDeriver(surface-n), true
		}
		if !d.message(e, dst) {
			// The direct decoding met something other than a well-formed payload: the
			// event's own decoder decides, and names what is wrong.
			m, err := decodeSurface(e)
			if err != nil {
				return nil, fmt.Errorf("session: derive messages: seq %d: %w", e.Seq, err)
			}
			*dst = m
		}
		if usageOnly(e, dst) {
			*dst = content.Message{} // the slot stays free
			continue
		}
		n++
	}
	if n == 0 {
		return nil, nil
	}
	return out[:n:n], nil
}

// derivation is the history message of one surface event, derived once when the event was
// checked, with what it was derived from: the event's Data and its type.
type derivation struct {
	// The fields a derivation over a placed history reads come first, within one cache
	// line; msg, copied only on the other paths, last.
	data *jsonv.Object
	// hist and pos place msg in the history of the events (see sharedHistory): hist is
	// set once, by the first DeriveMessages call that places it, and pos, msg's position
	// plus one (zero until set), right after.
	hist atomic.Pointer[history]
	pos  atomic.Int64
	kind surfaceKind
	msg  content.Message
}

// surfaceKind is a surface event's type in a byte, so that a kept derivation stays small.
type surfaceKind uint8

const (
	kindNone surfaceKind = iota
	kindUser
	kindAssistant
	kindToolResult
)

// kindOf returns the surfaceKind of an event type, kindNone for a type off the surface.
func kindOf(typ string) surfaceKind {
	switch typ {
	case TypeUserMessage:
		return kindUser
	case TypeAssistantMessage:
		return kindAssistant
	case TypeToolResult:
		return kindToolResult
	}
	return kindNone
}

// of returns the kept message of e, whose surfaceKind is k, or nil when there is none or
// e's type or Data is not what it was derived from.
func (v *derivation) of(e *Event, k surfaceKind) *content.Message {
	if v == nil {
		return nil
	}
	if o, ok := e.Data.(*jsonv.Object); !ok || o != v.data || k != v.kind {
		return nil
	}
	return &v.msg
}

// checkSurface checks the payload of a surface event (user/message, assistant/message,
// tool/result) by deriving its history message, and keeps the message in e. A payload the
// direct derivation refuses is checked by the event's decoder, which names what is wrong.
func checkSurface(e *Event) error {
	e.derived = nil
	if o, ok := e.Data.(*jsonv.Object); ok && o != nil {
		v := &derivation{data: o, kind: kindOf(e.Type)}
		d := deriver{exact: true}
		if d.derive(e, &v.msg) {
			e.derived = v
			return nil
		}
	}
	_, err := decodeSurface(e)
	return err
}

// onSurface reports whether e contributes a message to the model history.
func onSurface(e *Event) bool { return surfaceOf(e) != kindNone }

// surfaceOf returns the surfaceKind of e, kindNone when e contributes no message to the
// model history.
func surfaceOf(e *Event) surfaceKind {
	if e.SurfaceOp != SurfaceAppend {
		return kindNone
	}
	return kindOf(e.Type)
}

// decodeSurface derives the message of one surface event with the event's general decoder.
func decodeSurface(e *Event) (content.Message, error) {
	switch e.Type {
	case TypeUserMessage:
		p, err := DecodeUserMessage(*e)
		return p.Message, err
	case TypeAssistantMessage:
		p, err := DecodeAssistantMessage(*e)
		return p.Message, err
	default:
		p, err := DecodeToolResult(*e)
		if err != nil {
			return content.Message{}, err
		}
		return content.Message{
			ID:      p.MessageID,
			Role:    content.RoleUser,
			Source:  &content.Source{Kind: "tool", CallID: p.CallID},
			Content: []content.Block{content.ToolResult(p.CallID, p.Content, p.IsError)},
		}, nil
	}
}

// deriver decodes surface payloads straight into the derived messages: the blocks of all
// messages are carved out of shared chunks and the sources out of shared slabs, instead
// of one to four small allocations per event, and a tool result's wire message is read in
// place rather than decoded into a message that is then thrown away.
//
// Chunks and slabs are at most 32 KiB each (the largest size the allocator serves from
// its per-thread caches), never one allocation for the whole history: the allocator
// zeroes a chunk just before the deriver fills it, while the chunk is still in the
// processor's caches, and a guess that overshoots wastes at most part of one chunk. One
// allocation the size of the whole result would be zeroed in full up front (for a large
// log, megabytes written to memory and evicted from the caches before the first block
// is filled), and any capacity its guess overshot would be zeroed and faulted in for
// nothing.
//
// The messages' content slices share chunks, so one message kept after the others are
// dropped keeps its whole chunk alive: the price of not allocating per message.
//
// Its methods accept exactly what the payload decoders accept, with the same result; on
// anything else they report false and DeriveMessages asks the decoder, which either
// reports the error or (should the two ever disagree) derives the message itself.
type deriver struct {
	// exact gives every block list and source an allocation of its own, of exactly its
	// size: for the message of one event, which the event keeps (checkSurface).
	exact bool

	blocks     []content.Block  // the current chunk; its free part is blocks[len:cap]
	sources    []content.Source // the current slab; its free part is sources[len:cap]
	blocksLeft int              // the blocks the guess still expects past the current chunk
	sourceLeft int              // the surface events with no source slot yet
}

const (
	// chunkBytes bounds the size of one block chunk or source slab: 32 KiB, the largest
	// object the allocator serves from its per-thread caches.
	chunkBytes = 32 << 10
	// maxBlockChunk and maxSourceSlab are the most blocks and sources one chunk or slab
	// holds.
	maxBlockChunk = chunkBytes / int(unsafe.Sizeof(content.Block{}))
	maxSourceSlab = chunkBytes / int(unsafe.Sizeof(content.Source{}))
	// minBlockChunk is the smallest block chunk, so that a guess that falls short does
	// not leave the rest of the history to tiny chunks.
	minBlockChunk = 64
)

func newDeriver(surface int) deriver {
	// Two blocks a message is the first guess (a text, a tool result and its text, or a
	// few calls in one assistant message); it only sizes the chunks of a short history,
	// since a long one is carved out of full-size chunks anyway.
	return deriver{blocksLeft: 2 * surface, sourceLeft: surface}
}

// take returns n zeroed blocks of the current chunk, starting a new one when it is full.
// The full slice expression makes the result's capacity its length, so appending to one
// message's content reallocates instead of writing into the next message's blocks. It
// never returns nil, as content.ListFromValue never does.
func (d *deriver) take(n int) []content.Block {
	if d.exact {
		return make([]content.Block, n)
	}
	if free := cap(d.blocks) - len(d.blocks); n > free {
		// The free tail left behind goes back to the guess, so that an exact guess still
		// sizes the last chunk exactly.
		d.blocksLeft += free
		size := maxBlockChunk
		if d.blocksLeft > 0 {
			size = min(max(d.blocksLeft, minBlockChunk), maxBlockChunk)
		}
		size = max(size, n)
		d.blocksLeft -= size
		d.blocks = make([]content.Block, 0, size)
	}
	start := len(d.blocks)
	d.blocks = d.blocks[:start+n]
	return d.blocks[start : start+n : start+n]
}

// source returns the next zeroed slot of the current source slab, starting a new slab,
// as large as the surface events still without a slot allow, when it is full. A surface
// event takes at most one slot, so the slabs never hold more slots than surface events.
func (d *deriver) source() *content.Source {
	if d.exact {
		return new(content.Source)
	}
	if len(d.sources) == cap(d.sources) {
		size := min(max(d.sourceLeft, 1), maxSourceSlab)
		d.sourceLeft -= size
		d.sources = make([]content.Source, 0, size)
	}
	d.sources = d.sources[:len(d.sources)+1]
	return &d.sources[len(d.sources)-1]
}

// message derives e's message into dst, a zeroed message, reporting false when the payload
// is not well formed; dst is then zeroed again.
func (d *deriver) message(e *Event, dst *content.Message) bool {
	if !d.derive(e, dst) {
		*dst = content.Message{}
		return false
	}
	return true
}

// derive is message without the clean-up of dst on failure.
func (d *deriver) derive(e *Event, dst *content.Message) bool {
	if e.Type == TypeUserMessage {
		return d.wireMessage(e.Data, content.RoleUser, dst)
	}
	o, ok := e.Data.(*jsonv.Object)
	if !ok || o == nil || !turnStepValid(o) {
		return false
	}
	mv, _ := o.Get("message")
	if e.Type == TypeAssistantMessage {
		if v, ok := o.Get("interrupted"); ok && v != true {
			return false
		}
		return d.wireMessage(mv, content.RoleAssistant, dst)
	}
	if ev, ok := o.Get("error"); ok && !errorInfoValid(ev) {
		return false
	}
	return d.toolResult(mv, dst)
}

// turnStepValid reports whether o has the non-negative integer members turn and step.
func turnStepValid(o *jsonv.Object) bool {
	for _, name := range [...]string{"turn", "step"} {
		v, _ := o.Get(name)
		if n, ok := safeInt(v); !ok || n < 0 {
			return false
		}
	}
	return true
}

// errorInfoValid reports whether v is a tool result's {name, code} error identity.
func errorInfoValid(v any) bool {
	o, ok := v.(*jsonv.Object)
	if !ok || o == nil {
		return false
	}
	_, nameOK := stringValue(o, "name")
	_, codeOK := stringValue(o, "code")
	return nameOK && codeOK
}

// wireMessage derives a message {id, role, source?, content} with the given role into dst,
// as messageFromValue decodes it.
func (d *deriver) wireMessage(v any, role content.Role, dst *content.Message) bool {
	o, id, ok := messageHead(v, role)
	if !ok {
		return false
	}
	dst.ID, dst.Role = id, role
	if sv, ok := o.Get("source"); ok {
		// A slot taken by a message that then fails stays unused: the slabs hold one slot
		// per surface event, and the decoder's message has a source of its own.
		src := d.source()
		if !sourceFrom(sv, src) {
			return false
		}
		dst.Source = src
	}
	cv, ok := o.Get("content")
	if !ok {
		return false
	}
	dst.Content, ok = d.list(cv)
	return ok
}

// messageHead reads what every wire message starts with: an object with a non-empty id and
// the given role. It returns the object and the id.
func messageHead(v any, role content.Role) (*jsonv.Object, string, bool) {
	o, ok := v.(*jsonv.Object)
	if !ok || o == nil {
		return nil, "", false
	}
	id, ok := stringValue(o, "id")
	if !ok || id == "" {
		return nil, "", false
	}
	if r, ok := stringValue(o, "role"); !ok || content.Role(r) != role {
		return nil, "", false
	}
	return o, id, true
}

// sourceFrom reads a message source {kind, plugin?, form?, summary?, callId?} into s, a
// zeroed source, setting only the members present; on false s may be partly set.
func sourceFrom(v any, s *content.Source) bool {
	o, ok := v.(*jsonv.Object)
	if !ok || o == nil {
		return false
	}
	if s.Kind, ok = stringValue(o, "kind"); !ok || s.Kind == "" {
		return false
	}
	for _, f := range [...]struct {
		name string
		dst  *string
	}{{"plugin", &s.Plugin}, {"form", &s.Form}, {"summary", &s.Summary}, {"callId", &s.CallID}} {
		if v, ok := o.Get(f.name); ok {
			if *f.dst, ok = v.(string); !ok {
				return false
			}
		}
	}
	return true
}

// toolResult derives the message of a tool/result from its wire message: a user-role
// message from a tool source holding exactly one tool-result block for the same call.
// The derived message keeps only the source's kind and call id, as DecodeToolResult does.
func (d *deriver) toolResult(v any, dst *content.Message) bool {
	o, id, ok := messageHead(v, content.RoleUser)
	if !ok {
		return false
	}
	sv, _ := o.Get("source")
	var s content.Source // on the stack: its stores need no write barrier
	if !sourceFrom(sv, &s) || s.Kind != "tool" || s.CallID == "" {
		return false
	}
	cv, _ := o.Get("content")
	arr, ok := cv.([]any)
	if !ok || len(arr) != 1 {
		return false
	}
	blocks := d.take(1)
	if !d.block(arr[0], &blocks[0]) {
		return false
	}
	if b := &blocks[0]; b.Type != content.TypeToolResult || b.ToolCallID != s.CallID {
		return false
	}
	src := d.source()
	src.Kind, src.CallID = "tool", s.CallID
	dst.ID, dst.Role, dst.Source, dst.Content = id, content.RoleUser, src, blocks
	return true
}

// list derives a block list, as content.ListFromValue decodes it.
func (d *deriver) list(v any) ([]content.Block, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	blocks := d.take(len(arr))
	for i, x := range arr {
		if !d.block(x, &blocks[i]) {
			return nil, false
		}
	}
	return blocks, true
}

// block derives one block into dst, as content.FromValue decodes it: the common types
// directly, the rest (images, blocks of unknown types) through content.FromValue. dst is a
// zeroed block of a fresh chunk: the common types set only their own fields, so that a
// block costs a few pointer stores rather than a copy of the whole 144-byte struct (which,
// while the collector marks, runs a bulk write barrier over every pointer field).
func (d *deriver) block(v any, dst *content.Block) bool {
	o, ok := v.(*jsonv.Object)
	if !ok || o == nil {
		return false
	}
	typ, ok := stringValue(o, "type")
	if !ok {
		return false
	}
	switch typ {
	case content.TypeText, content.TypeReasoning:
		text, ok := stringValue(o, "text")
		dst.Type, dst.Text = typ, text
		return ok
	case content.TypeToolCall:
		id, idOK := stringValue(o, "id")
		name, nameOK := stringValue(o, "name")
		args, argsOK := stringValue(o, "arguments")
		dst.Type, dst.ID, dst.Name, dst.Arguments = typ, id, name, args
		return idOK && nameOK && argsOK
	case content.TypeToolResult:
		callID, ok := stringValue(o, "toolCallId")
		if !ok {
			return false
		}
		cv, ok := o.Get("content")
		if !ok {
			return false
		}
		inner, ok := d.list(cv)
		if !ok {
			return false
		}
		var isError bool
		if ev, ok := o.Get("isError"); ok {
			if isError, ok = ev.(bool); !ok {
				return false
			}
		}
		dst.Type, dst.ToolCallID, dst.Content, dst.IsError = typ, callID, inner, isError
		return true
	default:
		b, err := content.FromValue(o)
		*dst = b
		return err == nil
	}
}

// stringValue returns the string member name of o and whether it is present and a string.
func stringValue(o *jsonv.Object, name string) (string, bool) {
	v, _ := o.Get(name)
	s, ok := v.(string)
	return s, ok
}
