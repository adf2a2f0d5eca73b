package session

import (
	"errors"
	"fmt"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
)

// This file holds the typed payloads of the events the agent loop and Code Mode append
// (docs/behaviour.md §9.1), each with an Event method building the event in its exact wire shape and a
// Decode function reading it back. Member order in the built data is the documented order.

// ErrorInfo is the durable identity of a coded tool failure: {name, code}.
type ErrorInfo struct {
	Name string
	Code string
}

// TurnStart opens turn Turn: data {turn}.
type TurnStart struct {
	Turn int
}

// Event returns the turn/start event.
func (p TurnStart) Event() Event {
	return Event{Type: TypeTurnStart, Data: jsonv.NewObject(jsonv.Member{Name: "turn", Value: float64(p.Turn)})}
}

// DecodeTurnStart reads a turn/start event.
func DecodeTurnStart(e Event) (TurnStart, error) {
	o, err := payloadObject(e, TypeTurnStart)
	if err != nil {
		return TurnStart{}, err
	}
	turn, err := intMember(o, "turn")
	return TurnStart{Turn: turn}, wrapPayload(e.Type, err)
}

// Turn end reason kinds. The set is open: a plugin may end a turn with its own kind.
const (
	EndCompleted   = "completed"
	EndAborted     = "aborted"
	EndBlocked     = "blocked"
	EndError       = "error"
	EndMaxTokens   = "max-tokens"
	EndInterrupted = "interrupted" // written only by crash recovery
)

// EndReason says why a turn ended: {kind} plus, for "aborted", the cancellation cause
// {reason:{kind, reason?}} and, for "error", the failure {error:{message, code}}.
type EndReason struct {
	// Kind is one of the End* constants or a plugin's own kind.
	Kind string
	// Cause is who cancelled an aborted turn: "user", "parent", "hook" or "disposed".
	// Empty leaves the reason member out.
	Cause string
	// CauseReason is a hook's explanation when Cause is "hook".
	CauseReason string
	// Error is the failure of an "error" turn.
	Error *Failure
}

// Failure is a structured turn failure: {message, code}.
type Failure struct {
	Message string
	Code    string
}

func (r EndReason) value() *jsonv.Object {
	o := jsonv.NewObject(jsonv.Member{Name: "kind", Value: r.Kind})
	if r.Cause != "" {
		c := jsonv.NewObject(jsonv.Member{Name: "kind", Value: r.Cause})
		if r.CauseReason != "" {
			c.Set("reason", r.CauseReason)
		}
		o.Set("reason", c)
	}
	if r.Error != nil {
		o.Set("error", jsonv.NewObject(
			jsonv.Member{Name: "message", Value: r.Error.Message},
			jsonv.Member{Name: "code", Value: r.Error.Code},
		))
	}
	return o
}

// TurnEnd closes turn Turn: data {turn, reason}.
type TurnEnd struct {
	Turn   int
	Reason EndReason
}

// Event returns the turn/end event.
func (p TurnEnd) Event() Event {
	return Event{Type: TypeTurnEnd, Data: jsonv.NewObject(
		jsonv.Member{Name: "turn", Value: float64(p.Turn)},
		jsonv.Member{Name: "reason", Value: p.Reason.value()},
	)}
}

// DecodeTurnEnd reads a turn/end event.
func DecodeTurnEnd(e Event) (TurnEnd, error) {
	o, err := payloadObject(e, TypeTurnEnd)
	if err != nil {
		return TurnEnd{}, err
	}
	var p TurnEnd
	if p.Turn, err = intMember(o, "turn"); err != nil {
		return TurnEnd{}, wrapPayload(e.Type, err)
	}
	r, err := objectMember(o, "reason")
	if err != nil {
		return TurnEnd{}, wrapPayload(e.Type, err)
	}
	if p.Reason.Kind, err = stringMember(r, "kind", true); err != nil {
		return TurnEnd{}, wrapPayload(e.Type, fmt.Errorf("reason: %w", err))
	}
	if c, ok := r.Get("reason"); ok {
		if co, ok := c.(*jsonv.Object); ok {
			p.Reason.Cause, _ = optStringMember(co, "kind")
			p.Reason.CauseReason, _ = optStringMember(co, "reason")
		}
	}
	if f, ok := r.Get("error"); ok {
		if fo, ok := f.(*jsonv.Object); ok {
			p.Reason.Error = &Failure{}
			p.Reason.Error.Message, _ = optStringMember(fo, "message")
			p.Reason.Error.Code, _ = optStringMember(fo, "code")
		}
	}
	return p, nil
}

// StepStart opens step Step of turn Turn: data {turn, step}.
type StepStart struct {
	Turn, Step int
}

// Event returns the step/start event.
func (p StepStart) Event() Event { return Event{Type: TypeStepStart, Data: turnStep(p.Turn, p.Step)} }

// StepEnd closes step Step of turn Turn: data {turn, step}.
type StepEnd struct {
	Turn, Step int
}

// Event returns the step/end event.
func (p StepEnd) Event() Event { return Event{Type: TypeStepEnd, Data: turnStep(p.Turn, p.Step)} }

func turnStep(turn, step int) *jsonv.Object {
	return jsonv.NewObject(
		jsonv.Member{Name: "turn", Value: float64(turn)},
		jsonv.Member{Name: "step", Value: float64(step)},
	)
}

// DecodeStepStart reads a step/start event.
func DecodeStepStart(e Event) (StepStart, error) {
	t, s, err := decodeTurnStep(e, TypeStepStart)
	return StepStart{Turn: t, Step: s}, err
}

// DecodeStepEnd reads a step/end event.
func DecodeStepEnd(e Event) (StepEnd, error) {
	t, s, err := decodeTurnStep(e, TypeStepEnd)
	return StepEnd{Turn: t, Step: s}, err
}

func decodeTurnStep(e Event, typ string) (turn, step int, err error) {
	o, err := payloadObject(e, typ)
	if err != nil {
		return 0, 0, err
	}
	if turn, err = intMember(o, "turn"); err != nil {
		return 0, 0, wrapPayload(typ, err)
	}
	if step, err = intMember(o, "step"); err != nil {
		return 0, 0, wrapPayload(typ, err)
	}
	return turn, step, nil
}

// UserMessage is a user-role message on the model-visible surface: a human prompt or an
// injected context (docs/behaviour.md §8.6). Its data is the message itself {id, role, source, content};
// the event is a surface append.
type UserMessage struct {
	Message content.Message
}

// Event returns the user/message event. An empty message id is filled with NewMessageID
// and the role is always "user".
func (p UserMessage) Event() Event {
	m := p.Message
	if m.ID == "" {
		m.ID = NewMessageID()
	}
	m.Role = content.RoleUser
	return Event{Type: TypeUserMessage, Data: messageValue(m), SurfaceOp: SurfaceAppend}
}

// DecodeUserMessage reads a user/message event.
func DecodeUserMessage(e Event) (UserMessage, error) {
	if e.Type != TypeUserMessage {
		return UserMessage{}, typeMismatch(e, TypeUserMessage)
	}
	m, err := messageFromValue(e.Data, content.RoleUser)
	if err != nil {
		return UserMessage{}, wrapPayload(e.Type, err)
	}
	return UserMessage{Message: m}, nil
}

// AssistantMessage is the assembled assistant message of one step: data {turn, step,
// message, usage?, interrupted?}; a surface append citing SourceEventSeqs (the chunk
// events it was built from) when known.
type AssistantMessage struct {
	Turn, Step int
	// Message is the assistant message; its tool-call blocks are the calls the loop runs.
	Message content.Message
	// Usage is the adapter's token accounting (any JSON value); nil leaves it out.
	Usage any
	// Interrupted marks the delivered prefix of a reply cancelled mid-stream.
	Interrupted bool
	// SourceEventSeqs optionally cites the assistant/chunk events of the reply.
	SourceEventSeqs []int64
}

// Event returns the assistant/message event. An empty message id is filled with
// NewMessageID and the role is always "assistant".
func (p AssistantMessage) Event() Event {
	m := p.Message
	if m.ID == "" {
		m.ID = NewMessageID()
	}
	m.Role = content.RoleAssistant
	o := turnStep(p.Turn, p.Step)
	o.Set("message", messageValue(m))
	if p.Usage != nil {
		o.Set("usage", p.Usage)
	}
	if p.Interrupted {
		o.Set("interrupted", true)
	}
	return Event{Type: TypeAssistantMessage, Data: o, SurfaceOp: SurfaceAppend, SourceEventSeqs: p.SourceEventSeqs}
}

// DecodeAssistantMessage reads an assistant/message event.
func DecodeAssistantMessage(e Event) (AssistantMessage, error) {
	o, err := payloadObject(e, TypeAssistantMessage)
	if err != nil {
		return AssistantMessage{}, err
	}
	p := AssistantMessage{SourceEventSeqs: e.SourceEventSeqs}
	if p.Turn, p.Step, err = decodeTurnStep(e, TypeAssistantMessage); err != nil {
		return AssistantMessage{}, err
	}
	mv, _ := o.Get("message")
	if p.Message, err = messageFromValue(mv, content.RoleAssistant); err != nil {
		return AssistantMessage{}, wrapPayload(e.Type, fmt.Errorf("message: %w", err))
	}
	p.Usage, _ = o.Get("usage")
	if v, ok := o.Get("interrupted"); ok {
		if v != true {
			return AssistantMessage{}, wrapPayload(e.Type, errors.New(`"interrupted" must be true when present`))
		}
		p.Interrupted = true
	}
	return p, nil
}

// ToolCall records that a call is about to start (docs/behaviour.md §8.3, §9.1): data {turn, step,
// callId, name, arguments} where arguments is the model's raw argument text. It is
// log-only; the loop appends it durably so the log never claims less than happened.
type ToolCall struct {
	Turn, Step int
	CallID     string
	Name       string
	Arguments  string
}

// Event returns the tool/call event.
func (p ToolCall) Event() Event {
	o := turnStep(p.Turn, p.Step)
	o.Set("callId", p.CallID)
	o.Set("name", p.Name)
	o.Set("arguments", p.Arguments)
	return Event{Type: TypeToolCall, Data: o}
}

// DecodeToolCall reads a tool/call event.
func DecodeToolCall(e Event) (ToolCall, error) {
	o, err := payloadObject(e, TypeToolCall)
	if err != nil {
		return ToolCall{}, err
	}
	var p ToolCall
	if p.Turn, p.Step, err = decodeTurnStep(e, TypeToolCall); err != nil {
		return ToolCall{}, err
	}
	if p.CallID, err = stringMember(o, "callId", true); err != nil {
		return ToolCall{}, wrapPayload(e.Type, err)
	}
	if p.Name, err = stringMember(o, "name", false); err != nil {
		return ToolCall{}, wrapPayload(e.Type, err)
	}
	if p.Arguments, err = stringMember(o, "arguments", false); err != nil {
		return ToolCall{}, wrapPayload(e.Type, err)
	}
	return p, nil
}

// ToolResult is a committed call result (docs/behaviour.md §9.1): data {turn, step, message, error?,
// meta?} with message {id, role:"user", source:{kind:"tool", callId},
// content:[{type:"tool-result", toolCallId, content, isError}]}; a surface append whose
// SourceEventSeqs cite the matching tool/call. The canonical value is never persisted.
type ToolResult struct {
	Turn, Step int
	// MessageID identifies the result message; Event fills an empty one.
	MessageID string
	// CallID is the model's call id.
	CallID string
	// Content is the model-facing result content.
	Content []content.Block
	// IsError is the result's outcome.
	IsError bool
	// Error is the coded failure identity (result.error.info); nil leaves it out.
	Error *ErrorInfo
	// Meta is the tool's presentation payload (any JSON value); nil leaves it out.
	Meta any
	// SourceEventSeqs is [seq of the tool/call] (nil only for a call that never started).
	SourceEventSeqs []int64
}

// Event returns the tool/result event.
func (p ToolResult) Event() Event {
	id := p.MessageID
	if id == "" {
		id = NewMessageID()
	}
	block := jsonv.NewObject(
		jsonv.Member{Name: "type", Value: content.TypeToolResult},
		jsonv.Member{Name: "toolCallId", Value: p.CallID},
		jsonv.Member{Name: "content", Value: content.ListValue(p.Content)},
		jsonv.Member{Name: "isError", Value: p.IsError},
	)
	msg := jsonv.NewObject(
		jsonv.Member{Name: "id", Value: id},
		jsonv.Member{Name: "role", Value: string(content.RoleUser)},
		jsonv.Member{Name: "source", Value: jsonv.NewObject(
			jsonv.Member{Name: "kind", Value: "tool"},
			jsonv.Member{Name: "callId", Value: p.CallID},
		)},
		jsonv.Member{Name: "content", Value: []any{block}},
	)
	o := turnStep(p.Turn, p.Step)
	o.Set("message", msg)
	if p.Error != nil {
		o.Set("error", jsonv.NewObject(
			jsonv.Member{Name: "name", Value: p.Error.Name},
			jsonv.Member{Name: "code", Value: p.Error.Code},
		))
	}
	if p.Meta != nil {
		o.Set("meta", p.Meta)
	}
	return Event{Type: TypeToolResult, Data: o, SurfaceOp: SurfaceAppend, SourceEventSeqs: p.SourceEventSeqs}
}

// DecodeToolResult reads a tool/result event, checking that the message is a user-role
// message from a tool source holding exactly one tool-result block for the same call.
func DecodeToolResult(e Event) (ToolResult, error) {
	o, err := payloadObject(e, TypeToolResult)
	if err != nil {
		return ToolResult{}, err
	}
	p := ToolResult{SourceEventSeqs: e.SourceEventSeqs}
	if p.Turn, p.Step, err = decodeTurnStep(e, TypeToolResult); err != nil {
		return ToolResult{}, err
	}
	mv, _ := o.Get("message")
	m, err := messageFromValue(mv, content.RoleUser)
	if err != nil {
		return ToolResult{}, wrapPayload(e.Type, fmt.Errorf("message: %w", err))
	}
	if m.Source == nil || m.Source.Kind != "tool" || m.Source.CallID == "" {
		return ToolResult{}, wrapPayload(e.Type, errors.New("message must have a tool source with a callId"))
	}
	if len(m.Content) != 1 || m.Content[0].Type != content.TypeToolResult {
		return ToolResult{}, wrapPayload(e.Type, errors.New("message must contain one tool-result block"))
	}
	b := m.Content[0]
	if b.ToolCallID != m.Source.CallID {
		return ToolResult{}, wrapPayload(e.Type, errors.New("message has mismatched tool call ids"))
	}
	p.MessageID, p.CallID, p.Content, p.IsError = m.ID, b.ToolCallID, b.Content, b.IsError
	if ev, ok := o.Get("error"); ok {
		eo, ok := ev.(*jsonv.Object)
		if !ok {
			return ToolResult{}, wrapPayload(e.Type, errors.New(`"error" must be an object`))
		}
		p.Error = &ErrorInfo{}
		if p.Error.Name, err = stringMember(eo, "name", false); err != nil {
			return ToolResult{}, wrapPayload(e.Type, fmt.Errorf("error: %w", err))
		}
		if p.Error.Code, err = stringMember(eo, "code", false); err != nil {
			return ToolResult{}, wrapPayload(e.Type, fmt.Errorf("error: %w", err))
		}
	}
	p.Meta, _ = o.Get("meta")
	return p, nil
}

// CodeDispatchStart records one Code Mode sub-dispatch starting (log-only): data
// {rootCallId, parentCallId, subCallId, name, arguments} with the JSON-normalized
// arguments the sub-call receives.
type CodeDispatchStart struct {
	RootCallID, ParentCallID, SubCallID string
	Name                                string
	Arguments                           any
}

// Event returns the tool/code-dispatch-start event.
func (p CodeDispatchStart) Event() Event {
	return Event{Type: TypeCodeDispatchStart, Data: dispatchValue(p)}
}

func dispatchValue(p CodeDispatchStart) *jsonv.Object {
	return startObject(p.RootCallID, p.ParentCallID, p.SubCallID, p.Name, p.Arguments)
}

// startObject is a tool/code-dispatch-start event's data. The ids and the name are taken
// as values so that a caller can pass ones it boxed before (see DispatchBoxes).
func startObject(root, parent, sub, name, args any) *jsonv.Object {
	return jsonv.NewObject(
		jsonv.Member{Name: "rootCallId", Value: root},
		jsonv.Member{Name: "parentCallId", Value: parent},
		jsonv.Member{Name: "subCallId", Value: sub},
		jsonv.Member{Name: "name", Value: name},
		jsonv.Member{Name: "arguments", Value: args},
	)
}

// DecodeCodeDispatchStart reads a tool/code-dispatch-start event.
func DecodeCodeDispatchStart(e Event) (CodeDispatchStart, error) {
	o, err := payloadObject(e, TypeCodeDispatchStart)
	if err != nil {
		return CodeDispatchStart{}, err
	}
	p, err := decodeDispatch(o)
	return p, wrapPayload(e.Type, err)
}

func decodeDispatch(o *jsonv.Object) (CodeDispatchStart, error) {
	var p CodeDispatchStart
	var err error
	if p.RootCallID, err = stringMember(o, "rootCallId", true); err != nil {
		return p, err
	}
	if p.ParentCallID, err = stringMember(o, "parentCallId", true); err != nil {
		return p, err
	}
	if p.SubCallID, err = stringMember(o, "subCallId", true); err != nil {
		return p, err
	}
	if p.Name, err = stringMember(o, "name", false); err != nil {
		return p, err
	}
	args, ok := o.Get("arguments")
	if !ok {
		return p, errors.New(`missing "arguments"`)
	}
	p.Arguments = args
	return p, nil
}

// CodeDispatch records one Code Mode sub-dispatch settling (log-only): the start's members
// plus {isError, content}, the sub-call's model-facing outcome.
type CodeDispatch struct {
	RootCallID, ParentCallID, SubCallID string
	Name                                string
	Arguments                           any
	IsError                             bool
	Content                             []content.Block
}

// Event returns the tool/code-dispatch event.
func (p CodeDispatch) Event() Event {
	return Event{Type: TypeCodeDispatch, Data: p.object(content.ListValue(p.Content))}
}

// object is the event's data with the content value blocks. It is built in one piece: one
// members slice, no regrowth (an event for every sub-call).
func (p CodeDispatch) object(blocks any) *jsonv.Object {
	return settleObject(p.RootCallID, p.ParentCallID, p.SubCallID, p.Name, p.Arguments, p.IsError, blocks)
}

// settleObject is a tool/code-dispatch event's data; the ids and the name are values, as
// for startObject.
func settleObject(root, parent, sub, name, args any, isError bool, blocks any) *jsonv.Object {
	return jsonv.NewObject(
		jsonv.Member{Name: "rootCallId", Value: root},
		jsonv.Member{Name: "parentCallId", Value: parent},
		jsonv.Member{Name: "subCallId", Value: sub},
		jsonv.Member{Name: "name", Value: name},
		jsonv.Member{Name: "arguments", Value: args},
		jsonv.Member{Name: "isError", Value: isError},
		jsonv.Member{Name: "content", Value: blocks},
	)
}

// DecodeCodeDispatch reads a tool/code-dispatch event.
func DecodeCodeDispatch(e Event) (CodeDispatch, error) {
	o, err := payloadObject(e, TypeCodeDispatch)
	if err != nil {
		return CodeDispatch{}, err
	}
	s, err := decodeDispatch(o)
	if err != nil {
		return CodeDispatch{}, wrapPayload(e.Type, err)
	}
	p := CodeDispatch{RootCallID: s.RootCallID, ParentCallID: s.ParentCallID, SubCallID: s.SubCallID, Name: s.Name, Arguments: s.Arguments}
	ie, _ := o.Get("isError")
	isErr, ok := ie.(bool)
	if !ok {
		return CodeDispatch{}, wrapPayload(e.Type, errors.New(`"isError" must be a boolean`))
	}
	p.IsError = isErr
	cv, _ := o.Get("content")
	if p.Content, err = content.ListFromValue(cv); err != nil {
		return CodeDispatch{}, wrapPayload(e.Type, err)
	}
	return p, nil
}

// ApprovalAsked records an approval question (log-only audit): data {id, toolName,
// callId?, reason?}.
type ApprovalAsked struct {
	ID       string
	ToolName string
	CallID   string // empty leaves it out
	Reason   string // empty leaves it out
}

// Event returns the approval/asked event.
func (p ApprovalAsked) Event() Event {
	o := jsonv.NewObject(
		jsonv.Member{Name: "id", Value: p.ID},
		jsonv.Member{Name: "toolName", Value: p.ToolName},
	)
	if p.CallID != "" {
		o.Set("callId", p.CallID)
	}
	if p.Reason != "" {
		o.Set("reason", p.Reason)
	}
	return Event{Type: TypeApprovalAsked, Data: o}
}

// DecodeApprovalAsked reads an approval/asked event.
func DecodeApprovalAsked(e Event) (ApprovalAsked, error) {
	o, err := payloadObject(e, TypeApprovalAsked)
	if err != nil {
		return ApprovalAsked{}, err
	}
	var p ApprovalAsked
	if p.ID, err = stringMember(o, "id", true); err != nil {
		return ApprovalAsked{}, wrapPayload(e.Type, err)
	}
	if p.ToolName, err = stringMember(o, "toolName", false); err != nil {
		return ApprovalAsked{}, wrapPayload(e.Type, err)
	}
	if p.CallID, err = optStringMember(o, "callId"); err != nil {
		return ApprovalAsked{}, wrapPayload(e.Type, err)
	}
	if p.Reason, err = optStringMember(o, "reason"); err != nil {
		return ApprovalAsked{}, wrapPayload(e.Type, err)
	}
	return p, nil
}

// Approval outcomes (docs/behaviour.md §7).
const (
	ApprovalAllowedOnce = "allowed-once"
	ApprovalRejected    = "rejected"
	ApprovalCancelled   = "cancelled"
	ApprovalUnavailable = "unavailable"
)

// ApprovalDecided records the outcome of an earlier approval/asked with the same ID
// (log-only audit): data {id, outcome, answer?, feedback?, rule?}. Answer is the exact
// answer that produced the outcome (package approval's Answer* values: "yes", "no",
// "always-session", "always-saved", "no-with-feedback", …), Feedback the text a person gave
// with a rejection, Rule the allow rule an "always" answer saved.
type ApprovalDecided struct {
	ID       string
	Outcome  string
	Answer   string // empty leaves it out
	Feedback string // empty leaves it out
	Rule     string // empty leaves it out
}

// Event returns the approval/decided event.
func (p ApprovalDecided) Event() Event {
	o := jsonv.NewObject(
		jsonv.Member{Name: "id", Value: p.ID},
		jsonv.Member{Name: "outcome", Value: p.Outcome},
	)
	if p.Answer != "" {
		o.Set("answer", p.Answer)
	}
	if p.Feedback != "" {
		o.Set("feedback", p.Feedback)
	}
	if p.Rule != "" {
		o.Set("rule", p.Rule)
	}
	return Event{Type: TypeApprovalDecided, Data: o}
}

// DecodeApprovalDecided reads an approval/decided event.
func DecodeApprovalDecided(e Event) (ApprovalDecided, error) {
	o, err := payloadObject(e, TypeApprovalDecided)
	if err != nil {
		return ApprovalDecided{}, err
	}
	var p ApprovalDecided
	if p.ID, err = stringMember(o, "id", true); err != nil {
		return ApprovalDecided{}, wrapPayload(e.Type, err)
	}
	if p.Outcome, err = stringMember(o, "outcome", true); err != nil {
		return ApprovalDecided{}, wrapPayload(e.Type, err)
	}
	if p.Answer, err = optStringMember(o, "answer"); err != nil {
		return ApprovalDecided{}, wrapPayload(e.Type, err)
	}
	if p.Feedback, err = optStringMember(o, "feedback"); err != nil {
		return ApprovalDecided{}, wrapPayload(e.Type, err)
	}
	if p.Rule, err = optStringMember(o, "rule"); err != nil {
		return ApprovalDecided{}, wrapPayload(e.Type, err)
	}
	return p, nil
}

// checkPayload checks the data shape of the core event types, and keeps the history
// message of a surface event it derived on the way (checkSurface).
func checkPayload(e *Event) error {
	var err error
	switch e.Type {
	case TypeTurnStart:
		_, err = DecodeTurnStart(*e)
	case TypeTurnEnd:
		_, err = DecodeTurnEnd(*e)
	case TypeStepStart:
		_, err = DecodeStepStart(*e)
	case TypeStepEnd:
		_, err = DecodeStepEnd(*e)
	case TypeUserMessage, TypeAssistantMessage, TypeToolResult:
		err = checkSurface(e)
	case TypeToolCall:
		_, err = DecodeToolCall(*e)
	case TypeCodeDispatchStart:
		_, err = DecodeCodeDispatchStart(*e)
	case TypeCodeDispatch:
		_, err = DecodeCodeDispatch(*e)
	case TypeApprovalAsked:
		_, err = DecodeApprovalAsked(*e)
	case TypeApprovalDecided:
		_, err = DecodeApprovalDecided(*e)
	}
	var pe *payloadError
	if errors.As(err, &pe) {
		return pe.Err // checkEvent adds the event type itself
	}
	return err
}

// messageValue returns m in its wire shape {id, role, source?, content}.
func messageValue(m content.Message) *jsonv.Object {
	o := jsonv.NewObject(
		jsonv.Member{Name: "id", Value: m.ID},
		jsonv.Member{Name: "role", Value: string(m.Role)},
	)
	if m.Source != nil {
		o.Set("source", sourceValue(m.Source))
	}
	o.Set("content", content.ListValue(m.Content))
	return o
}

func sourceValue(s *content.Source) *jsonv.Object {
	o := jsonv.NewObject(jsonv.Member{Name: "kind", Value: s.Kind})
	for _, m := range [...]jsonv.Member{
		{Name: "plugin", Value: s.Plugin},
		{Name: "form", Value: s.Form},
		{Name: "summary", Value: s.Summary},
		{Name: "callId", Value: s.CallID},
	} {
		if m.Value != "" {
			o.Set(m.Name, m.Value)
		}
	}
	return o
}

// messageFromValue decodes a message and checks its id and role.
func messageFromValue(v any, role content.Role) (content.Message, error) {
	o, ok := v.(*jsonv.Object)
	if !ok {
		return content.Message{}, fmt.Errorf("message must be an object, got %s", jsonv.KindOf(v))
	}
	var m content.Message
	var err error
	if m.ID, err = stringMember(o, "id", true); err != nil {
		return content.Message{}, err
	}
	r, err := stringMember(o, "role", false)
	if err != nil {
		return content.Message{}, err
	}
	if content.Role(r) != role {
		return content.Message{}, fmt.Errorf(`message must have role "%s", got %q`, role, r)
	}
	m.Role = role
	if sv, ok := o.Get("source"); ok {
		so, ok := sv.(*jsonv.Object)
		if !ok {
			return content.Message{}, errors.New("message has invalid source: not an object")
		}
		s := &content.Source{}
		if s.Kind, err = stringMember(so, "kind", true); err != nil {
			return content.Message{}, fmt.Errorf("message has invalid source: %w", err)
		}
		for _, f := range []struct {
			name string
			dst  *string
		}{{"plugin", &s.Plugin}, {"form", &s.Form}, {"summary", &s.Summary}, {"callId", &s.CallID}} {
			if *f.dst, err = optStringMember(so, f.name); err != nil {
				return content.Message{}, fmt.Errorf("message has invalid source: %w", err)
			}
		}
		m.Source = s
	}
	cv, ok := o.Get("content")
	if !ok {
		return content.Message{}, errors.New(`message has no "content"`)
	}
	if m.Content, err = content.ListFromValue(cv); err != nil {
		return content.Message{}, fmt.Errorf("message has invalid content: %w", err)
	}
	return m, nil
}

// payloadError is a malformed payload of a known event type.
type payloadError struct {
	Type string
	Err  error
}

func (e *payloadError) Error() string { return `session event "` + e.Type + `": ` + e.Err.Error() }
func (e *payloadError) Unwrap() error { return e.Err }

func wrapPayload(typ string, err error) error {
	if err == nil {
		return nil
	}
	return &payloadError{Type: typ, Err: err}
}

func typeMismatch(e Event, want string) error {
	return fmt.Errorf(`session: event at seq %d is "%s", not "%s"`, e.Seq, e.Type, want)
}

func payloadObject(e Event, typ string) (*jsonv.Object, error) {
	if e.Type != typ {
		return nil, typeMismatch(e, typ)
	}
	o, ok := e.Data.(*jsonv.Object)
	if !ok {
		return nil, wrapPayload(typ, fmt.Errorf("data must be an object, got %s", jsonv.KindOf(e.Data)))
	}
	return o, nil
}

func intMember(o *jsonv.Object, name string) (int, error) {
	v, _ := o.Get(name)
	n, ok := safeInt(v)
	if !ok || n < 0 {
		return 0, fmt.Errorf("%q must be a non-negative integer", name)
	}
	return int(n), nil
}

func stringMember(o *jsonv.Object, name string, nonEmpty bool) (string, error) {
	v, _ := o.Get(name)
	s, ok := v.(string)
	if !ok || nonEmpty && s == "" {
		if nonEmpty {
			return "", fmt.Errorf("%q must be a non-empty string", name)
		}
		return "", fmt.Errorf("%q must be a string", name)
	}
	return s, nil
}

func optStringMember(o *jsonv.Object, name string) (string, error) {
	v, ok := o.Get(name)
	if !ok {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%q must be a string", name)
	}
	return s, nil
}

func objectMember(o *jsonv.Object, name string) (*jsonv.Object, error) {
	v, _ := o.Get(name)
	r, ok := v.(*jsonv.Object)
	if !ok {
		return nil, fmt.Errorf("%q must be an object", name)
	}
	return r, nil
}
