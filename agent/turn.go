package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// turnRun is the state of one running turn.
type turnRun struct {
	a     *Agent
	ctx   context.Context
	turn  int
	steps int
	last  content.Message

	// The abort clear of the inbox runs once per turn: when the context is cancelled, or
	// synchronously before a context is accepted after the cancellation, whichever is
	// first, and never after the turn finished.
	clearOnce sync.Once
	finished  bool // guarded by a.mu
}

// stepOutcome is how a step that did not fail ended.
type stepOutcome int

const (
	stepContinue  stepOutcome = iota // tools ran: ask the model again
	stepCompleted                    // the model answered, or a tool concluded the turn
	stepMaxTokens                    // the reply hit the token limit
)

// errAborted marks a step stopped by cancellation; the turn's reason says by whom.
var errAborted = errors.New("turn aborted")

// run runs the turn's steps and logs its end.
func (t *turnRun) run(input content.Message) (TurnResult, error) {
	a := t.a
	if a.cfg.Observer.TurnStart != nil {
		a.cfg.Observer.TurnStart(t.turn)
	}
	stop := context.AfterFunc(t.ctx, t.abortInbox)
	reason, err := t.loop(input)
	stop()
	if t.ctx.Err() != nil {
		t.abortInbox()
	}
	a.mu.Lock()
	t.finished = true
	a.mu.Unlock()

	if _, lerr := a.log.Append(session.TurnEnd{Turn: t.turn, Reason: reason}.Event()); lerr != nil {
		err = errors.Join(err, fmt.Errorf("agent: log turn/end: %w", lerr))
	}
	if ferr := a.log.Flush(); ferr != nil {
		err = errors.Join(err, fmt.Errorf("agent: flush session log: %w", ferr))
	}
	if a.cfg.Observer.TurnEnd != nil {
		a.cfg.Observer.TurnEnd(t.turn, reason)
	}
	return TurnResult{Turn: t.turn, Steps: t.steps, Reason: reason, Message: t.last}, err
}

// loop runs steps until the turn ends and returns its reason, with the error of a failed
// or aborted turn.
func (t *turnRun) loop(input content.Message) (session.EndReason, error) {
	a := t.a
	var ends *session.EndReason // the outcome so far; max-tokens is sticky
	first := true
	for {
		if t.ctx.Err() != nil {
			return t.aborted()
		}
		step := t.steps + 1
		if step > a.maxSteps {
			return session.EndReason{Kind: EndMaxSteps}, nil
		}
		asm, err := a.assemble(t.ctx, t.turn, step)
		if err != nil {
			return t.failed(err)
		}
		claimed := a.claimInbox()
		if first {
			claimed = append(claimed, input)
		}
		if err := t.preStep(step, claimed, first); err != nil {
			return t.failed(err)
		}
		first = false
		if t.ctx.Err() != nil {
			return t.aborted()
		}
		outcome, err := t.step(step, claimed, asm)
		if err != nil {
			if t.ctx.Err() != nil || errors.Is(err, errAborted) {
				return t.aborted()
			}
			return t.failed(err)
		}
		switch {
		case ends != nil && ends.Kind == session.EndMaxTokens:
			// sticky: a later step cannot downgrade the turn's outcome
		case outcome == stepCompleted:
			ends = &session.EndReason{Kind: session.EndCompleted}
		case outcome == stepMaxTokens:
			ends = &session.EndReason{Kind: session.EndMaxTokens}
		default:
			ends = nil
		}
		if t.ctx.Err() != nil {
			return t.aborted()
		}
		if ends != nil && a.inboxEmpty() {
			return *ends, nil
		}
	}
}

// preStep runs the pre-step hooks. When one fails, the claimed contexts (not the turn's
// input) go back to the inbox.
func (t *turnRun) preStep(step int, claimed []content.Message, first bool) error {
	for _, h := range t.a.preStepHooks() {
		err := h.fn(t.ctx, PreStep{Scope: t.a.scope, Turn: t.turn, Step: step, Claimed: content.CloneMessages(claimed)})
		if err != nil {
			back := claimed
			if first {
				back = claimed[:len(claimed)-1]
			}
			t.a.mu.Lock()
			t.a.inbox = append(back, t.a.inbox...)
			t.a.mu.Unlock()
			return fmt.Errorf("pre-step hook: %w", err)
		}
	}
	return nil
}

// aborted is the end of a cancelled turn.
func (t *turnRun) aborted() (session.EndReason, error) {
	cause := context.Cause(t.ctx)
	r := session.EndReason{Kind: session.EndAborted, Cause: "user"}
	var cc *CancelCause
	if errors.As(cause, &cc) {
		if cc.Kind != "" {
			r.Cause = cc.Kind
		}
		r.CauseReason = cc.Reason
	}
	return r, fmt.Errorf("agent: turn %d aborted: %w", t.turn, cause)
}

// failed is the end of a failed turn: a model error keeps its code, anything else is
// UNKNOWN.
func (t *turnRun) failed(err error) (session.EndReason, error) {
	f := &session.Failure{Message: err.Error(), Code: CodeUnknown}
	var le *llm.Error
	var se *schedulerError
	switch {
	case errors.As(err, &le):
		f = &session.Failure{Message: le.Message, Code: le.Code}
	case errors.As(err, &se):
		f.Message = se.original()
	}
	return session.EndReason{Kind: session.EndError, Error: f}, fmt.Errorf("agent: turn %d failed: %w", t.turn, err)
}

// schedulerError is a failure of the tool-call scheduler itself, such as a tool/call or
// tool/result event that could not be made durable. The Go error says where it failed; the
// turn/end event carries the original failure's message, which is what a reader of the log
// (or a model resuming the session) can act on.
type schedulerError struct{ err error }

func (e *schedulerError) Error() string { return "tool-call scheduler: " + e.err.Error() }
func (e *schedulerError) Unwrap() error { return e.err }

// original returns the message of the innermost error of the chain: the failure itself,
// without the context each layer added on the way up. A joined error stops the descent.
func (e *schedulerError) original() string {
	err := e.err
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return err.Error()
		}
		err = inner
	}
}

// abortInbox clears the inbox on cancellation unless the cause keeps it (docs/behaviour.md §8.4).
func (t *turnRun) abortInbox() {
	t.clearOnce.Do(func() {
		var cc *CancelCause
		keep := errors.As(context.Cause(t.ctx), &cc) && cc.KeepInbox
		t.a.mu.Lock()
		defer t.a.mu.Unlock()
		if !t.finished && !keep {
			t.a.inbox = nil
		}
	})
}

// accept puts the contexts a committed result deferred into the next-step inbox.
func (t *turnRun) accept(msgs []content.Message) {
	if len(msgs) == 0 {
		return
	}
	if t.ctx.Err() != nil {
		t.abortInbox() // contexts accepted after the cancellation stay parked
	}
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	t.a.inbox = append(t.a.inbox, content.CloneMessages(msgs)...)
}

// step runs one step: step/start, the claimed messages, the model request, the tool calls,
// step/end.
func (t *turnRun) step(step int, claimed []content.Message, asm assembly) (stepOutcome, error) {
	a := t.a
	if _, err := a.log.Append(session.StepStart{Turn: t.turn, Step: step}.Event()); err != nil {
		return 0, fmt.Errorf("log step/start: %w", err)
	}
	t.steps = step
	if a.cfg.Observer.StepStart != nil {
		a.cfg.Observer.StepStart(t.turn, step)
	}
	outcome, err := t.stepBody(step, claimed, asm)
	if _, lerr := a.log.Append(session.StepEnd{Turn: t.turn, Step: step}.Event()); lerr != nil {
		err = errors.Join(err, fmt.Errorf("log step/end: %w", lerr))
	}
	if a.cfg.Observer.StepEnd != nil {
		a.cfg.Observer.StepEnd(t.turn, step)
	}
	return outcome, err
}

func (t *turnRun) stepBody(step int, claimed []content.Message, asm assembly) (stepOutcome, error) {
	a := t.a
	for _, m := range claimed {
		if _, err := a.log.Append(session.UserMessage{Message: m}.Event()); err != nil {
			return 0, fmt.Errorf("log user/message: %w", err)
		}
		if a.cfg.Observer.UserMessage != nil {
			a.cfg.Observer.UserMessage(m.Clone())
		}
	}
	history, err := session.DeriveMessages(a.log.Events())
	if err != nil {
		return 0, fmt.Errorf("derive the model history: %w", err)
	}
	req := llm.Request{
		System:      asm.system,
		Messages:    history,
		Tools:       asm.tools,
		MaxTokens:   a.cfg.MaxTokens,
		Temperature: a.cfg.Temperature,
		Attachments: a.cfg.Attachments,
	}
	resp, err := llm.Collect(t.observe(a.model.Stream(t.ctx, req)))
	if err != nil {
		if t.ctx.Err() != nil {
			t.logInterrupted(step, resp.Message)
			return 0, errAborted
		}
		return 0, err
	}
	msg := resp.Message
	msg.Role = content.RoleAssistant
	msg.ID = session.NewMessageID()
	p := session.AssistantMessage{Turn: t.turn, Step: step, Message: msg}
	if resp.Usage != (llm.Usage{}) {
		model := resp.Model
		if model == "" {
			model = a.model.Name()
		}
		p.Usage = usageValue(resp.Usage, model)
	}
	if _, err := a.log.Append(p.Event()); err != nil {
		return 0, fmt.Errorf("log assistant/message: %w", err)
	}
	t.last = msg
	if a.cfg.Observer.AssistantMessage != nil {
		a.cfg.Observer.AssistantMessage(msg.Clone())
	}
	if resp.FinishReason == llm.FinishMaxTokens {
		return stepMaxTokens, nil // a truncated reply's calls never run (docs/behaviour.md §8.1)
	}
	blocks := resp.ToolCalls()
	if len(blocks) == 0 {
		return stepCompleted, nil
	}
	planned := make([]PlannedCall, len(blocks))
	for i, b := range blocks {
		planned[i] = PlannedCall{ID: b.ID, Name: b.Name, RawArgs: b.Arguments}
	}
	batch, err := a.sched.Run(t.ctx, a.scope, planned, &committer{t: t, step: step})
	if err != nil {
		return 0, &schedulerError{err: err}
	}
	if batch.Aborted {
		return 0, errAborted
	}
	if batch.ConcludesTurn {
		return stepCompleted, nil
	}
	return stepContinue, nil
}

// observe passes a model stream through, reporting its deltas to the observer.
func (t *turnRun) observe(stream iter.Seq2[llm.Event, error]) iter.Seq2[llm.Event, error] {
	obs := t.a.cfg.Observer
	if obs.ReasoningDelta == nil && obs.TextDelta == nil {
		return stream
	}
	return func(yield func(llm.Event, error) bool) {
		for ev, err := range stream {
			if err == nil {
				switch {
				case ev.Type == llm.EventReasoningDelta && obs.ReasoningDelta != nil:
					obs.ReasoningDelta(ev.Text)
				case ev.Type == llm.EventTextDelta && obs.TextDelta != nil:
					obs.TextDelta(ev.Text)
				}
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// logInterrupted logs the delivered prefix of a reply cut short by cancellation: its text
// and reasoning blocks with visible content, never its tool calls (none of them ran).
func (t *turnRun) logInterrupted(step int, partial content.Message) {
	var kept []content.Block
	for _, b := range partial.Content {
		if (b.Type == content.TypeText || b.Type == content.TypeReasoning) && strings.TrimSpace(b.Text) != "" {
			kept = append(kept, b)
		}
	}
	if len(kept) == 0 {
		return
	}
	msg := content.Message{ID: session.NewMessageID(), Role: content.RoleAssistant, Content: kept}
	// Best effort: the turn is ending aborted either way, and turn/end reports a broken log.
	if _, err := t.a.log.Append(session.AssistantMessage{Turn: t.turn, Step: step, Message: msg, Interrupted: true}.Event()); err == nil {
		t.last = msg
	}
}

// committer records a step's batch in the session log and reports it to the observer.
type committer struct {
	t    *turnRun
	step int
}

// CallStarted appends the durable tool/call.
func (c *committer) CallStarted(pc PlannedCall) (int64, error) {
	a := c.t.a
	ev, err := a.log.AppendDurable(session.ToolCall{Turn: c.t.turn, Step: c.step, CallID: pc.ID, Name: pc.Name, Arguments: pc.RawArgs}.Event())
	if err != nil {
		return 0, fmt.Errorf("log tool/call of call %q: %w", pc.ID, err)
	}
	if a.cfg.Observer.ToolCall != nil {
		def := a.reg.Get(pc.Name, a.scope)
		a.cfg.Observer.ToolCall(ToolCallEvent{
			Turn: c.t.turn, Step: c.step, CallID: pc.ID, Name: pc.Name, Arguments: pc.RawArgs,
			Card: CallCard(def, pc.Name, tool.ParseArguments(pc.RawArgs)),
		})
	}
	return ev.Seq, nil
}

// CallFinished appends the tool/result citing the call and accepts the result's contexts.
func (c *committer) CallFinished(pc PlannedCall, callSeq int64, res *tool.Result) error {
	a := c.t.a
	p := session.ToolResult{
		Turn: c.t.turn, Step: c.step, CallID: pc.ID,
		Content: res.Content, IsError: res.IsError, Meta: res.Meta,
		SourceEventSeqs: []int64{callSeq},
	}
	if res.IsError && res.Error != nil && res.Error.Info != nil {
		p.Error = &session.ErrorInfo{Name: res.Error.Info.Name, Code: res.Error.Info.Code}
	}
	if _, err := a.log.Append(p.Event()); err != nil {
		return fmt.Errorf("log tool/result of call %q: %w", pc.ID, err)
	}
	c.t.accept(res.AdditionalContexts)
	if a.cfg.Observer.ToolResult != nil {
		def := a.reg.Get(pc.Name, a.scope)
		r := res.Clone()
		a.cfg.Observer.ToolResult(ToolResultEvent{
			Turn: c.t.turn, Step: c.step, CallID: pc.ID, Name: pc.Name, Result: r,
			Card: ResultCard(def, pc.Name, tool.ParseArguments(pc.RawArgs), cardResult(r)),
		})
	}
	return nil
}

// usageValue is the logged usage {inputTokens, outputTokens, cacheReadTokens?,
// reasoningTokens?, model?}: the optional counts only when the server reported them, and the
// model that answered so a cost can be estimated from the log alone.
func usageValue(u llm.Usage, model string) *jsonv.Object {
	o := jsonv.NewObject(
		jsonv.Member{Name: "inputTokens", Value: float64(u.InputTokens)},
		jsonv.Member{Name: "outputTokens", Value: float64(u.OutputTokens)},
	)
	if u.CacheReadTokens != 0 {
		o.Set("cacheReadTokens", float64(u.CacheReadTokens))
	}
	if u.ReasoningTokens != 0 {
		o.Set("reasoningTokens", float64(u.ReasoningTokens))
	}
	if model != "" {
		o.Set("model", model)
	}
	return o
}

// DescribeEnd says in a few words how a turn ended, as the terminal transcript and the
// session viewer show it.
func DescribeEnd(r session.EndReason) string {
	switch r.Kind {
	case session.EndCompleted:
		return "completed"
	case session.EndAborted:
		if r.Cause != "" && r.Cause != "user" {
			return "aborted by " + r.Cause
		}
		return "aborted"
	case session.EndError:
		if r.Error != nil {
			return fmt.Sprintf("failed: %s (%s)", r.Error.Message, r.Error.Code)
		}
		return "failed"
	case session.EndMaxTokens:
		return "stopped: a reply hit the token limit"
	case EndMaxSteps:
		return "stopped: the step limit was reached"
	case session.EndInterrupted:
		return "interrupted (dsh stopped before it ended)"
	}
	return "ended: " + r.Kind
}
