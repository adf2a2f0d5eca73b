package durable_test

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

var record = flag.Bool("record", false, "rewrite "+historyFile+" from a run on the dev server")

const historyFile = "testdata/session-history.json"

// replayScript is the session the recorded history ran: a parallel pair, a call that asks
// for approval, then an answer.
func replayScript() []script.Reply {
	return []script.Reply{
		{ToolCalls: []script.ToolCall{
			{ID: "a", Name: "echo", Arguments: `{"text":"one"}`},
			{ID: "b", Name: "echo", Arguments: `{"text":"two"}`},
			{ID: "t", Name: "touch", Arguments: `{"name":"f"}`},
		}},
		{ExpectToolResults: []string{"a", "b", "t"}, Text: "done"},
	}
}

func quiet() tlog.Logger { return tlog.NewStructuredLogger(slog.New(slog.DiscardHandler)) }

// TestSessionOnTheDevServer runs a session on a real Temporal server with an in-process
// worker: a turn with a parallel pair and an approved call, answered through the update
// while the call waits; then the workflow is cancelled. With -record it saves the history
// the replay test replays.
func TestSessionOnTheDevServer(t *testing.T) {
	addr := server.Addr(t)
	ctx := testwait.Context(t)
	f := newFixture(t, replayScript(), nil)
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	queue := "durable-" + strings.ToLower(t.Name())
	w := worker.New(c, queue, worker.Options{})
	f.host.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	id := session.NewID(testNow())
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "dsh-session-" + id, TaskQueue: queue}, durable.WorkflowName,
		durable.SessionInput{SessionID: id, Workspace: f.dir, SessionQueue: queue})
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: durable.UpdateTurn,
		Args: []any{durable.TurnRequest{Text: "go"}}, WaitForStage: client.WorkflowUpdateStageAccepted})
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the approval question", func() bool {
		v, err := c.QueryWorkflow(ctx, run.GetID(), "", durable.QueryPending)
		var p []durable.PendingApproval
		return err == nil && v.Get(&p) == nil && len(p) == 1
	})
	ah, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: durable.UpdateApprove,
		Args: []any{durable.Approval{CallID: "t", Approved: true}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		t.Fatal(err)
	}
	if err := ah.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var res durable.TurnResult
	if err := h.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Reason != session.EndCompleted || res.Text != "done" || len(res.Calls) != 3 {
		t.Fatalf("turn %+v", res)
	}
	if err := c.CancelWorkflow(ctx, run.GetID(), ""); err != nil {
		t.Fatal(err)
	}
	var cancelled *temporal.CanceledError
	if err := run.Get(ctx, nil); !errors.As(err, &cancelled) {
		t.Fatalf("the cancelled workflow ended with %v", err)
	}
	_, results := callResults(t, f.events(t, id))
	if r := results["t"]; r.IsError {
		t.Fatalf("approved call: %+v", r)
	}
	if f.bodyRuns("touch") != 1 || f.bodyRuns("echo") != 2 {
		t.Fatalf("body runs %v", f.runs)
	}
	if !*record {
		return
	}
	var hist historypb.History
	it := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, 0)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, e)
	}
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&hist)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(historyFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(historyFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReplayRecordedHistory replays a history recorded on the dev server against the
// current workflow code: a change that reorders or adds workflow commands fails it with a
// non-determinism error. (Rerecord with go test -run TestSessionOnTheDevServer -record.)
func TestReplayRecordedHistory(t *testing.T) {
	f := newFixture(t, nil, nil)
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(f.host.Session, workflow.RegisterOptions{Name: durable.WorkflowName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(quiet(), historyFile); err != nil {
		t.Fatal(err)
	}
}

// TestReplayDetectsAChangedWorkflow replays the recorded history against a registry where
// the approval is no longer asked: the workflow then skips the approval's log and timer, and
// the replay must fail.
func TestReplayDetectsAChangedWorkflow(t *testing.T) {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"echo", "touch"} {
		d, err := tool.New(name, "x", func(ctx context.Context, c *tool.Call, in echoIn) (echoOut, error) { return echoOut{}, nil }, tool.ConcurrencySafe())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	h, err := durable.NewHost(durable.HostConfig{Registry: reg, Results: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(h.Session, workflow.RegisterOptions{Name: durable.WorkflowName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(quiet(), historyFile); err == nil {
		t.Fatal("a workflow that no longer waits for the approval replayed the history without error")
	}
}
