package session_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session"
)

// The agent loop's view of the log: durable tool/call before a call starts, live events
// otherwise, and the model history derived back from the file.
func Example() {
	root, err := os.MkdirTemp("", "dsh-sessions-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	store, err := session.Open(root, session.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	l, err := store.Create(ctx, session.Header{ID: "demo", Cwd: "/home/me/project"})
	if err != nil {
		log.Fatal(err)
	}
	must := func(_ session.Event, err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	must(l.AppendDurable(session.TurnStart{Turn: 0}.Event()))
	must(l.Append(session.StepStart{Turn: 0, Step: 0}.Event()))
	must(l.Append(session.UserMessage{Message: content.Message{
		Source: &content.Source{Kind: "user"}, Content: content.Texts("what is in README?")}}.Event()))
	must(l.Append(session.AssistantMessage{Turn: 0, Step: 0, Message: content.Message{
		Content: []content.Block{content.ToolCall("call_1", "read", `{"path":"README"}`)}}}.Event()))
	call, err := l.AppendDurable(session.ToolCall{Turn: 0, Step: 0, CallID: "call_1", Name: "read", Arguments: `{"path":"README"}`}.Event())
	must(call, err)
	must(l.Append(session.ToolResult{Turn: 0, Step: 0, CallID: "call_1", Content: content.Texts("# demo"),
		SourceEventSeqs: []int64{call.Seq}}.Event()))
	must(l.Append(session.StepEnd{Turn: 0, Step: 0}.Event()))
	must(l.Append(session.TurnEnd{Turn: 0, Reason: session.EndReason{Kind: session.EndCompleted}}.Event()))
	if err := l.Close(); err != nil {
		log.Fatal(err)
	}

	loaded, err := store.Load(ctx, "demo")
	if err != nil {
		log.Fatal(err)
	}
	msgs, err := session.DeriveMessages(loaded.Events)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(loaded.Events), "events,", len(msgs), "messages")
	for _, m := range msgs {
		fmt.Println(m.Role, m.Content[0].Type)
	}
	// Output:
	// 8 events, 3 messages
	// user text
	// assistant tool-call
	// user tool-result
}

func ExampleProjectKey() {
	key, _ := session.ProjectKey("/home/me/my project")
	fmt.Println(key)
	// Output: --home-me-my~0020project--
}

func ExampleEncodeSegment() {
	for _, id := range []string{"20261129T140501Z-3f9a2c1d", "..", "a/b"} {
		seg, _ := session.EncodeSegment(id)
		fmt.Println(seg)
	}
	// Output:
	// 20261129T140501Z-3f9a2c1d
	// ~002E~002E
	// a~002Fb
}

func ExampleToolCall() {
	m := session.NewMemory(func() time.Time { return time.UnixMilli(1700000000000) })
	e, _ := m.AppendDurable(session.ToolCall{Turn: 1, Step: 0, CallID: "call_1", Name: "read", Arguments: `{"path":"a"}`}.Event())
	b, _ := e.MarshalJSON()
	fmt.Println(string(b))
	// Output: {"type":"tool/call","seq":0,"time":1700000000000,"data":{"turn":1,"step":0,"callId":"call_1","name":"read","arguments":"{\"path\":\"a\"}"}}
}

// A crash after the assistant asked for two calls and the first one was recorded as
// started: recovery answers both and closes the turn.
func ExampleRecoveryEvents() {
	m := session.NewMemory(nil)
	for _, e := range []session.Event{
		session.TurnStart{Turn: 0}.Event(),
		session.StepStart{Turn: 0, Step: 0}.Event(),
		session.AssistantMessage{Message: content.Message{Content: []content.Block{
			content.ToolCall("a", "write", "{}"), content.ToolCall("b", "read", "{}")}}}.Event(),
		session.ToolCall{CallID: "a", Name: "write", Arguments: "{}"}.Event(),
	} {
		if _, err := m.Append(e); err != nil {
			log.Fatal(err)
		}
	}
	for _, e := range session.RecoveryEvents(m.Events()) {
		if r, err := session.DecodeToolResult(e); err == nil {
			fmt.Println(e.Seq, e.Type, r.CallID, r.Error.Code)
			continue
		}
		fmt.Println(e.Seq, e.Type)
	}
	// Output:
	// 4 tool/result a TOOL_OUTCOME_UNKNOWN
	// 5 tool/result b TOOL_NOT_STARTED
	// 6 step/end
	// 7 turn/end
}

// UsageOf sums the token usage an agent logged with its replies, per turn and in total.
func ExampleUsageOf() {
	mem := session.NewMemory(time.Now)
	for turn, n := range []float64{1200, 300} {
		usage := jsonv.NewObject(
			jsonv.Member{Name: "inputTokens", Value: n},
			jsonv.Member{Name: "outputTokens", Value: 40.0},
			jsonv.Member{Name: "model", Value: "deepseek-flash"},
		)
		mem.Append(session.AssistantMessage{Turn: turn + 1, Step: 1, Message: content.Message{Content: content.Texts("ok")}, Usage: usage}.Event())
	}
	u, err := session.UsageOf(mem.Events())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range u.Turns {
		fmt.Printf("turn %d: %d input, %d output\n", t.Turn, t.Input, t.Output)
	}
	fmt.Printf("total: %d input, %d output\n", u.Total.Input, u.Total.Output)
	// Output:
	// turn 1: 1200 input, 40 output
	// turn 2: 300 input, 40 output
	// total: 1500 input, 80 output
}

// Export writes a session as a plain log, and Import stores it in another store (here a
// second file store; session/pgstore's Store takes it the same way) with its id, seqs and
// times unchanged.
func ExampleExport() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "dsh-example-")
	defer os.RemoveAll(dir)
	clock := func() time.Time { return time.UnixMilli(1_780_000_000_000) }
	src, _ := session.Open(filepath.Join(dir, "a"), session.Options{Now: clock})
	w, _ := src.Create(ctx, session.Header{ID: "s1", Cwd: "/work"})
	w.Append(session.TurnStart{Turn: 1}.Event())
	w.Close()

	var log bytes.Buffer
	if err := session.Export(ctx, src, "s1", &log); err != nil {
		fmt.Println(err)
	}
	fmt.Print(log.String())
	dst, _ := session.Open(filepath.Join(dir, "b"), session.Options{})
	h, err := session.Import(ctx, dst, &log)
	fmt.Println(h.ID, err)
	// Output:
	// {"type":"session","version":0,"id":"s1","createdAt":1780000000000,"cwd":"/work","delegationDepth":0}
	// {"type":"turn/start","seq":0,"time":1780000000000,"data":{"turn":1}}
	// s1 <nil>
}
