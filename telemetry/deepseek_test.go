package telemetry_test

import (
	"net/http"
	"testing"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/internal/deepseektest"
	"github.com/dsh-go/dsh/llm/openai"
	"github.com/dsh-go/dsh/tool"
)

// TestTurnSpansDeepSeek runs turns against the local DeepSeek stand-in through the real
// OpenAI-compatible adapter: the chat spans carry provider deepseek, the response model
// and the usage the server reported (cache hits counted in the input tokens), and a
// rejected request its error code.
func TestTurnSpansDeepSeek(t *testing.T) {
	cases := []struct {
		name    string
		replies []deepseektest.Reply
	}{
		{name: "turn_deepseek", replies: []deepseektest.Reply{
			{ToolCalls: []deepseektest.ToolCall{{ID: "call_a", Name: "greet", Arguments: `{"name":"Ada"}`}}, Usage: &deepseektest.Usage{CacheHit: 64, CacheMiss: 36, Completion: 12}},
			{Text: "Greeted Ada.", Usage: &deepseektest.Usage{CacheHit: 128, CacheMiss: 20, Completion: 4}},
		}},
		{name: "turn_deepseek_auth", replies: []deepseektest.Reply{deepseektest.Fail(http.StatusUnauthorized)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds := deepseektest.New(t, deepseektest.Options{})
			ds.Enqueue(tc.replies...)
			m, err := openai.New(openai.Config{BaseURL: ds.URL, APIKey: ds.APIKey, Model: deepseektest.ModelFlash, Provider: openai.ProviderDeepSeek})
			if err != nil {
				t.Fatal(err)
			}
			r := newRecorder(t, false)
			reg, err := tool.NewRegistry(tool.Config{})
			if err != nil {
				t.Fatal(err)
			}
			reg.ObserveCalls(r.tr.CallObserver())
			reg.Register(greetTool(t))
			a, err := agent.New(agent.Config{Registry: reg, Model: r.tr.Model(m), Tracer: r.tr.TurnTracer("ses_ds")})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			_, _ = a.Run(t.Context(), "greet Ada")
			golden(t, tc.name, tree(r.rec.Ended()))
		})
	}
}
