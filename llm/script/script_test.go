package script

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"
	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const demo = `# a demo script
{"reasoning":"Two files.","text":"Reading.","toolCalls":[{"id":"c1","name":"read_file","arguments":{"path":"a.txt","n":1}},{"name":"read_file","arguments":"{\"path\": \"b.txt\"}"}],"usage":{"inputTokens":10,"outputTokens":4}}

// the tool results must be there before the answer
{"expectToolResults":["c1","call_1_2"],"text":"Both say hello.","finish":"stop"}
{"toolCalls":[{"name":"noop"}],"finish":"max-tokens"}
{"text":"partial","error":"scripted outage"}
`

func TestParse(t *testing.T) {
	replies, err := Parse(strings.NewReader(demo), "demo.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []Reply{
		{Reasoning: "Two files.", Text: "Reading.", ToolCalls: []ToolCall{
			{ID: "c1", Name: "read_file", Arguments: `{"path":"a.txt","n":1}`},
			{ID: "call_1_2", Name: "read_file", Arguments: `{"path": "b.txt"}`},
		}, Usage: llm.Usage{InputTokens: 10, OutputTokens: 4}, line: 2},
		{ExpectToolResults: []string{"c1", "call_1_2"}, Text: "Both say hello.", Finish: llm.FinishStop, line: 5},
		{ToolCalls: []ToolCall{{ID: "call_3_1", Name: "noop", Arguments: "{}"}}, Finish: llm.FinishMaxTokens, line: 6},
		{Text: "partial", Error: "scripted outage", line: 7},
	}
	if diff := cmp.Diff(want, replies, cmp.AllowUnexported(Reply{})); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, script string
		line         int
		msg          string
	}{
		{"not JSON", "{\"text\":\"a\"}\n{text}\n", 2, `demo.jsonl:2: invalid JSON: `},
		{"unknown member", `{"txt":"a"}`, 1, `demo.jsonl:1: unknown member "txt"`},
		{"wrong type", `{"text":5}`, 1, `demo.jsonl:1: /text must be a string, not a number`},
		{"nested unknown member", `{"toolCalls":[{"name":"a","args":{}}]}`, 1, `demo.jsonl:1: unknown member "args" in /toolCalls/0`},
		{"not an integer", `{"text":"a","usage":{"inputTokens":1.5}}`, 1, `demo.jsonl:1: /usage/inputTokens must be an integer`},
		{"bad finish", `{"text":"a","finish":"done"}`, 1, `demo.jsonl:1: finish must be "stop", "tool-calls" or "max-tokens", got "done"`},
		{"no name", "\n\n" + `{"toolCalls":[{"id":"x"}]}`, 3, `demo.jsonl:3: toolCalls[0] needs a name`},
		{"duplicate id", `{"toolCalls":[{"id":"x","name":"a"},{"id":"x","name":"b"}]}`, 1, `demo.jsonl:1: toolCalls[1]: id "x" is used twice`},
		{"empty reply", `{}`, 1, `demo.jsonl:1: a reply needs text, reasoning, toolCalls or an error`},
		{"not an object", `["text"]`, 1, `demo.jsonl:1: a reply must be a JSON object, not an array`},
		{"trailing data", `{"text":"a"} x`, 1, `demo.jsonl:1: invalid JSON: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.script), "demo.jsonl")
			var se *SyntaxError
			if !errors.As(err, &se) || se.Line != tt.line || se.Source != "demo.jsonl" {
				t.Fatalf("error = %v, want a SyntaxError on line %d", err, tt.line)
			}
			if !strings.HasPrefix(err.Error(), tt.msg) {
				t.Errorf("message = %q, want prefix %q", err.Error(), tt.msg)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.jsonl")
	if err := os.WriteFile(path, []byte(demo), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(path, Options{})
	if err != nil || m.Remaining() != 4 {
		t.Fatalf("Load = %v, %v", m, err)
	}
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, Options{}); err == nil || !strings.HasPrefix(err.Error(), path+":1: ") {
		t.Errorf("Load of a bad script = %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.jsonl"), Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file = %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	_, err := New([]Reply{{Text: "ok"}, {ToolCalls: []ToolCall{{ID: "a"}}}}, Options{})
	if err == nil || err.Error() != "the script: reply 2: toolCalls[0] needs a name" {
		t.Errorf("New = %v", err)
	}
	m, err := New([]Reply{{ToolCalls: []ToolCall{{Name: "a"}, {Name: "b"}}}}, Options{Name: "demo-model"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := llm.Generate(context.Background(), m, llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if ids := []string{resp.ToolCalls()[0].ID, resp.ToolCalls()[1].ID}; ids[0] != "call_1_1" || ids[1] != "call_1_2" {
		t.Errorf("default ids = %v", ids)
	}
	if m.Name() != "demo-model" || resp.Model != "demo-model" || m.Provider() != "script" {
		t.Errorf("names: %s %s %s", m.Name(), resp.Model, m.Provider())
	}
}

// withResults is the conversation after the first demo reply, with its tool results.
func withResults(first llm.Response, ids ...string) llm.Request {
	req := llm.Request{Messages: []content.Message{
		{Role: content.RoleUser, Content: content.Texts("go")},
		first.Message,
	}}
	for _, id := range ids {
		req.Messages = append(req.Messages, content.Message{Role: content.RoleUser,
			Content: []content.Block{content.ToolResult(id, content.Texts("hello"), false)}})
	}
	return req
}

func TestReplay(t *testing.T) {
	replies, err := Parse(strings.NewReader(demo), "demo.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(replies, Options{Source: "demo.jsonl", ChunkSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// Reply 1: streamed in chunks of at most 3 runes.
	var evs []llm.Event
	for ev, err := range m.Stream(ctx, llm.Request{Messages: []content.Message{{Role: content.RoleUser, Content: content.Texts("go")}}}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	for _, ev := range evs {
		if ev.Type == llm.EventTextDelta && len([]rune(ev.Text)) > 3 {
			t.Errorf("delta %q longer than the chunk size", ev.Text)
		}
	}
	first := *evs[len(evs)-1].Response
	want := llm.Response{
		Message: content.Message{Role: content.RoleAssistant, Content: []content.Block{
			content.Reasoning("Two files."), content.Text("Reading."),
			content.ToolCall("c1", "read_file", `{"path":"a.txt","n":1}`),
			content.ToolCall("call_1_2", "read_file", `{"path": "b.txt"}`),
		}},
		FinishReason: llm.FinishToolCalls, Usage: llm.Usage{InputTokens: 10, OutputTokens: 4}, Model: "script",
	}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("reply 1 (-want +got):\n%s", diff)
	}

	// Reply 2 expects both tool results; one is missing.
	_, err = llm.Generate(ctx, m, withResults(first, "call_1_2"))
	const mismatch = `demo.jsonl: reply 2 (line 5) expects a tool result for call "c1", but the request carries results for: call_1_2`
	if llm.CodeOf(err) != llm.CodeScriptMismatch || err.Error() != mismatch {
		t.Fatalf("error = %v\nwant %s", err, mismatch)
	}
	// The reply was consumed; build a fresh model to check the matching case.
	m, _ = New(replies, Options{Source: "demo.jsonl"})
	if _, err := llm.Generate(ctx, m, llm.Request{}); err != nil {
		t.Fatal(err)
	}
	resp, err := llm.Generate(ctx, m, withResults(first, "c1", "call_1_2"))
	if err != nil || resp.Text() != "Both say hello." || resp.FinishReason != llm.FinishStop {
		t.Fatalf("reply 2 = %+v, %v", resp, err)
	}

	// Reply 3: max-tokens with a tool call.
	resp, err = llm.Generate(ctx, m, llm.Request{})
	if err != nil || resp.FinishReason != llm.FinishMaxTokens || len(resp.ToolCalls()) != 1 {
		t.Fatalf("reply 3 = %+v, %v", resp, err)
	}

	// Reply 4 fails after streaming its text.
	resp, err = llm.Generate(ctx, m, llm.Request{})
	var e *llm.Error
	if !errors.As(err, &e) || e.Code != llm.CodeScripted || e.Message != "scripted outage" ||
		resp.Text() != "partial" || resp.FinishReason != llm.FinishError {
		t.Fatalf("reply 4 = %+v, %v", resp, err)
	}

	// Exhausted.
	_, err = llm.Generate(ctx, m, llm.Request{})
	const exhausted = "demo.jsonl has no reply left for request 5 (it holds 4 replies)"
	if llm.CodeOf(err) != llm.CodeScriptExhausted || err.Error() != exhausted {
		t.Errorf("error = %v, want %q", err, exhausted)
	}
	if m.Remaining() != 0 || len(m.Requests()) != 5 {
		t.Errorf("Remaining %d, %d requests", m.Remaining(), len(m.Requests()))
	}
}

func TestRequestsAreCopies(t *testing.T) {
	m, _ := New([]Reply{{Text: "a"}}, Options{})
	req := llm.Request{Messages: []content.Message{{Role: content.RoleUser, Content: content.Texts("original")}}}
	if _, err := llm.Generate(context.Background(), m, req); err != nil {
		t.Fatal(err)
	}
	req.Messages[0].Content[0].Text = "changed"
	got := m.Requests()
	got[0].Messages[0].Content[0].Text = "changed too"
	if m.Requests()[0].Messages[0].Content[0].Text != "original" {
		t.Error("recorded request shares storage with the caller")
	}
}

func TestCancelAndStop(t *testing.T) {
	m, _ := New([]Reply{{Text: strings.Repeat("word ", 100)}, {Text: "b"}, {Text: "c"}}, Options{ChunkSize: 5, Delay: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var deltas int
	var err error
	for ev, e := range m.Stream(ctx, llm.Request{}) {
		if e != nil {
			err = e
			break
		}
		if ev.Type == llm.EventTextDelta {
			deltas++
			if deltas == 3 {
				cancel()
			}
		}
	}
	if llm.CodeOf(err) != llm.CodeAborted || !errors.Is(err, context.Canceled) || deltas != 3 {
		t.Fatalf("after cancel: %v with %d deltas", err, deltas)
	}

	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel2()
	<-ctx2.Done()
	if _, err := llm.Generate(ctx2, m, llm.Request{}); llm.CodeOf(err) != llm.CodeTimeout {
		t.Errorf("expired deadline: %v", err)
	}

	// A consumer that stops early gets nothing more (the range loop would panic otherwise).
	for range m.Stream(context.Background(), llm.Request{}) {
		break
	}
	if m.Remaining() != 0 {
		t.Errorf("Remaining = %d", m.Remaining())
	}
}

func TestConcurrentCallsTakeDistinctReplies(t *testing.T) {
	const n = 20
	replies := make([]Reply, n)
	for i := range replies {
		replies[i] = Reply{Text: string(rune('a' + i))}
	}
	m, _ := New(replies, Options{ChunkSize: 1})
	var wg sync.WaitGroup
	got := make(chan string, n)
	for range n {
		wg.Go(func() {
			resp, err := llm.Generate(context.Background(), m, llm.Request{})
			if err != nil {
				t.Error(err)
			}
			got <- resp.Text()
		})
	}
	wg.Wait()
	close(got)
	seen := map[string]bool{}
	for s := range got {
		seen[s] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct replies, want %d", len(seen), n)
	}
}

// TestChunkingIsInvisible checks that any chunk size yields the same assembled reply.
func TestChunkingIsInvisible(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := Reply{
			Reasoning: rapid.String().Draw(t, "reasoning"),
			Text:      rapid.String().Draw(t, "text"),
		}
		for i := range rapid.IntRange(0, 3).Draw(t, "calls") {
			r.ToolCalls = append(r.ToolCalls, ToolCall{
				ID: string(rune('a' + i)), Name: "f", Arguments: rapid.String().Draw(t, "args"),
			})
		}
		if r.Reasoning == "" && r.Text == "" && len(r.ToolCalls) == 0 {
			r.Text = "x"
		}
		size := rapid.IntRange(0, 7).Draw(t, "chunk")
		m, err := New([]Reply{r}, Options{ChunkSize: size})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := llm.Generate(context.Background(), m, llm.Request{})
		if err != nil {
			t.Fatal(err)
		}
		var want []content.Block
		if r.Reasoning != "" {
			want = append(want, content.Reasoning(r.Reasoning))
		}
		if r.Text != "" {
			want = append(want, content.Text(r.Text))
		}
		for _, c := range r.ToolCalls {
			want = append(want, content.ToolCall(c.ID, c.Name, c.Arguments))
		}
		if diff := cmp.Diff(want, resp.Message.Content, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("chunk size %d (-want +got):\n%s", size, diff)
		}
	})
}

// FuzzParse checks that any script either fails with a SyntaxError or replays its replies
// faithfully.
func FuzzParse(f *testing.F) {
	f.Add(demo)
	f.Add(`{"text":"a"}`)
	f.Add(`{"toolCalls":[{"name":"x","arguments":[1,{"b":null}]}]}`)
	f.Add("# c\n// d\n\n{\"error\":\"e\"}")
	f.Add(`{"text":"\ud800"}`)
	f.Fuzz(func(t *testing.T, script string) {
		replies, err := Parse(strings.NewReader(script), "fuzz")
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Line < 1 {
				t.Fatalf("error %v is not a SyntaxError with a line", err)
			}
			return
		}
		m, err := New(replies, Options{ChunkSize: 2})
		if err != nil {
			t.Fatalf("New rejects what Parse accepted: %v", err)
		}
		for i, r := range replies {
			resp, err := llm.Generate(context.Background(), m, llm.Request{})
			if len(r.ExpectToolResults) > 0 {
				if llm.CodeOf(err) != llm.CodeScriptMismatch {
					t.Fatalf("reply %d: %v, want a mismatch", i, err)
				}
				continue
			}
			if r.Error != "" {
				if llm.CodeOf(err) != llm.CodeScripted {
					t.Fatalf("reply %d: %v, want a scripted error", i, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("reply %d: %v", i, err)
			}
			if resp.Text() != r.Text || resp.Reasoning() != r.Reasoning || len(resp.ToolCalls()) != len(r.ToolCalls) {
				t.Fatalf("reply %d replayed as %+v, want %+v", i, resp, r)
			}
		}
	})
}
