package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
)

// TestResumeAfterCrash: a session whose second turn crashed after one of two requested
// calls was durably recorded resumes with recovery results for both calls, and the next
// turn's request carries them.
func TestResumeAfterCrash(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	store, err := session.Open(t.TempDir(), session.Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	log, err := store.Create(ctx, session.Header{Cwd: "/work/space"})
	if err != nil {
		t.Fatal(err)
	}
	id := log.Header().ID
	first, _ := f.agent(t, []script.Reply{{Text: "first answer"}}, Config{Log: log})
	if _, err := first.Run(ctx, "first question"); err != nil {
		t.Fatal(err)
	}
	// Turn 2 crashes: the model asked for two calls and only c1's tool/call is durable.
	for _, e := range []session.Event{
		session.TurnStart{Turn: 2}.Event(),
		session.StepStart{Turn: 2, Step: 1}.Event(),
		session.UserMessage{Message: content.Message{Content: content.Texts("second question"), Source: &content.Source{Kind: "user"}}}.Event(),
		session.AssistantMessage{Turn: 2, Step: 1, Message: content.Message{Content: []content.Block{
			content.ToolCall("c1", "echo", `{"text":"a"}`),
			content.ToolCall("c2", "excl", `{"text":"b"}`),
		}}}.Event(),
	} {
		if _, err := log.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := log.AppendDurable(session.ToolCall{Turn: 2, Step: 1, CallID: "c1", Name: "echo", Arguments: `{"text":"a"}`}.Event()); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil { // the process dies here
		t.Fatal(err)
	}

	m, err := script.New([]script.Reply{{ExpectToolResults: []string{"c1", "c2"}, Text: "recovered"}}, script.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Resume(ctx, store, id, Config{Registry: f.reg, Model: m, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(ctx, "where were we?")
	if err != nil {
		t.Fatal(err)
	}
	if res.Turn != 3 || res.Text() != "recovered" {
		t.Fatalf("result = %+v", res)
	}
	got := requestResults(m.Requests()[0])
	if b := got["c1"]; !b.IsError || !strings.Contains(blockText(b.Content), "Its outcome is unknown") {
		t.Errorf("c1 = %+v", b)
	}
	if b := got["c2"]; !b.IsError || !strings.Contains(blockText(b.Content), "before the Harness recorded it as started") {
		t.Errorf("c2 = %+v", b)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	loaded, err := store.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Recovered != 0 {
		t.Fatalf("%d recovery events still owed", loaded.Recovered)
	}
	checkPairs(t, loaded.Events)
	var ends []string
	for _, e := range loaded.Events {
		if e.Type == session.TypeTurnEnd {
			p, _ := session.DecodeTurnEnd(e)
			ends = append(ends, p.Reason.Kind)
		}
	}
	equalStrings(t, "turn ends", ends, []string{"completed", "interrupted", "completed"})
	rs := toolResults(t, loaded.Events)
	if rs["c1"].Error.Code != session.CodeToolOutcomeUnknown || rs["c2"].Error.Code != session.CodeToolNotStarted {
		t.Fatalf("recovery codes = %+v, %+v", rs["c1"].Error, rs["c2"].Error)
	}
}

func TestResumeMissingSession(t *testing.T) {
	f := newFixture(t)
	store, err := session.Open(t.TempDir(), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := script.New([]script.Reply{{Text: "x"}}, script.Options{})
	if _, err := Resume(context.Background(), store, "nope", Config{Registry: f.reg, Model: m}); err == nil {
		t.Fatal("resumed a session that does not exist")
	}
}
