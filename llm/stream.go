package llm

import (
	"context"
	"fmt"
	"iter"
	"strconv"

	"github.com/dsh-go/dsh/content"
)

// Assembler builds an assistant message from the deltas an adapter decodes and emits the
// matching events, so every adapter follows the same event protocol. Blocks are numbered in
// the order they first appear: one reasoning block, one text block and one block per tool
// call. Empty deltas open nothing and emit nothing.
//
// Each method returns false once the consumer has stopped (emit returned false); the adapter
// must then return without emitting anything else.
type Assembler struct {
	emit      func(Event) bool
	blocks    []content.Block
	bufs      [][]byte
	reasoning int
	text      int
	calls     map[int]int
}

// NewAssembler returns an assembler that hands each event to emit.
func NewAssembler(emit func(Event) bool) *Assembler {
	return &Assembler{emit: emit, reasoning: -1, text: -1}
}

// Len reports how many blocks have started.
func (a *Assembler) Len() int { return len(a.blocks) }

// Reasoning appends delta to the reasoning block, opening it first if needed.
func (a *Assembler) Reasoning(delta string) bool {
	return a.appendText(&a.reasoning, content.TypeReasoning, EventReasoningDelta, delta)
}

// Text appends delta to the text block, opening it first if needed.
func (a *Assembler) Text(delta string) bool {
	return a.appendText(&a.text, content.TypeText, EventTextDelta, delta)
}

func (a *Assembler) appendText(index *int, typ string, ev EventType, delta string) bool {
	if delta == "" {
		return true
	}
	if *index < 0 {
		*index = a.open(content.Block{Type: typ})
		if !a.emit(Event{Type: EventBlockStart, Index: *index, Block: a.blocks[*index]}) {
			return false
		}
	}
	a.bufs[*index] = append(a.bufs[*index], delta...)
	return a.emit(Event{Type: ev, Index: *index, Text: delta})
}

// ToolCall applies one tool-call delta. key identifies the call within the reply (the
// provider's tool-call index); the first delta of a key opens a new tool-call block. The
// first non-empty id and name of a call win; argsDelta is appended to its arguments.
func (a *Assembler) ToolCall(key int, id, name, argsDelta string) bool {
	i, ok := a.calls[key]
	if !ok {
		if a.calls == nil {
			a.calls = make(map[int]int)
		}
		i = a.open(content.Block{Type: content.TypeToolCall, ID: id, Name: name})
		a.calls[key] = i
		if !a.emit(Event{Type: EventBlockStart, Index: i, Block: a.blocks[i]}) {
			return false
		}
	} else {
		b := &a.blocks[i]
		if b.ID == "" {
			b.ID = id
		}
		if b.Name == "" {
			b.Name = name
		}
	}
	if argsDelta == "" {
		return true
	}
	a.bufs[i] = append(a.bufs[i], argsDelta...)
	b := a.blocks[i]
	return a.emit(Event{Type: EventToolCallDelta, Index: i, Text: argsDelta,
		Block: content.Block{Type: b.Type, ID: b.ID, Name: b.Name}})
}

func (a *Assembler) open(b content.Block) int {
	a.blocks = append(a.blocks, b)
	a.bufs = append(a.bufs, nil)
	return len(a.blocks) - 1
}

// Message returns the message assembled so far. Tool calls that never received an id keep
// an empty one until Finish.
func (a *Assembler) Message() content.Message {
	blocks := make([]content.Block, len(a.blocks))
	for i, b := range a.blocks {
		setBody(&b, string(a.bufs[i]))
		blocks[i] = b
	}
	return content.Message{Role: content.RoleAssistant, Content: blocks}
}

func setBody(b *content.Block, body string) {
	if b.Type == content.TypeToolCall {
		b.Arguments = body
	} else {
		b.Text = body
	}
}

// Finish ends the reply: it gives every tool call without an id a synthetic one ("call_"
// and its block index), emits EventBlockEnd for every block in order and then EventFinish,
// and returns the response. A "stop" reply that holds tool calls finishes as
// FinishToolCalls and a "tool-calls" reply without any as FinishStop, so the reason always
// agrees with the content.
func (a *Assembler) Finish(reason FinishReason, usage Usage, model string) (*Response, bool) {
	msg := a.Message()
	hasCalls := false
	for i := range msg.Content {
		b := &msg.Content[i]
		if b.Type != content.TypeToolCall {
			continue
		}
		hasCalls = true
		if b.ID == "" {
			b.ID = syntheticID(msg.Content, i)
		}
	}
	switch {
	case reason == FinishStop && hasCalls:
		reason = FinishToolCalls
	case reason == FinishToolCalls && !hasCalls:
		reason = FinishStop
	}
	resp := &Response{Message: msg, FinishReason: reason, Usage: usage, Model: model}
	for i, b := range msg.Content {
		if !a.emit(Event{Type: EventBlockEnd, Index: i, Block: b}) {
			return resp, false
		}
	}
	return resp, a.emit(Event{Type: EventFinish, Response: resp})
}

// syntheticID returns "call_<i>", suffixed until no other block of blocks uses it.
func syntheticID(blocks []content.Block, i int) string {
	base := "call_" + strconv.Itoa(i)
	id := base
	for n := 2; ; n++ {
		taken := false
		for j, b := range blocks {
			if j != i && b.Type == content.TypeToolCall && b.ID == id {
				taken = true
				break
			}
		}
		if !taken {
			return id
		}
		id = base + "_" + strconv.Itoa(n)
	}
}

// Generate makes one call to m and collects the reply; see Collect.
func Generate(ctx context.Context, m Model, req Request) (Response, error) {
	return Collect(m.Stream(ctx, req))
}

// Collect drains a model stream. On success it returns the Response of the EventFinish
// event. On failure it returns the error together with a Response holding the partial
// message streamed so far and FinishError (or FinishAborted when the call was cancelled).
// A stream that ends without EventFinish or breaks the event protocol is a
// CodeMalformedResponse error.
func Collect(events iter.Seq2[Event, error]) (Response, error) {
	var (
		blocks []content.Block
		bufs   [][]byte
	)
	partial := func(err error) (Response, error) {
		msg := content.Message{Role: content.RoleAssistant, Content: make([]content.Block, len(blocks))}
		for i, b := range blocks {
			if bufs[i] != nil {
				setBody(&b, string(bufs[i]))
			}
			msg.Content[i] = b
		}
		return Response{Message: msg, FinishReason: finishReasonOf(err)}, err
	}
	protocol := func(format string, args ...any) (Response, error) {
		return partial(&Error{Code: CodeMalformedResponse,
			Message: "model stream broke the event protocol: " + fmt.Sprintf(format, args...)})
	}
	for ev, err := range events {
		if err != nil {
			return partial(err)
		}
		switch ev.Type {
		case EventBlockStart:
			if ev.Index != len(blocks) {
				return protocol("block %d started, want block %d", ev.Index, len(blocks))
			}
			blocks = append(blocks, ev.Block)
			bufs = append(bufs, nil)
		case EventReasoningDelta, EventTextDelta, EventToolCallDelta:
			if ev.Index < 0 || ev.Index >= len(blocks) {
				return protocol("%s for block %d, which has not started", ev.Type, ev.Index)
			}
			if ev.Type == EventToolCallDelta {
				b := &blocks[ev.Index]
				if b.ID == "" {
					b.ID = ev.Block.ID
				}
				if b.Name == "" {
					b.Name = ev.Block.Name
				}
			}
			bufs[ev.Index] = append(bufs[ev.Index], ev.Text...)
		case EventBlockEnd:
			if ev.Index < 0 || ev.Index >= len(blocks) {
				return protocol("block %d ended, but it has not started", ev.Index)
			}
			blocks[ev.Index] = ev.Block
			bufs[ev.Index] = nil
		case EventFinish:
			if ev.Response == nil {
				return protocol("finish event without a response")
			}
			return *ev.Response, nil
		default:
			return protocol("unknown event type %d", ev.Type)
		}
	}
	return protocol("the stream ended without a finish event")
}
