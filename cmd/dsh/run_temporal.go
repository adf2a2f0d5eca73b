package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session"
)

// durableRun is what "dsh run --temporal" needs besides the task.
type durableRun struct {
	temporal  temporalFlags
	queue     string
	toolQueue string
	resume    string
	workspace string
	task      string
	approval  time.Duration
	heartbeat time.Duration
	// json prints the turn's events as JSON lines and then a summary object on standard
	// output, as "dsh run --json" does.
	json bool
}

// runTemporal starts the session workflow (or attaches to the running one of --resume),
// sends the task as a turn and reports the turn as it goes: its events as the in-process
// transcript shows them (or, with --json, as JSON lines and then a summary object), the
// calls waiting for an approval (with the command that answers them) and, when the turn
// ends, its calls and answer. Interrupting dsh run leaves the turn running on the workers;
// the session can be attached to again with --resume.
func runTemporal(ctx context.Context, e *env, r durableRun) error {
	if r.queue == "" {
		return &usageError{"dsh run --temporal needs --queue NAME: the task queue of the worker that keeps the session"}
	}
	tc, err := r.temporal.dial(e)
	if err != nil {
		return err
	}
	defer tc.Close()
	id := r.resume
	if id == "" {
		id = session.NewID(time.Now())
	}
	in := durable.SessionInput{SessionID: id, Workspace: r.workspace, SessionQueue: r.queue, ToolQueue: r.toolQueue, ApprovalTimeout: r.approval, HeartbeatTimeout: r.heartbeat}
	run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflowID(id), TaskQueue: r.queue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, durable.WorkflowName, in)
	if err != nil {
		return fmt.Errorf("start session %s on Temporal: %w", id, err)
	}
	fmt.Fprintf(e.stderr, "session %s (workflow %s, run %s)\n", id, run.GetID(), run.GetRunID())
	h, err := tc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: run.GetID(), UpdateName: durable.UpdateTurn,
		Args: []any{durable.TurnRequest{Text: r.task}}, WaitForStage: client.WorkflowUpdateStageAccepted,
	})
	if err != nil {
		return fmt.Errorf("send the turn to session %s: %w", id, err)
	}
	emit, notices := jsonLines(e.stdout), e.stderr
	if !r.json {
		tr := newTranscript(e.stderr, term.For(e.stderr, e.getenv), term.IsTerminal(e.stderr), nil)
		defer tr.stop()
		emit, notices = tr.event, e.stdout
	}
	res, err := followTurn(ctx, tc, h, emit, func(p durable.PendingApproval) {
		fmt.Fprintf(notices, "approval needed: %s %s (%s)\n  answer with: dsh approve --temporal %s %s %s yes|no [--reason TEXT]\n",
			p.Tool, p.Arguments, p.Reason, *r.temporal.addr, id, p.CallID)
	})
	if err != nil {
		return fmt.Errorf("turn of session %s: %w", id, err)
	}
	if r.json {
		if err := durableSummary(e.stdout, id, res); err != nil {
			return err
		}
		return turnExit(res)
	}
	return printTurn(e, id, res)
}

// durableSummary writes the --json summary object of a durable turn: how it ended, its
// answer, the session and turn, and the failure of an "error" turn.
func durableSummary(w io.Writer, id string, res durable.TurnResult) error {
	o := jsonv.NewObject(
		jsonv.Member{Name: "type", Value: "summary"},
		jsonv.Member{Name: "status", Value: res.Reason},
		jsonv.Member{Name: "answer", Value: strings.TrimSpace(res.Text)},
		jsonv.Member{Name: "sessionId", Value: id},
		jsonv.Member{Name: "turn", Value: float64(res.Turn)},
	)
	if res.Error != "" {
		o.Set("error", res.Error)
	}
	b, err := jsonv.Marshal(o)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// followTurn waits for the turn that h asked for and streams it while it runs: each event
// the workflow logs for the turn goes to emit in log order, and each call that waits for
// an approval to asked, once. It does not poll on a clock: a long poll on the workflow's
// history wakes it whenever the workflow moves on (an event logged, an activity finished,
// an update accepted), and it then asks the workflow (QueryProgress) for the events after
// the last one it has. A query that fails (no session worker at the moment) is retried on
// the next wake-up. It returns the turn's result.
func followTurn(ctx context.Context, tc client.Client, h client.WorkflowUpdateHandle, emit func(session.Event), asked func(durable.PendingApproval)) (durable.TurnResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	var res durable.TurnResult
	done := make(chan error, 1)
	go func() { done <- h.Get(ctx, &res) }()
	wake := make(chan struct{}, 1)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		it := tc.GetWorkflowHistory(ctx, h.WorkflowID(), h.RunID(), true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			if _, err := it.Next(); err != nil {
				return
			}
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}()
	// The turn's result is the only way out of the loop below, so the goroutine of h.Get
	// has ended by then; the history watcher ends with ctx.
	defer func() {
		cancel()
		<-watched
	}()

	var next int64
	shown := map[string]bool{}
	var pull func()
	pull = func() {
		v, err := tc.QueryWorkflow(ctx, h.WorkflowID(), h.RunID(), durable.QueryProgress, next)
		if err != nil {
			return
		}
		var p durable.Progress
		if v.Get(&p) != nil {
			return
		}
		for _, a := range p.Pending {
			if !shown[a.CallID] {
				shown[a.CallID] = true
				asked(a)
			}
		}
		if p.UpdateID != h.UpdateID() {
			return // an earlier turn still runs; this one waits behind it
		}
		for _, l := range p.Events {
			ev, err := l.Event.Event()
			if err != nil {
				continue
			}
			ev.Seq = l.Seq
			emit(ev)
			next = l.Seq + 1
		}
		if p.More && len(p.Events) > 0 {
			pull()
		}
	}
	pull()
	for {
		select {
		case err := <-done:
			if err == nil {
				pull() // the turn's last events
			}
			return res, err
		case <-wake:
			pull()
		}
	}
}

func printTurn(e *env, id string, res durable.TurnResult) error {
	for _, c := range res.Calls {
		status := "ok"
		if c.IsError {
			status = "error " + c.Code
		}
		fmt.Fprintf(e.stdout, "tool %s (%s): %s\n", c.Name, c.CallID, status)
	}
	if res.Text != "" {
		fmt.Fprintln(e.stdout, res.Text)
	}
	fmt.Fprintf(e.stderr, "turn %d of session %s ended: %s\n", res.Turn, id, res.Reason)
	return turnExit(res)
}

// turnExit is how dsh run exits after a durable turn: 0 when it completed, 1 otherwise.
func turnExit(res durable.TurnResult) error {
	switch res.Reason {
	case session.EndCompleted:
		return nil
	case session.EndError:
		return &exitError{code: 1, err: errors.New(res.Error)}
	default:
		return &exitError{code: 1, err: fmt.Errorf("the turn ended %s", res.Reason)}
	}
}
