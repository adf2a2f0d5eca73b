package tool

import (
	"context"
	"fmt"
	"strings"
)

// ApprovalOutcome is the answer of an approval service.
type ApprovalOutcome string

// Approval outcomes (docs/behaviour.md §7).
const (
	ApprovalAllowedOnce ApprovalOutcome = "allowed-once"
	ApprovalRejected    ApprovalOutcome = "rejected"
	ApprovalCancelled   ApprovalOutcome = "cancelled"
	ApprovalUnavailable ApprovalOutcome = "unavailable"
)

// ApprovalRequest is what a pre-execute "ask" sends to the approval service.
type ApprovalRequest struct {
	// Agent is the scope the call was made for; never nil (see SetApprover).
	Agent    *Scope
	ToolName string
	CallID   string
	Reason   string // "" when the hook gave none
	Exec     *Execution
}

// Approver resolves "ask" decisions, for example by prompting a person. It should return
// ApprovalCancelled when ctx is cancelled while it waits.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (ApprovalOutcome, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (ApprovalOutcome, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (ApprovalOutcome, error) {
	return f(ctx, req)
}

// FeedbackApprover is an Approver that can also return the person's words with its
// outcome: the reason given with a rejection ("no, and tell the model why"). The pipeline
// asks a FeedbackApprover through ApproveWithFeedback and appends non-empty feedback to the
// rejection the model reads, so the model learns what to do instead.
type FeedbackApprover interface {
	Approver
	ApproveWithFeedback(ctx context.Context, req ApprovalRequest) (ApprovalOutcome, string, error)
}

type approverBox struct{ a Approver }

// SetApprover installs the approval service; with none installed every "ask" is denied.
// The returned function uninstalls it (if it is still the installed one).
//
// The service is asked only about calls made for an agent: a call whose Input.Agent is nil
// is never routed to it, and an "ask" for such a call is denied with "tool "<name>" requires
// approval, but the call has no agent to route it through". This is the reference
// harness's rule — approvals are answered per agent — so give every call that may need
// approval an Agent: a scope from NewScope (the global scope counts as none).
func (r *Registry) SetApprover(a Approver) (remove func()) {
	box := &approverBox{a: a}
	r.approver.Store(box)
	return func() { r.approver.CompareAndSwap(box, nil) }
}

// resolveAsk turns an "ask" into allow or deny (docs/behaviour.md §7); cancelled reports that the
// service answered ApprovalCancelled.
func (r *Registry) resolveAsk(ctx context.Context, exec *Execution, d PreDecision) (deny string, cancelled bool, err error) {
	box := r.approver.Load()
	if box == nil || box.a == nil {
		if d.Reason != "" {
			return d.Reason, false, nil
		}
		return fmt.Sprintf("tool \"%s\" requires approval (not yet supported)", exec.name), false, nil
	}
	if exec.agent == nil {
		return fmt.Sprintf("tool \"%s\" requires approval, but the call has no agent to route it through", exec.name), false, nil
	}
	req := ApprovalRequest{Agent: exec.agent, ToolName: exec.name, CallID: exec.callID, Reason: d.Reason, Exec: exec}
	var out ApprovalOutcome
	var feedback string
	if fa, ok := box.a.(FeedbackApprover); ok {
		out, feedback, err = fa.ApproveWithFeedback(ctx, req)
	} else {
		out, err = box.a.Approve(ctx, req)
	}
	if err != nil {
		return "", false, err
	}
	switch out {
	case ApprovalAllowedOnce:
		return "", false, nil
	case ApprovalRejected:
		if feedback = strings.TrimSpace(feedback); feedback != "" {
			return fmt.Sprintf("the user rejected tool \"%s\": %s", exec.name, feedback), false, nil
		}
		return fmt.Sprintf("the user rejected tool \"%s\"", exec.name), false, nil
	case ApprovalCancelled:
		return fmt.Sprintf("approval for tool \"%s\" was cancelled", exec.name), true, nil
	case ApprovalUnavailable:
		return fmt.Sprintf("tool \"%s\" requires approval, but no approval channel is available", exec.name), false, nil
	default:
		return "", false, fmt.Errorf("approval service returned unknown outcome %q for tool %q", out, exec.name)
	}
}
