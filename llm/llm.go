// Package llm is dsh's model-facing vocabulary: the request an agent sends to a model, the
// streaming events a model answers with, the assembled response, and the Model interface
// that adapters (llm/openai for OpenAI-compatible endpoints such as DeepSeek, llm/script for
// scripted replies) implement.
//
// Conversations use the content package's messages and blocks: user messages carry text and
// tool-result blocks, assistant messages carry reasoning, text and tool-call blocks whose
// arguments are the raw JSON text the model emitted.
//
// A model call is a stream of events (iter.Seq2[Event, error]). Deltas arrive as the model
// produces them; a successful stream ends with one EventFinish carrying the assembled
// Response, a failed one ends with a non-nil error. Collect drains a stream into a Response.
package llm

import (
	"context"
	"fmt"
	"iter"

	"github.com/dsh-go/dsh/content"
)

// Model is a language model that answers a conversation with a stream of events.
//
// Stream performs one model call each time the returned sequence is iterated. The sequence
// yields delta events as they arrive and ends with either exactly one EventFinish event (with
// a nil error) or one non-nil error (with a zero Event); nothing follows either. Breaking out
// of the loop early cancels the call and releases its resources. Cancelling ctx ends the
// stream with an error for which errors.Is(err, context.Canceled) holds.
type Model interface {
	// Name is the model identifier requests are sent with, e.g. "deepseek-chat".
	Name() string
	// Provider names where the model runs, e.g. "deepseek" or "script", for logs and UIs.
	Provider() string
	// Stream starts a model call; see the interface documentation for the event protocol.
	Stream(ctx context.Context, req Request) iter.Seq2[Event, error]
}

// Request is everything a model call needs: the system prompt, the conversation so far, the
// tools the model may call and the sampling limits.
type Request struct {
	// System is the system prompt; empty means none.
	System string
	// Messages is the conversation in order: user messages (text, tool results) and the
	// model's earlier assistant messages (reasoning, text, tool calls). The slice and the
	// messages' blocks and sources may be shared with the session log
	// (session.DeriveMessages): a Model reads them and must not modify them in place.
	Messages []content.Message
	// Tools are the tool schemas the model may call, in the order it sees them.
	Tools []ToolSchema
	// MaxTokens caps the reply length; 0 leaves it to the server.
	MaxTokens int
	// Temperature sets the sampling temperature; nil leaves it to the server.
	Temperature *float64
	// Attachments resolves the image blocks of Messages (content.ImageRef.AttachmentID) to
	// their bytes, so an adapter can send the images themselves. Nil means images are sent
	// as text notes only.
	Attachments AttachmentReader
}

// AttachmentReader reads the bytes of a stored attachment by id; session.Attachments
// implements it. It must be safe for concurrent use.
type AttachmentReader interface {
	ReadAttachment(id string) (mediaType string, data []byte, err error)
}

// Clone returns a deep copy of r, so a recorded request cannot be changed through the
// caller's slices.
func (r Request) Clone() Request {
	r.Messages = content.CloneMessages(r.Messages)
	if r.Tools != nil {
		tools := make([]ToolSchema, len(r.Tools))
		copy(tools, r.Tools)
		r.Tools = tools
	}
	if r.Temperature != nil {
		t := *r.Temperature
		r.Temperature = &t
	}
	return r
}

// ToolSchema is the model-visible projection of a tool (docs/behaviour.md §3.1): its name, its
// description and the JSON Schema object of its arguments.
type ToolSchema struct {
	Name        string
	Description string
	// Parameters is the arguments' JSON Schema: a jsonv value (usually *jsonv.Object), or any
	// Go value jsonv.Snapshot or jsonv.FromGo accepts. Nil means an object with no properties.
	Parameters any
	// Strict asks for the API's strict tool mode, where it has one (OpenAI-compatible
	// "strict": true): the model's arguments are held to Parameters.
	Strict bool
}

// EventType says what an Event reports.
type EventType uint8

// Event types, in the order they can occur for one block: a block starts, receives deltas,
// and ends; the stream finishes after every block has ended.
const (
	// EventBlockStart opens the block at Index. Block holds its type and, for a tool call,
	// the ID and Name known so far.
	EventBlockStart EventType = iota + 1
	// EventReasoningDelta appends Text to the reasoning block at Index.
	EventReasoningDelta
	// EventTextDelta appends Text to the text block at Index.
	EventTextDelta
	// EventToolCallDelta appends Text to the arguments of the tool call at Index. Block
	// holds the call's type, ID and Name known so far (not its arguments).
	EventToolCallDelta
	// EventBlockEnd closes the block at Index; Block is the assembled block.
	EventBlockEnd
	// EventFinish ends a successful stream; Response is the assembled reply.
	EventFinish
)

var eventTypeNames = [...]string{
	EventBlockStart:     "block-start",
	EventReasoningDelta: "reasoning-delta",
	EventTextDelta:      "text-delta",
	EventToolCallDelta:  "tool-call-delta",
	EventBlockEnd:       "block-end",
	EventFinish:         "finish",
}

// String returns the event type's wire-style name, e.g. "text-delta".
func (t EventType) String() string {
	if int(t) < len(eventTypeNames) && eventTypeNames[t] != "" {
		return eventTypeNames[t]
	}
	return fmt.Sprintf("EventType(%d)", t)
}

// Event is one step of a model stream. Which fields are set depends on Type (see the
// EventType constants).
type Event struct {
	Type EventType
	// Index is the position of the block in the assistant message (all but EventFinish).
	Index int
	// Text is the appended text of a delta event.
	Text string
	// Block is the block's identity (EventBlockStart, EventToolCallDelta) or the assembled
	// block (EventBlockEnd).
	Block content.Block
	// Response is the assembled reply (EventFinish).
	Response *Response
}

// FinishReason says why a reply ended.
type FinishReason string

// Finish reasons. A Response returned without error has FinishStop, FinishToolCalls or
// FinishMaxTokens; Collect reports FinishError or FinishAborted together with the error.
const (
	FinishStop      FinishReason = "stop"       // the model finished its reply
	FinishToolCalls FinishReason = "tool-calls" // the model asks for tool calls
	FinishMaxTokens FinishReason = "max-tokens" // the reply hit the token limit
	FinishError     FinishReason = "error"      // the call failed
	FinishAborted   FinishReason = "aborted"    // the caller cancelled the call
)

// Usage counts the tokens of one model call. The counts are disjoint: InputTokens excludes
// prompt tokens served from the cache (CacheReadTokens); ReasoningTokens are part of
// OutputTokens, as the servers report them.
type Usage struct {
	InputTokens     int `json:"inputTokens"`
	OutputTokens    int `json:"outputTokens"`
	CacheReadTokens int `json:"cacheReadTokens,omitempty"`
	ReasoningTokens int `json:"reasoningTokens,omitempty"`
}

// Response is one assembled model reply.
type Response struct {
	// Message is the assistant message: reasoning, text and tool-call blocks in the order
	// they first appeared in the stream. Its ID is empty; the caller assigns one.
	Message content.Message
	// FinishReason says why the reply ended.
	FinishReason FinishReason
	// Usage is the token usage the server reported (zero when it reported none).
	Usage Usage
	// Model is the model that produced the reply, as the server named it when it did.
	Model string
}

// ToolCalls returns the reply's tool-call blocks in model order.
func (r *Response) ToolCalls() []content.Block {
	var calls []content.Block
	for _, b := range r.Message.Content {
		if b.Type == content.TypeToolCall {
			calls = append(calls, b)
		}
	}
	return calls
}

// Text returns the concatenated text blocks of the reply.
func (r *Response) Text() string {
	return joinBlocks(r.Message.Content, content.TypeText)
}

// Reasoning returns the concatenated reasoning blocks of the reply.
func (r *Response) Reasoning() string {
	return joinBlocks(r.Message.Content, content.TypeReasoning)
}

func joinBlocks(blocks []content.Block, typ string) string {
	var s string
	for _, b := range blocks {
		if b.Type == typ {
			s += b.Text
		}
	}
	return s
}
