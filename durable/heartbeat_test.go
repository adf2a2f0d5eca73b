package durable_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/llm/script"
)

// TestModelActivityHasAHeartbeatTimeout checks that a model request is scheduled with the
// session's heartbeat timeout, so a request
// whose session worker was lost is retried on another worker after that timeout rather
// than after the request's ten-minute bound.
func TestModelActivityHasAHeartbeatTimeout(t *testing.T) {
	f := newFixture(t, []script.Reply{{Text: "done"}}, nil)
	e := env(t, f)
	var got []time.Duration
	e.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == "dsh.model" {
			got = append(got, info.HeartbeatTimeout)
		}
	})
	tc := sendTurn(e, "go", time.Second, e.CancelWorkflow)
	in := input()
	in.HeartbeatTimeout = 7 * time.Second
	e.ExecuteWorkflow(durable.WorkflowName, in)
	if !tc.done || tc.err != nil || tc.res.Text != "done" {
		t.Fatalf("turn %+v, workflow %v", tc, e.GetWorkflowError())
	}
	if len(got) != 1 || got[0] != 7*time.Second {
		t.Fatalf("model activities started with heartbeat timeouts %v, want [7s]", got)
	}
}
