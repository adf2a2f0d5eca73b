package session

import (
	"strconv"

	"github.com/dsh-go/dsh/content"
)

// Recovery error identities (docs/behaviour.md §5.2, §9.2).
const (
	// CodeToolNotStarted marks a call the assistant requested that never got a durable
	// tool/call event.
	CodeToolNotStarted = "TOOL_NOT_STARTED"
	// CodeToolOutcomeUnknown marks a call with a durable tool/call but no tool/result.
	CodeToolOutcomeUnknown = "TOOL_OUTCOME_UNKNOWN"
)

// The model-visible texts of the recovery results, as in the reference harness.
const (
	textOutcomeUnknown = "The tool call was interrupted after it was recorded, but no result was durably recorded. " +
		"Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation " +
		"is read-only or idempotent; if it may have side effects, first verify external state or ask the user. " +
		"Do not retry blindly."
	textNotStarted = "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed."
)

// RecoveryEvents returns the synthetic events that close a crash-interrupted tail turn
// (docs/behaviour.md §9.2), or nil when the log is balanced. For the open turn (a turn/start without
// turn/end), every tool call requested by an assistant/message of the open step that has
// no tool/result gets an error result, in request order: a call with a durable tool/call
// gets ToolOutcomeUnknownError / TOOL_OUTCOME_UNKNOWN and cites the call's seq, a call
// without one gets ToolNotStartedError / TOOL_NOT_STARTED. Then an open step gets its
// step/end, and the turn ends with {kind:"interrupted"}.
//
// The events continue the log's seqs and reuse the last event's time, so recovery is
// deterministic; result message ids are "interrupted-tool-result-<callId>-<seq>".
func RecoveryEvents(events []Event) []Event {
	type pending struct {
		id      string
		step    int
		callSeq int64 // -1 without a durable tool/call
	}
	var (
		openTurn  = -1
		openStep  = -1
		calls     []pending
		callIndex = map[string]int{}
	)
	reset := func() {
		calls = calls[:0]
		clear(callIndex)
	}
	for i := range events {
		e := events[i]
		switch e.Type {
		case TypeTurnStart:
			if p, err := DecodeTurnStart(e); err == nil {
				openTurn = p.Turn
			}
			openStep = -1
			reset()
		case TypeTurnEnd:
			openTurn, openStep = -1, -1
			reset()
		case TypeStepStart:
			if p, err := DecodeStepStart(e); err == nil {
				openStep = p.Step
			}
		case TypeStepEnd:
			openStep = -1
			reset()
		case TypeAssistantMessage:
			p, err := DecodeAssistantMessage(e)
			if err != nil {
				continue
			}
			for _, b := range p.Message.Content {
				if b.Type != content.TypeToolCall {
					continue
				}
				if j, ok := callIndex[b.ID]; ok {
					calls[j] = pending{id: b.ID, step: p.Step, callSeq: -1}
					continue
				}
				callIndex[b.ID] = len(calls)
				calls = append(calls, pending{id: b.ID, step: p.Step, callSeq: -1})
			}
		case TypeToolCall:
			if p, err := DecodeToolCall(e); err == nil {
				if j, ok := callIndex[p.CallID]; ok {
					calls[j].callSeq = e.Seq
				}
			}
		case TypeToolResult:
			if p, err := DecodeToolResult(e); err == nil {
				if j, ok := callIndex[p.CallID]; ok {
					calls[j].id = "" // answered
					delete(callIndex, p.CallID)
				}
			}
		}
	}
	if openTurn < 0 || len(events) == 0 {
		return nil
	}
	last := events[len(events)-1]
	seq, now := last.Seq+1, last.Time
	var out []Event
	for _, c := range calls {
		if c.id == "" {
			continue
		}
		r := ToolResult{
			Turn:      openTurn,
			Step:      c.step,
			MessageID: "interrupted-tool-result-" + c.id + "-" + strconv.FormatInt(seq, 10),
			CallID:    c.id,
			IsError:   true,
		}
		if c.callSeq >= 0 {
			r.Content = content.Texts(textOutcomeUnknown)
			r.Error = &ErrorInfo{Name: "ToolOutcomeUnknownError", Code: CodeToolOutcomeUnknown}
			r.SourceEventSeqs = []int64{c.callSeq}
		} else {
			r.Content = content.Texts(textNotStarted)
			r.Error = &ErrorInfo{Name: "ToolNotStartedError", Code: CodeToolNotStarted}
		}
		e := r.Event()
		e.Seq, e.Time = seq, now
		out = append(out, e)
		seq++
	}
	if openStep >= 0 {
		e := StepEnd{Turn: openTurn, Step: openStep}.Event()
		e.Seq, e.Time = seq, now
		out = append(out, e)
		seq++
	}
	e := TurnEnd{Turn: openTurn, Reason: EndReason{Kind: EndInterrupted}}.Event()
	e.Seq, e.Time = seq, now
	return append(out, e)
}
