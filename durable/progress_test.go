package durable_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
)

var messageID = regexp.MustCompile(`"id":"[0-9a-f-]{36}"`)

// TestProgressReportsTheTurnAsLogged queries QueryProgress when a turn has ended: it holds
// the turn's events at the seqs the log holds them, each describing the logged event byte
// for byte (a result passed by reference by a note instead), and a later seq returns only
// what follows it.
func TestProgressReportsTheTurnAsLogged(t *testing.T) {
	f := newFixture(t, []script.Reply{
		{Text: "looking", ToolCalls: []script.ToolCall{
			{ID: "a", Name: "echo", Arguments: `{"text":"one"}`},
			{ID: "b", Name: "big", Arguments: `{"text":"0123456789"}`},
			{ID: "c", Name: "nope", Arguments: `{}`},
		}},
		{Text: "done"},
	}, func(c *durable.HostConfig) { c.SpillThreshold = 1024 })
	e := env(t, f)
	var all, tail durable.Progress
	var qerr []error
	query := func(from int64, into *durable.Progress) {
		v, err := e.QueryWorkflow(durable.QueryProgress, from)
		if err == nil {
			err = v.Get(into)
		}
		if err != nil {
			qerr = append(qerr, err)
		}
	}
	tc := sendTurn(e, "go", time.Second, func() {
		query(0, &all)
		query(6, &tail)
		e.CancelWorkflow()
	})
	e.ExecuteWorkflow(durable.WorkflowName, input())
	if !tc.done || tc.err != nil || len(qerr) != 0 {
		t.Fatalf("turn %+v, queries %v", tc, qerr)
	}
	logged := f.events(t, sessionID)
	if all.Turn != 1 || all.UpdateID != "turn-go" || len(all.Pending) != 0 {
		t.Fatalf("progress turn %d update %q pending %v", all.Turn, all.UpdateID, all.Pending)
	}
	if len(all.Events) != len(logged) {
		t.Fatalf("progress holds %d events, the log %d: %v", len(all.Events), len(logged), types(logged))
	}
	for i, l := range all.Events {
		want := logged[i]
		if l.Seq != want.Seq || l.Event.Kind != want.Type {
			t.Fatalf("progress event %d is %s at seq %d, the log holds %s at %d", i, l.Event.Kind, l.Seq, want.Type, want.Seq)
		}
		ev, err := l.Event.Event()
		if err != nil {
			t.Fatal(err)
		}
		if want.Type == session.TypeAssistantMessage {
			// The model activity appends the reply as the model sent it; the progress
			// carries its text and calls.
			got, err1 := session.DecodeAssistantMessage(ev)
			have, err2 := session.DecodeAssistantMessage(want)
			if err1 != nil || err2 != nil || len(got.Message.Content) != len(have.Message.Content) {
				t.Fatalf("assistant message %+v, want the content of %+v (%v %v)", got, have, err1, err2)
			}
			continue
		}
		ev.Seq, ev.Time = want.Seq, want.Time
		gb, err := session.EncodeEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		wb, err := session.EncodeEvent(want)
		if err != nil {
			t.Fatal(err)
		}
		if l.Event.CallID == "b" && want.Type == session.TypeToolResult {
			if !strings.Contains(string(gb), "the session log holds it in full") || len(wb) < 40960 {
				t.Fatalf("the spilled result is described as %s", gb)
			}
			continue
		}
		// Message ids are drawn when an event is encoded.
		if g, w := messageID.ReplaceAllString(string(gb), ""), messageID.ReplaceAllString(string(wb), ""); g != w {
			t.Errorf("seq %d:\n progress %s\n log      %s", want.Seq, gb, wb)
		}
	}
	if len(tail.Events) != len(logged)-6 || tail.Events[0].Seq != 6 {
		t.Fatalf("progress from seq 6 holds %d events from %v", len(tail.Events), tail.Events)
	}
}

// TestProgressAnswersInPieces: a turn whose events are larger than one answer should carry
// (here 30 results of 40 KiB) is reported in pieces: each answer says there is more, and
// asking again from the seq after its last event continues without a gap.
func TestProgressAnswersInPieces(t *testing.T) {
	var calls []script.ToolCall
	for i := range 30 {
		calls = append(calls, script.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "big", Arguments: `{"text":"0123456789"}`})
	}
	f := newFixture(t, []script.Reply{{ToolCalls: calls}, {Text: "done"}}, nil)
	e := env(t, f)
	tc := sendTurn(e, "go", time.Second, e.CancelWorkflow)
	e.ExecuteWorkflow(durable.WorkflowName, input())
	if !tc.done || tc.err != nil {
		t.Fatalf("turn %+v", tc)
	}
	// The ended workflow answers queries from its last state.
	var pieces []durable.Progress
	from := int64(0)
	for len(pieces) < 100 {
		var p durable.Progress
		v, err := e.QueryWorkflow(durable.QueryProgress, from)
		if err == nil {
			err = v.Get(&p)
		}
		if err != nil {
			t.Fatal(err)
		}
		pieces = append(pieces, p)
		if !p.More {
			break
		}
		from = p.Events[len(p.Events)-1].Seq + 1
	}
	if len(pieces) < 2 {
		t.Fatalf("%d answers, want the turn in pieces", len(pieces))
	}
	var seqs []int64
	for _, p := range pieces {
		for _, l := range p.Events {
			seqs = append(seqs, l.Seq)
		}
	}
	logged := f.events(t, sessionID)
	if len(seqs) != len(logged) {
		t.Fatalf("the answers hold %d events, the log %d", len(seqs), len(logged))
	}
	for i, s := range seqs {
		if s != int64(i) {
			t.Fatalf("event %d of the answers is seq %d", i, s)
		}
	}
}
