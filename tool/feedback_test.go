package tool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dsh-go/dsh/tool"
)

// feedbackApprover answers with an outcome and the person's message.
type feedbackApprover struct {
	outcome  tool.ApprovalOutcome
	feedback string
	err      error
	plain    int // calls of Approve (must stay 0)
}

func (f *feedbackApprover) Approve(context.Context, tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
	f.plain++
	return tool.ApprovalAllowedOnce, nil
}

func (f *feedbackApprover) ApproveWithFeedback(context.Context, tool.ApprovalRequest) (tool.ApprovalOutcome, string, error) {
	return f.outcome, f.feedback, f.err
}

// A FeedbackApprover's message reaches the model with the rejection.
func TestFeedbackApprover(t *testing.T) {
	tests := []struct {
		name     string
		a        *feedbackApprover
		want     string
		isError  bool
		hasError bool
	}{
		{"rejected with feedback", &feedbackApprover{outcome: tool.ApprovalRejected, feedback: "  use the staging branch\n"}, `Error: the user rejected tool "echo": use the staging branch`, true, false},
		{"rejected without feedback", &feedbackApprover{outcome: tool.ApprovalRejected, feedback: " "}, `Error: the user rejected tool "echo"`, true, false},
		{"feedback ignored when allowed", &feedbackApprover{outcome: tool.ApprovalAllowedOnce, feedback: "fine"}, "hi", false, false},
		{"an error ends the call", &feedbackApprover{err: errors.New("tty gone")}, "", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := newReg(t)
			register(t, reg, echoTool())
			reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				return tool.Ask("why"), nil
			})
			reg.SetApprover(tt.a)
			res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "echo", Args: js(t, `{"text":"hi"}`), Agent: reg.NewScope("a", nil)})
			checkInvariants(t, res)
			if res.IsError != tt.isError {
				t.Fatalf("isError = %v: %s", res.IsError, resultJSON(t, res))
			}
			if tt.hasError {
				if res.Error == nil || res.Error.Message == "" {
					t.Errorf("no error: %s", resultJSON(t, res))
				}
			} else if got := firstText(res); got != tt.want {
				t.Errorf("text %q, want %q", got, tt.want)
			}
			if tt.a.plain != 0 {
				t.Error("Approve was called instead of ApproveWithFeedback")
			}
		})
	}
}
