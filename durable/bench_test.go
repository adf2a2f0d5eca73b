package durable_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/session/pgstore"
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
	benchInProcessTurns(b, newFixture(b, nil, tenCallModel))
}

// benchInProcessTurns runs b.N 10-call turns through the agent loop, each in a new session
// of f's store.
func benchInProcessTurns(b *testing.B, f *fixture) {
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

// BenchmarkTurn10CallsInProcessPostgres is the baseline with the session log in PostgreSQL.
func BenchmarkTurn10CallsInProcessPostgres(b *testing.B) {
	benchInProcessTurns(b, newFixture(b, nil, withPostgresLogs(b, tenCallModel)))
}

// BenchmarkTurn10CallsTemporalPostgres is the Temporal turn with the worker's session logs in
// PostgreSQL, as `dsh worker` keeps them with a postgres:// session store.
func BenchmarkTurn10CallsTemporalPostgres(b *testing.B) {
	benchTemporalTurns(b, newFixture(b, nil, withPostgresLogs(b, tenCallModel)))
}

// withPostgresLogs applies cfg and keeps the fixture's session logs in a fresh PostgreSQL
// database.
func withPostgresLogs(b *testing.B, cfg func(*durable.HostConfig)) func(*durable.HostConfig) {
	s, err := pgstore.Open(b.Context(), pg.Database(b), pgstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return func(c *durable.HostConfig) {
		cfg(c)
		c.Store = s
	}
}

// BenchmarkTurn10CallsTemporal is the same turn as a workflow on the dev server with an
// in-process worker: the difference to the baseline is Temporal's overhead.
func BenchmarkTurn10CallsTemporal(b *testing.B) {
	benchTemporalTurns(b, newFixture(b, nil, tenCallModel))
}

// benchTemporalTurns runs one 10-call turn per iteration as a workflow of f's worker on the
// dev server, each in a new session.
func benchTemporalTurns(b *testing.B, f *fixture) {
	c, w, queue := benchWorker(b, f)
	defer c.Close()
	defer w.Stop()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		turn(b, c, queue, session.NewID(testNow()))
	}
}

// BenchmarkConcurrentSessions holds 1,000 sessions open at once on one worker and runs one
// 10-call turn in each, all turns sent together; an op is the whole set: open every session
// (start its workflow, at most startParallel start requests in flight), run the turns, cancel
// every workflow. Besides ns/op it reports the turns' latency distribution (from sending the
// turn to its result), the rates, and the worker process's peak goroutines, RSS and open files.
//
// DSH_BENCH_SESSIONS sets another number of sessions (for a smaller machine or a first look).
func BenchmarkConcurrentSessions(b *testing.B) {
	const startParallel = 50
	sessions := 1000
	if v := os.Getenv("DSH_BENCH_SESSIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("DSH_BENCH_SESSIONS=%q: want a positive number of sessions", v)
		}
		sessions = n
	}
	f := newFixture(b, nil, tenCallModel)
	c, w, queue := benchWorker(b, f)
	defer c.Close()
	defer w.Stop()
	peak := watchProcess(b)
	var lat []time.Duration
	var opening, turning time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runs := make([]client.WorkflowRun, sessions)
		t0 := time.Now()
		var wg sync.WaitGroup
		sem := make(chan struct{}, startParallel)
		for k := range runs {
			id := session.NewID(testNow())
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				runs[k] = startSession(b, c, queue, id)
			})
		}
		wg.Wait()
		t1 := time.Now()
		opening += t1.Sub(t0)
		took := make([]time.Duration, sessions)
		for k, run := range runs {
			if run == nil {
				continue
			}
			wg.Go(func() {
				start := time.Now()
				if runTurn(b, c, run.GetID()) {
					took[k] = time.Since(start)
				}
			})
		}
		wg.Wait()
		turning += time.Since(t1)
		for _, d := range took {
			if d > 0 {
				lat = append(lat, d)
			}
		}
		for _, run := range runs {
			if run != nil {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					endSession(b, c, run)
				})
			}
		}
		wg.Wait()
	}
	b.StopTimer()
	if b.Failed() {
		return
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.5), "p50-turn-ms")
	b.ReportMetric(q(0.99), "p99-turn-ms")
	b.ReportMetric(q(1), "max-turn-ms")
	b.ReportMetric(float64(sessions*b.N)/opening.Seconds(), "opens/s")
	b.ReportMetric(float64(sessions*b.N)/turning.Seconds(), "turns/s")
	b.ReportMetric(float64(sessions*b.N)/b.Elapsed().Seconds(), "sessions/s")
	p := peak()
	b.ReportMetric(float64(p.goroutines), "peak-goroutines")
	b.ReportMetric(float64(p.rssKB)/1024, "peak-RSS-MB")
	b.ReportMetric(float64(p.fds), "peak-fds")
	b.ReportMetric(float64(openFDs()), "end-fds")
}

// startSession starts a session's workflow; the start request may wait for a busy server.
func startSession(b *testing.B, c client.Client, queue, id string) client.WorkflowRun {
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
	defer cancel()
	var run client.WorkflowRun
	err := retry(ctx, func() (err error) {
		run, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "dsh-session-" + id, TaskQueue: queue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING}, durable.WorkflowName,
			durable.SessionInput{SessionID: id, SessionQueue: queue})
		return err
	})
	if err != nil {
		b.Errorf("start session %s: %v", id, err)
		return nil
	}
	return run
}

// runTurn runs one turn ("go") in a session's workflow and reports whether it completed.
func runTurn(b *testing.B, c client.Client, workflowID string) bool {
	ctx, cancel := context.WithTimeout(b.Context(), 20*time.Minute)
	defer cancel()
	var res durable.TurnResult
	// A retry names the same update, so it waits for the turn already sent.
	err := retry(ctx, func() error {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: workflowID, UpdateID: "turn-1", UpdateName: durable.UpdateTurn,
			Args: []any{durable.TurnRequest{Text: "go"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			return err
		}
		return h.Get(ctx, &res)
	})
	if err != nil || res.Reason != session.EndCompleted || len(res.Calls) != 10 {
		b.Errorf("turn of %s: %+v %v", workflowID, res, err)
		return false
	}
	return true
}

// endSession cancels a session's workflow and waits until it has ended.
func endSession(b *testing.B, c client.Client, run client.WorkflowRun) {
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
	defer cancel()
	if err := retry(ctx, func() error { return c.CancelWorkflow(ctx, run.GetID(), "") }); err != nil {
		b.Errorf("cancel %s: %v", run.GetID(), err)
		return
	}
	var canceled *temporal.CanceledError
	if err := run.Get(ctx, nil); !errors.As(err, &canceled) {
		b.Errorf("session %s ended with %v, want cancelled", run.GetID(), err)
	}
}

// retry calls f until it succeeds, fails for a reason other than a request timing out on
// a busy server (the client gives each request at most its own default timeout, whatever
// ctx allows), or ctx ends.
func retry(ctx context.Context, f func() error) error {
	for {
		err := f()
		var unavailable *serviceerror.Unavailable
		var exhausted *serviceerror.ResourceExhausted
		var deadline *serviceerror.DeadlineExceeded
		busy := errors.Is(err, context.DeadlineExceeded) || errors.As(err, &unavailable) || errors.As(err, &exhausted) || errors.As(err, &deadline)
		if !busy {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond): // back off a little before asking again
		}
	}
}

// processPeak is the most the benchmark process held at once.
type processPeak struct {
	goroutines, fds int
	rssKB           int64
}

// watchProcess samples the process's goroutines and open files every 100 ms until the
// benchmark ends; the returned function stops sampling and returns the peaks (the RSS is
// the kernel's high-water mark).
func watchProcess(b *testing.B) func() processPeak {
	var (
		mu   sync.Mutex
		p    processPeak
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	sample := func() {
		g, n := runtime.NumGoroutine(), openFDs()
		mu.Lock()
		p.goroutines, p.fds = max(p.goroutines, g), max(p.fds, n)
		mu.Unlock()
	}
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	var once sync.Once
	finish := func() processPeak {
		once.Do(func() {
			close(stop)
			<-done
			sample()
			p.rssKB = maxRSSKB()
		})
		mu.Lock()
		defer mu.Unlock()
		return p
	}
	b.Cleanup(func() { finish() })
	return finish
}

// openFDs counts the process's open file descriptors (-1 where /proc is missing).
func openFDs() int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(es)
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
	if err := retry(ctx, func() error { return c.CancelWorkflow(ctx, run.GetID(), "") }); err != nil {
		b.Error(err)
	}
	run.Get(ctx, nil)
}
