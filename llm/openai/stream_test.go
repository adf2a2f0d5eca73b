package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// userAsks is a one-message conversation.
func userAsks(text string) llm.Request {
	return llm.Request{Messages: []content.Message{{Role: content.RoleUser, Content: content.Texts(text)}}}
}

func TestStreamParallelToolCallsSplitAcrossDeltas(t *testing.T) {
	argsA := `{"path":"docs/a.txt","limit":20}`
	argsB := `{"pattern":"func main","glob":"**/*.go"}`
	payloads := []string{
		chunk(`{"role":"assistant","content":""}`, ""),
		chunk(dText("Reading both."), ""),
		chunk(dTool(0, "call_A", "read_file", ""), ""),
		chunk(dTool(1, "call_B", "grep", ""), ""),
	}
	// Interleave the two argument texts one or two bytes at a time, ids and names only in the
	// first delta of each call.
	for i := 0; i < max(len(argsA), len(argsB)); i += 2 {
		if i < len(argsA) {
			payloads = append(payloads, chunk(dTool(0, "", "", argsA[i:min(i+2, len(argsA))]), ""))
		}
		if i < len(argsB) {
			payloads = append(payloads, chunk(dTool(1, "", "", argsB[i:min(i+1, len(argsB))]), ""))
			if i+1 < len(argsB) {
				payloads = append(payloads, chunk(dTool(1, "", "", argsB[i+1:i+2]), ""))
			}
		}
	}
	payloads = append(payloads, chunk(`{}`, "tool_calls"), usageChunk(1200, 80, 1000))
	srv := newFakeServer(t, okStep(payloads...))
	m, _ := srv.model(t, Config{APIKey: "sk-test", Model: "deepseek-chat"})

	evs, err := collectEvents(context.Background(), m, userAsks("look"))
	if err != nil {
		t.Fatal(err)
	}
	final := evs[len(evs)-1]
	if final.Type != llm.EventFinish {
		t.Fatalf("last event %v, want finish", final.Type)
	}
	want := llm.Response{
		Message: content.Message{Role: content.RoleAssistant, Content: []content.Block{
			content.Text("Reading both."),
			content.ToolCall("call_A", "read_file", argsA),
			content.ToolCall("call_B", "grep", argsB),
		}},
		FinishReason: llm.FinishToolCalls,
		Usage:        llm.Usage{InputTokens: 200, OutputTokens: 80, CacheReadTokens: 1000},
		Model:        "deepseek-chat",
	}
	if diff := cmp.Diff(want, *final.Response); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	// The deltas are streamed as they arrive: one event per argument fragment.
	deltas := map[int]int{}
	for _, ev := range evs {
		if ev.Type == llm.EventToolCallDelta {
			deltas[ev.Index]++
			if ev.Block.ID == "" || ev.Block.Name == "" {
				t.Errorf("tool-call delta without the call's identity: %+v", ev)
			}
		}
	}
	if deltas[1] < len(argsA)/2 || deltas[2] != len(argsB) {
		t.Errorf("tool-call deltas per block = %v, want every fragment streamed", deltas)
	}
	reqs := srv.requests()
	if reqs[0].path != "/v1/chat/completions" {
		t.Errorf("path = %q", reqs[0].path)
	}
	h := reqs[0].header
	if h.Get("Authorization") != "Bearer sk-test" || h.Get("Accept") != "text/event-stream" ||
		h.Get("Content-Type") != "application/json" || h.Get("User-Agent") != DefaultUserAgent {
		t.Errorf("headers = %v", h)
	}
}

func TestStreamCollectMatchesEvents(t *testing.T) {
	srv := newFakeServer(t, okStep(
		chunk(dReason("Hmm. "), ""), chunk(dReason("Yes."), ""),
		chunk(dText("4"), ""), chunk(`{}`, "stop"), usageChunk(10, 5, 0)))
	m, _ := srv.model(t, Config{Model: "deepseek-reasoner"})
	resp, err := llm.Generate(context.Background(), m, userAsks("2+2?"))
	if err != nil {
		t.Fatal(err)
	}
	want := []content.Block{content.Reasoning("Hmm. Yes."), content.Text("4")}
	if diff := cmp.Diff(want, resp.Message.Content); diff != "" {
		t.Errorf("content (-want +got):\n%s", diff)
	}
	if resp.FinishReason != llm.FinishStop || resp.Usage != (llm.Usage{InputTokens: 10, OutputTokens: 5}) {
		t.Errorf("response = %+v", resp)
	}
	if srv.requests()[0].header.Get("Authorization") != "" {
		t.Error("an Authorization header was sent without a key")
	}
}

// TestReasoningIsSentBack checks DeepSeek's thinking-mode rule: the reasoning_content of the
// assistant turns that called tools goes back with the tool results.
func TestReasoningIsSentBack(t *testing.T) {
	srv := newFakeServer(t,
		okStep(chunk(dReason("I need the file."), ""), chunk(dTool(0, "call_1", "read_file", `{"path":"a"}`), ""),
			chunk(`{}`, "tool_calls")),
		okStep(chunk(dReason("It says hi."), ""), chunk(dText("The file says hi."), ""), chunk(`{}`, "stop")),
	)
	m, _ := srv.model(t, Config{Model: "deepseek-reasoner"})
	req := userAsks("What does a say?")
	first, err := llm.Generate(context.Background(), m, req)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, first.Message, content.Message{Role: content.RoleUser,
		Content: []content.Block{content.ToolResult("call_1", content.Texts("hi"), false)}})
	second, err := llm.Generate(context.Background(), m, req)
	if err != nil {
		t.Fatal(err)
	}
	if second.Reasoning() != "It says hi." || second.Text() != "The file says hi." {
		t.Errorf("second reply = %+v", second)
	}
	var body struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(srv.requests()[1].body, &body); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"role": "user", "content": "What does a say?"},
		{"role": "assistant", "content": "", "reasoning_content": "I need the file.", "tool_calls": []any{
			map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "read_file", "arguments": `{"path":"a"}`}},
		}},
		{"role": "tool", "tool_call_id": "call_1", "content": "hi"},
	}
	if diff := cmp.Diff(want, body.Messages); diff != "" {
		t.Errorf("second request messages (-want +got):\n%s", diff)
	}
}

func TestRetryAfter429ThenSuccess(t *testing.T) {
	srv := newFakeServer(t,
		errStep(429, `{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}`, map[string]string{"Retry-After": "2"}),
		errStep(503, `{"error":{"message":"Server overloaded"}}`, nil),
		simpleReply("done"),
	)
	m, waits := srv.model(t, Config{RetryBaseDelay: 100 * time.Millisecond})
	resp, err := llm.Generate(context.Background(), m, userAsks("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "done" {
		t.Errorf("text = %q", resp.Text())
	}
	if n := len(srv.requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	if len(*waits) != 2 || (*waits)[0] != 2*time.Second {
		t.Fatalf("waits = %v, want Retry-After's 2s, then a backoff", *waits)
	}
	if d := (*waits)[1]; d < 100*time.Millisecond || d > 200*time.Millisecond {
		t.Errorf("second backoff = %v, want within [100ms, 200ms] (base doubled, equal jitter)", d)
	}
	for i, r := range srv.requests() {
		if string(r.body) != string(srv.requests()[0].body) {
			t.Errorf("retry %d sent a different body", i)
		}
	}
}

func TestRetriesGiveUp(t *testing.T) {
	steps := make([]step, 3)
	for i := range steps {
		steps[i] = errStep(502, `<html>Bad Gateway</html>`, map[string]string{"Content-Type": "text/html"})
	}
	srv := newFakeServer(t, steps...)
	m, waits := srv.model(t, Config{MaxRetries: 2, RetryBaseDelay: time.Second, RetryMaxDelay: 3 * time.Second})
	_, err := llm.Generate(context.Background(), m, userAsks("hi"))
	var e *llm.Error
	if !errors.As(err, &e) || e.Code != llm.CodeServer || e.Attempts != 3 || e.Status != 502 {
		t.Fatalf("error = %#v, want a SERVER error after 3 attempts", err)
	}
	want := srv.srv.URL + "/v1 failed with HTTP 502: <html>Bad Gateway</html> (gave up after 3 attempts)"
	if e.Message != want {
		t.Errorf("message = %q\nwant      %q", e.Message, want)
	}
	if len(*waits) != 2 || (*waits)[0] < 500*time.Millisecond || (*waits)[0] > time.Second ||
		(*waits)[1] < time.Second || (*waits)[1] > 2*time.Second {
		t.Errorf("waits = %v, want ~1s then ~2s with jitter", *waits)
	}
}

func TestRetryAfterBeyondTheCapIsNotRetried(t *testing.T) {
	srv := newFakeServer(t, errStep(429, `{"error":{"message":"slow down"}}`, map[string]string{"Retry-After": "3600"}))
	m, waits := srv.model(t, Config{})
	_, err := llm.Generate(context.Background(), m, userAsks("hi"))
	var e *llm.Error
	if !errors.As(err, &e) || e.Code != llm.CodeRateLimit || e.RetryAfter != time.Hour {
		t.Fatalf("error = %#v", err)
	}
	if !strings.HasSuffix(e.Message, "(the server asks to wait 1h0m0s before retrying)") || len(*waits) != 0 {
		t.Errorf("message %q, waits %v", e.Message, *waits)
	}
}

func TestDroppedStream(t *testing.T) {
	partial := sse(chunk(dText("Half a"), ""), chunk(dTool(0, "c1", "read_file", `{"pa`), ""))
	tests := []struct {
		name    string
		step    step
		message string
	}{
		{"connection cut mid-body", step{pieces: partial, drop: true},
			"the server closed the stream before the reply finished (unexpected EOF after 2 chunks)"},
		{"body ends without [DONE]", step{pieces: partial},
			"the server closed the stream before the reply finished (no [DONE] and no finish_reason after 2 chunks)"},
		{"body ends inside an event", step{pieces: append(partial, `data: {"choices":[]}`+"\n")},
			"the server closed the stream before the reply finished (it ended in the middle of an event after 2 chunks)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, tt.step)
			m, _ := srv.model(t, Config{})
			resp, err := llm.Generate(context.Background(), m, userAsks("hi"))
			var e *llm.Error
			if !errors.As(err, &e) || e.Code != llm.CodeStreamClosed {
				t.Fatalf("error = %v, want STREAM_CLOSED", err)
			}
			if e.Message != tt.message {
				t.Errorf("message = %q\nwant      %q", e.Message, tt.message)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d requests: a stream that delivered content must not be retried", n)
			}
			want := []content.Block{content.Text("Half a"), content.ToolCall("c1", "read_file", `{"pa`)}
			if resp.FinishReason != llm.FinishError || !cmp.Equal(want, resp.Message.Content) {
				t.Errorf("partial response = %+v", resp)
			}
		})
	}
}

func TestDropBeforeAnyContentIsRetried(t *testing.T) {
	srv := newFakeServer(t,
		step{pieces: []string{": keep-alive\n\n"}, drop: true},
		step{pieces: sse(chunk(`{"role":"assistant","content":""}`, ""))}, // no content, no [DONE]
		okStep(chunk(`{}`, "stop")),                                       // empty reply
		simpleReply("ok"),
	)
	m, waits := srv.model(t, Config{})
	resp, err := llm.Generate(context.Background(), m, userAsks("hi"))
	if err != nil || resp.Text() != "ok" {
		t.Fatalf("Generate = %+v, %v", resp, err)
	}
	if len(*waits) != 3 {
		t.Errorf("waits = %v, want 3 retries", *waits)
	}
}

func TestEmptyReplyAfterRetries(t *testing.T) {
	srv := newFakeServer(t, okStep(chunk(`{}`, "stop")), okStep(chunk(`{}`, "stop")))
	m, _ := srv.model(t, Config{MaxRetries: 1})
	_, err := llm.Generate(context.Background(), m, userAsks("hi"))
	var e *llm.Error
	if !errors.As(err, &e) || e.Code != llm.CodeEmptyResponse || e.Attempts != 2 {
		t.Fatalf("error = %#v", err)
	}
}

func TestHTTPErrors(t *testing.T) {
	type want struct {
		code    string
		status  int
		message string // "%s" stands for the base URL
	}
	tests := []struct {
		name   string
		cfg    Config
		step   step
		want   want
		tries  int
		detail string
	}{
		{
			name: "rejected key", cfg: Config{APIKey: "sk-bad", APIKeyEnv: "DEEPSEEK_API_KEY"},
			step: errStep(401, `{"error":{"message":"Authentication Fails, Your api key: ****-bad is invalid","type":"authentication_error","param":null,"code":"invalid_request_error"}}`, nil),
			want: want{llm.CodeAuth, 401, "the API key was rejected by %s (HTTP 401): Authentication Fails, Your api key: ****-bad is invalid (check DEEPSEEK_API_KEY)"},
		},
		{
			name: "forbidden", cfg: Config{APIKey: "sk-x"},
			step: errStep(403, `{"error":"key disabled"}`, nil),
			want: want{llm.CodeAuth, 403, "the API key was rejected by %s (HTTP 403): key disabled"},
		},
		{
			name: "key required",
			step: errStep(401, `{"message":"missing bearer token"}`, nil),
			want: want{llm.CodeAuth, 401, "%s requires an API key (HTTP 401): missing bearer token"},
		},
		{
			name: "DeepSeek unknown model", cfg: Config{Model: "deepseek-chatt"},
			step: errStep(400, `{"error":{"message":"Model Not Exist","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`, nil),
			want: want{llm.CodeUnknownModel, 400, `model "deepseek-chatt" is not available at %s: Model Not Exist`},
		},
		{
			name: "Ollama unknown model", cfg: Config{Model: "llama9"},
			step: errStep(404, `{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`, nil),
			want: want{llm.CodeUnknownModel, 404, `model "llama9" is not available at %s: model "llama9" not found, try pulling it first`},
		},
		{
			name: "OpenAI unknown model", cfg: Config{Model: "gpt-9"},
			step: errStep(404, `{"error":{"message":"The model `+"`gpt-9`"+` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, nil),
			want: want{llm.CodeUnknownModel, 404, "model \"gpt-9\" is not available at %s: The model `gpt-9` does not exist or you do not have access to it."},
		},
		{
			name: "wrong base URL",
			step: errStep(404, `404 page not found`, map[string]string{"Content-Type": "text/plain"}),
			want: want{llm.CodeNotFound, 404, "%s/chat/completions was not found (HTTP 404); check the base URL: 404 page not found"},
		},
		{
			name: "insufficient balance",
			step: errStep(402, `{"error":{"message":"Insufficient Balance","type":"unknown_error"}}`, nil),
			want: want{llm.CodeQuotaExceeded, 402, "%s refused the request for lack of balance or quota (HTTP 402): Insufficient Balance"},
		},
		{
			name: "context too long",
			step: errStep(400, `{"error":{"message":"This model's maximum context length is 131072 tokens. However, you requested 140000 tokens.","type":"invalid_request_error"}}`, nil),
			want: want{llm.CodeContextWindowExceeded, 400, `the conversation is too long for model "deepseek-flash" at %s (HTTP 400): This model's maximum context length is 131072 tokens. However, you requested 140000 tokens.`},
		},
		{
			name: "invalid parameters",
			step: errStep(422, `{"error":{"message":"temperature must be <= 2"}}`, nil),
			want: want{llm.CodeInvalidRequest, 422, "%s rejected the request (HTTP 422): temperature must be <= 2"},
		},
		{
			name: "empty error body",
			step: step{status: 400},
			want: want{llm.CodeInvalidRequest, 400, "%s rejected the request (HTTP 400): Bad Request"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, tt.step)
			m, _ := srv.model(t, tt.cfg)
			_, err := llm.Generate(context.Background(), m, userAsks("hi"))
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("error = %v, want *llm.Error", err)
			}
			wantMsg := strings.ReplaceAll(tt.want.message, "%s", m.BaseURL())
			if e.Code != tt.want.code || e.Status != tt.want.status || e.Message != wantMsg {
				t.Errorf("got  %s %d %q\nwant %s %d %q", e.Code, e.Status, e.Message, tt.want.code, tt.want.status, wantMsg)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d requests, want no retry", n)
			}
		})
	}
}

func TestMissingKey(t *testing.T) {
	const want = "DEEPSEEK_API_KEY is not set (export it, or pass --api-key-env NAME for another variable)"
	t.Setenv("DEEPSEEK_API_KEY", "")
	_, err := ConfigFromEnv("")
	var e *llm.Error
	if !errors.As(err, &e) || e.Code != llm.CodeMissingAPIKey || e.Message != want {
		t.Fatalf("ConfigFromEnv error = %v", err)
	}
	if _, err := New(Config{}); err == nil || err.Error() != want {
		t.Errorf("New without a key for DeepSeek = %v, want %q", err, want)
	}
	t.Setenv("MY_KEY", "  sk-123\n")
	cfg, err := ConfigFromEnv("MY_KEY")
	if err != nil || cfg.APIKey != "sk-123" || cfg.APIKeyEnv != "MY_KEY" {
		t.Errorf("ConfigFromEnv(MY_KEY) = %+v, %v", cfg, err)
	}
	os.Unsetenv("OTHER_KEY")
	if _, err := ConfigFromEnv("OTHER_KEY"); err == nil || !strings.HasPrefix(err.Error(), "OTHER_KEY is not set") {
		t.Errorf("ConfigFromEnv(OTHER_KEY) = %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	for _, base := range []string{"api.deepseek.com", "ftp://x", "http://", ":bad"} {
		if _, err := New(Config{BaseURL: base}); err == nil {
			t.Errorf("New(BaseURL %q) accepted it", base)
		}
	}
	m, err := New(Config{BaseURL: "http://localhost:11434/v1/chat/completions/", Model: "qwen3"})
	if err != nil {
		t.Fatal(err)
	}
	if m.BaseURL() != "http://localhost:11434/v1" || m.url != "http://localhost:11434/v1/chat/completions" ||
		m.Name() != "qwen3" || m.Provider() != "openai-compatible" {
		t.Errorf("model = %+v", m)
	}
	d, err := New(Config{APIKey: "k"})
	if err != nil || d.Provider() != "deepseek" || d.Name() != "deepseek-flash" || d.Thinking() != "enabled" || d.BaseURL() != DefaultBaseURL {
		t.Errorf("defaults = %+v, %v", d, err)
	}
}

func TestIdleTimeout(t *testing.T) {
	tests := []struct {
		name string
		step step
	}{
		{"no headers", step{hold: true}},
		{"stalls mid-stream", step{pieces: sse(chunk(dText("partial"), "")), stall: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, tt.step)
			m, waits := srv.model(t, Config{IdleTimeout: 50 * time.Millisecond})
			_, err := llm.Generate(context.Background(), m, userAsks("hi"))
			var e *llm.Error
			if !errors.As(err, &e) || e.Code != llm.CodeTimeout {
				t.Fatalf("error = %v, want TIMEOUT", err)
			}
			want := m.BaseURL() + " sent nothing for 50ms, so the request was abandoned (idle timeout)"
			if e.Message != want || len(*waits) != 0 {
				t.Errorf("message = %q (waits %v), want %q and no retry", e.Message, *waits, want)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	srv := newFakeServer(t, step{pieces: sse(chunk(dText("partial"), "")), stall: true})
	m, _ := srv.model(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n int
	var err error
	for ev, e := range m.Stream(ctx, userAsks("hi")) {
		if e != nil {
			err = e
			break
		}
		n++
		if ev.Type == llm.EventTextDelta {
			cancel()
		}
	}
	if !errors.Is(err, context.Canceled) || llm.CodeOf(err) != llm.CodeAborted {
		t.Fatalf("error = %v, want ABORTED wrapping context.Canceled", err)
	}
	if n != 2 {
		t.Errorf("%d events before the error, want 2", n)
	}

	// Cancelled while waiting to retry.
	srv2 := newFakeServer(t, errStep(500, `{"error":{"message":"boom"}}`, nil))
	m2, _ := srv2.model(t, Config{})
	ctx2, cancel2 := context.WithCancel(context.Background())
	m2.sleep = func(done <-chan struct{}, d time.Duration) bool { cancel2(); <-done; return false }
	_, err = llm.Generate(ctx2, m2, userAsks("hi"))
	if llm.CodeOf(err) != llm.CodeAborted {
		t.Errorf("cancel during backoff: %v, want ABORTED", err)
	}

	// A deadline is a timeout.
	srv3 := newFakeServer(t, step{hold: true})
	m3, _ := srv3.model(t, Config{})
	ctx3, cancel3 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel3()
	_, err = llm.Generate(ctx3, m3, userAsks("hi"))
	if llm.CodeOf(err) != llm.CodeTimeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: %v, want TIMEOUT wrapping DeadlineExceeded", err)
	}
}

func TestConsumerStopsEarly(t *testing.T) {
	srv := newFakeServer(t, step{pieces: sse(chunk(dText("a"), ""), chunk(dText("b"), "")), stall: true})
	m, _ := srv.model(t, Config{})
	n := 0
	for _, err := range m.Stream(context.Background(), userAsks("hi")) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if n == 2 {
			break // must release the connection; goleak checks the rest
		}
	}
}

// An in-band error that names a client-side status is not retried; a server fault is.
func TestInBandClientErrorsAreNotRetried(t *testing.T) {
	srv := newFakeServer(t,
		okStep(`{"error":{"message":"busy","type":"server_error"}}`),
		okStep(`{"error":{"message":"Authentication Fails","type":"authentication_error"}}`))
	m, _ := srv.model(t, Config{APIKeyEnv: "MY_KEY"})
	_, err := llm.Generate(context.Background(), m, userAsks("hi"))
	var e *llm.Error
	if !errors.As(err, &e) || e.Code != llm.CodeAuth || e.Attempts != 2 || !strings.HasSuffix(e.Message, "(check MY_KEY) (gave up after 2 attempts)") {
		t.Fatalf("error = %#v", err)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("%d requests", n)
	}
}

func TestInBandFailures(t *testing.T) {
	tests := []struct {
		name string
		step step
		code string
		msg  string // "%s" stands for the base URL
	}{
		{"error chunk", okStep(chunk(dText("x"), ""), `{"error":{"message":"Rate limit exceeded mid-stream","type":"rate_limit"}}`),
			llm.CodeRateLimit, "%s reported an error in the middle of the stream: Rate limit exceeded mid-stream"},
		{"error event", step{pieces: []string{"event: error\ndata: {\"error\":{\"message\":\"overloaded\"}}\n\n"}},
			llm.CodeServer, "%s reported an error in the middle of the stream: overloaded"},
		{"authentication error chunk", okStep(`{"error":{"message":"Authentication Fails","type":"authentication_error","code":"invalid_request_error"}}`),
			llm.CodeAuth, "%s reported an error in the middle of the stream (HTTP 401): Authentication Fails"},
		{"invalid request chunk", okStep(`{"error":{"message":"bad field","type":"invalid_request_error"}}`),
			llm.CodeInvalidRequest, "%s reported an error in the middle of the stream (HTTP 400): bad field"},
		{"numeric status event", step{pieces: []string{"event: error\ndata: {\"error\":{\"message\":\"no such model\",\"code\":404}}\n\n"}},
			llm.CodeUnknownModel, "%s reported an error in the middle of the stream (HTTP 404): no such model"},
		{"server error type", okStep(`{"error":{"message":"busy","type":"server_error","code":503}}`),
			llm.CodeServer, "%s reported an error in the middle of the stream: busy"},
		{"content filter", okStep(chunk(dText("x"), ""), chunk(`{}`, "content_filter")),
			"CONTENT_FILTER", "the model stopped: content_filter"},
		{"DeepSeek out of resources", okStep(chunk(dText("x"), ""), chunk(`{}`, "insufficient_system_resource")),
			"INSUFFICIENT_SYSTEM_RESOURCE", "the model stopped: insufficient_system_resource"},
		{"malformed chunk", okStep(chunk(dText("x"), ""), `{"choices":[{"delta":{"content":5}}]}`),
			llm.CodeMalformedResponse, "%s sent a malformed stream chunk: json: cannot unmarshal number into Go struct field ChatCompletionStreamChoiceDelta.choices.delta.content of type string (chunk: {\"choices\":[{\"delta\":{\"content\":5}}]})"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, tt.step)
			m, _ := srv.model(t, Config{MaxRetries: -1})
			_, err := llm.Generate(context.Background(), m, userAsks("hi"))
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("error = %v", err)
			}
			if want := strings.ReplaceAll(tt.msg, "%s", m.BaseURL()); e.Code != tt.code || e.Message != want {
				t.Errorf("got  %s %q\nwant %s %q", e.Code, e.Message, tt.code, want)
			}
		})
	}
}

func TestLenientServers(t *testing.T) {
	tests := []struct {
		name string
		step step
		want []content.Block
	}{
		{
			name: "finish_reason without [DONE], CRLF line endings and comments",
			step: step{pieces: []string{
				": OPENROUTER PROCESSING\r\n\r\n",
				"data: " + chunk(dText("hi"), "") + "\r\n\r\n",
				"data: " + chunk(`{}`, "stop") + "\r\n\r\n",
			}},
			want: []content.Block{content.Text("hi")},
		},
		{
			name: "tool calls without index, matched by id",
			step: okStep(
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`),
			want: []content.Block{content.ToolCall("a", "f", `{"x":1}`), content.ToolCall("b", "g", "{}")},
		},
		{
			name: "every call numbered 0",
			step: okStep(
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"g","arguments":"[]"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`),
			want: []content.Block{content.ToolCall("a", "f", "{}"), content.ToolCall("b", "g", "[]")},
		},
		{
			name: "no ids at all",
			step: okStep(
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{}"}},{"index":1,"function":{"name":"g","arguments":"{}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`),
			want: []content.Block{content.ToolCall("call_0", "f", "{}"), content.ToolCall("call_1", "g", "{}")},
		},
		{
			name: "legacy function_call",
			step: okStep(
				`{"choices":[{"index":0,"delta":{"function_call":{"name":"f","arguments":"{\"a\""}}}]}`,
				`{"choices":[{"index":0,"delta":{"function_call":{"arguments":":2}"}}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"function_call"}]}`),
			want: []content.Block{content.ToolCall("call_0", "f", `{"a":2}`)},
		},
		{
			name: "a JSON reply instead of a stream",
			step: step{header: map[string]string{"Content-Type": "application/json; charset=utf-8"}, pieces: []string{
				`{"id":"x","object":"chat.completion","model":"local","choices":[{"index":0,"message":{"role":"assistant","content":"hello","reasoning_content":"think","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":1}}}`,
			}},
			want: []content.Block{content.Reasoning("think"), content.Text("hello"), content.ToolCall("t1", "f", "{}")},
		},
		{
			name: "other choices and a byte-order mark are ignored",
			step: step{pieces: []string{"\xEF\xBB\xBFdata: " + `{"choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"}},
			want: []content.Block{content.Text("yes")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, tt.step)
			m, _ := srv.model(t, Config{})
			resp, err := llm.Generate(context.Background(), m, userAsks("hi"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, resp.Message.Content); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestBody(t *testing.T) {
	params, err := jsonv.ParseString(`{"type":"object","properties":{"path":{"type":"string","description":"<file> & more"},"limit":{"type":"integer"}},"required":["path"]}`)
	if err != nil {
		t.Fatal(err)
	}
	zero := 0.0
	req := llm.Request{
		System: "You are dsh.",
		Messages: []content.Message{
			{Role: content.RoleUser, Content: []content.Block{content.Text("Read "), content.Text("a.txt"),
				{Type: content.TypeImage, Image: &content.ImageRef{AttachmentID: "x"}}}},
			{Role: content.RoleAssistant, Content: []content.Block{
				content.Reasoning("think"), content.ToolCall("c1", "read_file", `{"path":"a.txt"}`),
				content.ToolCall("c2", "list", ""),
			}},
			{Role: content.RoleUser, Content: []content.Block{
				content.ToolResult("c1", []content.Block{content.Text("line1\n"), content.Text("line2")}, false),
				content.ToolResult("c2", nil, true),
				content.Text("also this"),
			}},
			{Role: content.RoleAssistant, Content: []content.Block{content.Reasoning("only thoughts")}},
			{Role: content.RoleSystem, Content: content.Texts("Be brief.")},
		},
		Tools: []llm.ToolSchema{
			{Name: "read_file", Description: "Read a file.", Parameters: params},
			{Name: "list", Description: "List.", Strict: true},
			{Name: "gomap", Parameters: map[string]any{"type": "object", "properties": map[string]any{}}},
		},
		MaxTokens:   1024,
		Temperature: &zero,
	}
	m, err := New(Config{BaseURL: "http://localhost:1/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	body, err := m.requestBody(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[` +
		`{"role":"system","content":"You are dsh."},` +
		`{"role":"user","content":"Read a.txt[image content]"},` +
		`{"role":"assistant","content":"","reasoning_content":"think","tool_calls":[` +
		`{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}},` +
		`{"id":"c2","type":"function","function":{"name":"list","arguments":"{}"}}]},` +
		`{"role":"tool","content":"line1\nline2","tool_call_id":"c1"},` +
		`{"role":"tool","content":"(no output)","tool_call_id":"c2"},` +
		`{"role":"user","content":"also this"},` +
		`{"role":"assistant","content":"","reasoning_content":"only thoughts"},` +
		`{"role":"system","content":"Be brief."}],` +
		`"tools":[` +
		`{"type":"function","function":{"name":"read_file","description":"Read a file.","parameters":{"type":"object","properties":{"path":{"type":"string","description":"<file> & more"},"limit":{"type":"integer"}},"required":["path"]}}},` +
		`{"type":"function","function":{"name":"list","description":"List.","strict":true,"parameters":{"type":"object","properties":{}}}},` +
		`{"type":"function","function":{"name":"gomap","parameters":{"properties":{},"type":"object"}}}],` +
		`"max_tokens":1024,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`
	if string(body) != want {
		t.Errorf("body:\n%s\nwant:\n%s", body, want)
	}

	m.cfg.OmitReasoning = true
	body, _ = m.requestBody(llm.Request{Messages: req.Messages[3:4]})
	if strings.Contains(string(body), "reasoning_content") {
		t.Errorf("OmitReasoning still sent reasoning: %s", body)
	}
	if _, err := m.requestBody(llm.Request{Tools: []llm.ToolSchema{{Name: "bad", Parameters: []any{"x"}}}}); llm.CodeOf(err) != llm.CodeInvalidRequest {
		t.Errorf("array schema: %v, want INVALID_REQUEST", err)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header map[string]string
		want   time.Duration
	}{
		{nil, 0},
		{map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{map[string]string{"Retry-After": "-1"}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		if got := retryAfter(h, now); got != tt.want {
			t.Errorf("retryAfter(%v) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestConnectionRefusedIsRetriedThenReported(t *testing.T) {
	srv := newFakeServer(t)
	base := srv.srv.URL
	srv.srv.Close()
	m, err := New(Config{BaseURL: base, MaxRetries: 1, HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	var waits int
	m.sleep = func(<-chan struct{}, time.Duration) bool { waits++; return true }
	_, err = llm.Generate(context.Background(), m, userAsks("hi"))
	var e *llm.Error
	if !errors.As(err, &e) || e.Code != llm.CodeTransport || waits != 1 {
		t.Fatalf("error = %v after %d waits, want TRANSPORT after one retry", err, waits)
	}
	if !strings.HasPrefix(e.Message, "could not reach "+base+": dial tcp") || !strings.HasSuffix(e.Message, "(gave up after 2 attempts)") {
		t.Errorf("message = %q", e.Message)
	}
}

func TestClientTimeoutAndHeaders(t *testing.T) {
	// Two servers: on a loaded machine the timed-out request may never reach the first, and
	// the second request must not then be answered with the held step.
	srv := newFakeServer(t, step{hold: true})
	client := *srv.srv.Client() // a copy: the server's own client stays without a timeout
	client.Timeout = 50 * time.Millisecond
	m, waits := srv.model(t, Config{HTTPClient: &client})
	_, err := llm.Generate(context.Background(), m, userAsks("hi"))
	var e *llm.Error
	if !errors.As(err, &e) || e.Code != llm.CodeTimeout || len(*waits) != 0 {
		t.Fatalf("error = %v (waits %v), want TIMEOUT without retry", err, *waits)
	}
	if !strings.HasPrefix(e.Message, "the request to "+m.BaseURL()+" timed out: ") {
		t.Errorf("message = %q", e.Message)
	}

	srv2 := newFakeServer(t, simpleReply("ok"))
	m2, _ := srv2.model(t, Config{UserAgent: "dsh-test/1", Header: http.Header{"X-Gateway": {"a", "b"}}})
	if _, err := llm.Generate(context.Background(), m2, userAsks("hi")); err != nil {
		t.Fatal(err)
	}
	h := srv2.requests()[0].header
	if h.Get("User-Agent") != "dsh-test/1" || strings.Join(h.Values("X-Gateway"), ",") != "a,b" {
		t.Errorf("headers = %v", h)
	}
}
