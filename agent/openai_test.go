package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/openai"
	"github.com/dsh-go/dsh/session"
)

// sseResponse is one scripted HTTP response of the local OpenAI-compatible server.
type sseResponse struct {
	status int      // default 200
	header []string // extra header "Name: value" pairs
	events []string // data payloads, each sent as its own flushed SSE event
	done   bool     // end with data: [DONE]
	drop   bool     // cut the connection after the events
}

// sseServer is a local OpenAI-compatible chat-completions endpoint streaming scripted
// responses as real SSE chunks; the last response repeats.
type sseServer struct {
	t         *testing.T
	srv       *httptest.Server
	mu        sync.Mutex
	responses []sseResponse
	bodies    []map[string]any
}

func newSSEServer(t *testing.T, responses ...sseResponse) *sseServer {
	s := &sseServer{t: t, responses: responses}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sseServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		s.t.Errorf("request body is not JSON: %v", err)
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	resp := s.responses[0]
	if len(s.responses) > 1 {
		s.responses = s.responses[1:]
	}
	s.mu.Unlock()
	for _, h := range resp.header {
		k, v, _ := strings.Cut(h, ": ")
		w.Header().Set(k, v)
	}
	if resp.status != 0 && resp.status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.status)
		fmt.Fprintf(w, `{"error":{"message":"status %d","type":"test"}}`, resp.status)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	for _, e := range resp.events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		fl.Flush()
	}
	if resp.drop {
		panic(http.ErrAbortHandler) // closes the connection mid-body
	}
	if resp.done {
		io.WriteString(w, "data: [DONE]\n\n")
		fl.Flush()
	}
}

func (s *sseServer) requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

func (s *sseServer) model(t *testing.T) *openai.Model {
	t.Helper()
	m, err := openai.New(openai.Config{
		BaseURL:        s.srv.URL + "/v1",
		Model:          "local-model",
		HTTPClient:     s.srv.Client(),
		RetryBaseDelay: time.Millisecond,
		RetryMaxDelay:  10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// delta returns a chunk payload with one choice delta.
func delta(d string, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"local-model","choices":[{"index":0,"delta":` + d + `,"finish_reason":` + f + `}]}`
}

// toolDelta returns a chunk carrying a piece of the arguments of tool call index (its id
// and name only with the first piece).
func toolDelta(index int, id, name, args string) string {
	fn := map[string]string{"arguments": args}
	call := map[string]any{"index": index, "function": fn}
	if id != "" {
		call["id"], call["type"], fn["name"] = id, "function", name
	}
	b, _ := json.Marshal(map[string]any{"tool_calls": []any{call}})
	return delta(string(b), "")
}

// splitArgs streams two calls' argument texts interleaved, a few bytes at a time.
func splitArgs(a, b string) []string {
	var out []string
	out = append(out, toolDelta(0, "call_a", "echo", ""), toolDelta(1, "call_b", "note", ""))
	for i := 0; i < len(a) || i < len(b); i += 3 {
		if i < len(a) {
			out = append(out, toolDelta(0, "", "", a[i:min(i+3, len(a))]))
		}
		if i < len(b) {
			out = append(out, toolDelta(1, "", "", b[i:min(i+3, len(b))]))
		}
	}
	return out
}

// TestOpenAIServerTurn runs a turn against a local server streaming real SSE: reasoning,
// two parallel tool calls whose arguments arrive in many interleaved deltas, a 429 on the
// second request that the client retries, and the final answer.
func TestOpenAIServerTurn(t *testing.T) {
	f := newFixture(t)
	first := []string{
		delta(`{"role":"assistant","content":"","reasoning_content":"Let me "}`, ""),
		delta(`{"reasoning_content":"use two tools."}`, ""),
	}
	first = append(first, splitArgs(`{"text":"hello, world"}`, `{"text":"remember this"}`)...)
	first = append(first, delta(`{}`, "tool_calls"))
	srv := newSSEServer(t,
		sseResponse{events: first, done: true},
		sseResponse{status: http.StatusTooManyRequests, header: []string{"Retry-After: 0"}},
		sseResponse{events: []string{
			delta(`{"role":"assistant","content":"All "}`, ""),
			delta(`{"content":"done."}`, ""),
			delta(`{}`, "stop"),
		}, done: true},
	)
	var reasoning, text strings.Builder
	a, err := New(Config{Registry: f.reg, Model: srv.model(t), Now: fixedNow, Observer: Observer{
		ReasoningDelta: func(s string) { reasoning.WriteString(s) },
		TextDelta:      func(s string) { text.WriteString(s) },
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	res, err := a.Run(context.Background(), "please work")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text() != "All done." || res.Steps != 2 || reasoning.String() != "Let me use two tools." || text.String() != "All done." {
		t.Fatalf("result = %+v, reasoning %q, text %q", res, reasoning.String(), text.String())
	}
	events := a.Log().Events()
	equalStrings(t, "events", describe(t, events), []string{
		"turn/start", "step/start", "user/message user:please work", "assistant/message",
		"tool/call call_a", "tool/call call_b", "tool/result call_a", "tool/result call_b", "step/end",
		"step/start", "user/message tool:note: remember this", "assistant/message", "step/end",
		"turn/end completed",
	})
	c, _ := session.DecodeToolCall(events[4])
	if c.Arguments != `{"text":"hello, world"}` {
		t.Errorf("assembled arguments = %q", c.Arguments)
	}
	rs := toolResults(t, events)
	if blockText(rs["call_a"].Content) != "echo: hello, world" {
		t.Errorf("call_a = %+v", rs["call_a"])
	}
	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (one retried)", len(reqs))
	}
	if tools, _ := reqs[0]["tools"].([]any); len(tools) != 6 {
		t.Errorf("first request offered %d tools", len(tools))
	}
	// The retried request carries the history: the assistant turn with its reasoning and
	// both calls, then both tool results, then the deferred note.
	msgs, _ := reqs[2]["messages"].([]any)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	equalStrings(t, "roles", roles, []string{"system", "user", "assistant", "tool", "tool", "user"})
	asst := msgs[2].(map[string]any)
	if asst["reasoning_content"] != "Let me use two tools." {
		t.Errorf("reasoning not sent back: %v", asst)
	}
	if calls, _ := asst["tool_calls"].([]any); len(calls) != 2 {
		t.Errorf("assistant tool calls = %v", asst["tool_calls"])
	}
	if msgs[3].(map[string]any)["tool_call_id"] != "call_a" || msgs[4].(map[string]any)["tool_call_id"] != "call_b" {
		t.Errorf("tool messages out of order: %v %v", msgs[3], msgs[4])
	}
}

// TestOpenAIDroppedStream: a server that drops the stream after content reached the agent
// ends the turn with an error carrying the client's code; nothing half-received is run.
func TestOpenAIDroppedStream(t *testing.T) {
	f := newFixture(t)
	srv := newSSEServer(t, sseResponse{events: []string{
		delta(`{"role":"assistant","content":"I will "}`, ""),
		toolDelta(0, "call_a", "echo", `{"text":`),
	}, drop: true})
	a, err := New(Config{Registry: f.reg, Model: srv.model(t), Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	res, err := a.Run(context.Background(), "go")
	var le *llm.Error
	if !errors.As(err, &le) {
		t.Fatalf("err = %v", err)
	}
	if res.Reason.Kind != session.EndError || res.Reason.Error.Code != le.Code || le.Code != llm.CodeStreamClosed {
		t.Fatalf("reason = %+v (err %v)", res.Reason, err)
	}
	equalStrings(t, "events", describe(t, a.Log().Events()), []string{
		"turn/start", "step/start", "user/message user:go", "step/end", "turn/end error",
	})
}
