package openai

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/deepseektest"
	"github.com/dsh-go/dsh/llm"
)

// standIn returns a model talking to a DeepSeek stand-in, with retry delays recorded
// instead of slept.
func standIn(t *testing.T, ds *deepseektest.Server, cfg Config) (*Model, *[]time.Duration) {
	t.Helper()
	cfg.BaseURL = ds.URL
	if cfg.APIKey == "" {
		cfg.APIKey = ds.APIKey
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	waits := new([]time.Duration)
	m.sleep = func(done <-chan struct{}, d time.Duration) bool {
		mu.Lock()
		defer mu.Unlock()
		*waits = append(*waits, d)
		return true
	}
	return m, waits
}

func TestRetiredModelIsRefusedBeforeAnyRequest(t *testing.T) {
	for _, model := range []string{"deepseek-chat", "deepseek-reasoner"} {
		t.Run(model, func(t *testing.T) {
			ds := deepseektest.New(t, deepseektest.Options{})
			_, err := New(Config{BaseURL: ds.URL, APIKey: ds.APIKey, Model: model, Provider: ProviderDeepSeek})
			var e *llm.Error
			if !errors.As(err, &e) || e.Code != llm.CodeUnknownModel {
				t.Fatalf("New = %v, want an UNKNOWN_MODEL error", err)
			}
			for _, want := range []string{`"` + model + `"`, "retired", `"deepseek-flash"`, "--model deepseek-flash"} {
				if !strings.Contains(e.Message, want) {
					t.Errorf("message %q does not contain %q", e.Message, want)
				}
			}
			if n := len(ds.Requests()); n != 0 {
				t.Errorf("%d requests were made", n)
			}
			// The default DeepSeek endpoint is recognised without saying so.
			if _, err := New(Config{APIKey: "k", Model: model}); !errors.As(err, &e) || e.Code != llm.CodeUnknownModel {
				t.Errorf("New(api.deepseek.com, %s) = %v", model, err)
			}
		})
	}
}

// A server not known to be DeepSeek may serve any name, so the request is made; DeepSeek's
// 400 "Model Not Exist" for a retired name is answered with the replacement.
func TestRetiredModelAnswerNamesTheReplacement(t *testing.T) {
	ds := deepseektest.New(t, deepseektest.Options{})
	m, _ := standIn(t, ds, Config{Model: "deepseek-chat"})
	_, err := llm.Generate(context.Background(), m, userAsks("hi"))
	var e *llm.Error
	if !errors.As(err, &e) || e.Code != llm.CodeUnknownModel || e.Status != 400 || e.Attempts != 1 {
		t.Fatalf("error = %#v", err)
	}
	for _, want := range []string{"Model Not Exist", "retired", `use "deepseek-flash"`} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q does not contain %q", e.Message, want)
		}
	}
	if strings.Contains(e.Message, "attempts") {
		t.Errorf("message %q mentions attempts, but one request was made", e.Message)
	}
	// An unknown name that was never DeepSeek's is just unknown.
	m2, _ := standIn(t, ds, Config{Model: "deepseek-v9"})
	_, err = llm.Generate(context.Background(), m2, userAsks("hi"))
	if !errors.As(err, &e) || e.Code != llm.CodeUnknownModel || strings.Contains(e.Message, "retired") {
		t.Fatalf("error = %v", err)
	}
	if n := len(ds.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestThinkingFieldsAreSentOnlyWhereMeant(t *testing.T) {
	tests := []struct {
		name           string
		cfg            Config
		thinking       string
		effort         string
		reasoningShown bool
	}{
		{"DeepSeek default", Config{Provider: ProviderDeepSeek}, "enabled", "", true},
		{"DeepSeek disabled", Config{Provider: ProviderDeepSeek, Thinking: ThinkingDisabled}, "disabled", "", false},
		{"DeepSeek effort", Config{Provider: ProviderDeepSeek, ReasoningEffort: EffortMax}, "enabled", "max", true},
		{"other server", Config{}, "", "", true}, // the stand-in thinks by default, as DeepSeek does
		{"other server configured", Config{Thinking: ThinkingDisabled, ReasoningEffort: EffortLow}, "disabled", "low", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := deepseektest.New(t, deepseektest.Options{})
			ds.Enqueue(deepseektest.Reply{Reasoning: "pondering", Text: "hello"})
			m, _ := standIn(t, ds, tt.cfg)
			resp, err := llm.Generate(context.Background(), m, userAsks("hi"))
			if err != nil {
				t.Fatal(err)
			}
			req := ds.Requests()[0]
			if req.Thinking != tt.thinking || req.ReasoningEffort != tt.effort {
				t.Errorf("sent thinking %q, effort %q; want %q, %q (body %s)", req.Thinking, req.ReasoningEffort, tt.thinking, tt.effort, req.Body)
			}
			if tt.thinking == "" && strings.Contains(string(req.Body), "thinking") || tt.effort == "" && strings.Contains(string(req.Body), "reasoning_effort") {
				t.Errorf("body has a field it should not: %s", req.Body)
			}
			if got := resp.Reasoning() == "pondering"; got != tt.reasoningShown || resp.Text() != "hello" {
				t.Errorf("reply reasoning %q text %q", resp.Reasoning(), resp.Text())
			}
		})
	}
}

func TestNewRejectsUnknownThinkingValues(t *testing.T) {
	for _, cfg := range []Config{{Thinking: "on"}, {ReasoningEffort: "medium"}} {
		if _, err := New(Config{APIKey: "k", Thinking: cfg.Thinking, ReasoningEffort: cfg.ReasoningEffort}); err == nil {
			t.Errorf("New(%+v) accepted it", cfg)
		}
	}
}

// In thinking mode DeepSeek refuses a request whose earlier tool-calling assistant message
// lacks its reasoning_content; the adapter sends it back, and the stand-in enforces it.
func TestReasoningContentIsPassedBack(t *testing.T) {
	history := func(m *Model, ds *deepseektest.Server) (llm.Request, error) {
		req := userAsks("read a.txt")
		resp, err := llm.Generate(context.Background(), m, req)
		if err != nil {
			return req, err
		}
		call := resp.ToolCalls()[0]
		req.Messages = append(req.Messages, resp.Message, content.Message{Role: content.RoleUser,
			Content: []content.Block{content.ToolResult(call.ID, content.Texts("hello"), false)}})
		_, err = llm.Generate(context.Background(), m, req)
		return req, err
	}
	ds := deepseektest.New(t, deepseektest.Options{})
	ds.Enqueue(deepseektest.Reply{Reasoning: "I should read it.", ToolCalls: []deepseektest.ToolCall{deepseektest.Call("read", `{"file_path":"a.txt"}`)}},
		deepseektest.Text("a.txt says hello"))
	m, _ := standIn(t, ds, Config{Provider: ProviderDeepSeek})
	if _, err := history(m, ds); err != nil {
		t.Fatalf("second request: %v", err)
	}
	sent := ds.Requests()[1].Messages[1]
	if sent.Role != "assistant" || sent.ReasoningContent == nil || *sent.ReasoningContent != "I should read it." {
		t.Errorf("assistant message sent back = %+v", sent)
	}

	// The enforcement is real: without the pass-back the same exchange is refused.
	ds2 := deepseektest.New(t, deepseektest.Options{})
	ds2.Enqueue(deepseektest.Reply{Reasoning: "I should read it.", ToolCalls: []deepseektest.ToolCall{deepseektest.Call("read", `{}`)}})
	m2, _ := standIn(t, ds2, Config{Provider: ProviderDeepSeek, OmitReasoning: true})
	_, err := history(m2, ds2)
	var e *llm.Error
	if !errors.As(err, &e) || e.Status != 400 || !strings.Contains(e.Message, deepseektest.ReasoningPassBackMessage) {
		t.Fatalf("without pass-back: %v", err)
	}
}

// Only HTTP 429, 5xx and connection failures are retried, and the attempt count in the
// message is the number of requests the server saw.
func TestRetriesAreOnlyForTransientFailures(t *testing.T) {
	tests := []struct {
		name     string
		replies  []deepseektest.Reply
		code     string // "" for success
		requests int
	}{
		{"400", []deepseektest.Reply{deepseektest.Fail(400)}, llm.CodeInvalidRequest, 1},
		{"401", []deepseektest.Reply{deepseektest.Fail(401)}, llm.CodeAuth, 1},
		{"402", []deepseektest.Reply{deepseektest.Fail(402)}, llm.CodeQuotaExceeded, 1},
		{"422", []deepseektest.Reply{deepseektest.Fail(422)}, llm.CodeInvalidRequest, 1},
		{"429 then ok", []deepseektest.Reply{deepseektest.Fail(429), deepseektest.Fail(429), deepseektest.Text("ok")}, "", 3},
		{"503 then ok", []deepseektest.Reply{deepseektest.Fail(503), deepseektest.Text("ok")}, "", 2},
		{"503 always", []deepseektest.Reply{deepseektest.Fail(503), deepseektest.Fail(503), deepseektest.Fail(503)}, llm.CodeServer, 3},
		{"500 then 400", []deepseektest.Reply{deepseektest.Fail(500), deepseektest.Fail(400)}, llm.CodeInvalidRequest, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := deepseektest.New(t, deepseektest.Options{})
			ds.Enqueue(tt.replies...)
			m, waits := standIn(t, ds, Config{Provider: ProviderDeepSeek, MaxRetries: 2})
			resp, err := llm.Generate(context.Background(), m, userAsks("hi"))
			n := len(ds.Requests())
			if n != tt.requests || len(*waits) != n-1 {
				t.Errorf("%d requests, %d waits; want %d requests", n, len(*waits), tt.requests)
			}
			if tt.code == "" {
				if err != nil || resp.Text() != "ok" {
					t.Fatalf("Generate = %v", err)
				}
				return
			}
			var e *llm.Error
			if !errors.As(err, &e) || e.Code != tt.code || e.Attempts != n {
				t.Fatalf("error = %#v, want code %s after %d attempts", err, tt.code, n)
			}
			if mentions := strings.Contains(e.Message, "attempts"); mentions != (n > 1) {
				t.Errorf("message %q: mentions attempts = %v with %d requests", e.Message, mentions, n)
			}
			if n > 1 && !strings.HasSuffix(e.Message, " (gave up after "+itoa(n)+" attempts)") {
				t.Errorf("message %q does not count %d attempts", e.Message, n)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestStreamedUsageCountsCacheAndReasoning(t *testing.T) {
	ds := deepseektest.New(t, deepseektest.Options{})
	ds.Enqueue(deepseektest.Reply{Text: "hi", Usage: &deepseektest.Usage{CacheHit: 640, CacheMiss: 100, Completion: 50, Reasoning: 30}})
	m, _ := standIn(t, ds, Config{Provider: ProviderDeepSeek, Model: "deepseek-v4-pro"})
	resp, err := llm.Generate(context.Background(), m, userAsks("hi"))
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Usage{InputTokens: 100, CacheReadTokens: 640, OutputTokens: 50, ReasoningTokens: 30}
	if resp.Usage != want || resp.Model != "deepseek-v4-pro" {
		t.Errorf("usage %+v model %q, want %+v", resp.Usage, resp.Model, want)
	}
}

// Any OpenAI-compatible server keeps working: no DeepSeek fields, no key needed.
func TestOtherServersGetAPlainRequest(t *testing.T) {
	srv := newFakeServer(t, simpleReply("ok"))
	m, _ := srv.model(t, Config{Model: "qwen3"})
	resp, err := llm.Generate(context.Background(), m, userAsks("hi"))
	if err != nil || resp.Text() != "ok" {
		t.Fatalf("Generate = %v", err)
	}
	body := string(srv.requests()[0].body)
	if strings.Contains(body, "thinking") || strings.Contains(body, "reasoning_effort") || !strings.Contains(body, `"model":"qwen3"`) {
		t.Errorf("body = %s", body)
	}
	if h := srv.requests()[0].header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q without a key", h)
	}
}
