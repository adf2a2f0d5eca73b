package main

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/dsh-go/dsh/durable"
)

// runApproveTemporal is "dsh approve --temporal HOST:PORT SESSION CALL yes|no [--reason
// TEXT]": it answers a durable session's pending approval from any machine. An answer for
// a call that is not waiting is refused with the workflow's reason.
func runApproveTemporal(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "approve", "approve --temporal HOST:PORT SESSION CALL yes|no [--reason TEXT]")
	tf := addTemporalFlags(fs)
	reason := fs.String("reason", "", "with no: why, which the model reads")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *tf.addr == "" {
		return &usageError{"dsh approve of a durable session needs --temporal HOST:PORT"}
	}
	if len(pos) != 3 {
		return &usageError{fmt.Sprintf("want SESSION CALL yes|no, got %d arguments", len(pos))}
	}
	var approved bool
	switch strings.ToLower(pos[2]) {
	case "yes", "y":
		approved = true
	case "no", "n":
	default:
		return &usageError{fmt.Sprintf("the answer must be yes or no, got %q", pos[2])}
	}
	tc, err := tf.dial(e)
	if err != nil {
		return err
	}
	defer tc.Close()
	h, err := tc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflowID(pos[0]), UpdateName: durable.UpdateApprove,
		Args:         []any{durable.Approval{CallID: pos[1], Approved: approved, Reason: *reason}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return fmt.Errorf("answer call %s of session %s: %w", pos[1], pos[0], err)
	}
	var out string
	if err := h.Get(ctx, &out); err != nil {
		return fmt.Errorf("answer call %s of session %s: %w", pos[1], pos[0], err)
	}
	fmt.Fprintf(e.stdout, "call %s of session %s: %s\n", pos[1], pos[0], out)
	return nil
}
