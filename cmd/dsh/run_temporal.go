package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/dsh-go/dsh/durable"
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
}

// runTemporal starts the session workflow (or attaches to the running one of --resume),
// sends the task as a turn and reports the turn as it goes: the calls waiting for an
// approval (with the command that answers them) and, when the turn ends, its calls and
// answer. Interrupting dsh run leaves the turn running on the workers; the session can be
// attached to again with --resume.
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
	done := make(chan error, 1)
	var res durable.TurnResult
	go func() { done <- h.Get(ctx, &res) }()
	shown := map[string]bool{}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("turn of session %s: %w", id, err)
			}
			return printTurn(e, id, res)
		case <-tick.C:
			v, err := tc.QueryWorkflow(ctx, run.GetID(), "", durable.QueryPending)
			if err != nil {
				continue
			}
			var pending []durable.PendingApproval
			if v.Get(&pending) != nil {
				continue
			}
			for _, p := range pending {
				if !shown[p.CallID] {
					shown[p.CallID] = true
					fmt.Fprintf(e.stdout, "approval needed: %s %s (%s)\n  answer with: dsh approve --temporal %s %s %s yes|no [--reason TEXT]\n",
						p.Tool, p.Arguments, p.Reason, *r.temporal.addr, id, p.CallID)
				}
			}
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
	switch res.Reason {
	case session.EndCompleted:
		return nil
	case session.EndError:
		return &exitError{code: 1, err: errors.New(res.Error)}
	default:
		return &exitError{code: 1, err: fmt.Errorf("the turn ended %s", res.Reason)}
	}
}
