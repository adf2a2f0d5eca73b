package agent

import (
	"context"
	"iter"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/session"
)

// blockModel is an llm.Model replying with fixed blocks, streamed through llm.Assembler as
// an adapter would: it lets a fuzz target put arbitrary model output into the loop.
type blockModel struct {
	mu      sync.Mutex
	replies [][]content.Block
}

func (m *blockModel) Name() string     { return "blocks" }
func (m *blockModel) Provider() string { return "test" }

func (m *blockModel) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	m.mu.Lock()
	var blocks []content.Block
	if len(m.replies) > 0 {
		blocks, m.replies = m.replies[0], m.replies[1:]
	}
	m.mu.Unlock()
	return func(yield func(llm.Event, error) bool) {
		if blocks == nil {
			yield(llm.Event{}, &llm.Error{Code: llm.CodeScriptExhausted, Message: "no reply left"})
			return
		}
		asm := llm.NewAssembler(func(e llm.Event) bool { return yield(e, nil) })
		for i, b := range blocks {
			var ok bool
			switch b.Type {
			case content.TypeText:
				ok = asm.Text(b.Text)
			case content.TypeToolCall:
				ok = asm.ToolCall(i, b.ID, b.Name, b.Arguments)
			}
			if !ok {
				return
			}
		}
		asm.Finish(llm.FinishToolCalls, llm.Usage{}, "blocks")
	}
}

// FuzzModelToolCalls puts arbitrary tool-call output of a model — ids, names, argument
// text — through a whole turn. The turn must end (never panic or hang), and when it ends
// normally every tool/call has exactly one tool/result and the log derives a history.
func FuzzModelToolCalls(f *testing.F) {
	f.Add("c1", "echo", `{"text":"hi"}`)
	f.Add("c1", "echo", `{"text": oops`)
	f.Add("", "", "")
	f.Add("c1", "nope", `[1,2]`)
	f.Add("c\u00e9", "note", `{"text":"end"}`)
	f.Add("c1", "excl", `{"text":"\ud800"}`)
	f.Add("c1", "echo", `{"text":"a","text":"b"}`)
	f.Add("c1", "run_code", `{"code":"1"}`)
	f.Add("c1", "echo", "\xff")
	f.Fuzz(func(t *testing.T, id, name, args string) {
		fx := newFixture(t)
		m := &blockModel{replies: [][]content.Block{
			{content.ToolCall(id, name, args), content.ToolCall(id+"-2", "echo", args)},
			{content.Text("done")},
		}}
		a, err := New(Config{Registry: fx.reg, Model: m, Now: fixedNow, MaxSteps: 3})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		res, err := a.Run(context.Background(), "go")
		events := a.Log().Events()
		if len(events) == 0 || events[len(events)-1].Type != session.TypeTurnEnd {
			t.Fatalf("the turn did not end: %v", types(events))
		}
		if err != nil {
			if res.Reason.Kind != session.EndError {
				t.Fatalf("err %v with reason %+v", err, res.Reason)
			}
			return
		}
		checkPairs(t, events)
		if _, err := session.DeriveMessages(events); err != nil {
			t.Fatal(err)
		}
	})
}
