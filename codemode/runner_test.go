package codemode_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

func TestBridgeCallsToolsAndLogsEachDispatch(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	echo := e.echo(t, "echo")
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		first, err := p.call("echo", obj("value", "one"))
		if err != nil {
			return coderuntime.Result{}, err
		}
		second, err := p.call("echo", obj("value", "two"))
		if err != nil {
			return coderuntime.Result{}, err
		}
		return coderuntime.Result{Logs: []string{"saw " + first.(string)}, Value: second, HasValue: true}, nil
	})
	res := e.run(context.Background(), e.agent, "const x = await tools.echo({value: 'one'})")
	if got := value(t, res); got != `{"logs":["saw echo:one"],"result":"echo:two"}` {
		t.Errorf("value = %s", got)
	}
	if got := text(res); got != "saw echo:one\necho:two" {
		t.Errorf("content = %q", got)
	}
	if res.Meta != nil || res.AdditionalContexts != nil || res.ConcludesTurn {
		t.Errorf("unexpected extras: %+v", res)
	}
	if got := echo.list(); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("echo saw %v", got)
	}
	// The program awaits each call: the log shows start, settle, start, settle.
	want := []string{
		`tool/code-dispatch-start {"rootCallId":"call-1","parentCallId":"call-1","subCallId":"call-1:code:1","name":"echo","arguments":{"value":"one"}}`,
		`tool/code-dispatch {"rootCallId":"call-1","parentCallId":"call-1","subCallId":"call-1:code:1","name":"echo","arguments":{"value":"one"},"isError":false,"content":[{"type":"text","text":"echo:one"}]}`,
		`tool/code-dispatch-start {"rootCallId":"call-1","parentCallId":"call-1","subCallId":"call-1:code:2","name":"echo","arguments":{"value":"two"}}`,
		`tool/code-dispatch {"rootCallId":"call-1","parentCallId":"call-1","subCallId":"call-1:code:2","name":"echo","arguments":{"value":"two"},"isError":false,"content":[{"type":"text","text":"echo:two"}]}`,
	}
	if diff := cmp.Diff(want, e.log.lines(t, e.agent)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// slowSettleLog is a recLog whose Settle takes its time, as a log writing to a slow disk
// (or a shaper spilling a huge content) does: the lane must not let the next call's start
// overtake it.
type slowSettleLog struct {
	recLog
	delay time.Duration
}

func (l *slowSettleLog) Settle(agent *tool.Scope, p session.CodeDispatch) error {
	time.Sleep(l.delay)
	return l.recLog.Settle(agent, p)
}

// TestSettleEventsPrecedeLaterStarts runs sequential programs (each call awaited before the
// next) against a slow log: whatever the timing, every settle event lands before the next
// start event. Calls in flight together keep both kinds in submission order.
func TestSettleEventsPrecedeLaterStarts(t *testing.T) {
	log := &slowSettleLog{delay: 5 * time.Millisecond}
	e := newEnv(t, tool.ModeCode, codemode.Config{Log: log})
	e.echo(t, "echo")
	const n = 4
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		for i := range n {
			if _, err := p.call("echo", obj("value", strconv.Itoa(i))); err != nil {
				return coderuntime.Result{}, err
			}
		}
		return coderuntime.Result{}, nil
	})
	if res := e.run(context.Background(), e.agent, "sequential"); res.IsError {
		t.Fatalf("run failed: %s", res.Error.Message)
	}
	var got, want []string
	for i := range n {
		id := "call-1:code:" + strconv.Itoa(i+1)
		want = append(want, "start "+id, "settle "+id)
	}
	for _, ev := range log.all() {
		id := ev.start.SubCallID
		if ev.kind == "settle" {
			id = ev.settle.SubCallID
		}
		got = append(got, ev.kind+" "+id)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event order (-want +got):\n%s", diff)
	}

	// Parallel calls: each kind in submission order, every settle after its start.
	log.reset()
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		var calls []*pending
		for i := range n {
			calls = append(calls, p.spawn("echo", obj("value", strconv.Itoa(i))))
		}
		for _, c := range calls {
			if _, err := c.wait(); err != nil {
				return coderuntime.Result{}, err
			}
		}
		return coderuntime.Result{}, nil
	})
	if res := e.run(context.Background(), e.agent, "parallel"); res.IsError {
		t.Fatalf("run failed: %s", res.Error.Message)
	}
	starts, settles := log.ids("start"), log.ids("settle")
	if len(starts) != n || !slices.Equal(starts, settles) {
		t.Errorf("starts %v, settles %v: want both in the same order", starts, settles)
	}
	seen := map[string]bool{}
	for _, ev := range log.all() {
		switch ev.kind {
		case "start":
			seen[ev.start.SubCallID] = true
		case "settle":
			if !seen[ev.settle.SubCallID] {
				t.Errorf("%s settled before it started", ev.settle.SubCallID)
			}
		}
	}
}

func TestBridgeSubCallIdentity(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	e.echo(t, "echo")
	var mu sync.Mutex
	var outer *tool.Execution
	var subs []*tool.Execution
	e.reg.OnPreExecute(func(_ context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		mu.Lock()
		if exec.Name() == tool.RunCodeName {
			outer = exec
		} else {
			subs = append(subs, exec)
		}
		mu.Unlock()
		return next()
	})
	var metas []any
	e.reg.OnResult(func(_ context.Context, exec *tool.Execution, res *tool.Result) error {
		if exec.Name() == "echo" {
			mu.Lock()
			metas = append(metas, res.Meta)
			mu.Unlock()
		}
		return nil
	})
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		p.call("echo", obj("value", "x"))
		return ok(nil)
	})
	res := e.reg.Execute(context.Background(), tool.Input{
		CallID: "call-7", RootCallID: "root-1", Name: tool.RunCodeName, Agent: e.agent,
		Args: obj("code", "p", "description", "probe identities"),
	})
	if res.IsError {
		t.Fatal(res.Error.Message)
	}
	if len(subs) != 1 {
		t.Fatalf("%d sub-calls", len(subs))
	}
	s := subs[0]
	if s.CallID() != "call-7:code:1" || s.RootCallID() != "root-1" || s.Agent() != e.agent || s.Parent() != outer.Token() || s.Parent() == nil {
		t.Errorf("sub-call identity: id %s root %s agent %v parent ok %v", s.CallID(), s.RootCallID(), s.Agent() == e.agent, s.Parent() == outer.Token())
	}
	if len(metas) != 1 || metas[0] != nil {
		t.Errorf("nested result meta = %v", metas)
	}
}

func TestBridgeOverlapsSafeCalls(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	g := e.gated(t, "safe_read", true)
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		calls := []*pending{p.spawn("safe_read", obj("id", "a")), p.spawn("safe_read", obj("id", "b")), p.spawn("safe_read", obj("id", "c"))}
		waitFor(t, "three overlapping calls", func() bool { return g.pending() == 3 })
		g.releaseAll()
		var vals []string
		for _, c := range calls {
			v, err := c.wait()
			if err != nil {
				return coderuntime.Result{}, err
			}
			vals = append(vals, v.(string))
		}
		slices.Sort(vals)
		return ok(strings.Join(vals, ","))
	})
	res := e.run(context.Background(), e.agent, "p")
	if got := value(t, res); got != `{"logs":[],"result":"safe_read:a,safe_read:b,safe_read:c"}` {
		t.Errorf("value = %s", got)
	}
	if _, peak, _ := g.snapshot(); peak != 3 {
		t.Errorf("peak = %d", peak)
	}
	starts, settles := e.log.ids("start"), e.log.ids("settle")
	if want := []string{"call-1:code:1", "call-1:code:2", "call-1:code:3"}; !slices.Equal(starts, want) || !slices.Equal(settles, want) {
		t.Errorf("starts %v settles %v", starts, settles)
	}
}

func TestBridgeExclusiveCallIsABarrier(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	safe := e.gated(t, "safe_read", true)
	writer := e.gated(t, "writer", false)
	idle := e.probeIdle()
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		r1 := p.spawn("safe_read", obj("id", "r1"))
		waitFor(t, "r1", func() bool { return safe.pending() == 1 })
		r2 := p.spawn("safe_read", obj("id", "r2"))
		waitFor(t, "r2", func() bool { return safe.pending() == 2 })
		w := p.spawn("writer", obj("id", "w"))
		idle.declined(t, "the writer starting beside the reads", "call-1:code:3", false, func() bool { return writer.pending() > 0 })
		safe.releaseAll()
		waitFor(t, "the writer", func() bool { return writer.pending() == 1 })
		r3 := p.spawn("safe_read", obj("id", "r3"))
		idle.declined(t, "r3 starting beside the writer", "call-1:code:4", false, func() bool { return safe.pending() > 0 })
		writer.releaseAll()
		waitFor(t, "r3", func() bool { return safe.pending() == 1 })
		safe.releaseAll()
		for _, c := range []*pending{r1, r2, w, r3} {
			if _, err := c.wait(); err != nil {
				return coderuntime.Result{}, err
			}
		}
		return ok("ordered")
	})
	value(t, e.run(context.Background(), nil, "p"))
	order, _, _ := safe.snapshot()
	if i, j := slices.Index(order, "start:r3"), slices.Index(order, "end:r2"); i < j {
		t.Errorf("r3 started before the reads ended: %v", order)
	}
	if w, _, _ := writer.snapshot(); !slices.Equal(w, []string{"start:w", "end:w"}) {
		t.Errorf("writer order %v", w)
	}
}

func TestBridgeCapsParallelSubCalls(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{MaxParallelSubCalls: 2})
	g := e.gated(t, "safe_read", true)
	idle := e.probeIdle()
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		calls := []*pending{p.spawn("safe_read", obj("id", "a")), p.spawn("safe_read", obj("id", "b")), p.spawn("safe_read", obj("id", "c"))}
		waitFor(t, "two calls", func() bool { return g.pending() == 2 })
		idle.declined(t, "a third concurrent call", "call-1:code:3", false, func() bool { return g.pending() > 2 })
		releaseUntilDone(t, g, calls)
		return ok("capped")
	})
	value(t, e.run(context.Background(), nil, "p"))
	if _, peak, _ := g.snapshot(); peak != 2 {
		t.Errorf("peak = %d", peak)
	}
}

// releaseUntilDone releases the gated calls as they arrive until every call returned.
func releaseUntilDone(tb testing.TB, g *gatedTool, cs []*pending) {
	tb.Helper()
	waitFor(tb, "every call to return", func() bool {
		g.releaseAll()
		return allDone(cs)
	})
}

func allDone(cs []*pending) bool {
	for _, c := range cs {
		select {
		case <-c.done:
		default:
			return false
		}
	}
	return true
}

func TestBridgeSerializesUnsafeCalls(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	var mu sync.Mutex
	active, overlapped := 0, false
	var order []string
	def, err := tool.New("probe", "Records overlap.", func(_ context.Context, _ *tool.Call, in idIn) (string, error) {
		mu.Lock()
		active++
		overlapped = overlapped || active > 1
		order = append(order, "enter:"+in.ID)
		mu.Unlock()
		for range 3 {
			mu.Lock()
			overlapped = overlapped || active > 1
			mu.Unlock()
		}
		mu.Lock()
		order = append(order, "exit:"+in.ID)
		active--
		mu.Unlock()
		return in.ID, nil
	})
	e.register(t, def, err)
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		var cs []*pending
		for _, id := range []string{"a", "b", "c"} {
			cs = append(cs, p.spawn("probe", obj("id", id)))
		}
		for _, c := range cs {
			if _, err := c.wait(); err != nil {
				return coderuntime.Result{}, err
			}
		}
		return ok(nil)
	})
	value(t, e.run(context.Background(), nil, "p"))
	if overlapped {
		t.Errorf("exclusive calls overlapped: %v", order)
	}
	for i := 0; i < len(order); i += 2 {
		if strings.TrimPrefix(order[i], "enter:") != strings.TrimPrefix(order[i+1], "exit:") {
			t.Errorf("interleaved: %v", order)
		}
	}
}

func TestBridgeUnregisteredToolIsUnknown(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	ran := false
	def := &tool.Definition{
		Name: "ephemeral", Description: "Goes away.", Parameters: js(t, `{"type":"object"}`),
		Output:  tool.Output{Schema: js(t, `{"type":"string"}`), Render: tool.DefaultRender},
		Execute: func(context.Context, *tool.Call) (any, error) { ran = true; return "ok", nil },
	}
	undo, err := e.reg.Register(def)
	if err != nil {
		t.Fatal(err)
	}
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		undo() // the binding exists; the tool does not any more
		return ok(p.message("ephemeral", obj()))
	})
	if got := value(t, e.run(context.Background(), nil, "p")); got != `{"logs":[],"result":"error: unknown tool \"ephemeral\""}` {
		t.Errorf("value = %s", got)
	}
	if ran {
		t.Error("the body ran")
	}
}

func TestBridgeOrderedPreExecute(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	g := e.gated(t, "safe_read", true)
	var submitted atomic.Int32
	codemode.SetSubmitHook(e.runner(), func(string) { submitted.Add(1) })
	var mu sync.Mutex
	var stages []string
	gate := make(chan struct{})
	first := true
	e.reg.OnPreExecute(func(_ context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		if exec.Name() != "safe_read" {
			return next()
		}
		mu.Lock()
		stages = append(stages, "enter:"+exec.CallID())
		wait := first
		first = false
		mu.Unlock()
		if wait {
			<-gate
		}
		mu.Lock()
		stages = append(stages, "exit:"+exec.CallID())
		mu.Unlock()
		return next()
	})
	snapshot := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), stages...)
	}
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		a := p.spawn("safe_read", obj("id", "a"))
		waitFor(t, "the first pre-execute", func() bool { return len(snapshot()) == 1 })
		b := p.spawn("safe_read", obj("id", "b"))
		// b is queued while a's pre-execute holds the lane; the stage order below shows
		// whether b's pre-execute overtook it.
		waitFor(t, "b to be queued", func() bool { return submitted.Load() == 2 })
		close(gate)
		waitFor(t, "both bodies", func() bool { return g.pending() == 2 })
		g.releaseAll()
		a.wait()
		b.wait()
		return ok(nil)
	})
	value(t, e.run(context.Background(), nil, "p"))
	want := []string{"enter:call-1:code:1", "exit:call-1:code:1", "enter:call-1:code:2", "exit:call-1:code:2"}
	if got := snapshot(); !slices.Equal(got, want) {
		t.Errorf("stages %v", got)
	}
}

func TestBridgeExclusiveHoldsBarrierThroughPostExecute(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	writer := e.gated(t, "writer", false)
	reader := e.gated(t, "safe_read", true)
	var submitted atomic.Int32
	codemode.SetSubmitHook(e.runner(), func(string) { submitted.Add(1) })
	inPost := make(chan struct{})
	releasePost := make(chan struct{})
	var postDone, readEarly atomic.Bool
	reader.onStart = func(string) { readEarly.Store(!postDone.Load()) }
	e.reg.OnPostExecute(func(_ context.Context, exec *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		if exec.Name() == "writer" {
			close(inPost)
			<-releasePost
			postDone.Store(true)
		}
		return next()
	})
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		w := p.spawn("writer", obj("id", "w"))
		waitFor(t, "the writer", func() bool { return writer.pending() == 1 })
		r := p.spawn("safe_read", obj("id", "r"))
		waitFor(t, "the read to be queued", func() bool { return submitted.Load() == 2 })
		writer.releaseAll()
		<-inPost
		close(releasePost)
		w.wait()
		waitFor(t, "the read", func() bool { return reader.pending() == 1 })
		reader.releaseAll()
		r.wait()
		return ok(nil)
	})
	value(t, e.run(context.Background(), nil, "p"))
	if readEarly.Load() {
		t.Error("the read started during the writer's post-execute")
	}
}

func TestBridgeDrainsCommitInProgress(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	g := e.gated(t, "safe_read", true)
	inPost := make(chan struct{})
	releasePost := make(chan struct{})
	e.reg.OnPostExecute(func(_ context.Context, exec *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		if exec.Name() == "safe_read" {
			close(inPost)
			<-releasePost
		}
		return next()
	})
	var call *pending
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		call = p.spawn("safe_read", obj("id", "a")) // fire and forget
		waitFor(t, "the body", func() bool { return g.pending() == 1 })
		g.releaseAll()
		<-inPost
		go func() {
			// Released only once the program has returned and the run is settling.
			waitFor(t, "the run to settle", func() bool { return p.ctx.Err() != nil })
			close(releasePost)
		}()
		return ok("returned early")
	})
	res := e.run(context.Background(), e.agent, "p")
	value(t, res)
	settles := e.log.all()
	if len(settles) != 2 || settles[1].kind != "settle" || !settles[1].settle.IsError {
		t.Fatalf("events %+v", settles)
	}
	// The settlement cancelled the sub-call while its post-execute ran: the pipeline's
	// cancellation contract turns the success into ABORTED, and the program's call was
	// told its result was discarded.
	if got := settles[1].settle.Content; len(got) != 1 || got[0].Text != "Error: tool call aborted" {
		t.Errorf("settled content %v", got)
	}
	if _, err := call.wait(); err == nil || err.Error() != "run_code run is over (program settled); safe_read result discarded" {
		t.Errorf("fire-and-forget call: %v", err)
	}
}

func TestBridgeCommitsInSubmissionOrder(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	g := e.gated(t, "safe_read", true)
	var mu sync.Mutex
	var post []string
	e.reg.OnPostExecute(func(_ context.Context, exec *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		if exec.Name() != "safe_read" {
			return next()
		}
		mu.Lock()
		post = append(post, exec.CallID())
		mu.Unlock()
		return tool.Accept(content.Message{Content: content.Texts("ctx:" + exec.CallID()), Source: &content.Source{Kind: "plugin", Plugin: "order-probe"}}), nil
	})
	idle := e.probeIdle()
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		a := p.spawn("safe_read", obj("id", "a"))
		waitFor(t, "a", func() bool { return g.pending() == 1 })
		b := p.spawn("safe_read", obj("id", "b"))
		waitFor(t, "b", func() bool { return g.pending() == 2 })
		g.release("b") // b finishes first
		idle.declined(t, "b committing before a", "call-1:code:2", true, func() bool { mu.Lock(); defer mu.Unlock(); return len(post) > 0 })
		g.release("a")
		a.wait()
		b.wait()
		return ok(nil)
	})
	res := e.run(context.Background(), nil, "p")
	value(t, res)
	if !slices.Equal(post, []string{"call-1:code:1", "call-1:code:2"}) {
		t.Errorf("post-execute order %v", post)
	}
	var ctxs []string
	for _, m := range res.AdditionalContexts {
		ctxs = append(ctxs, m.Content[0].Text+"@"+m.Source.Plugin)
	}
	if !slices.Equal(ctxs, []string{"ctx:call-1:code:1@order-probe", "ctx:call-1:code:2@order-probe"}) {
		t.Errorf("contexts %v", ctxs)
	}
}

func TestBridgeAbandonsQueuedCallsAtSettlement(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	g := e.gated(t, "writer", false)
	var w2 *pending
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		p.spawn("writer", obj("id", "w1"))
		waitFor(t, "w1", func() bool { return g.pending() == 1 })
		w2 = p.spawn("writer", obj("id", "w2"))
		// Fail the program while w1 runs and w2 waits. The fake runtime cancels the
		// bindings' context, so both return; the lane keeps them until the drain.
		return coderuntime.Result{Logs: []string{}, Error: &coderuntime.Failure{Kind: coderuntime.FailureException, Message: "program failed with a queued call"}}, nil
	})
	res := e.run(context.Background(), e.agent, "p")
	if !res.IsError || res.Error.Message != "code run failed (exception): program failed with a queued call" {
		t.Fatalf("result %+v", res.Error)
	}
	if starts, settles := e.log.ids("start"), e.log.ids("settle"); !slices.Equal(starts, []string{"call-1:code:1"}) || !slices.Equal(settles, []string{"call-1:code:1"}) {
		t.Errorf("starts %v settles %v", starts, settles)
	}
	if order, _, aborted := g.snapshot(); !slices.Equal(order, []string{"start:w1", "end:w1"}) || aborted != 1 {
		t.Errorf("writer %v aborted %d", order, aborted)
	}
	if _, err := w2.wait(); err == nil {
		t.Error("w2 did not fail")
	}
}

func TestBridgeAbandonedCallRejectsWithExactMessage(t *testing.T) {
	// A runtime that keeps waiting for a queued call (instead of cancelling it) sees the
	// abandonment message once the run settles.
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	g := e.gated(t, "writer", false)
	var submitted atomic.Int32
	codemode.SetSubmitHook(e.runner(), func(string) { submitted.Add(1) })
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var got error
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		p.spawn("writer", obj("id", "w1"))
		waitFor(t, "w1", func() bool { return g.pending() == 1 })
		fn := p.fns["writer"]
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, got = fn(context.Background(), obj("id", "w2")) // a context that is never cancelled
		}()
		waitFor(t, "w2 to be queued", func() bool { return submitted.Load() == 2 })
		cancel(errors.New("user-cancel"))
		<-done
		return coderuntime.Result{Logs: []string{}, Error: &coderuntime.Failure{Kind: coderuntime.FailureAbort, Message: coderuntime.AbortMessage(p.ctx)}}, nil
	})
	res := e.run(ctx, nil, "p")
	if got == nil || got.Error() != "run_code run is over (user-cancel); writer tool call abandoned" {
		t.Errorf("queued call: %v", got)
	}
	if !res.IsError || res.Error.Message != "code run failed (abort): user-cancel" {
		t.Errorf("result: %+v", res.Error)
	}
	if order, _, aborted := g.snapshot(); !slices.Equal(order, []string{"start:w1", "end:w1"}) || aborted != 1 {
		t.Errorf("writer %v aborted %d", order, aborted)
	}
}

func TestBridgeForwardsConcludeTurn(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	def, err := tool.New("finish", "Terminal tool.", func(_ context.Context, call *tool.Call, _ struct{}) (string, error) {
		call.ConcludeTurn()
		return "done", nil
	})
	e.register(t, def, err)
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		p.call("finish", obj())
		return ok("complete")
	})
	if res := e.run(context.Background(), nil, "p"); res.IsError || !res.ConcludesTurn {
		t.Errorf("concluding sub-call: %+v", res)
	}
	veto := e.reg.OnPostExecute(func(_ context.Context, exec *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		if exec.Name() == "finish" {
			return tool.BlockWith(content.Texts("terminal rejected")), nil
		}
		return next()
	})
	defer veto()
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		return ok(p.message("finish", obj()))
	})
	res := e.run(context.Background(), nil, "p")
	if got := value(t, res); got != `{"logs":[],"result":"error: terminal rejected"}` || res.ConcludesTurn {
		t.Errorf("blocked conclusion: %s %v", got, res.ConcludesTurn)
	}
}

func TestBridgeFailuresReachTheProgram(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	e.echo(t, "echo")
	e.echo(t, "guarded")
	e.echo(t, "exploding")
	def, err := tool.New("fail", "Always fails.", func(context.Context, *tool.Call, struct{}) (string, error) {
		return "", &tool.Error{Name: "FsError", Code: "FS_NOT_FOUND", Message: "deliberate failure"}
	})
	e.register(t, def, err)
	var postSaw []string
	e.reg.OnPreExecute(func(_ context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		switch exec.Name() {
		case "guarded":
			return tool.Deny("not on my watch"), nil
		case "exploding":
			return tool.PreDecision{}, errors.New("gate exploded")
		}
		return next()
	})
	e.reg.OnPostExecute(func(_ context.Context, exec *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		postSaw = append(postSaw, exec.Name())
		return next()
	})
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		return ok([]any{
			p.message("fail", obj()),
			p.message("guarded", obj("value", "x")),
			p.message("exploding", obj("value", "x")),
			p.message("echo", obj("value", 7.0)), // INVALID_ARGS
			p.message("echo", obj("value", "fine")),
		})
	})
	got := value(t, e.run(context.Background(), e.agent, "p"))
	want := `{"logs":[],"result":["error: deliberate failure","error: not on my watch","error: gate exploded","error: invalid arguments: \"value\" must be a string","\"echo:fine\""]}`
	if got != want {
		t.Errorf("value =\n%s\nwant\n%s", got, want)
	}
	// A throwing pre-execute hook is final: no post-execute, but a settle event.
	if !slices.Equal(postSaw, []string{"fail", "guarded", "echo", "echo", tool.RunCodeName}) {
		t.Errorf("post-execute saw %v", postSaw)
	}
	var errs []bool
	for _, ev := range e.log.all() {
		if ev.kind == "settle" {
			errs = append(errs, ev.settle.IsError)
		}
	}
	if !slices.Equal(errs, []bool{true, true, true, true, false}) {
		t.Errorf("settle isError %v", errs)
	}
}

func TestBridgeRejectsNonLosslessArguments(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	echo := e.echo(t, "echo")
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		var msgs []any
		for _, bad := range []any{
			obj("value", "x", "big", math.Inf(1)),
			obj("value", math.Copysign(0, -1)),
			obj("value", math.NaN()),
			func() int { return 1 },
			make(chan int),
			obj("value", struct{ X int }{1}),
			map[int]string{1: "x"},
		} {
			msgs = append(msgs, p.message("echo", bad))
		}
		msgs = append(msgs, p.message("echo", obj("value", "after")))
		return ok(msgs)
	})
	got := value(t, e.run(context.Background(), e.agent, "p"))
	const lossless = "error: tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"
	var want []any
	for range 7 {
		want = append(want, lossless)
	}
	want = append(want, `"echo:after"`)
	wantJSON, _ := jsonv.Marshal(jsonv.NewObject(jsonv.Member{Name: "logs", Value: []any{}}, jsonv.Member{Name: "result", Value: want}))
	if got != string(wantJSON) {
		t.Errorf("value =\n%s\nwant\n%s", got, wantJSON)
	}
	if !slices.Equal(echo.list(), []string{"after"}) {
		t.Errorf("echo saw %v", echo.list())
	}
	// Nothing was dispatched or logged for the bad calls, and they took no sub-call number.
	if starts := e.log.ids("start"); !slices.Equal(starts, []string{"call-1:code:1"}) {
		t.Errorf("starts %v", starts)
	}
}

func TestBridgeLogsAnIndependentCopyOfTheArguments(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	type in struct {
		Value  string   `json:"value"`
		Nested []string `json:"nested"`
	}
	def, err := tool.New("echo", "Echo.", func(_ context.Context, _ *tool.Call, a in) (string, error) { return a.Value, nil })
	e.register(t, def, err)
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		args := obj("value", "x", "nested", []any{"same"})
		if _, err := p.call("echo", args); err != nil {
			return coderuntime.Result{}, err
		}
		args.Set("value", "mutated after the call")
		args.Set("nested", []any{"changed"})
		return ok(nil)
	})
	value(t, e.run(context.Background(), e.agent, "p"))
	for _, ev := range e.log.all() {
		a := ev.start.Arguments
		if ev.kind == "settle" {
			a = ev.settle.Arguments
		}
		if b, _ := jsonv.Marshal(a); string(b) != `{"value":"x","nested":["same"]}` {
			t.Errorf("%s logged %s", ev.kind, b)
		}
	}
}

func imageTool(tb testing.TB, e *env, name string) {
	def := &tool.Definition{
		Name: name, Description: "Returns an image.", Parameters: js(tb, `{"type":"object"}`),
		Output: tool.Output{Schema: js(tb, `{"type":"string"}`), Render: func(_, v any) ([]content.Block, error) {
			return []content.Block{content.Text("image result"), {Type: content.TypeImage, Image: &content.ImageRef{AttachmentID: "sha256:aa", MediaType: "image/png", Bytes: 1, Width: 1, Height: 1}}}, nil
		}},
		Execute: func(context.Context, *tool.Call) (any, error) { return "img", nil },
	}
	e.register(tb, def, nil)
}

func TestBridgeDefersImagesAndContexts(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	imageTool(t, e, "image_result")
	def, err := tool.New("noting", "Defers a note.", func(_ context.Context, call *tool.Call, _ struct{}) (string, error) {
		call.DeferContext(content.Message{Content: content.Texts("note from the tool")})
		return "noted", nil
	})
	e.register(t, def, err)
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		p.call("noting", obj())
		p.call("image_result", obj())
		return ok("done")
	})
	res := e.run(context.Background(), nil, "p")
	value(t, res)
	if len(res.AdditionalContexts) != 2 {
		t.Fatalf("contexts %+v", res.AdditionalContexts)
	}
	note, img := res.AdditionalContexts[0], res.AdditionalContexts[1]
	if note.Content[0].Text != "note from the tool" || note.Source.Kind != "tool" || note.Source.CallID != "call-1:code:1" || note.Role != content.RoleUser {
		t.Errorf("note %+v", note)
	}
	if img.Source.Kind != "plugin" || img.Source.Plugin != codemode.ImagePlugin || img.ID == "" || len(img.Content) != 2 || img.Content[1].Image.MediaType != "image/png" {
		t.Errorf("image message %+v", img)
	}
}

func TestBridgeDoesNotDeferReplacedImages(t *testing.T) {
	for _, decision := range []string{"block", "replace"} {
		e := newEnv(t, tool.ModeCode, codemode.Config{})
		imageTool(t, e, "image_result")
		e.reg.OnPostExecute(func(_ context.Context, exec *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			if exec.Name() != "image_result" {
				return next()
			}
			if decision == "block" {
				return tool.BlockWith(content.Texts("blocked")), nil
			}
			return tool.PostDecision{ReplaceContent: true, Content: content.Texts("replaced")}, nil
		})
		e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
			p.call("image_result", obj())
			return ok("done")
		})
		if res := e.run(context.Background(), nil, "p"); res.AdditionalContexts != nil {
			t.Errorf("%s: contexts %+v", decision, res.AdditionalContexts)
		}
	}
}

func TestBridgeKeepsContextsWhenTheRunFails(t *testing.T) {
	e := newEnv(t, tool.ModeBoth, codemode.Config{})
	e.echo(t, "echo")
	e.reg.OnPostExecute(func(_ context.Context, exec *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		if exec.Name() != "echo" {
			return next()
		}
		return tool.Accept(content.Message{Content: content.Texts("nested context"), Source: &content.Source{Kind: "plugin", Plugin: "test"}}), nil
	})
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		p.call("echo", obj("value", "x"))
		return coderuntime.Result{Logs: []string{"a", "b"}, Error: &coderuntime.Failure{Kind: coderuntime.FailureException, Message: "program failed later"}}, nil
	})
	res := e.run(context.Background(), nil, "p")
	if !res.IsError || res.Error.Info == nil || *res.Error.Info != (tool.Info{Name: "CodeRunFailedError", Code: "CODE_RUN_FAILED"}) {
		t.Fatalf("error %+v", res.Error)
	}
	if got := text(res); got != "Error: code run failed (exception): program failed later\nCaptured output:\na\nb" {
		t.Errorf("content %q", got)
	}
	if len(res.AdditionalContexts) != 1 || res.AdditionalContexts[0].Content[0].Text != "nested context" {
		t.Errorf("contexts %+v", res.AdditionalContexts)
	}
}

func TestRunFailures(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	cases := []struct {
		res      coderuntime.Result
		err      error
		want     string
		withInfo bool
	}{
		{coderuntime.Result{Logs: []string{"got this far"}, Error: &coderuntime.Failure{Kind: coderuntime.FailureTimeout, Message: "compute budget exhausted (300ms busy)"}}, nil,
			"code run failed (timeout): compute budget exhausted (300ms busy)\nCaptured output:\ngot this far", true},
		{coderuntime.Result{Error: &coderuntime.Failure{Kind: coderuntime.FailureOutputLimit, Message: "outer output exceeded 10 bytes"}}, nil,
			"code run failed (output-limit): outer output exceeded 10 bytes", true},
		{coderuntime.Result{}, errors.New("backend exploded"), "backend exploded", false},
	}
	for _, c := range cases {
		e.rt.setProgram(func(*program) (coderuntime.Result, error) { return c.res, c.err })
		res := e.run(context.Background(), nil, "p")
		if !res.IsError || res.Error.Message != c.want || (res.Error.Info != nil) != c.withInfo {
			t.Errorf("got %+v, want %q", res.Error, c.want)
		}
	}
}

func TestRunValues(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	cases := []struct {
		res         coderuntime.Result
		value, text string
	}{
		{coderuntime.Result{}, `{"logs":[]}`, "(run_code completed with no output)"},
		{coderuntime.Result{Logs: []string{"x"}, HasValue: true}, `{"logs":["x"],"result":null}`, "x\nnull"},
		{coderuntime.Result{Value: jsonv.NewObject(jsonv.Member{Name: "n", Value: 42.0}), HasValue: true}, `{"logs":[],"result":{"n":42}}`, "{\n  \"n\": 42\n}"},
		{coderuntime.Result{Value: "raw", HasValue: true}, `{"logs":[],"result":"raw"}`, "raw"},
	}
	for _, c := range cases {
		e.rt.setProgram(func(*program) (coderuntime.Result, error) { return c.res, nil })
		res := e.run(context.Background(), nil, "p")
		if got := value(t, res); got != c.value || text(res) != c.text {
			t.Errorf("value %s text %q, want %s %q", got, text(res), c.value, c.text)
		}
	}
}

func TestBridgeOuterCancellation(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	g := e.gated(t, "slow", false)
	ctx, cancel := context.WithCancelCause(context.Background())
	var msgs []string
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		first := p.spawn("slow", obj("id", "first"))
		waitFor(t, "first", func() bool { return g.pending() == 1 })
		second := p.spawn("slow", obj("id", "second"))
		cancel(errors.New("user-cancel"))
		for _, c := range []*pending{first, second} {
			_, err := c.wait()
			msgs = append(msgs, err.Error())
		}
		return coderuntime.Result{Error: &coderuntime.Failure{Kind: coderuntime.FailureAbort, Message: coderuntime.AbortMessage(p.ctx)}}, nil
	})
	res := e.run(ctx, e.agent, "p")
	if !res.IsError || text(res) != "Error: code run failed (abort): user-cancel" {
		t.Errorf("result %q", text(res))
	}
	order, _, aborted := g.snapshot()
	if !slices.Equal(order, []string{"start:first", "end:first"}) || aborted != 1 {
		t.Errorf("slow: %v aborted %d", order, aborted)
	}
	// Both calls fail: the first with its discarded result, the queued one abandoned (or
	// discarded when the runtime gave up on it first).
	for _, m := range msgs {
		if !strings.HasPrefix(m, "run_code run is over (") {
			t.Errorf("call error %q", m)
		}
	}
	if starts, settles := e.log.ids("start"), e.log.ids("settle"); !slices.Equal(starts, []string{"call-1:code:1"}) || !slices.Equal(settles, starts) {
		t.Errorf("starts %v settles %v", starts, settles)
	}
}

func TestBridgeRuntimeErrorStillDrains(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	g := e.gated(t, "slow", false)
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		p.spawn("slow", obj("id", "orphan"))
		waitFor(t, "the orphan", func() bool { return g.pending() == 1 })
		return coderuntime.Result{}, errors.New("backend exploded")
	})
	res := e.run(context.Background(), e.agent, "p")
	if !res.IsError || res.Error.Message != "backend exploded" || res.Error.Info != nil {
		t.Errorf("result %+v", res.Error)
	}
	if _, _, aborted := g.snapshot(); aborted != 1 {
		t.Error("the orphan was not cancelled")
	}
	if settles := e.log.ids("settle"); !slices.Equal(settles, []string{"call-1:code:1"}) {
		t.Errorf("settles %v", settles)
	}
}

func TestBridgeWithoutAgentLogsNothing(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	echo := e.echo(t, "echo")
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		return ok(p.message("echo", obj("value", "x")))
	})
	if got := value(t, e.run(context.Background(), nil, "p")); got != `{"logs":[],"result":"\"echo:x\""}` {
		t.Errorf("value %s", got)
	}
	if len(echo.list()) != 1 || len(e.log.all()) != 0 {
		t.Errorf("echo %v events %v", echo.list(), e.log.all())
	}
}

func TestBridgePreAbortedAndLateBindings(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	echo := e.echo(t, "echo")
	pre, cancelPre := context.WithCancel(context.Background())
	cancelPre()
	res := e.run(pre, nil, "p")
	if !res.IsError || res.Error.Info.Code != tool.CodeAbortedBeforeDispatch || e.rt.runs != 0 {
		t.Errorf("pre-aborted: %+v, runs %d", res.Error, e.rt.runs)
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		cancel(errors.New("cancelled-mid-run"))
		return ok(p.message("echo", obj("value", "x")))
	})
	res = e.run(ctx, nil, "p")
	if !res.IsError || res.Error.Message != "tool call aborted" || res.Error.Info.Code != tool.CodeAborted {
		t.Errorf("late binding: %+v", res.Error)
	}
	if len(echo.list()) != 0 {
		t.Error("the late call was dispatched")
	}

	// A runtime that calls a binding after the run settled gets a rejection, never a hang.
	e.rt.setProgram(func(*program) (coderuntime.Result, error) { return ok(nil) })
	value(t, e.run(context.Background(), nil, "p"))
	if _, err := e.rt.lastProgram().fns["echo"](context.Background(), obj("value", "late")); err == nil || err.Error() != "run_code run is over (run_code settled); echo not dispatched" {
		t.Errorf("call after settlement: %v", err)
	}
}

func TestBridgeBindingContextCancelled(t *testing.T) {
	// The runtime settles the run (a budget) while a call is in flight: the binding returns
	// at once, and the drain still waits for the sub-call.
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	g := e.gated(t, "slow", true)
	var err error
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		bctx, stop := context.WithCancelCause(p.bctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, err = p.fns["slow"](bctx, obj("id", "x"))
		}()
		waitFor(t, "the call", func() bool { return g.pending() == 1 })
		stop(errors.New("compute budget exhausted"))
		<-done
		return coderuntime.Result{Error: &coderuntime.Failure{Kind: coderuntime.FailureTimeout, Message: "compute budget exhausted"}}, nil
	})
	res := e.run(context.Background(), e.agent, "p")
	if err == nil || err.Error() != "run_code run is over (compute budget exhausted); slow result discarded" {
		t.Errorf("binding: %v", err)
	}
	if !res.IsError || g.pending() != 0 {
		t.Errorf("result %+v pending %d", res.Error, g.pending())
	}
	if settles := e.log.ids("settle"); len(settles) != 1 {
		t.Errorf("settles %v", settles)
	}
}

func TestBindingsFollowTheAgentsView(t *testing.T) {
	e := newEnv(t, tool.ModeBoth, codemode.Config{})
	e.echo(t, "echo")
	e.echo(t, "hidden")
	e.echo(t, "__proto__")
	if _, err := e.agent.Restrict(tool.Filter{Deny: []string{"hidden"}}); err != nil {
		t.Fatal(err)
	}
	mine, err := tool.New("mine", "Scoped.", func(context.Context, *tool.Call, struct{}) (string, error) { return "mine-ok", nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.agent.Register(mine); err != nil {
		t.Fatal(err)
	}
	var names []string
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		for n := range p.fns {
			names = append(names, n)
		}
		return ok([]any{p.message("__proto__", obj("value", "x")), p.message("mine", obj())})
	})
	got := value(t, e.run(context.Background(), e.agent, "p"))
	slices.Sort(names)
	if !slices.Equal(names, []string{"__proto__", "echo", "mine"}) {
		t.Errorf("bindings %v", names)
	}
	if got != `{"logs":[],"result":["\"__proto__:x\"","\"mine-ok\""]}` {
		t.Errorf("value %s", got)
	}
	ns := e.rt.lastProgram().req.Bindings[0]
	if ns.Global != "tools" || *ns.ErrorClass != (coderuntime.ErrorClass{Name: "ToolCallError", MemberNameProperty: "toolName"}) {
		t.Errorf("namespace %+v", ns)
	}
	if e.rt.lastProgram().req.Program != "p" {
		t.Error("program text not passed through")
	}
}

func TestCodeModeSubCallsAreNotCollapsed(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	e.echo(t, "echo")
	direct := e.reg.Execute(context.Background(), tool.Input{CallID: "c0", Name: "echo", Args: obj("value", "x"), Agent: e.agent})
	if !direct.IsError || direct.Error.Info.Code != tool.CodeUnknownTool {
		t.Fatalf("direct call in code mode: %+v", direct)
	}
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) { return ok(p.message("echo", obj("value", "x"))) })
	if got := value(t, e.run(context.Background(), e.agent, "p")); got != `{"logs":[],"result":"\"echo:x\""}` {
		t.Errorf("value %s", got)
	}
}

func TestDispatchLogFailures(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	e := newEnv(t, tool.ModeCode, codemode.Config{Logger: logger})
	echo := e.echo(t, "echo")
	e.log.failStart = errors.New("disk full")
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) { return ok(p.message("echo", obj("value", "x"))) })
	got := value(t, e.run(context.Background(), e.agent, "p"))
	if want := `{"logs":[],"result":"error: tool call call-1:code:1 was not started: recording tool/code-dispatch-start failed: disk full"}`; got != want {
		t.Errorf("value %s", got)
	}
	if len(echo.list()) != 0 {
		t.Error("an unrecorded call ran")
	}
	e.log.failStart, e.log.failSet = nil, errors.New("disk full")
	value(t, e.run(context.Background(), e.agent, "p"))
	if len(echo.list()) != 1 || !strings.Contains(buf.String(), `tool \"echo\" (call-1:code:1): recording tool/code-dispatch failed: disk full`) {
		t.Errorf("echo %v log %s", echo.list(), buf.String())
	}
}

func TestShapeLog(t *testing.T) {
	var buf bytes.Buffer
	var seen []codemode.SettledCall
	cfg := codemode.Config{
		Logger: slog.New(slog.NewTextHandler(&buf, nil)),
		ShapeLog: []codemode.LogShaper{
			func(_ context.Context, c codemode.SettledCall) ([]content.Block, error) {
				seen = append(seen, c)
				if c.Name == "boom" {
					return nil, errors.New("log-content listener failed")
				}
				return content.Texts("bounded " + c.Content[0].Text), nil
			},
			func(_ context.Context, c codemode.SettledCall) ([]content.Block, error) {
				if c.Name == "panics" {
					panic("shaper panicked")
				}
				return nil, nil // keep
			},
		},
	}
	e := newEnv(t, tool.ModeCode, cfg)
	for _, n := range []string{"echo", "boom", "panics"} {
		e.echo(t, n)
	}
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		return ok([]any{p.message("echo", obj("value", "x")), p.message("boom", obj("value", "y")), p.message("panics", obj("value", "z"))})
	})
	if got := value(t, e.run(context.Background(), e.agent, "p")); got != `{"logs":[],"result":["\"echo:x\"","\"boom:y\"","\"panics:z\""]}` {
		t.Errorf("the program's values changed: %s", got)
	}
	var logged []string
	for _, ev := range e.log.all() {
		if ev.kind == "settle" {
			logged = append(logged, ev.settle.Content[0].Text)
		}
	}
	if !slices.Equal(logged, []string{"bounded echo:x", "boom:y", "panics:z"}) {
		t.Errorf("logged %v", logged)
	}
	if len(seen) != 3 || seen[0].SubCallID != "call-1:code:1" || seen[0].Agent != e.agent || seen[0].Outer.CallID() != "call-1" || seen[0].IsError {
		t.Errorf("shaper saw %+v", seen)
	}
	for _, w := range []string{"log-content listener failed", "shaper panicked"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("no warning %q in %s", w, buf.String())
		}
	}
}

func TestSessionLogRecordsValidEvents(t *testing.T) {
	mem := session.NewMemory(nil)
	e := newEnv(t, tool.ModeCode, codemode.Config{Log: codemode.SessionLog(mem)})
	e.echo(t, "echo")
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) { return ok(p.message("echo", obj("value", "x"))) })
	value(t, e.run(context.Background(), e.agent, "p"))
	evs := mem.Events()
	if len(evs) != 2 {
		t.Fatalf("%d events", len(evs))
	}
	start, err := session.DecodeCodeDispatchStart(evs[0])
	if err != nil || start.SubCallID != "call-1:code:1" {
		t.Errorf("start %+v %v", start, err)
	}
	settle, err := session.DecodeCodeDispatch(evs[1])
	if err != nil || settle.IsError || settle.Content[0].Text != "echo:x" {
		t.Errorf("settle %+v %v", settle, err)
	}
	if msgs, err := session.DeriveMessages(evs); err != nil || len(msgs) != 0 {
		t.Errorf("dispatch events derived messages %v %v", msgs, err)
	}
}

func TestScopeLogsRouting(t *testing.T) {
	var logs codemode.ScopeLogs
	e := newEnv(t, tool.ModeCode, codemode.Config{Log: &logs})
	e.echo(t, "echo")
	child := e.reg.NewScope("child", e.agent)
	other := e.reg.NewScope("other", nil)
	parentLog, childLog := session.NewMemory(nil), session.NewMemory(nil)
	detach := logs.Attach(e.agent, parentLog)
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) { return ok(p.message("echo", obj("value", "x"))) })
	value(t, e.run(context.Background(), child, "p")) // no log of its own: the parent's
	value(t, e.run(context.Background(), other, "p")) // none: dropped
	detachChild := logs.Attach(child, childLog)
	value(t, e.run(context.Background(), child, "p"))
	detachChild()
	detach()
	value(t, e.run(context.Background(), e.agent, "p"))
	if parentLog.Len() != 2 || childLog.Len() != 2 {
		t.Errorf("parent %d child %d events", parentLog.Len(), childLog.Len())
	}
}

func TestNewValidatesConfig(t *testing.T) {
	reg, _ := tool.NewRegistry(tool.Config{})
	rt := &fakeRuntime{}
	if _, err := codemode.New(reg, rt, codemode.Config{MaxParallelSubCalls: -1}); err == nil || err.Error() != "maxParallelSubCalls must be a positive integer" {
		t.Errorf("negative cap: %v", err)
	}
	if _, err := codemode.New(nil, rt, codemode.Config{}); err == nil {
		t.Error("nil registry accepted")
	}
	if _, err := codemode.New(reg, nil, codemode.Config{}); err == nil {
		t.Error("nil runtime accepted")
	}
	py := &fakeRuntime{lang: "python"}
	r, err := codemode.New(reg, py, codemode.Config{})
	if err != nil || r.Language() != "python" || r.Runtime() != py {
		t.Errorf("runner %v %v", r, err)
	}
	undo, err := codemode.Install(reg, rt, codemode.Config{})
	if err != nil || reg.CodeRunner() == nil {
		t.Fatalf("install: %v", err)
	}
	undo()
	if reg.CodeRunner() != nil {
		t.Error("undo left the runner installed")
	}
}

func TestDefaultParallelCap(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	g := e.gated(t, "safe_read", true)
	idle := e.probeIdle()
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		var cs []*pending
		for i := range 12 {
			cs = append(cs, p.spawn("safe_read", obj("id", string(rune('a'+i)))))
		}
		waitFor(t, "ten calls", func() bool { return g.pending() == codemode.DefaultMaxParallelSubCalls })
		idle.declined(t, "an eleventh call", "call-1:code:11", false, func() bool { return g.pending() > codemode.DefaultMaxParallelSubCalls })
		releaseUntilDone(t, g, cs)
		return ok(nil)
	})
	value(t, e.run(context.Background(), nil, "p"))
}
