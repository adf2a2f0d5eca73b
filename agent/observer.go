package agent

import (
	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// Observer receives the progress of a turn as it happens, for user interfaces. Every field
// is optional. The callbacks run synchronously on the goroutine running the turn, in the
// order of the log (deltas before the message they build), so they must return quickly;
// the values they receive are theirs to keep.
type Observer struct {
	// TurnStart and TurnEnd bracket a turn.
	TurnStart func(turn int)
	TurnEnd   func(turn int, reason session.EndReason)
	// StepStart and StepEnd bracket a step.
	StepStart func(turn, step int)
	StepEnd   func(turn, step int)
	// UserMessage reports a user-role message entering the history: the user's input and
	// the contexts tools deferred.
	UserMessage func(m content.Message)
	// ReasoningDelta and TextDelta stream the reply as the model produces it.
	ReasoningDelta func(text string)
	TextDelta      func(text string)
	// AssistantMessage reports the assembled reply once it is logged.
	AssistantMessage func(m content.Message)
	// ToolCall reports a call about to start, with its pending card.
	ToolCall func(c ToolCallEvent)
	// ToolResult reports a committed result, with its completed card.
	ToolResult func(r ToolResultEvent)
}

// ToolCallEvent is a call about to start.
type ToolCallEvent struct {
	Turn, Step int
	CallID     string
	Name       string
	// Arguments is the model's raw argument text.
	Arguments string
	// Card is the pending card (the generic one when the tool presents none).
	Card card.Call
}

// ToolResultEvent is a committed result.
type ToolResultEvent struct {
	Turn, Step int
	CallID     string
	Name       string
	// Result is the final result (a private copy).
	Result *tool.Result
	// Card is the completed card (the generic one when the tool presents none).
	Card card.Result
}
