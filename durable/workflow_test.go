package durable_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

const sessionID = "s-durable-test"

// env is a workflow test environment running f's workflow and activities.
func env(t *testing.T, f *fixture) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quiet())
	e := s.NewTestWorkflowEnvironment()
	e.SetTestTimeout(time.Minute)
	f.host.Register(e)
	return e
}

// turn sends one turn after the workflow started and records its result; when the turn
// has ended the workflow is cancelled (it would wait for the next turn forever).
type turnCall struct {
	res  durable.TurnResult
	err  error
	done bool
}

func sendTurn(e *testsuite.TestWorkflowEnvironment, text string, after time.Duration, then func()) *turnCall {
	tc := &turnCall{}
	e.RegisterDelayedCallback(func() {
		e.UpdateWorkflow(durable.UpdateTurn, "turn-"+text, &testsuite.TestUpdateCallback{
			OnReject: func(err error) { tc.err, tc.done = err, true },
			OnComplete: func(v any, err error) {
				tc.done, tc.err = true, err
				if err == nil {
					tc.res = v.(durable.TurnResult)
				}
				if then != nil {
					then()
				}
			},
		}, durable.TurnRequest{Text: text})
	}, after)
	return tc
}

func input() durable.SessionInput {
	return durable.SessionInput{SessionID: sessionID, Workspace: "/ws", SessionQueue: "q", MaxParallel: 2}
}

func TestTurnRunsCallsAndCommitsInModelOrder(t *testing.T) {
	f := newFixture(t, []script.Reply{
		{ToolCalls: []script.ToolCall{
			{ID: "a", Name: "echo", Arguments: `{"text":"one"}`},
			{ID: "b", Name: "echo", Arguments: `{"text":"two"}`},
			{ID: "c", Name: "echo", Arguments: `{"text":"three"}`},
			{ID: "d", Name: "nope", Arguments: `{}`},
			{ID: "e", Name: "echo", Arguments: `{"text":1}`},
		}},
		{ExpectToolResults: []string{"a", "b", "c", "d", "e"}, Text: "done"},
	}, nil)
	e := env(t, f)
	tc := sendTurn(e, "go", time.Second, e.CancelWorkflow)
	e.ExecuteWorkflow(durable.WorkflowName, input())
	if !tc.done || tc.err != nil {
		t.Fatalf("turn: done=%v err=%v workflow=%v", tc.done, tc.err, e.GetWorkflowError())
	}
	if tc.res.Reason != session.EndCompleted || tc.res.Text != "done" || tc.res.Turn != 1 {
		t.Fatalf("turn result %+v", tc.res)
	}
	evs := f.events(t, sessionID)
	order, results := callResults(t, evs)
	if strings.Join(order, "") != "abcde" {
		t.Fatalf("calls %v", order)
	}
	for id, want := range map[string]string{"a": "one", "b": "two", "c": "three"} {
		if r := results[id]; r.IsError || !strings.Contains(text(r), want) {
			t.Errorf("call %s: %+v", id, r)
		}
	}
	if r := results["d"]; !r.IsError || r.Error == nil || r.Error.Code != tool.CodeUnknownTool {
		t.Errorf("unknown tool: %+v", r)
	}
	if r := results["e"]; !r.IsError || r.Error == nil || r.Error.Code != tool.CodeInvalidArgs {
		t.Errorf("bad args: %+v", r)
	}
	want := []string{"turn/start", "user/message", "step/start", "assistant/message"}
	if got := types(evs)[:4]; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("log starts %v", got)
	}
	last := evs[len(evs)-1]
	end, err := session.DecodeTurnEnd(last)
	if err != nil || end.Reason.Kind != session.EndCompleted {
		t.Fatalf("last event %v %+v %v", last.Type, end, err)
	}
	if _, err := session.DeriveMessages(evs); err != nil {
		t.Fatalf("the log does not derive: %v", err)
	}
}

// approvalCase answers touch's approval (or not) and checks what the call became.
func TestApproval(t *testing.T) {
	cases := []struct {
		name     string
		answer   *durable.Approval
		wantErr  bool
		wantText string
		runs     int
	}{
		{name: "approved", answer: &durable.Approval{CallID: "t1", Approved: true}, wantText: "created f", runs: 1},
		{name: "rejected", answer: &durable.Approval{CallID: "t1", Reason: "not there"}, wantErr: true, wantText: "not there"},
		{name: "expired", wantErr: true, wantText: "no answer within 1h0m0s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, []script.Reply{
				{ToolCalls: []script.ToolCall{{ID: "t1", Name: "touch", Arguments: `{"name":"f"}`}}},
				{Text: "ok"},
			}, nil)
			e := env(t, f)
			in := input()
			in.ApprovalTimeout = time.Hour
			tc := sendTurn(e, "go", time.Second, e.CancelWorkflow)
			var pending []durable.PendingApproval
			var answerErr error
			if c.answer != nil {
				e.RegisterDelayedCallback(func() {
					v, err := e.QueryWorkflow(durable.QueryPending)
					if err != nil {
						t.Error(err)
						return
					}
					if err := v.Get(&pending); err != nil {
						t.Error(err)
					}
					// An answer for a call that is not waiting is refused.
					e.UpdateWorkflow(durable.UpdateApprove, "bad", &testsuite.TestUpdateCallback{
						OnReject:   func(err error) { answerErr = err },
						OnComplete: func(any, error) {},
					}, durable.Approval{CallID: "zz", Approved: true})
					e.UpdateWorkflow(durable.UpdateApprove, "answer", &testsuite.TestUpdateCallback{
						OnReject:   func(err error) { t.Errorf("answer rejected: %v", err) },
						OnComplete: func(any, error) {},
					}, *c.answer)
				}, time.Minute)
			}
			e.ExecuteWorkflow(durable.WorkflowName, in)
			if !tc.done || tc.err != nil {
				t.Fatalf("turn: %+v", tc)
			}
			if c.answer != nil {
				if len(pending) != 1 || pending[0].CallID != "t1" || pending[0].Tool != "touch" || pending[0].Reason != "touch writes to the workspace" {
					t.Fatalf("pending %+v", pending)
				}
				if answerErr == nil || !strings.Contains(answerErr.Error(), `no call "zz" is waiting`) {
					t.Fatalf("answer for an unknown call: %v", answerErr)
				}
			}
			_, results := callResults(t, f.events(t, sessionID))
			r := results["t1"]
			if r.IsError != c.wantErr || !strings.Contains(text(r), c.wantText) {
				t.Fatalf("result %+v, want error=%v containing %q", r, c.wantErr, c.wantText)
			}
			if got := f.bodyRuns("touch"); got != c.runs {
				t.Fatalf("touch ran %d times, want %d", got, c.runs)
			}
		})
	}
}

// TestCancelAbortsRunningAndUnstartedCalls cancels the workflow while a body runs: every
// call is closed, the unstarted one never runs, and the turn ends aborted.
func TestCancelAbortsRunningAndUnstartedCalls(t *testing.T) {
	f := newFixture(t, []script.Reply{
		{ToolCalls: []script.ToolCall{
			{ID: "g", Name: "gate", Arguments: `{"text":"x"}`},
			{ID: "h", Name: "echo", Arguments: `{"text":"never"}`},
		}},
	}, func(c *durable.HostConfig) { c.HeartbeatInterval = 10 * time.Millisecond })
	e := env(t, f)
	tc := sendTurn(e, "go", time.Second, nil)
	go func() {
		<-f.started
		e.CancelWorkflow()
	}()
	e.ExecuteWorkflow(durable.WorkflowName, input())
	// The test environment does not cancel the activity's context: let the body return.
	close(f.release)
	testwait.Recv(t, f.gateEnd, "the gate body to return")
	// The activity goes on after its body: it records the result last. Wait for that, so
	// that nothing writes into the test's directories once the test has ended.
	testwait.Until(t, "the gate call's result to be recorded", func() bool {
		recorded, _ := filepath.Glob(filepath.Join(f.results, "*.json"))
		return len(recorded) == 1
	})
	var canceled interface{ Error() string }
	if err := e.GetWorkflowError(); err == nil || !errors.As(err, &canceled) {
		t.Fatalf("workflow error %v", err)
	}
	_ = tc
	evs := f.events(t, sessionID)
	_, results := callResults(t, evs)
	// The test environment resolves a cancelled activity at once (it does not wait for the
	// activity as a server does with WaitForCancellation), so the running call is closed
	// here as never dispatched; on a server (TestDurableCancel in cmd/dsh) the activity's
	// own ABORTED result is recorded.
	if r := results["g"]; !r.IsError || r.Error == nil || r.Error.Code != tool.CodeAbortedBeforeDispatch {
		t.Fatalf("running call: %+v", r)
	}
	if r := results["h"]; !r.IsError || r.Error == nil || r.Error.Code != tool.CodeAbortedBeforeDispatch {
		t.Fatalf("unstarted call: %+v", r)
	}
	if f.bodyRuns("echo") != 0 {
		t.Fatal("an unstarted call ran")
	}
	end, err := session.DecodeTurnEnd(evs[len(evs)-1])
	if err != nil || end.Reason.Kind != session.EndAborted {
		t.Fatalf("turn end %+v %v", end, err)
	}
}

func TestLargeResultPassesByReference(t *testing.T) {
	f := newFixture(t, []script.Reply{
		{ToolCalls: []script.ToolCall{{ID: "b", Name: "big", Arguments: `{"text":"0123456789"}`}}},
		{Text: "ok"},
	}, func(c *durable.HostConfig) { c.SpillThreshold = 1024 })
	e := env(t, f)
	var passed durable.Outcome
	e.SetOnActivityCompletedListener(func(info *activity.Info, result converter.EncodedValue, err error) {
		if info.ActivityType.Name == "dsh.tool" {
			if err := result.Get(&passed); err != nil {
				t.Error(err)
			}
		}
	})
	tc := sendTurn(e, "go", time.Second, e.CancelWorkflow)
	e.ExecuteWorkflow(durable.WorkflowName, input())
	if !tc.done || tc.err != nil {
		t.Fatalf("turn %+v", tc)
	}
	if passed.Ref == "" || len(passed.Content) != 0 {
		t.Fatalf("the activity passed %d content blocks and ref %q, want a reference only", len(passed.Content), passed.Ref)
	}
	_, results := callResults(t, f.events(t, sessionID))
	if got := len(text(results["b"])); got < 40960 {
		t.Fatalf("the logged result has %d bytes of text, want the whole result", got)
	}
}

func TestModelFailureEndsTheTurnWithAnError(t *testing.T) {
	f := newFixture(t, []script.Reply{{Error: "the model is down"}}, nil)
	e := env(t, f)
	tc := sendTurn(e, "go", time.Second, e.CancelWorkflow)
	e.ExecuteWorkflow(durable.WorkflowName, input())
	if !tc.done || tc.err != nil || tc.res.Reason != session.EndError || !strings.Contains(tc.res.Error, "model request of step 1") {
		t.Fatalf("turn %+v", tc)
	}
	evs := f.events(t, sessionID)
	end, err := session.DecodeTurnEnd(evs[len(evs)-1])
	if err != nil || end.Reason.Kind != session.EndError || end.Reason.Error == nil {
		t.Fatalf("turn end %+v %v", end, err)
	}
}

func TestContinuesAsNewAfterTurnsPerRun(t *testing.T) {
	f := newFixture(t, []script.Reply{{Text: "hi"}}, nil)
	e := env(t, f)
	in := input()
	in.TurnsPerRun = 1
	tc := sendTurn(e, "go", time.Second, nil)
	e.ExecuteWorkflow(durable.WorkflowName, in)
	if !tc.done || tc.res.Reason != session.EndCompleted {
		t.Fatalf("turn %+v", tc)
	}
	var can *workflow.ContinueAsNewError
	if err := e.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	var next durable.SessionInput
	if err := e.GetWorkflowResult(&next); err == nil {
		t.Fatal("a continued workflow has no result")
	}
	_ = next
}

func TestRejectsAnEmptyTurn(t *testing.T) {
	f := newFixture(t, nil, nil)
	e := env(t, f)
	var rejected error
	e.RegisterDelayedCallback(func() {
		e.UpdateWorkflow(durable.UpdateTurn, "empty", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { rejected = err; e.CancelWorkflow() },
			OnComplete: func(any, error) { e.CancelWorkflow() },
		}, durable.TurnRequest{})
	}, time.Second)
	e.ExecuteWorkflow(durable.WorkflowName, input())
	if rejected == nil || !strings.Contains(rejected.Error(), "non-empty message") {
		t.Fatalf("rejection %v", rejected)
	}
}
