package durable_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/session"
)

// TestToolActivityIsIdempotentByCallID runs the tool activity twice for one call, as
// Temporal does when a reply is lost: the body runs once and both return its result.
func TestToolActivityIsIdempotentByCallID(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := context.Background()
	in := durable.ToolInput{SessionID: "s1", Call: durable.Call{ID: "t1", Name: "touch", RawArgs: `{"name":"x"}`}}
	first, err := f.host.Tool(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.host.Tool(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if f.bodyRuns("touch") != 1 {
		t.Fatalf("the body ran %d times", f.bodyRuns("touch"))
	}
	if first.IsError || len(second.Content) != 1 || second.Content[0].Text != first.Content[0].Text {
		t.Fatalf("first %+v, second %+v", first, second)
	}
	// Another session's call with the same id is another call.
	in.SessionID = "s2"
	if _, err := f.host.Tool(ctx, in); err != nil {
		t.Fatal(err)
	}
	if f.bodyRuns("touch") != 2 {
		t.Fatalf("the body ran %d times", f.bodyRuns("touch"))
	}
}

// TestAppendIsIdempotentBySeq repeats an append (a retried local activity) and sends one
// that does not fit the log.
func TestAppendIsIdempotentBySeq(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := context.Background()
	if _, err := f.host.Open(ctx, durable.OpenInput{SessionID: "s1", Workspace: "/ws"}); err != nil {
		t.Fatal(err)
	}
	evs := []durable.LogEvent{{Kind: session.TypeTurnStart, Turn: 1}, {Kind: session.TypeUserMessage, Turn: 1, Text: "hi"}}
	for range 2 {
		seqs, err := f.host.Append(ctx, durable.AppendInput{SessionID: "s1", Expect: 0, Events: evs})
		if err != nil || len(seqs) != 2 || seqs[0] != 0 || seqs[1] != 1 {
			t.Fatalf("append: %v %v", seqs, err)
		}
	}
	cases := []struct {
		name string
		in   durable.AppendInput
		want string
	}{
		{"a gap", durable.AppendInput{SessionID: "s1", Expect: 5, Events: evs[:1]}, "has 2 events, the workflow expected 5"},
		{"other events", durable.AppendInput{SessionID: "s1", Expect: 0, Events: []durable.LogEvent{{Kind: session.TypeStepStart, Turn: 1, Step: 1}}}, "diverged"},
		{"an unknown kind", durable.AppendInput{SessionID: "s1", Expect: 2, Events: []durable.LogEvent{{Kind: "nope"}}}, `cannot log an event of kind "nope"`},
		{"a result without outcome", durable.AppendInput{SessionID: "s1", Expect: 2, Events: []durable.LogEvent{{Kind: session.TypeToolResult, CallID: "c"}}}, "has no outcome"},
		{"an unopened session", durable.AppendInput{SessionID: "s9", Expect: 0, Events: evs}, "s9"},
	}
	for _, c := range cases {
		if _, err := f.host.Append(ctx, c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	// Loading closes the open turn with a recovery turn/end; nothing else was appended.
	if got := strings.Join(types(f.events(t, "s1")), " "); got != "turn/start user/message turn/end" {
		t.Fatalf("the log holds %s", got)
	}
}

func TestNewHostRefusesAnIncompleteConfig(t *testing.T) {
	f := newFixture(t, nil, nil)
	for _, c := range []struct {
		cfg  durable.HostConfig
		want string
	}{
		{durable.HostConfig{Results: "x"}, "Registry is required"},
		{durable.HostConfig{Registry: f.reg}, "Results is required"},
	} {
		if _, err := durable.NewHost(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}
