package agent

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// fixedNow is the clock of every test agent.
func fixedNow() time.Time { return time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC) }

type textArgs struct {
	Text string `json:"text" jsonschema:"the text"`
}

// fixture is a registry with the tools the loop tests use:
//
//	echo   parallel   returns "echo: <text>"
//	excl   exclusive  returns "excl: <text>"
//	note   parallel   defers the context "note: <text>"; text "end" also concludes the turn
//	end    exclusive  concludes the turn
//	block  parallel   waits until released through gate or until cancelled
//	slow   exclusive  declares a 20 ms budget and waits for its context
type fixture struct {
	reg  *tool.Registry
	gate *gate
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{reg: reg, gate: newGate()}
	echo := func(prefix string) tool.Func[textArgs, string] {
		return func(ctx context.Context, call *tool.Call, in textArgs) (string, error) {
			return prefix + in.Text, nil
		}
	}
	defs := []*tool.Definition{
		tool.Must(tool.New("echo", "Echo the text.", echo("echo: "), tool.ConcurrencySafe())),
		tool.Must(tool.New("excl", "Echo the text, alone.", echo("excl: "))),
		tool.Must(tool.New("note", "Leave a note for the next step.",
			func(ctx context.Context, call *tool.Call, in textArgs) (string, error) {
				call.DeferContext(content.Message{Content: content.Texts("note: " + in.Text)})
				if in.Text == "end" {
					call.ConcludeTurn()
				}
				return "noted", nil
			}, tool.ConcurrencySafe())),
		tool.Must(tool.New("end", "End the turn.",
			func(ctx context.Context, call *tool.Call, in textArgs) (string, error) {
				call.ConcludeTurn()
				return "ending", nil
			})),
		tool.Must(tool.New("block", "Wait for the test.",
			func(ctx context.Context, call *tool.Call, in textArgs) (string, error) {
				f.gate.started <- in.Text
				select {
				case <-f.gate.ch(in.Text):
					if strings.HasPrefix(in.Text, "defer") {
						call.DeferContext(content.Message{Content: content.Texts("late note: " + in.Text)})
					}
					return "released " + in.Text, nil
				case <-ctx.Done():
					if strings.HasPrefix(in.Text, "defer") {
						call.DeferContext(content.Message{Content: content.Texts("late note: " + in.Text)})
					}
					return "", ctx.Err()
				}
			}, tool.ConcurrencySafe())),
		tool.Must(tool.New("slow", "Take too long.",
			func(ctx context.Context, call *tool.Call, in textArgs) (string, error) {
				<-ctx.Done()
				return "", context.Cause(ctx)
			}, tool.WithTimeout(20*time.Millisecond))),
	}
	for _, d := range defs {
		if _, err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// agent returns an agent over the fixture's registry with a scripted model.
func (f *fixture) agent(t testing.TB, replies []script.Reply, cfg Config) (*Agent, *script.Model) {
	t.Helper()
	m, err := script.New(replies, script.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Registry = f.reg
	cfg.Model = m
	if cfg.Now == nil {
		cfg.Now = fixedNow
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, m
}

// calls builds scripted tool calls from "name:id:text" specs.
func scriptCalls(specs ...string) []script.ToolCall {
	var out []script.ToolCall
	for _, s := range specs {
		parts := strings.SplitN(s, ":", 3)
		args, _ := jsonv.Marshal(jsonv.NewObject(jsonv.Member{Name: "text", Value: parts[2]}))
		out = append(out, script.ToolCall{ID: parts[1], Name: parts[0], Arguments: string(args)})
	}
	return out
}

// types returns the event types of a log.
func types(events []session.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

// describe renders each event of a log as a short string: the type, then the call id of
// tool events and the text of messages.
func describe(t testing.TB, events []session.Event) []string {
	t.Helper()
	var out []string
	for _, e := range events {
		s := e.Type
		switch e.Type {
		case session.TypeToolCall:
			p, err := session.DecodeToolCall(e)
			if err != nil {
				t.Fatal(err)
			}
			s += " " + p.CallID
		case session.TypeToolResult:
			p, err := session.DecodeToolResult(e)
			if err != nil {
				t.Fatal(err)
			}
			s += " " + p.CallID
			if p.Error != nil {
				s += " " + p.Error.Code
			} else if p.IsError {
				s += " error"
			}
		case session.TypeUserMessage:
			p, err := session.DecodeUserMessage(e)
			if err != nil {
				t.Fatal(err)
			}
			s += " " + p.Message.Source.Kind + ":" + blockText(p.Message.Content)
		case session.TypeTurnEnd:
			p, err := session.DecodeTurnEnd(e)
			if err != nil {
				t.Fatal(err)
			}
			s += " " + p.Reason.Kind
		}
		out = append(out, s)
	}
	return out
}

func blockText(blocks []content.Block) string {
	var s string
	for _, b := range blocks {
		s += b.Text
	}
	return s
}

// toolResults returns the decoded tool/result events by call id.
func toolResults(t testing.TB, events []session.Event) map[string]session.ToolResult {
	t.Helper()
	out := map[string]session.ToolResult{}
	for _, e := range events {
		if e.Type == session.TypeToolResult {
			p, err := session.DecodeToolResult(e)
			if err != nil {
				t.Fatal(err)
			}
			out[p.CallID] = p
		}
	}
	return out
}

// requestResults returns the tool-result blocks of a model request by call id.
func requestResults(req llm.Request) map[string]content.Block {
	out := map[string]content.Block{}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if b.Type == content.TypeToolResult {
				out[b.ToolCallID] = b
			}
		}
	}
	return out
}

// gate lets a test release tool bodies one by one.
type gate struct {
	mu      sync.Mutex
	waiting map[string]chan struct{}
	started chan string
}

func newGate() *gate {
	return &gate{waiting: map[string]chan struct{}{}, started: make(chan string, 1000)}
}

func (g *gate) ch(id string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.waiting[id]
	if !ok {
		c = make(chan struct{})
		g.waiting[id] = c
	}
	return c
}

func (g *gate) release(id string) { close(g.ch(id)) }

// checkPairs checks the log invariant of the loop: every tool/call has exactly one
// tool/result, which cites it and comes after it, and every result answers a call (except
// the TOOL_NOT_STARTED closers of crash recovery, which answer calls never recorded).
func checkPairs(t fataler, events []session.Event) {
	t.Helper()
	calls := map[int64]string{}
	answered := map[int64]bool{}
	for _, e := range events {
		switch e.Type {
		case session.TypeToolCall:
			p, err := session.DecodeToolCall(e)
			if err != nil {
				t.Fatal(err)
			}
			calls[e.Seq] = p.CallID
		case session.TypeToolResult:
			p, err := session.DecodeToolResult(e)
			if err != nil {
				t.Fatal(err)
			}
			if p.SourceEventSeqs == nil && p.Error != nil && p.Error.Code == session.CodeToolNotStarted {
				continue // crash recovery's closer of a call that was never recorded
			}
			if len(p.SourceEventSeqs) != 1 {
				t.Fatalf("tool/result %d cites %v", e.Seq, p.SourceEventSeqs)
			}
			src := p.SourceEventSeqs[0]
			id, ok := calls[src]
			if !ok || id != p.CallID {
				t.Fatalf("tool/result %d (call %q) cites seq %d, which is not its tool/call", e.Seq, p.CallID, src)
			}
			if answered[src] {
				t.Fatalf("tool/call %d has two results", src)
			}
			answered[src] = true
		}
	}
	for seq, id := range calls {
		if !answered[seq] {
			t.Fatalf("tool/call %d (call %q) has no result", seq, id)
		}
	}
}

// fataler is the part of testing.TB and *rapid.T the checks use.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func equalStrings(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got  %q\n want %q", what, got, want)
	}
}
