package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// approvalState carries one call's approval answer into Registry.Prepare, which asks the
// registry's approver (workflowApprover) on a goroutine of its own: the approver only reads
// and writes this state, and the workflow waits for the answer between two Prepares.
type approvalState struct {
	answered bool
	approved bool
	expired  bool
	reason   string
	asked    bool   // the approver was consulted without an answer
	question string // the pre-execute hook's reason
}

type approvalKey struct{}

// workflowApprover answers "ask" decisions from the approvalState in the context: without
// an answer it records the question and answers "unavailable" (the workflow discards that
// preparation, waits for the answer and prepares again).
type workflowApprover struct{}

func (workflowApprover) Approve(ctx context.Context, req tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
	out, _, err := workflowApprover{}.ApproveWithFeedback(ctx, req)
	return out, err
}

func (workflowApprover) ApproveWithFeedback(ctx context.Context, req tool.ApprovalRequest) (tool.ApprovalOutcome, string, error) {
	st, _ := ctx.Value(approvalKey{}).(*approvalState)
	switch {
	case st == nil:
		return tool.ApprovalUnavailable, "", nil
	case !st.answered:
		st.asked, st.question = true, req.Reason
		return tool.ApprovalUnavailable, "", nil
	case ctx.Err() != nil:
		return tool.ApprovalCancelled, "", nil
	case st.approved:
		return tool.ApprovalAllowedOnce, "", nil
	default:
		return tool.ApprovalRejected, st.reason, nil
	}
}

// run is the state of one workflow run.
type run struct {
	h       *Host
	in      SessionInput
	seq     int64 // the log's next seq
	queue   []*turnSlot
	pending map[string]*pendingCall
	order   []string // pending call ids, oldest first
	turns   int      // turns taken by this run
	// trail is what QueryProgress reports: the events of the current (or last) turn and
	// the id of the update that asked for it.
	trail       []Logged
	trailUpdate string
}

type turnSlot struct {
	req      TurnRequest
	updateID string
	done     bool
	res      TurnResult
}

type pendingCall struct {
	info   PendingApproval
	answer *Approval
}

// Session is the session workflow: it opens the log, then runs the turns that arrive as
// UpdateTurn updates one at a time, until it is cancelled or continues as new.
func (h *Host) Session(ctx workflow.Context, in SessionInput) error {
	in.defaults()
	r := &run{h: h, in: in, seq: in.NextSeq, pending: map[string]*pendingCall{}}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateTurn, r.onTurn, workflow.UpdateHandlerOptions{Validator: validateTurn}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateApprove, r.onApprove, workflow.UpdateHandlerOptions{Validator: r.validateApproval}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryPending, func() ([]PendingApproval, error) {
		return r.pendingList(), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryProgress, r.progress); err != nil {
		return err
	}
	if !in.Opened {
		var out OpenOutput
		if err := workflow.ExecuteLocalActivity(r.local(ctx), activityOpen, OpenInput{SessionID: in.SessionID, Workspace: in.Workspace}).Get(ctx, &out); err != nil {
			return fmt.Errorf("open session %q: %w", in.SessionID, err)
		}
		r.seq, r.in.Turn, r.in.Opened = out.NextSeq, out.Turn, true
		// The open is the one log write that is not idempotent (it reports where the log
		// stands): end the workflow task here so that its result is in the history before
		// any turn is appended. Otherwise a session worker that crashed after appending in
		// the same task would, on replay, reopen a log holding the turn's first events and
		// start the turn after them.
		if workflow.GetVersion(ctx, versionOpenBarrier, workflow.DefaultVersion, 1) == 1 {
			if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
				return err
			}
		}
	}
	for {
		if err := workflow.Await(ctx, func() bool { return r.next() != nil }); err != nil {
			// Cancelled while idle: nothing is running.
			return err
		}
		slot := r.next()
		r.trail, r.trailUpdate = nil, slot.updateID
		slot.res = r.turn(ctx, slot.req)
		slot.done = true
		r.turns++
		if ctx.Err() != nil {
			// Turns still queued do not run; let every turn's update handler return its
			// (aborted) result before the run ends.
			for s := r.next(); s != nil; s = r.next() {
				s.res, s.done = TurnResult{Reason: session.EndAborted}, true
			}
			dctx, _ := workflow.NewDisconnectedContext(ctx)
			_ = workflow.Await(dctx, func() bool { return workflow.AllHandlersFinished(dctx) })
			return temporal.NewCanceledError()
		}
		if r.turns >= r.in.TurnsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			if err := workflow.Await(ctx, func() bool { return r.next() == nil && workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			if r.next() == nil {
				next := r.in
				next.NextSeq = r.seq
				return workflow.NewContinueAsNewError(ctx, WorkflowName, next)
			}
		}
	}
}

// next returns the oldest turn not yet run.
func (r *run) next() *turnSlot {
	for _, s := range r.queue {
		if !s.done {
			return s
		}
	}
	return nil
}

func validateTurn(req TurnRequest) error {
	if req.Text == "" {
		return errors.New("a turn needs a non-empty message")
	}
	return nil
}

// progressLimit bounds the encoded events of one QueryProgress answer, well under
// Temporal's payload limit; the client asks again for the rest (Progress.More).
const progressLimit = 1 << 20

// progress answers QueryProgress: the current turn's events from seq from on.
func (r *run) progress(from int64) (Progress, error) {
	p := Progress{UpdateID: r.trailUpdate, Turn: r.in.Turn}
	size := 0
	for _, l := range r.trail {
		if l.Seq < from {
			continue
		}
		b, err := json.Marshal(l)
		if err != nil {
			return Progress{}, fmt.Errorf("encode the event at seq %d: %w", l.Seq, err)
		}
		if size += len(b); size > progressLimit && len(p.Events) > 0 {
			p.More = true
			break
		}
		p.Events = append(p.Events, l)
	}
	p.Pending = r.pendingList()
	return p, nil
}

// pendingList lists the calls waiting for an answer, oldest first.
func (r *run) pendingList() []PendingApproval {
	out := make([]PendingApproval, 0, len(r.order))
	for _, id := range r.order {
		out = append(out, r.pending[id].info)
	}
	return out
}

// onTurn queues a turn and returns its result when it has ended.
func (r *run) onTurn(ctx workflow.Context, req TurnRequest) (TurnResult, error) {
	slot := &turnSlot{req: req}
	if u := workflow.GetCurrentUpdateInfo(ctx); u != nil {
		slot.updateID = u.ID
	}
	r.queue = append(r.queue, slot)
	// A cancelled workflow still ends the turn (aborted): wait for that result.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if err := workflow.Await(dctx, func() bool { return slot.done }); err != nil {
		return TurnResult{}, err
	}
	for i, s := range r.queue {
		if s == slot {
			r.queue = append(r.queue[:i:i], r.queue[i+1:]...)
			break
		}
	}
	return slot.res, nil
}

func (r *run) validateApproval(a Approval) error {
	p, ok := r.pending[a.CallID]
	if !ok {
		return fmt.Errorf("no call %q is waiting for approval", a.CallID)
	}
	if p.answer != nil {
		return fmt.Errorf("call %q was already answered", a.CallID)
	}
	return nil
}

// onApprove records an answer; the waiting call goes on with it.
func (r *run) onApprove(ctx workflow.Context, a Approval) (string, error) {
	if err := r.validateApproval(a); err != nil {
		return "", err
	}
	r.pending[a.CallID].answer = &a
	if a.Approved {
		return "approved", nil
	}
	return "rejected", nil
}

// local sets the options of the session log's local activities. A failed write is retried
// for two minutes: long enough for a crashed writer's lease on a PostgreSQL session to lapse
// (30 s by default), so that a session worker taking over can reopen the log.
func (r *run) local(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    time.Minute,
		ScheduleToCloseTimeout: 2 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second},
	})
}

// appendEvents logs events at the run's next seq. It runs on a context that cancellation
// does not reach, so a cancelled turn still closes every call and the turn.
func (r *run) appendEvents(ctx workflow.Context, evs ...LogEvent) ([]int64, error) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	var seqs []int64
	err := workflow.ExecuteLocalActivity(r.local(dctx), activityAppend, AppendInput{SessionID: r.in.SessionID, Expect: r.seq, Events: evs}).Get(dctx, &seqs)
	if err != nil {
		return nil, fmt.Errorf("log %s: %w", evs[0].Kind, err)
	}
	if len(seqs) != len(evs) {
		return nil, fmt.Errorf("log %s: %d seqs for %d events", evs[0].Kind, len(seqs), len(evs))
	}
	r.seq = seqs[len(seqs)-1] + 1
	for i, ev := range evs {
		r.trail = append(r.trail, Logged{Seq: seqs[i], Event: ev})
	}
	return seqs, nil
}

// turn runs one turn and logs it from turn/start to turn/end.
func (r *run) turn(ctx workflow.Context, req TurnRequest) TurnResult {
	r.in.Turn++
	res := TurnResult{Turn: r.in.Turn}
	end := func(reason string, failure error) TurnResult {
		res.Reason = reason
		ev := LogEvent{Kind: session.TypeTurnEnd, Turn: res.Turn, Reason: reason}
		if reason == session.EndAborted {
			ev.Cause = "user"
		}
		if failure != nil {
			res.Error = failure.Error()
			ev.ErrMessage, ev.ErrCode = res.Error, "UNKNOWN"
		}
		if _, err := r.appendEvents(ctx, ev); err != nil && res.Error == "" {
			res.Error = err.Error()
		}
		return res
	}
	if _, err := r.appendEvents(ctx,
		LogEvent{Kind: session.TypeTurnStart, Turn: res.Turn},
		LogEvent{Kind: session.TypeUserMessage, Turn: res.Turn, Text: req.Text}); err != nil {
		res.Reason, res.Error = session.EndError, err.Error()
		return res
	}
	for step := 1; step <= r.in.MaxSteps; step++ {
		if ctx.Err() != nil {
			return end(session.EndAborted, nil)
		}
		if _, err := r.appendEvents(ctx, LogEvent{Kind: session.TypeStepStart, Turn: res.Turn, Step: step}); err != nil {
			return end(session.EndError, err)
		}
		mctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue:           r.in.SessionQueue,
			StartToCloseTimeout: 10 * time.Minute,
			HeartbeatTimeout:    r.in.HeartbeatTimeout,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
		})
		var reply ModelOutput
		err := workflow.ExecuteActivity(mctx, activityModel, ModelInput{SessionID: r.in.SessionID, Turn: res.Turn, Step: step, Expect: r.seq}).Get(ctx, &reply)
		if err != nil {
			if ctx.Err() != nil {
				r.appendEvents(ctx, LogEvent{Kind: session.TypeStepEnd, Turn: res.Turn, Step: step})
				return end(session.EndAborted, nil)
			}
			r.appendEvents(ctx, LogEvent{Kind: session.TypeStepEnd, Turn: res.Turn, Step: step})
			return end(session.EndError, fmt.Errorf("model request of step %d: %w", step, err))
		}
		r.seq = reply.Seq + 1
		r.trail = append(r.trail, Logged{Seq: reply.Seq, Event: LogEvent{Kind: session.TypeAssistantMessage, Turn: res.Turn, Step: step, Text: reply.Text, Calls: reply.Calls}})
		if reply.Text != "" {
			res.Text = reply.Text
		}
		b, err := r.batch(ctx, res.Turn, step, reply.Calls, &res)
		if err != nil {
			return end(session.EndError, err)
		}
		if _, err := r.appendEvents(ctx, LogEvent{Kind: session.TypeStepEnd, Turn: res.Turn, Step: step}); err != nil {
			return end(session.EndError, err)
		}
		switch {
		case b.aborted || ctx.Err() != nil:
			return end(session.EndAborted, nil)
		case len(reply.Calls) == 0 || b.concludes:
			return end(session.EndCompleted, nil)
		}
	}
	return end("max-steps", nil)
}

type batchOut struct{ aborted, concludes bool }

// slot is one call of a batch.
type slot struct {
	call    Call
	input   tool.Input
	seq     int64 // its tool/call
	future  workflow.Future
	ready   bool
	outcome Outcome
	started bool
}

// batch runs one step's calls: exclusive calls alone, concurrency-safe calls in a rolling
// pool of MaxParallel, each call's tool/call, pre-dispatch stages and tool/result in model
// order. When the workflow is cancelled, started calls drain and unstarted calls get
// tool/call + ABORTED_BEFORE_DISPATCH.
func (r *run) batch(ctx workflow.Context, turn, step int, calls []Call, res *TurnResult) (batchOut, error) {
	var out batchOut
	reg := r.h.cfg.Registry
	slots := make([]*slot, len(calls))
	scope := r.h.scope(r.in.SessionID)
	for i, c := range calls {
		slots[i] = &slot{call: c, input: tool.Input{CallID: c.ID, Name: c.Name, Args: reg.ParseArguments(c.RawArgs), OwnArgs: true, Agent: scope}}
	}
	modes := make([]tool.ExecMode, len(calls))
	for i, s := range slots {
		modes[i] = reg.ExecutionMode(s.input)
	}
	commit := func(s *slot) error {
		o := s.outcome
		if _, err := r.appendEvents(ctx, LogEvent{Kind: session.TypeToolResult, Turn: turn, Step: step, CallID: s.call.ID, CallSeq: s.seq, Outcome: &o}); err != nil {
			return err
		}
		res.Calls = append(res.Calls, CallSummary{CallID: s.call.ID, Name: s.call.Name, IsError: o.IsError, Code: o.ErrCode})
		if o.ConcludesTurn {
			out.concludes = true
		}
		return nil
	}
	next := 0
	for next < len(slots) {
		end := next + 1
		if modes[next] == tool.Parallel {
			for end < len(slots) && modes[end] == tool.Parallel {
				end++
			}
		}
		group := slots[next:end]
		started, committed, inFlight := 0, 0, 0
		for committed < len(group) {
			for started < len(group) && inFlight < r.in.MaxParallel && ctx.Err() == nil {
				s := group[started]
				if err := r.start(ctx, turn, step, s, modes[next+started]); err != nil {
					return out, err
				}
				started++
				if s.future != nil {
					inFlight++
				}
			}
			for committed < started && group[committed].ready {
				if err := commit(group[committed]); err != nil {
					return out, err
				}
				committed++
			}
			if committed == started && ctx.Err() != nil {
				break
			}
			if committed < len(group) && inFlight > 0 {
				sel := workflow.NewSelector(ctx)
				for _, s := range group[:started] {
					if s.future != nil && !s.ready {
						s := s
						sel.AddFuture(s.future, func(f workflow.Future) { r.settle(ctx, f, s) })
					}
				}
				sel.Select(ctx)
				inFlight--
			}
		}
		next += started
		if ctx.Err() != nil {
			out.aborted = true
			for _, s := range slots[next:] {
				seqs, err := r.appendEvents(ctx, LogEvent{Kind: session.TypeToolCall, Turn: turn, Step: step, CallID: s.call.ID, Name: s.call.Name, Args: s.call.RawArgs})
				if err != nil {
					return out, err
				}
				s.seq = seqs[0]
				s.outcome, _ = outcomeOf(tool.AbortedBeforeDispatch())
				if err := commit(s); err != nil {
					return out, err
				}
			}
			return out, nil
		}
	}
	return out, nil
}

// start logs a call's tool/call, runs its pre-dispatch stages (waiting for an approval when
// one is asked) and either schedules its tool activity or settles it with its pre-dispatch
// result.
func (r *run) start(ctx workflow.Context, turn, step int, s *slot, mode tool.ExecMode) error {
	seqs, err := r.appendEvents(ctx, LogEvent{Kind: session.TypeToolCall, Turn: turn, Step: step, CallID: s.call.ID, Name: s.call.Name, Args: s.call.RawArgs})
	if err != nil {
		return err
	}
	s.seq, s.started = seqs[0], true
	inv, err := r.prepare(ctx, turn, step, s)
	if err != nil {
		return err
	}
	if !inv.NeedsDispatch() {
		s.outcome, err = outcomeOf(inv.Finalize())
		s.ready = true
		return err
	}
	policy := &temporal.RetryPolicy{MaximumAttempts: 1}
	if mode == tool.Parallel {
		// Concurrency-safe tools only read: running one again is harmless.
		policy = &temporal.RetryPolicy{MaximumAttempts: 5, InitialInterval: time.Second}
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           r.in.ToolQueue,
		StartToCloseTimeout: r.in.ToolTimeout,
		HeartbeatTimeout:    r.in.HeartbeatTimeout,
		WaitForCancellation: true,
		RetryPolicy:         policy,
		ActivityID:          fmt.Sprintf("tool-%d-%d-%s", turn, step, s.call.ID),
	})
	s.future = workflow.ExecuteActivity(actx, activityTool, ToolInput{SessionID: r.in.SessionID, Turn: turn, Step: step, Call: s.call})
	return nil
}

// settle records a finished tool activity's outcome. An activity cancelled before it
// started is ABORTED_BEFORE_DISPATCH; one whose worker was lost and that may not be retried
// has an unknown outcome, as after an in-process crash.
func (r *run) settle(ctx workflow.Context, f workflow.Future, s *slot) {
	s.ready = true
	var o Outcome
	err := f.Get(ctx, &o)
	var cancelled *temporal.CanceledError
	switch {
	case err == nil:
		s.outcome = o
	case errors.As(err, &cancelled):
		s.outcome, _ = outcomeOf(tool.AbortedBeforeDispatch())
	default:
		s.outcome = failed("ToolOutcomeUnknownError", session.CodeToolOutcomeUnknown,
			fmt.Sprintf("The tool call was interrupted after it was recorded, but no result was durably recorded (%v). "+
				"Its outcome is unknown. Retry only if the operation is read-only or idempotent; otherwise first verify external state or ask the user.", err))
	}
}

// prepare runs the pre-dispatch stages of a call in the workflow. When the approver is
// asked, the call waits (durably) for an UpdateApprove answer until ApprovalTimeout, then
// the stages run again with the answer; expiry denies, cancellation aborts.
func (r *run) prepare(ctx workflow.Context, turn, step int, s *slot) (*tool.Invocation, error) {
	reg := r.h.cfg.Registry
	st := &approvalState{}
	inv := reg.Prepare(r.goContext(ctx, st), s.input)
	if !st.asked {
		return inv, nil
	}
	id := s.call.ID
	r.pending[id] = &pendingCall{info: PendingApproval{CallID: id, Tool: s.call.Name, Arguments: s.call.RawArgs, Reason: st.question}}
	r.order = append(r.order, id)
	if _, err := r.appendEvents(ctx, LogEvent{Kind: session.TypeApprovalAsked, CallID: id, Name: s.call.Name, Reason: st.question}); err != nil {
		return nil, err
	}
	answered, err := workflow.AwaitWithTimeout(ctx, r.in.ApprovalTimeout, func() bool { return r.pending[id].answer != nil })
	p := r.pending[id]
	delete(r.pending, id)
	for i, o := range r.order {
		if o == id {
			r.order = append(r.order[:i:i], r.order[i+1:]...)
			break
		}
	}
	next := &approvalState{answered: true}
	switch {
	case err != nil || ctx.Err() != nil:
		// Cancelled while waiting: the approver answers "cancelled", the call aborts.
	case !answered:
		next.reason = fmt.Sprintf("no answer within %s", r.in.ApprovalTimeout)
		next.expired = true
	default:
		next.approved, next.reason = p.answer.Approved, p.answer.Reason
	}
	decided := LogEvent{Kind: session.TypeApprovalDecided, CallID: id, Approved: next.approved, Reason: next.reason}
	if _, err := r.appendEvents(ctx, decided); err != nil {
		return nil, err
	}
	return reg.Prepare(r.goContext(ctx, next), s.input), nil
}

// goContext is the context.Context the registry's stages see: cancelled when the workflow
// is, carrying the call's approval state.
func (r *run) goContext(ctx workflow.Context, st *approvalState) context.Context {
	c := context.WithValue(context.Background(), approvalKey{}, st)
	if ctx.Err() != nil {
		cc, cancel := context.WithCancel(c)
		cancel()
		return cc
	}
	return c
}
