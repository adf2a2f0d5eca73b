package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// chatServer is a local OpenAI-compatible chat-completions endpoint: each request gets the
// next scripted reply, streamed as server-sent events.
type chatServer struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	replies []reply
	bodies  []map[string]any
	auth    []string
}

// reply is one scripted response: SSE data payloads, or an HTTP error status.
type reply struct {
	status int
	events []string
	// hang keeps the response open after the events until the client goes away, and
	// closes arrived first.
	hang    bool
	arrived chan struct{}
}

func newChatServer(t *testing.T, replies ...reply) *chatServer {
	s := &chatServer{t: t, replies: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.srv.CloseClientConnections()
		s.srv.Close()
		http.DefaultClient.CloseIdleConnections()
	})
	return s
}

func (s *chatServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		s.t.Errorf("request body is not JSON: %v", err)
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	if len(s.replies) == 0 {
		s.mu.Unlock()
		w.WriteHeader(http.StatusTeapot)
		s.t.Errorf("unexpected request %d", len(s.bodies))
		return
	}
	rep := s.replies[0]
	s.replies = s.replies[1:]
	s.mu.Unlock()
	if rep.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		fmt.Fprintf(w, `{"error":{"message":"status %d","type":"test"}}`, rep.status)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for _, e := range rep.events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		fl.Flush()
	}
	if rep.hang {
		close(rep.arrived)
		<-r.Context().Done()
		return
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func (s *chatServer) requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

// chunk returns one chat.completion.chunk payload with a delta and a finish reason.
func chunk(delta any, finish string) string {
	c := map[string]any{"index": 0, "delta": delta, "finish_reason": nil}
	if finish != "" {
		c["finish_reason"] = finish
	}
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "test-model", "choices": []any{c}})
	return string(b)
}

// textReply streams text in two pieces and stops.
func textReply(text string) reply {
	half := len(text) / 2
	return reply{events: []string{
		chunk(map[string]any{"role": "assistant", "content": text[:half]}, ""),
		chunk(map[string]any{"content": text[half:]}, ""),
		chunk(map[string]any{}, "stop"),
	}}
}

// toolReply asks for one tool call, with some text first.
func toolReply(text, id, name, args string) reply {
	return reply{events: []string{
		chunk(map[string]any{"role": "assistant", "reasoning_content": "I need to look."}, ""),
		chunk(map[string]any{"content": text}, ""),
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": id, "type": "function",
			"function": map[string]any{"name": name, "arguments": args}}}}, ""),
		chunk(map[string]any{}, "tool_calls"),
	}}
}

// TestRunAgainstLocalServer runs "dsh run" against a local OpenAI-compatible server:
// a tool call and an answer, the session persisted, then resumed for a second turn.
func TestRunAgainstLocalServer(t *testing.T) {
	s := newSandbox(t)
	s.write("README.md", "# hello\n\nThis project says hi.\n")
	srv := newChatServer(t,
		toolReply("Let me read the README.", "call_1", "read", `{"file_path":"README.md"}`),
		textReply("The README says the project says hi."),
		textReply("Still hi."),
	)
	s.env["LOCAL_KEY"] = "sk-local"
	r := s.dsh("run", "--base-url", srv.srv.URL+"/v1", "--model", "test-model", "--api-key-env", "LOCAL_KEY", "What does the README say?").want(t, 0)
	if r.stdout != "The README says the project says hi.\n" {
		t.Errorf("stdout = %q, want only the final answer", r.stdout)
	}
	mustContain(t, "transcript", r.stderr,
		"dsh · test-model via openai-compatible · session ",
		"› What does the README say?\n",
		"Let me read the README.\n● Read README.md\n✓ read · "+s.ws+"/README.md · lines 1-3 of 3\n  1 │ # hello\n",
		"The README says the project says hi.\n— turn 1 completed\n",
	)
	if strings.Contains(r.stderr, "I need to look.") {
		t.Errorf("reasoning was printed:\n%s", r.stderr)
	}
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if reqs[0]["model"] != "test-model" {
		t.Errorf("model = %v", reqs[0]["model"])
	}
	if srv.auth[0] != "Bearer sk-local" {
		t.Errorf("Authorization = %q, want the key from LOCAL_KEY", srv.auth[0])
	}
	tools, _ := reqs[0]["tools"].([]any)
	if len(tools) < 5 {
		t.Errorf("the request offered %d tools", len(tools))
	}
	msgs, _ := reqs[1]["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if last["role"] != "tool" || !strings.Contains(fmt.Sprint(last["content"]), "This project says hi.") {
		t.Errorf("the second request does not carry the tool result: %v", last)
	}

	// Resume: a second turn in the same session, from the log.
	id, _ := sessionID(t, r.stderr)
	r2 := s.dsh("run", "--base-url", srv.srv.URL+"/v1", "--model", "test-model", "--resume", id, "And now?").want(t, 0)
	if r2.stdout != "Still hi.\n" {
		t.Errorf("resumed stdout = %q", r2.stdout)
	}
	mustContain(t, "resumed transcript", r2.stderr, "session "+id, "— turn 2 completed")
	reqs = srv.requests()
	msgs, _ = reqs[2]["messages"].([]any)
	var contents []string
	for _, m := range msgs {
		mm := m.(map[string]any)
		contents = append(contents, fmt.Sprint(mm["role"], ": ", mm["content"]))
	}
	joined := strings.Join(contents, "\n")
	mustContain(t, "resumed history", joined, "user: What does the README say?", "This project says hi.", "assistant: The README says the project says hi.", "user: And now?")

	// The log renders both turns.
	show := s.dsh("session", "show", id).want(t, 0)
	mustContain(t, "session show", show.stdout, "● Read README.md", "— turn 1 completed", "› And now?", "Still hi.", "— turn 2 completed")
}

// TestRunJSON checks that --json streams the session's events as JSON lines.
func TestRunJSON(t *testing.T) {
	s := newSandbox(t)
	srv := newChatServer(t, textReply("Hello there."))
	r := s.dsh("run", "--json", "--base-url", srv.srv.URL, "hi").want(t, 0)
	if !regexp.MustCompile(`^dsh · deepseek-flash via openai-compatible · session \S+\n$`).MatchString(r.stderr) {
		t.Errorf("--json wrote more than the banner to stderr: %q", r.stderr)
	}
	var types []string
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	for _, l := range lines[:len(lines)-1] {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		types = append(types, ev["type"].(string))
	}
	if got, want := strings.Join(types, " "), "turn/start step/start user/message assistant/message step/end turn/end"; got != want {
		t.Errorf("events %s, want %s", got, want)
	}
	// The last line is the summary.
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, `{"type":"summary","status":"completed","answer":"Hello there.","sessionId":"`) {
		t.Errorf("last line %s", last)
	}
}

func TestRunErrors(t *testing.T) {
	s := newSandbox(t)
	tests := []struct {
		name    string
		replies []reply
		args    []string
		code    int
		want    string
	}{
		{"missing key", nil, []string{"run", "hi"}, 1,
			"dsh run: DEEPSEEK_API_KEY is not set (export it, or pass --api-key-env NAME for another variable)\n"},
		{"missing key from another variable", nil, []string{"run", "--api-key-env", "MY_KEY", "hi"}, 1,
			"dsh run: MY_KEY is not set"},
		{"bad base URL", nil, []string{"run", "--base-url", "ftp://x", "hi"}, 2, `dsh run: flag --base-url: baseUrl must be an absolute http or https URL, got "ftp://x"`},
		{"bad max tokens", nil, []string{"run", "--max-tokens", "-1", "hi"}, 2, `dsh run: --max-tokens must not be negative, got -1`},
		{"unknown session", []reply{}, []string{"run", "--resume", "20260101T000000Z-00000000", "hi"}, 1,
			`dsh run: no session "20260101T000000Z-00000000" in ` + s.home + "/sessions"},
		{"rejected key", []reply{{status: 401}}, []string{"run", "hi"}, 1, "— turn 1 failed: "},
		{"bad flag", nil, []string{"run", "--max-steps", "0", "hi"}, 2, "dsh run: flag --max-steps: maxSteps must be a positive integer"},
		{"step limit", []reply{toolReply("", "c1", "glob", `{"pattern":"*"}`)}, []string{"run", "--max-steps", "1", "hi"}, 1,
			"dsh run: the turn did not complete: stopped: the step limit was reached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.replies != nil {
				srv := newChatServer(t, tt.replies...)
				args = append([]string{args[0], "--base-url", srv.srv.URL}, args[1:]...)
			}
			r := s.dsh(args...).want(t, tt.code)
			mustContain(t, "stderr", r.stderr, tt.want)
		})
	}
}

// TestRunInterrupted cancels a run while the model streams: the turn ends aborted, the exit
// status is 130 and the session is saved.
func TestRunInterrupted(t *testing.T) {
	s := newSandbox(t)
	arrived := make(chan struct{})
	srv := newChatServer(t, reply{events: []string{chunk(map[string]any{"role": "assistant", "content": "Thinking about"}, "")}, hang: true, arrived: arrived})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result)
	go func() { done <- s.dshCtx(ctx, "run", "--base-url", srv.srv.URL, "hi") }()
	<-arrived
	cancel()
	r := (<-done).want(t, 130)
	mustContain(t, "stderr", r.stderr, "— turn 1 aborted", "dsh run: interrupted; the session ", "was saved")
	id, _ := sessionID(t, r.stderr)
	show := s.dsh("session", "show", id).want(t, 0)
	mustContain(t, "session show", show.stdout, "› hi", "— turn 1 aborted")

	// A context cancelled before the run starts no turn.
	r = s.dshCtx(ctx, "run", "--base-url", srv.srv.URL, "hi").want(t, 130)
	if r.stderr != "dsh run: interrupted\n" {
		t.Errorf("stderr = %q", r.stderr)
	}
}

// TestRunCodeMode runs "dsh run --mode code": the model is offered only run_code and the
// SDK in its system prompt, and its program's calls run through the pipeline.
func TestRunCodeMode(t *testing.T) {
	s := newSandbox(t)
	s.write("a.txt", "one\ntwo\n")
	program := `const r = await tools.read({ file_path: "a.txt" }); console.log(r.totalLines + " lines"); return r.lines[1].text;`
	args, _ := json.Marshal(map[string]string{"description": "Count the lines", "code": program})
	srv := newChatServer(t,
		toolReply("", "call_1", "run_code", string(args)),
		textReply("a.txt has 2 lines."),
	)
	r := s.dsh("run", "--mode", "code", "--base-url", srv.srv.URL, "how long is a.txt?").want(t, 0)
	mustContain(t, "transcript", r.stderr,
		"● Count the lines\n  │ const r = await tools.read",
		"  ✓ read {\"file_path\":\"a.txt\"}\n✓ run_code\n  2 lines\n  two\n",
		"— turn 1 completed")
	reqs := srv.requests()
	tools, _ := reqs[0]["tools"].([]any)
	if len(tools) != 1 || !strings.Contains(fmt.Sprint(tools[0]), "run_code") {
		t.Errorf("code mode offered %v", tools)
	}
	msgs, _ := reqs[0]["messages"].([]any)
	system := fmt.Sprint(msgs[0].(map[string]any)["content"])
	mustContain(t, "system prompt", system, "`run_code` is the only tool you can call directly", "interface ToolArgsMap", "read: {")
	// The second request carries the program's output, not the intermediate value.
	msgs, _ = reqs[1]["messages"].([]any)
	last := fmt.Sprint(msgs[len(msgs)-1].(map[string]any)["content"])
	mustContain(t, "run_code result", last, "2 lines")
	if strings.Contains(last, "one") {
		t.Errorf("the program's intermediate read reached the model: %s", last)
	}
}
