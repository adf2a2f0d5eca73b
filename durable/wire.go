package durable

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// Names under which the workflow, its updates and queries and the activities are registered.
const (
	WorkflowName   = "dsh.session"
	UpdateTurn     = "turn"
	UpdateApprove  = "approve"
	QueryPending   = "pending-approvals"
	QueryProgress  = "progress"
	activityOpen   = "dsh.session.open"
	activityAppend = "dsh.session.append"
	activityModel  = "dsh.model"
	activityTool   = "dsh.tool"

	// versionOpenBarrier marks runs that end the workflow task after opening the log.
	versionOpenBarrier = "open-barrier"
)

// Defaults of SessionInput.
const (
	DefaultMaxParallel     = 10
	DefaultMaxSteps        = 50
	DefaultApprovalTimeout = 24 * time.Hour
	DefaultTurnsPerRun     = 50
	// DefaultSpillThreshold is the encoded size above which a tool result is kept in the
	// store and passed to the workflow by reference, well under Temporal's 2 MB payload
	// limit.
	DefaultSpillThreshold = 256 << 10
)

// SessionInput starts (or continues as new) a session workflow.
type SessionInput struct {
	// SessionID names the session log; it is also the workflow id's suffix.
	SessionID string
	// Workspace is the directory the session works in, as the tool worker sees it.
	Workspace string
	// SessionQueue is the task queue of the worker that keeps the session log and calls the
	// model; ToolQueue (default SessionQueue) runs the tool bodies, so a shell command runs
	// where the files are.
	SessionQueue, ToolQueue string
	// MaxParallel bounds the concurrent dispatches of one step's concurrency-safe calls.
	MaxParallel int
	// MaxSteps bounds the steps of one turn.
	MaxSteps int
	// ApprovalTimeout is how long a call waits for an answer before it is denied.
	ApprovalTimeout time.Duration
	// TurnsPerRun is how many turns one workflow run takes before it continues as new
	// (Temporal also suggests continuing as new when the history grows large).
	TurnsPerRun int
	// ToolTimeout bounds one tool activity (default one hour); HeartbeatTimeout is how
	// long a silent tool worker is presumed lost (default 10 seconds).
	ToolTimeout, HeartbeatTimeout time.Duration

	// Carried over continue-as-new: the log's next seq and the last turn number.
	NextSeq int64
	Turn    int
	Opened  bool
}

func (in *SessionInput) defaults() {
	if in.ToolQueue == "" {
		in.ToolQueue = in.SessionQueue
	}
	if in.MaxParallel <= 0 {
		in.MaxParallel = DefaultMaxParallel
	}
	if in.MaxSteps <= 0 {
		in.MaxSteps = DefaultMaxSteps
	}
	if in.ApprovalTimeout <= 0 {
		in.ApprovalTimeout = DefaultApprovalTimeout
	}
	if in.TurnsPerRun <= 0 {
		in.TurnsPerRun = DefaultTurnsPerRun
	}
	if in.ToolTimeout <= 0 {
		in.ToolTimeout = time.Hour
	}
	if in.HeartbeatTimeout <= 0 {
		in.HeartbeatTimeout = 10 * time.Second
	}
}

// TurnRequest is the argument of the UpdateTurn update: the user's message.
type TurnRequest struct {
	Text string
}

// TurnResult is what the UpdateTurn update returns when the turn has ended.
type TurnResult struct {
	Turn int
	// Reason is the turn/end reason kind: completed, aborted, error or max-steps.
	Reason string
	// Text is the last assistant text of the turn.
	Text string
	// Error describes an "error" turn.
	Error string
	// Calls are the turn's committed calls in model order.
	Calls []CallSummary
}

// CallSummary is one committed call of a turn.
type CallSummary struct {
	CallID, Name string
	IsError      bool
	Code         string
}

// Approval is the argument of the UpdateApprove update: the answer to a pending approval.
type Approval struct {
	CallID   string
	Approved bool
	Reason   string
}

// PendingApproval is a call waiting for an answer, as the QueryPending query reports it.
type PendingApproval struct {
	CallID, Tool, Arguments, Reason string
}

// Call is one tool call of an assistant message, in model order.
type Call struct {
	ID, Name, RawArgs string
}

// Outcome is the durable projection of a tool result that crosses the activity boundary:
// everything the log and the next step need (the canonical value is never persisted). A
// result larger than the spill threshold is replaced by Ref, the key under which the tool
// worker stored it.
type Outcome struct {
	IsError       bool              `json:",omitempty"`
	Message       string            `json:",omitempty"`
	ErrName       string            `json:",omitempty"`
	ErrCode       string            `json:",omitempty"`
	Content       []content.Block   `json:",omitempty"`
	Meta          json.RawMessage   `json:",omitempty"`
	Contexts      []content.Message `json:",omitempty"`
	ConcludesTurn bool              `json:",omitempty"`
	Ref           string            `json:",omitempty"`
}

// outcomeOf projects a final tool result.
func outcomeOf(res *tool.Result) (Outcome, error) {
	o := Outcome{IsError: res.IsError, Content: res.Content, Contexts: res.AdditionalContexts, ConcludesTurn: res.ConcludesTurn}
	if res.Error != nil {
		o.Message = res.Error.Message
		if res.Error.Info != nil {
			o.ErrName, o.ErrCode = res.Error.Info.Name, res.Error.Info.Code
		}
	}
	if res.Meta != nil {
		b, err := jsonv.Marshal(res.Meta)
		if err != nil {
			return Outcome{}, fmt.Errorf("durable: encode the meta of a tool result: %w", err)
		}
		o.Meta = b
	}
	return o, nil
}

// failed is the Outcome of a failure with a coded identity.
func failed(name, code, message string) Outcome {
	return Outcome{IsError: true, Message: message, ErrName: name, ErrCode: code, Content: content.Texts(message)}
}

// toolResult is the tool/result payload of o for call c.
func (o Outcome) toolResult(turn, step int, callID string, callSeq int64) (session.ToolResult, error) {
	p := session.ToolResult{Turn: turn, Step: step, CallID: callID, Content: o.Content, IsError: o.IsError, SourceEventSeqs: []int64{callSeq}}
	if p.Content == nil {
		p.Content = []content.Block{}
	}
	if o.IsError && o.ErrCode != "" {
		p.Error = &session.ErrorInfo{Name: o.ErrName, Code: o.ErrCode}
	}
	if len(o.Meta) > 0 {
		v, err := jsonv.Parse(o.Meta)
		if err != nil {
			return p, fmt.Errorf("durable: decode the meta of call %q: %w", callID, err)
		}
		p.Meta = v
	}
	return p, nil
}

// LogEvent is one session event the workflow asks the session worker to append. Kind is the
// event type; the other fields are that type's payload.
type LogEvent struct {
	Kind       string
	Turn, Step int
	Text       string   `json:",omitempty"`
	CallID     string   `json:",omitempty"`
	Name       string   `json:",omitempty"`
	Args       string   `json:",omitempty"`
	Outcome    *Outcome `json:",omitempty"`
	CallSeq    int64    `json:",omitempty"`
	Reason     string   `json:",omitempty"`
	Cause      string   `json:",omitempty"`
	ErrMessage string   `json:",omitempty"`
	ErrCode    string   `json:",omitempty"`
	Approved   bool     `json:",omitempty"`
	// Calls are the tool calls of an assistant/message (which the model activity appends;
	// the workflow keeps it only for QueryProgress).
	Calls []Call `json:",omitempty"`
}

// Event returns the session event le describes, as the session worker appends it (without
// seq and time). A tool result passed by reference (Outcome.Ref) is described by a short
// note instead of its content, which is in the result store: the session worker resolves
// the reference before appending.
func (le LogEvent) Event() (session.Event, error) {
	switch le.Kind {
	case session.TypeTurnStart:
		return session.TurnStart{Turn: le.Turn}.Event(), nil
	case session.TypeUserMessage:
		return session.UserMessage{Message: content.Message{Content: content.Texts(le.Text)}}.Event(), nil
	case session.TypeStepStart:
		return session.StepStart{Turn: le.Turn, Step: le.Step}.Event(), nil
	case session.TypeStepEnd:
		return session.StepEnd{Turn: le.Turn, Step: le.Step}.Event(), nil
	case session.TypeAssistantMessage:
		m := content.Message{Role: content.RoleAssistant}
		if le.Text != "" {
			m.Content = content.Texts(le.Text)
		}
		for _, c := range le.Calls {
			m.Content = append(m.Content, content.ToolCall(c.ID, c.Name, c.RawArgs))
		}
		return session.AssistantMessage{Turn: le.Turn, Step: le.Step, Message: m}.Event(), nil
	case session.TypeToolCall:
		return session.ToolCall{Turn: le.Turn, Step: le.Step, CallID: le.CallID, Name: le.Name, Arguments: le.Args}.Event(), nil
	case session.TypeApprovalAsked:
		return session.ApprovalAsked{ID: le.CallID, ToolName: le.Name, CallID: le.CallID, Reason: le.Reason}.Event(), nil
	case session.TypeApprovalDecided:
		outcome := string(tool.ApprovalRejected)
		if le.Approved {
			outcome = string(tool.ApprovalAllowedOnce)
		}
		return session.ApprovalDecided{ID: le.CallID, Outcome: outcome, Feedback: le.Reason}.Event(), nil
	case session.TypeToolResult:
		if le.Outcome == nil {
			return session.Event{}, fmt.Errorf("durable: tool/result of call %q has no outcome", le.CallID)
		}
		o := *le.Outcome
		if o.Ref != "" {
			o.Content = content.Texts("(a large result: the session log holds it in full)")
		}
		p, err := o.toolResult(le.Turn, le.Step, le.CallID, le.CallSeq)
		if err != nil {
			return session.Event{}, err
		}
		return p.Event(), nil
	case session.TypeTurnEnd:
		r := session.EndReason{Kind: le.Reason, Cause: le.Cause}
		if le.ErrMessage != "" {
			r.Error = &session.Failure{Message: le.ErrMessage, Code: le.ErrCode}
		}
		return session.TurnEnd{Turn: le.Turn, Reason: r}.Event(), nil
	default:
		return session.Event{}, fmt.Errorf("durable: cannot log an event of kind %q", le.Kind)
	}
}

// Logged is one event of the session's current turn as the workflow logged it.
type Logged struct {
	Seq   int64
	Event LogEvent
}

// Progress is what the QueryProgress query reports: the events of the session's current
// (or last) turn from a seq on, and the calls waiting for an answer. A client streams a
// turn by asking again from the seq after the last event it has.
type Progress struct {
	// UpdateID is the id of the UpdateTurn update whose turn Events belong to ("" before
	// the first turn of this workflow run).
	UpdateID string
	Turn     int
	Events   []Logged
	// More says that events after the last of Events were left out to keep the answer
	// small: ask again from the seq after it.
	More    bool `json:",omitempty"`
	Pending []PendingApproval
}
