package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/policy/timeout"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

func TestTextOnlyTurn(t *testing.T) {
	f := newFixture(t)
	a, m := f.agent(t, []script.Reply{{Reasoning: "easy", Text: "hello there", Usage: llm.Usage{InputTokens: 10, OutputTokens: 3}}}, Config{})
	res, err := a.Run(context.Background(), "hi")
	if err != nil {
		t.Fatal(err)
	}
	if res.Turn != 1 || res.Steps != 1 || res.Reason.Kind != session.EndCompleted || res.Text() != "hello there" {
		t.Fatalf("result = %+v", res)
	}
	events := a.Log().Events()
	equalStrings(t, "events", describe(t, events), []string{
		"turn/start", "step/start", "user/message user:hi", "assistant/message", "step/end", "turn/end completed",
	})
	p, err := session.DecodeAssistantMessage(events[3])
	if err != nil {
		t.Fatal(err)
	}
	usage, _ := jsonv.Marshal(p.Usage)
	if string(usage) != `{"inputTokens":10,"outputTokens":3,"model":"script"}` {
		t.Errorf("usage = %s", usage)
	}
	if len(p.Message.Content) != 2 || p.Message.Content[0].Type != content.TypeReasoning {
		t.Errorf("assistant message = %+v", p.Message)
	}
	end, _ := jsonv.Marshal(events[5].Data)
	if string(end) != `{"turn":1,"reason":{"kind":"completed"}}` {
		t.Errorf("turn/end data = %s", end)
	}
	reqs := m.Requests()
	if len(reqs) != 1 || len(reqs[0].Messages) != 1 || blockText(reqs[0].Messages[0].Content) != "hi" {
		t.Fatalf("requests = %+v", reqs)
	}
}

// TestTypicalStepSequence pins the event order of docs/behaviour.md §9.1 for a step with parallel calls:
// both tool/call events precede the results, which commit in model order, and the next
// step starts with the contexts the tools deferred.
func TestTypicalStepSequence(t *testing.T) {
	f := newFixture(t)
	a, m := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("echo:c1:one", "note:c2:two")},
		{ExpectToolResults: []string{"c1", "c2"}, Text: "done"},
	}, Config{})
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	events := a.Log().Events()
	equalStrings(t, "events", describe(t, events), []string{
		"turn/start",
		"step/start", "user/message user:go", "assistant/message",
		"tool/call c1", "tool/call c2", "tool/result c1", "tool/result c2",
		"step/end",
		"step/start", "user/message tool:note: two", "assistant/message", "step/end",
		"turn/end completed",
	})
	checkPairs(t, events)
	if res.Steps != 2 || res.Text() != "done" {
		t.Fatalf("result = %+v", res)
	}
	// Exact payloads (docs/behaviour.md §9.1).
	call, _ := jsonv.Marshal(events[4].Data)
	if string(call) != `{"turn":1,"step":1,"callId":"c1","name":"echo","arguments":"{\"text\":\"one\"}"}` {
		t.Errorf("tool/call data = %s", call)
	}
	r := events[6]
	if r.SurfaceOp != session.SurfaceAppend || len(r.SourceEventSeqs) != 1 || r.SourceEventSeqs[0] != events[4].Seq {
		t.Errorf("tool/result envelope = %+v", r)
	}
	p, _ := session.DecodeToolResult(r)
	if p.IsError || blockText(p.Content) != "echo: one" || p.Error != nil || p.Meta != nil {
		t.Errorf("tool/result c1 = %+v", p)
	}
	// The context is attributed to its call and reaches the second request after the results.
	u, _ := session.DecodeUserMessage(events[10])
	if u.Message.Source.CallID != "c2" {
		t.Errorf("context source = %+v", u.Message.Source)
	}
	req := m.Requests()[1]
	last := req.Messages[len(req.Messages)-1]
	if last.Role != content.RoleUser || blockText(last.Content) != "note: two" {
		t.Errorf("last message of the second request = %+v", last)
	}
}

func TestExclusiveBarrierOrder(t *testing.T) {
	f := newFixture(t)
	a, _ := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("echo:a:1", "excl:b:2", "echo:c:3", "echo:d:4")},
		{Text: "ok"},
	}, Config{})
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, d := range describe(t, a.Log().Events()) {
		if strings.HasPrefix(d, "tool/") {
			tools = append(tools, d)
		}
	}
	equalStrings(t, "tool events", tools, []string{
		"tool/call a", "tool/result a",
		"tool/call b", "tool/result b",
		"tool/call c", "tool/call d", "tool/result c", "tool/result d",
	})
}

func TestDenialReachesModel(t *testing.T) {
	f := newFixture(t)
	f.reg.OnPreExecute(func(ctx context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		if exec.Name() == "excl" {
			return tool.Deny("excl is not allowed here"), nil
		}
		return next()
	})
	a, m := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("excl:c1:x", "echo:c2:y")},
		{ExpectToolResults: []string{"c1", "c2"}, Text: "understood"},
	}, Config{})
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	rs := toolResults(t, a.Log().Events())
	if d := rs["c1"]; !d.IsError || d.Error != nil || blockText(d.Content) != "Error: excl is not allowed here" {
		t.Errorf("denied result = %+v", d)
	}
	if rs["c2"].IsError || blockText(rs["c2"].Content) != "echo: y" {
		t.Errorf("allowed result = %+v", rs["c2"])
	}
	got := requestResults(m.Requests()[1])
	if b := got["c1"]; !b.IsError || blockText(b.Content) != "Error: excl is not allowed here" {
		t.Errorf("model saw %+v", b)
	}
}

func TestTimeoutPolicy(t *testing.T) {
	f := newFixture(t)
	undo, err := timeout.Install(f.reg.Global(), timeout.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer undo()
	a, _ := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("slow:c1:x")},
		{Text: "it timed out"},
	}, Config{})
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	r := toolResults(t, a.Log().Events())["c1"]
	if r.Error == nil || r.Error.Code != tool.CodeToolTimeout || blockText(r.Content) != "Error: tool call timed out after 20ms" {
		t.Fatalf("result = %+v (error %+v)", r, r.Error)
	}
}

func TestConcludesTurn(t *testing.T) {
	f := newFixture(t)
	a, m := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("echo:c1:x", "end:c2:y")},
	}, Config{})
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason.Kind != session.EndCompleted || res.Steps != 1 || m.Remaining() != 0 || len(m.Requests()) != 1 {
		t.Fatalf("result = %+v, requests = %d", res, len(m.Requests()))
	}
	equalStrings(t, "tail", describe(t, a.Log().Events())[8:], []string{"step/end", "turn/end completed"})
}

// TestConcludesTurnWithContexts pins the (inferred, docs/behaviour.md §8.6) rule that accepted contexts
// keep a concluded turn going: the notes become user messages of one more step.
func TestConcludesTurnWithContexts(t *testing.T) {
	f := newFixture(t)
	a, m := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("note:c1:end")},
		{Text: "read the note"},
	}, Config{})
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 2 || len(m.Requests()) != 2 || res.Text() != "read the note" {
		t.Fatalf("result = %+v", res)
	}
	ends := 0
	for _, e := range a.Log().Events() {
		if e.Type == session.TypeTurnEnd {
			ends++
		}
	}
	if ends != 1 {
		t.Fatalf("%d turn/end events", ends)
	}
}

func TestSteerKeepsConcludedTurnGoing(t *testing.T) {
	f := newFixture(t)
	var a *Agent
	a, m := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("end:c1:x")},
		{Text: "steered"},
	}, Config{Observer: Observer{ToolCall: func(ToolCallEvent) {
		a.Steer(content.Message{Content: content.Texts("also check the tests")})
	}}})
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 2 || len(m.Requests()) != 2 {
		t.Fatalf("result = %+v", res)
	}
	equalStrings(t, "second step", describe(t, a.Log().Events())[7:9], []string{"step/start", "user/message user:also check the tests"})
}

func TestStepLimit(t *testing.T) {
	f := newFixture(t)
	a, m := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("echo:c1:x")},
		{ToolCalls: scriptCalls("echo:c2:x")},
		{Text: "never requested"},
	}, Config{MaxSteps: 2})
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason.Kind != EndMaxSteps || res.Steps != 2 || len(m.Requests()) != 2 {
		t.Fatalf("result = %+v, %d requests", res, len(m.Requests()))
	}
	end, _ := jsonv.Marshal(a.Log().Events()[len(a.Log().Events())-1].Data)
	if string(end) != `{"turn":1,"reason":{"kind":"max-steps"}}` {
		t.Fatalf("turn/end = %s", end)
	}
}

func TestMaxTokensSkipsCalls(t *testing.T) {
	f := newFixture(t)
	a, m := f.agent(t, []script.Reply{
		{Text: "I will call", ToolCalls: scriptCalls("echo:c1:x"), Finish: llm.FinishMaxTokens},
	}, Config{})
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason.Kind != session.EndMaxTokens || len(m.Requests()) != 1 {
		t.Fatalf("result = %+v", res)
	}
	equalStrings(t, "events", describe(t, a.Log().Events()), []string{
		"turn/start", "step/start", "user/message user:go", "assistant/message", "step/end", "turn/end max-tokens",
	})
}

func TestModelError(t *testing.T) {
	f := newFixture(t)
	a, _ := f.agent(t, []script.Reply{{Text: "partial", Error: "the model fell over"}}, Config{})
	res, err := a.Run(context.Background(), "go")
	var le *llm.Error
	if !errors.As(err, &le) || le.Code != llm.CodeScripted {
		t.Fatalf("err = %v", err)
	}
	if res.Reason.Kind != session.EndError || res.Reason.Error == nil || res.Reason.Error.Code != llm.CodeScripted || res.Reason.Error.Message != le.Message {
		t.Fatalf("reason = %+v", res.Reason)
	}
	equalStrings(t, "events", describe(t, a.Log().Events()), []string{
		"turn/start", "step/start", "user/message user:go", "step/end", "turn/end error",
	})
	// The agent survives a failed turn.
	if _, err := a.Run(context.Background(), "again"); err == nil || llm.CodeOf(err) != llm.CodeScriptExhausted {
		t.Fatalf("second turn err = %v", err)
	}
	if a.Turns() != 2 {
		t.Fatalf("turns = %d", a.Turns())
	}
}

func TestUnparseableArguments(t *testing.T) {
	f := newFixture(t)
	a, m := f.agent(t, []script.Reply{
		{ToolCalls: []script.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"text": oops`}, {ID: "c2", Name: "echo", Arguments: ""}}},
		{Text: "ok"},
	}, Config{})
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	events := a.Log().Events()
	c, _ := session.DecodeToolCall(events[4])
	if c.Arguments != `{"text": oops` {
		t.Errorf("logged arguments = %q", c.Arguments)
	}
	rs := toolResults(t, events)
	if r := rs["c1"]; r.Error == nil || r.Error.Code != tool.CodeInvalidArgs || !strings.Contains(blockText(r.Content), "must be an object") {
		t.Errorf("c1 = %+v %+v", r, r.Error)
	}
	// Empty argument text is {} (docs/behaviour.md §8.1), which the schema then checks.
	if r := rs["c2"]; r.Error == nil || r.Error.Code != tool.CodeInvalidArgs || !strings.Contains(blockText(r.Content), "text") {
		t.Errorf("c2 = %+v", r)
	}
	if len(requestResults(m.Requests()[1])) != 2 {
		t.Error("the model did not see both failures")
	}
}

func TestUnknownTool(t *testing.T) {
	f := newFixture(t)
	a, _ := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("nope:c1:x")},
		{Text: "ok"},
	}, Config{})
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if r := toolResults(t, a.Log().Events())["c1"]; r.Error == nil || r.Error.Code != tool.CodeUnknownTool {
		t.Fatalf("result = %+v", r)
	}
}

// TestCancelMidBatch cancels while the first of three calls runs with a pool of one: the
// started call drains, the others get synthetic pairs, and the turn ends aborted.
func TestCancelMidBatch(t *testing.T) {
	f := newFixture(t)
	a, m := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("block:c1:a", "block:c2:b", "excl:c3:c")},
		{Text: "never"},
	}, Config{MaxParallelToolCalls: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-f.gate.started
		cancel()
	}()
	res, err := a.Run(ctx, "go")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	events := a.Log().Events()
	equalStrings(t, "events", describe(t, events), []string{
		"turn/start", "step/start", "user/message user:go", "assistant/message",
		"tool/call c1", "tool/result c1 error", // the body's own cancellation error stands
		"tool/call c2", "tool/result c2 ABORTED_BEFORE_DISPATCH",
		"tool/call c3", "tool/result c3 ABORTED_BEFORE_DISPATCH",
		"step/end", "turn/end aborted",
	})
	checkPairs(t, events)
	r := toolResults(t, events)["c2"]
	if blockText(r.Content) != "Error: tool call aborted before dispatch" || r.Error.Name != "AbortError" {
		t.Errorf("synthetic result = %+v %+v", r, r.Error)
	}
	end, _ := jsonv.Marshal(events[len(events)-1].Data)
	if string(end) != `{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"user"}}}` {
		t.Errorf("turn/end = %s", end)
	}
	if res.Reason.Kind != session.EndAborted || len(m.Requests()) != 1 {
		t.Errorf("result = %+v", res)
	}
}

// TestCancelParksLateContexts: contexts accepted before the cancellation are discarded,
// contexts of calls that drain after it stay in the inbox and open the next turn (docs/behaviour.md §8.4).
func TestCancelParksLateContexts(t *testing.T) {
	f := newFixture(t)
	// c1's note is accepted before the cancellation (its result commits, then the observer
	// cancels) while c2 is still running; c2 defers its note while draining.
	ctx, cancel := context.WithCancel(context.Background())
	a, m := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("note:c1:early", "block:c2:defer-x")},
		{Text: "next turn"},
	}, Config{Observer: Observer{ToolResult: func(r ToolResultEvent) {
		if r.CallID == "c1" {
			<-f.gate.started // c2's body runs
			cancel()
		}
	}}})
	if _, err := a.Run(ctx, "go"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	pending := a.Pending()
	if len(pending) != 1 || blockText(pending[0].Content) != "late note: defer-x" {
		t.Fatalf("pending = %+v", pending)
	}
	if _, err := a.Run(context.Background(), "continue"); err != nil {
		t.Fatal(err)
	}
	events := a.Log().Events()
	var second []string
	for _, d := range describe(t, events) {
		if strings.HasPrefix(d, "user/message") {
			second = append(second, d)
		}
	}
	equalStrings(t, "user messages", second, []string{
		"user/message user:go", "user/message tool:late note: defer-x", "user/message user:continue",
	})
	if len(m.Requests()) != 2 {
		t.Fatalf("%d requests", len(m.Requests()))
	}
}

func TestCancelKeepInbox(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	a, _ := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("note:c1:early", "block:c2:x")},
	}, Config{Observer: Observer{ToolResult: func(r ToolResultEvent) {
		if r.CallID == "c1" {
			cancel(&CancelCause{Kind: "hook", Reason: "budget spent", KeepInbox: true})
		}
	}}})
	res, err := a.Run(ctx, "go")
	var cc *CancelCause
	if !errors.As(err, &cc) {
		t.Fatalf("err = %v", err)
	}
	if res.Reason.Cause != "hook" || res.Reason.CauseReason != "budget spent" {
		t.Fatalf("reason = %+v", res.Reason)
	}
	if p := a.Pending(); len(p) != 1 || blockText(p[0].Content) != "note: early" {
		t.Fatalf("pending = %+v", p)
	}
}

func TestCancelDuringStreamLogsPrefix(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, err := script.New([]script.Reply{{Reasoning: "thinking hard", Text: "partial answer that goes on", ToolCalls: scriptCalls("echo:c1:x")}}, script.Options{ChunkSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	deltas := 0
	a, err := New(Config{Registry: f.reg, Model: m, Now: fixedNow, Observer: Observer{TextDelta: func(string) {
		deltas++
		if deltas == 2 {
			cancel()
		}
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Run(ctx, "go"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	events := a.Log().Events()
	equalStrings(t, "events", describe(t, events), []string{
		"turn/start", "step/start", "user/message user:go", "assistant/message", "step/end", "turn/end aborted",
	})
	p, err := session.DecodeAssistantMessage(events[3])
	if err != nil {
		t.Fatal(err)
	}
	if !p.Interrupted || len(p.Message.Content) != 2 || p.Message.Content[1].Text != "partial " {
		t.Fatalf("interrupted message = %+v", p)
	}
	checkPairs(t, events)
}

func TestAlreadyCancelledStartsNoTurn(t *testing.T) {
	f := newFixture(t)
	a, m := f.agent(t, []script.Reply{{Text: "x"}}, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Run(ctx, "go"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if a.Log().Len() != 0 || len(m.Requests()) != 0 {
		t.Fatalf("logged %d events", a.Log().Len())
	}
}

func TestConcurrentRunRefused(t *testing.T) {
	f := newFixture(t)
	a, _ := f.agent(t, []script.Reply{{ToolCalls: scriptCalls("block:c1:x")}, {Text: "done"}}, Config{})
	done := make(chan error)
	go func() {
		_, err := a.Run(context.Background(), "first")
		done <- err
	}()
	testwait.Recv(t, f.gate.started, "a value on f.gate.started")
	if _, err := a.Run(context.Background(), "second"); err == nil || err.Error() != "agent: a turn is already running" {
		t.Errorf("err = %v", err)
	}
	f.gate.release("x")
	if err := testwait.Recv(t, done, "a value on done"); err != nil {
		t.Fatal(err)
	}
}

// failingLog fails appends of one event type.
type failingLog struct {
	session.Log
	failType string
}

func (l *failingLog) Append(e session.Event) (session.Event, error) {
	if e.Type == l.failType {
		return session.Event{}, errors.New("disk full")
	}
	return l.Log.Append(e)
}

func (l *failingLog) AppendDurable(e session.Event) (session.Event, error) {
	if e.Type == l.failType {
		return session.Event{}, errors.New("disk full")
	}
	return l.Log.AppendDurable(e)
}

// TestSchedulerFailureEndsTurn: a tool/call that cannot be made durable is a scheduler
// failure (docs/behaviour.md §8.5): the call does not run, and the turn ends with an UNKNOWN error.
func TestSchedulerFailureEndsTurn(t *testing.T) {
	f := newFixture(t)
	log := &failingLog{Log: session.NewMemory(fixedNow), failType: session.TypeToolCall}
	a, _ := f.agent(t, []script.Reply{{ToolCalls: scriptCalls("block:c1:x")}}, Config{Log: log})
	res, err := a.Run(context.Background(), "go")
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
	if res.Reason.Kind != session.EndError || res.Reason.Error.Code != CodeUnknown {
		t.Fatalf("reason = %+v", res.Reason)
	}
	select {
	case id := <-f.gate.started:
		t.Fatalf("call %s ran without a durable tool/call", id)
	default:
	}
	equalStrings(t, "tail", describe(t, a.Log().Events())[4:], []string{"step/end", "turn/end error"})
}

// TestSchedulerFailureMessage: the turn/end event carries the original failure's message;
// the Go error returned to the caller says where it failed.
func TestSchedulerFailureMessage(t *testing.T) {
	for _, tt := range []struct {
		failType string
		call     string
		goErr    string
	}{
		{session.TypeToolCall, "block:c1:x", `agent: turn 1 failed: tool-call scheduler: log tool/call of call "c1": disk full`},
		{session.TypeToolResult, "note:c1:x", `agent: turn 1 failed: tool-call scheduler: log tool/result of call "c1": disk full`},
	} {
		t.Run(tt.failType, func(t *testing.T) {
			f := newFixture(t)
			log := &failingLog{Log: session.NewMemory(fixedNow), failType: tt.failType}
			a, _ := f.agent(t, []script.Reply{{ToolCalls: scriptCalls(tt.call)}}, Config{Log: log})
			res, err := a.Run(t.Context(), "go")
			if err == nil || err.Error() != tt.goErr {
				t.Errorf("Go error = %v\nwant %s", err, tt.goErr)
			}
			if res.Reason.Error == nil || res.Reason.Error.Message != "disk full" || res.Reason.Error.Code != CodeUnknown {
				t.Fatalf("reason = %+v, want UNKNOWN with the original message", res.Reason)
			}
			evs := a.Log().Events()
			end, err := session.DecodeTurnEnd(evs[len(evs)-1])
			if err != nil {
				t.Fatal(err)
			}
			if end.Reason.Error == nil || end.Reason.Error.Message != "disk full" {
				t.Errorf("turn/end reason = %+v, want the original message", end.Reason)
			}
		})
	}
}

func TestPreStepHooks(t *testing.T) {
	f := newFixture(t)
	a, _ := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("note:c1:x")},
		{Text: "ok"},
	}, Config{})
	var seen []string
	a.OnPreStep(func(ctx context.Context, s PreStep) error {
		for _, m := range s.Claimed {
			seen = append(seen, s.Scope.Name()+"/"+m.Source.Kind+":"+blockText(m.Content))
		}
		return nil
	})
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "claimed", seen, []string{"agent/user:go", "agent/tool:note: x"})

	remove := a.OnPreStep(func(ctx context.Context, s PreStep) error { return errors.New("not today") })
	res, err := a.Run(context.Background(), "again")
	if err == nil || res.Reason.Kind != session.EndError || res.Reason.Error.Message != "pre-step hook: not today" {
		t.Fatalf("err = %v, reason = %+v", err, res.Reason)
	}
	remove()
}

func TestObserver(t *testing.T) {
	f := newFixture(t)
	var got []string
	obs := Observer{
		TurnStart:        func(turn int) { got = append(got, "turn-start") },
		TurnEnd:          func(turn int, r session.EndReason) { got = append(got, "turn-end "+r.Kind) },
		StepStart:        func(turn, step int) { got = append(got, "step-start") },
		StepEnd:          func(turn, step int) { got = append(got, "step-end") },
		UserMessage:      func(m content.Message) { got = append(got, "user "+blockText(m.Content)) },
		ReasoningDelta:   func(s string) { got = append(got, "reasoning "+s) },
		TextDelta:        func(s string) { got = append(got, "text "+s) },
		AssistantMessage: func(m content.Message) { got = append(got, "assistant") },
		ToolCall: func(c ToolCallEvent) {
			got = append(got, "call "+c.CallID+" "+c.Card.Card+" "+c.Card.Title)
		},
		ToolResult: func(r ToolResultEvent) {
			got = append(got, "result "+r.CallID+" "+r.Card.Card+" "+blockText(r.Card.Content))
		},
	}
	a, _ := f.agent(t, []script.Reply{
		{Reasoning: "hm", ToolCalls: scriptCalls("echo:c1:x")},
		{Text: "done"},
	}, Config{Observer: obs})
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "observed", got, []string{
		"turn-start", "step-start", "user go", "reasoning hm", "assistant",
		"call c1 generic echo", "result c1 generic echo: x", "step-end",
		"step-start", "text done", "assistant", "step-end", "turn-end completed",
	})
}

func TestNewValidation(t *testing.T) {
	f := newFixture(t)
	m, _ := script.New([]script.Reply{{Text: "x"}}, script.Options{})
	other, _ := tool.NewRegistry(tool.Config{})
	open := session.NewMemory(nil)
	open.Append(session.TurnStart{Turn: 3}.Event())
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no registry", Config{Model: m}, "agent: Config.Registry is required"},
		{"no model", Config{Registry: f.reg}, "agent: Config.Model is required"},
		{"pool", Config{Registry: f.reg, Model: m, MaxParallelToolCalls: -1}, "maxParallelToolCalls must be a positive integer"},
		{"steps", Config{Registry: f.reg, Model: m, MaxSteps: -2}, "maxSteps must be a positive integer"},
		{"order dup", Config{Registry: f.reg, Model: m, ToolOrder: []string{"echo", UnlistedTools, "echo"}}, `toolOrder lists "echo" more than once`},
		{"order rest", Config{Registry: f.reg, Model: m, ToolOrder: []string{"echo"}}, `toolOrder must contain the "<unlisted-tools>" rest entry (where unlisted tools are inserted)`},
		{"scope", Config{Registry: f.reg, Model: m, Scope: other.NewScope("elsewhere", nil)}, `agent: scope "elsewhere" belongs to another registry`},
		{"open turn", Config{Registry: f.reg, Model: m, Log: open}, "agent: session log has an open turn 3; load the session through session.Store.Resume, which closes an interrupted turn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestContinuesLogTurnNumbers(t *testing.T) {
	f := newFixture(t)
	log := session.NewMemory(fixedNow)
	a1, _ := f.agent(t, []script.Reply{{Text: "one"}}, Config{Log: log})
	if _, err := a1.Run(context.Background(), "first"); err != nil {
		t.Fatal(err)
	}
	a2, m := f.agent(t, []script.Reply{{Text: "two"}}, Config{Log: log})
	res, err := a2.Run(context.Background(), "second")
	if err != nil {
		t.Fatal(err)
	}
	if res.Turn != 2 {
		t.Fatalf("turn = %d", res.Turn)
	}
	if msgs := m.Requests()[0].Messages; len(msgs) != 3 || blockText(msgs[1].Content) != "one" {
		t.Fatalf("history = %+v", msgs)
	}
}

// TestToolResultPayloads pins the tool/result data of docs/behaviour.md §9.1: meta when the tool
// projects one (and the result card computed from it), error {name, code} for a coded
// failure, neither for a plain success.
func TestToolResultPayloads(t *testing.T) {
	f := newFixture(t)
	type out struct {
		Upper string `json:"upper"`
	}
	def := tool.Must(tool.New("shout", "Shout the text.",
		func(ctx context.Context, call *tool.Call, in textArgs) (out, error) {
			if in.Text == "" {
				return out{}, tool.NewError("ShoutError", "NOTHING_TO_SHOUT", "nothing to shout")
			}
			return out{Upper: strings.ToUpper(in.Text)}, nil
		},
		tool.Meta(func(in textArgs, o out) (any, error) { return map[string]any{"chars": len(o.Upper)}, nil }),
		tool.Render(func(in textArgs, o out) ([]content.Block, error) { return content.Texts(o.Upper), nil }),
		tool.ResultCard(func(in textArgs, r card.ToolResult) *card.Result {
			meta, _ := jsonv.Marshal(r.Meta)
			return &card.Result{Card: card.Generic, Title: fmt.Sprintf("shouted %s", meta)}
		}),
	))
	if _, err := f.reg.Register(def); err != nil {
		t.Fatal(err)
	}
	var titles []string
	a, _ := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("shout:c1:hey", "shout:c2:")},
		{Text: "ok"},
	}, Config{Observer: Observer{ToolResult: func(r ToolResultEvent) { titles = append(titles, r.Card.Title) }}})
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range a.Log().Events() {
		if e.Type != session.TypeToolResult {
			continue
		}
		data := jsonv.Clone(e.Data).(*jsonv.Object)
		msg, _ := data.Get("message")
		msg.(*jsonv.Object).Set("id", "ID")
		b, _ := jsonv.Marshal(data)
		got = append(got, string(b))
	}
	equalStrings(t, "tool/result data", got, []string{
		`{"turn":1,"step":1,"message":{"id":"ID","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"HEY"}],"isError":false}]},"meta":{"chars":3}}`,
		`{"turn":1,"step":1,"message":{"id":"ID","role":"user","source":{"kind":"tool","callId":"c2"},"content":[{"type":"tool-result","toolCallId":"c2","content":[{"type":"text","text":"Error: nothing to shout"}],"isError":true}]},"error":{"name":"ShoutError","code":"NOTHING_TO_SHOUT"}}`,
	})
	equalStrings(t, "result card titles", titles, []string{`shouted {"chars":3}`, "shouted null"})
}

// TestStrictToolReachesTheModel: a tool defined with tool.Strict is offered to the model
// with Strict set (the adapter sends "strict": true); the others without.
func TestStrictToolReachesTheModel(t *testing.T) {
	f := newFixture(t)
	type args struct {
		Text string `json:"text"`
	}
	strict := tool.Must(tool.New("strict_echo", "Echo, strictly.", func(_ context.Context, _ *tool.Call, in args) (string, error) {
		return in.Text, nil
	}, tool.Strict()))
	if _, err := f.reg.Register(strict); err != nil {
		t.Fatal(err)
	}
	a, m := f.agent(t, []script.Reply{{Text: "ok"}}, Config{})
	if _, err := a.Run(t.Context(), "hi"); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	seen := 0
	for _, ts := range reqs[0].Tools {
		if ts.Strict != (ts.Name == "strict_echo") {
			t.Errorf("tool %s offered with Strict %v", ts.Name, ts.Strict)
		}
		if ts.Name == "strict_echo" {
			seen++
		}
	}
	if seen != 1 {
		t.Errorf("strict_echo offered %d times", seen)
	}
}
