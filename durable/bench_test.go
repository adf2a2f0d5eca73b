package durable_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
)

// tenCalls answers a request whose last message is the user's with ten concurrency-safe
// calls, and any other with "done": a model that sessions running at once can share.
type tenCalls struct{}

func (tenCalls) Name() string     { return "ten-calls" }
func (tenCalls) Provider() string { return "test" }

func (tenCalls) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	reply := script.Reply{Text: "done"}
	if last := req.Messages[len(req.Messages)-1]; len(last.Content) == 0 || last.Content[0].Type != content.TypeToolResult {
		reply = script.Reply{}
		for i := range 10 {
			reply.ToolCalls = append(reply.ToolCalls, script.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "echo", Arguments: fmt.Sprintf(`{"text":"%d"}`, i)})
		}
	}
	m, err := script.New([]script.Reply{reply}, script.Options{})
	if err != nil {
		return func(yield func(llm.Event, error) bool) { yield(llm.Event{}, err) }
	}
	return m.Stream(ctx, req)
}

func tenCallModel(c *durable.HostConfig) { c.Model = tenCalls{} }

// BenchmarkTurn10CallsInProcess is the baseline: one 10-call turn through the agent loop,
// with a session log on disk.
func BenchmarkTurn10CallsInProcess(b *testing.B) {
	f := newFixture(b, nil, tenCallModel)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := f.store.Create(b.Context(), session.Header{Cwd: f.dir})
		if err != nil {
			b.Fatal(err)
		}
		a, err := agent.New(agent.Config{Registry: f.reg, Model: f.model, Log: l})
		if err != nil {
			b.Fatal(err)
		}
		res, err := a.Run(b.Context(), "go")
		if err != nil || res.Reason.Kind != session.EndCompleted {
			b.Fatalf("turn %+v %v", res, err)
		}
		a.Close()
		l.Close()
	}
}

// BenchmarkTurn10CallsTemporal is the same turn as a workflow on the dev server with an
// in-process worker: the difference to the baseline is Temporal's overhead.
func BenchmarkTurn10CallsTemporal(b *testing.B) {
	f := newFixture(b, nil, tenCallModel)
	c, w, queue := benchWorker(b, f)
	defer c.Close()
	defer w.Stop()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		turn(b, c, queue, session.NewID(testNow()))
	}
}

// BenchmarkConcurrentSessions runs 1,000 sessions at once on one worker, one 10-call turn
// each; an op is the whole set.
func BenchmarkConcurrentSessions(b *testing.B) {
	const sessions = 1000
	f := newFixture(b, nil, tenCallModel)
	c, w, queue := benchWorker(b, f)
	defer c.Close()
	defer w.Stop()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		for range sessions {
			id := session.NewID(testNow())
			wg.Go(func() { turn(b, c, queue, id) })
		}
		wg.Wait()
	}
}

func benchWorker(b *testing.B, f *fixture) (client.Client, worker.Worker, string) {
	c, err := client.Dial(client.Options{HostPort: server.Addr(b), Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	queue := "bench-" + strings.ToLower(b.Name())
	w := worker.New(c, queue, worker.Options{})
	f.host.Register(w)
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	return c, w, queue
}

// turn runs one turn of a new session to its end and cancels the session's workflow.
func turn(b *testing.B, c client.Client, queue, id string) {
	ctx := b.Context()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "dsh-session-" + id, TaskQueue: queue}, durable.WorkflowName,
		durable.SessionInput{SessionID: id, SessionQueue: queue})
	if err != nil {
		b.Error(err)
		return
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: durable.UpdateTurn,
		Args: []any{durable.TurnRequest{Text: "go"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		b.Error(err)
		return
	}
	var res durable.TurnResult
	if err := h.Get(ctx, &res); err != nil || res.Reason != session.EndCompleted {
		b.Errorf("turn %+v %v", res, err)
	}
	if err := c.CancelWorkflow(ctx, run.GetID(), ""); err != nil {
		b.Error(err)
	}
	run.Get(ctx, nil)
}
