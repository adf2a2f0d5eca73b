package telemetry_test

import (
	"context"

	"testing"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/openai"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/telemetry"
	"github.com/dsh-go/dsh/tool"
)

// scriptModel is a scripted model replaying replies.
func scriptModel(t *testing.T, replies []script.Reply) llm.Model {
	t.Helper()
	m, err := script.New(replies, script.Options{Name: "deepseek-flash"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTurnSpans pins one turn: an invoke_agent span with the summed usage, a chat span per
// model request and the tool calls of the first reply between them, all in one trace.
func TestTurnSpans(t *testing.T) {
	cases := []struct {
		name    string
		replies []script.Reply
		reason  string
	}{
		{name: "turn", reason: session.EndCompleted, replies: []script.Reply{
			{Reasoning: "greet both", ToolCalls: []script.ToolCall{
				{ID: "call_a", Name: "greet", Arguments: `{"name":"Ada"}`},
				{ID: "call_b", Name: "greet", Arguments: `{"name":""}`},
			}, Usage: llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 50}},
			{Text: "Greeted Ada.", Usage: llm.Usage{InputTokens: 30, OutputTokens: 5, CacheReadTokens: 150}},
		}},
		{name: "turn_model_error", reason: session.EndError, replies: []script.Reply{
			{Text: "partial", Error: "the model broke down"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(t, false)
			reg, err := tool.NewRegistry(tool.Config{})
			if err != nil {
				t.Fatal(err)
			}
			reg.ObserveCalls(r.tr.CallObserver())
			reg.Register(greetTool(t))
			a, err := agent.New(agent.Config{
				Registry: reg,
				Model:    r.tr.Model(scriptModel(t, tc.replies)),
				Tracer:   r.tr.TurnTracer("ses_1"),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			res, _ := a.Run(t.Context(), "greet Ada")
			if res.Reason.Kind != tc.reason {
				t.Fatalf("turn ended %q, want %q", res.Reason.Kind, tc.reason)
			}
			spans := r.rec.Ended()
			golden(t, tc.name, tree(spans))
			for _, s := range spans {
				if s.SpanContext().TraceID() != spans[0].SpanContext().TraceID() {
					t.Errorf("span %s is in trace %s, not the turn's %s", s.Name(), s.SpanContext().TraceID(), spans[0].SpanContext().TraceID())
				}
			}
		})
	}
}

// TestProviderName: gen_ai.provider.name is "deepseek" for DeepSeek's API, "openai" for
// OpenAI's, and the configured label for any other server.
func TestProviderName(t *testing.T) {
	r := newRecorder(t, false)
	cases := []struct {
		cfg  openai.Config
		want string
	}{
		{openai.Config{APIKey: "k"}, "deepseek"},
		{openai.Config{APIKey: "k", BaseURL: "https://api.openai.com/v1", Model: "gpt-5"}, "openai"},
		{openai.Config{APIKey: "k", BaseURL: "http://127.0.0.1:8000/v1", Model: "local"}, "openai-compatible"},
	}
	for _, tc := range cases {
		m, err := openai.New(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.tr.Model(m).Provider(); got != tc.want {
			t.Errorf("%s: provider %q, want %q", tc.cfg.BaseURL, got, tc.want)
		}
	}
}

// TestChatSpanAborted: a request the caller cancels, or stops reading, ends its chat span
// with error.type ABORTED; a reply cut by the token limit reports finish reason length.
func TestChatSpanAborted(t *testing.T) {
	cases := []struct {
		name  string
		run   func(t *testing.T, m llm.Model)
		typ   string
		reson string
	}{
		{name: "stopped reading", typ: llm.CodeAborted, run: func(t *testing.T, m llm.Model) {
			for range m.Stream(t.Context(), llm.Request{}) {
				break
			}
		}},
		{name: "cancelled", typ: llm.CodeAborted, run: func(t *testing.T, m llm.Model) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if _, err := llm.Collect(m.Stream(ctx, llm.Request{})); err == nil {
				t.Fatal("a cancelled request succeeded")
			}
		}},
		{name: "max tokens", reson: `["length"]`, run: func(t *testing.T, m llm.Model) {
			if _, err := llm.Collect(m.Stream(t.Context(), llm.Request{MaxTokens: 5})); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(t, false)
			tc.run(t, r.tr.Model(scriptModel(t, []script.Reply{{Text: "a long answer", Finish: llm.FinishMaxTokens}})))
			spans := r.rec.Ended()
			if len(spans) != 1 {
				t.Fatalf("want one chat span, got:\n%s", tree(spans))
			}
			attrs := map[string]string{}
			for _, a := range spans[0].Attributes() {
				attrs[string(a.Key)] = a.Value.Emit()
			}
			if attrs[telemetry.AttrErrorType] != tc.typ || attrs[telemetry.AttrFinishReasons] != tc.reson {
				t.Errorf("attributes %v, want error.type %q and finish reasons %q", attrs, tc.typ, tc.reson)
			}
		})
	}
}
