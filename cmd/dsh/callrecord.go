package main

import (
	"fmt"
	"sync"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// callRecorder records tool calls made from outside an agent loop — `dsh call` and the calls
// of an MCP client under `dsh mcp serve` — in a session log: a durable tool/call before the
// call enters the pipeline (a call that cannot be recorded does not run) and a tool/result
// citing it once the call is final, with the same payloads the agent loop writes. There is
// no model: the whole session is one turn (turn/start when it opens, turn/end when it
// closes), with no steps (the calls carry step 0), so that approvals are recorded inside a
// turn as everywhere else. The approval events and a run_code program's sub-call events go
// to the same log through the runtime's routing by agent scope.
type callRecorder struct {
	log session.Log

	mu   sync.Mutex
	seqs map[string]int64 // call id → seq of its tool/call, until its result is recorded
}

// recordedTurn is the one turn of a call session.
const recordedTurn = 1

// newCallRecorder opens the session's turn.
func newCallRecorder(log session.Log) (*callRecorder, error) {
	if _, err := log.AppendDurable(session.TurnStart{Turn: recordedTurn}.Event()); err != nil {
		return nil, fmt.Errorf("session log: recording turn/start: %w", err)
	}
	return &callRecorder{log: log, seqs: map[string]int64{}}, nil
}

// close ends the session's turn: completed, or aborted when interrupted is set.
func (r *callRecorder) close(interrupted bool) error {
	reason := session.EndReason{Kind: session.EndCompleted}
	if interrupted {
		reason = session.EndReason{Kind: session.EndAborted, Cause: "user"}
	}
	if _, err := r.log.Append(session.TurnEnd{Turn: recordedTurn, Reason: reason}.Event()); err != nil {
		return fmt.Errorf("session log: recording turn/end: %w", err)
	}
	return nil
}

// started appends the durable tool/call of a call whose arguments are the raw text raw.
func (r *callRecorder) started(callID, name, raw string) error {
	ev, err := r.log.AppendDurable(session.ToolCall{Turn: recordedTurn, CallID: callID, Name: name, Arguments: raw}.Event())
	if err != nil {
		return fmt.Errorf("recording tool/call of call %q: %w", callID, err)
	}
	r.mu.Lock()
	r.seqs[callID] = ev.Seq
	r.mu.Unlock()
	return nil
}

// finished appends the tool/result of a call started with started.
func (r *callRecorder) finished(callID string, res *tool.Result) error {
	r.mu.Lock()
	seq, ok := r.seqs[callID]
	delete(r.seqs, callID)
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("recording tool/result of call %q: its tool/call was not recorded", callID)
	}
	p := session.ToolResult{Turn: recordedTurn, CallID: callID, Content: res.Content, IsError: res.IsError, Meta: res.Meta, SourceEventSeqs: []int64{seq}}
	if res.Error != nil && res.Error.Info != nil {
		p.Error = &session.ErrorInfo{Name: res.Error.Info.Name, Code: res.Error.Info.Code}
	}
	if _, err := r.log.Append(p.Event()); err != nil {
		return fmt.Errorf("recording tool/result of call %q: %w", callID, err)
	}
	return nil
}

// rawArguments returns the raw argument text of a call's input: the text itself when
// tool.ParseArguments could not parse it, otherwise the arguments' JSON.
func rawArguments(args any) string {
	if s, ok := args.(string); ok {
		return s
	}
	b, err := jsonv.Marshal(args)
	if err != nil {
		return ""
	}
	return string(b)
}
