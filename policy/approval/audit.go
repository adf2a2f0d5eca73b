package approval

import (
	"errors"
	"fmt"

	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// SessionAuditor records questions and outcomes in a session log as approval/asked
// {id, toolName, callId?, reason?} and approval/decided {id, outcome, answer?, feedback?,
// rule?} events. Both must be
// enclosed by a turn (a turn/start without its turn/end), since the turn is the log's unit
// of replay: asking outside one is an error.
type SessionAuditor struct {
	logFor func(agent *tool.Scope) session.Log
}

// NewSessionAuditor returns an auditor writing to log, whatever the agent.
func NewSessionAuditor(log session.Log) *SessionAuditor {
	return &SessionAuditor{logFor: func(*tool.Scope) session.Log { return log }}
}

// NewSessionAuditorFunc returns an auditor writing to the log logFor returns for the asking
// agent (each agent of a multi-agent run may have its own session).
func NewSessionAuditorFunc(logFor func(agent *tool.Scope) session.Log) *SessionAuditor {
	return &SessionAuditor{logFor: logFor}
}

func (a *SessionAuditor) log(q Question) (session.Log, error) {
	log := a.logFor(q.Agent)
	if log == nil {
		name := "<none>"
		if q.Agent != nil {
			name = q.Agent.Name()
		}
		return nil, fmt.Errorf("no session log for agent %q", name)
	}
	return log, nil
}

// Asked appends the approval/asked event.
func (a *SessionAuditor) Asked(q Question) error {
	log, err := a.log(q)
	if err != nil {
		return err
	}
	if !openTurn(log.Events()) {
		return errors.New("cannot ask outside an open turn: the approval/asked and approval/decided events must be enclosed by a turn of the session log; ask from inside the turn that needs the decision")
	}
	_, err = log.Append(session.ApprovalAsked{ID: q.ID, ToolName: q.ToolName, CallID: q.CallID, Reason: q.Reason}.Event())
	return err
}

// Decided appends the approval/decided event with the exact answer.
func (a *SessionAuditor) Decided(q Question, d Decision) error {
	log, err := a.log(q)
	if err != nil {
		return err
	}
	_, err = log.Append(session.ApprovalDecided{ID: q.ID, Outcome: string(d.Outcome), Answer: d.Answer, Feedback: d.Feedback, Rule: d.Rule}.Event())
	return err
}

// openTurn reports whether the log is inside a turn: its last turn event is a turn/start.
func openTurn(events []session.Event) bool {
	for i := len(events) - 1; i >= 0; i-- {
		switch events[i].Type {
		case session.TypeTurnStart:
			return true
		case session.TypeTurnEnd:
			return false
		}
	}
	return false
}
