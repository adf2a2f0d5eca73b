package deepseektest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/internal/deepseektest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// post sends a JSON body with the server's key (or key) and returns the status, the error
// message of an error answer, and the body.
func post(t *testing.T, ds *deepseektest.Server, path, key, body string) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ds.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	json.Unmarshal(data, &e)
	return resp.StatusCode, e.Error.Message, data
}

const hello = `{"model":%q,"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}%s}`

func TestChatErrors(t *testing.T) {
	tests := []struct {
		name, key, body string
		status          int
		message         string
	}{
		{"wrong key", "sk-wrong", fmt.Sprintf(hello, "deepseek-flash", ""), 401, "Authentication Fails, Your api key is invalid"},
		{"retired chat", "", fmt.Sprintf(hello, "deepseek-chat", ""), 400, "Model Not Exist"},
		{"retired reasoner", "", fmt.Sprintf(hello, "deepseek-reasoner", ""), 400, "Model Not Exist"},
		{"unknown model", "", fmt.Sprintf(hello, "gpt-4.1", ""), 400, "Model Not Exist"},
		{"bad thinking", "", fmt.Sprintf(hello, "deepseek-flash", `,"thinking":{"type":"on"}`), 400, `thinking.type must be "enabled" or "disabled", got "on"`},
		{"bad effort", "", fmt.Sprintf(hello, "deepseek-flash", `,"reasoning_effort":"medium"`), 400, `reasoning_effort must be one of low, high, max, got "medium"`},
		{"not JSON", "", `{`, 400, "Failed to deserialize the JSON body into the target type: unexpected end of JSON input"},
		{"reasoning not passed back", "", `{"model":"deepseek-flash","messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"x"}]}`, 400, deepseektest.ReasoningPassBackMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := deepseektest.New(t, deepseektest.Options{})
			key := tt.key
			if key == "" {
				key = ds.APIKey
			}
			status, msg, _ := post(t, ds, "/chat/completions", key, tt.body)
			if status != tt.status || msg != tt.message {
				t.Errorf("got %d %q, want %d %q", status, msg, tt.status, tt.message)
			}
			if q := ds.Requests(); len(q) != 1 || q[0].Status != tt.status {
				t.Errorf("recorded %+v", q)
			}
		})
	}
}

// chunks reads an event stream's data payloads.
func chunks(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		out = append(out, c)
	}
	if !bytes.HasSuffix(body, []byte("data: [DONE]\n\n")) {
		t.Errorf("the stream does not end with [DONE]")
	}
	return out
}

func TestStreamThinkingAndUsage(t *testing.T) {
	for _, tt := range []struct {
		name, extra string
		reasoning   bool
	}{
		{"thinking by default", "", true},
		{"thinking enabled", `,"thinking":{"type":"enabled"},"reasoning_effort":"max"`, true},
		{"thinking disabled", `,"thinking":{"type":"disabled"}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ds := deepseektest.New(t, deepseektest.Options{})
			ds.Enqueue(deepseektest.Reply{Reasoning: "hmm", Text: "hello there", Usage: &deepseektest.Usage{CacheHit: 64, CacheMiss: 10, Completion: 5, Reasoning: 2}})
			status, _, body := post(t, ds, "/v1/chat/completions", ds.APIKey, fmt.Sprintf(hello, "deepseek-v4-pro", tt.extra))
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			var reasoning, text string
			var usage map[string]any
			for _, c := range chunks(t, body) {
				if u, ok := c["usage"].(map[string]any); ok {
					usage = u
				}
				for _, ch := range c["choices"].([]any) {
					d := ch.(map[string]any)["delta"].(map[string]any)
					if s, ok := d["reasoning_content"].(string); ok {
						reasoning += s
					}
					if s, ok := d["content"].(string); ok {
						text += s
					}
				}
			}
			if text != "hello there" || (reasoning == "hmm") != tt.reasoning || (!tt.reasoning && reasoning != "") {
				t.Errorf("text %q reasoning %q", text, reasoning)
			}
			details, _ := usage["completion_tokens_details"].(map[string]any)
			if usage["prompt_cache_hit_tokens"] != 64.0 || usage["prompt_cache_miss_tokens"] != 10.0 || usage["prompt_tokens"] != 74.0 ||
				usage["completion_tokens"] != 5.0 || details["reasoning_tokens"] != 2.0 {
				t.Errorf("usage = %v", usage)
			}
		})
	}
}

func TestScriptedFailuresAndCalls(t *testing.T) {
	ds := deepseektest.New(t, deepseektest.Options{})
	ds.Enqueue(
		deepseektest.Reply{Status: 429, RetryAfter: 2 * time.Second},
		deepseektest.Fail(503),
		deepseektest.Calls(deepseektest.Call("read", `{"file_path":"a.txt"}`), deepseektest.ToolCall{ID: "mine", Name: "glob", Arguments: `{}`}),
	)
	body := fmt.Sprintf(hello, "deepseek-flash", "")
	if status, msg, _ := post(t, ds, "/chat/completions", ds.APIKey, body); status != 429 || msg != "Rate Limit Reached" {
		t.Errorf("first: %d %q", status, msg)
	}
	if status, msg, _ := post(t, ds, "/chat/completions", ds.APIKey, body); status != 503 || msg != "Server Overloaded" {
		t.Errorf("second: %d %q", status, msg)
	}
	status, _, out := post(t, ds, "/chat/completions", ds.APIKey, body)
	if status != 200 || !bytes.Contains(out, []byte(`"id":"call_0"`)) || !bytes.Contains(out, []byte(`"id":"mine"`)) ||
		!bytes.Contains(out, []byte(`"finish_reason":"tool_calls"`)) {
		t.Errorf("third: %d %s", status, out)
	}
	if ds.Pending() != 0 {
		t.Errorf("%d replies left", ds.Pending())
	}
}

// fakeTB records the errors the server reports instead of failing the test.
type fakeTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func TestUnexpectedRequestIsReported(t *testing.T) {
	tb := &fakeTB{TB: t}
	ds := deepseektest.New(tb, deepseektest.Options{})
	status, msg, _ := post(t, ds, "/chat/completions", ds.APIKey, fmt.Sprintf(hello, "deepseek-flash", ""))
	if status != 500 || msg != "deepseektest: no reply enqueued" {
		t.Errorf("got %d %q", status, msg)
	}
	if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], "chat request 1 arrived with no reply enqueued") {
		t.Errorf("reported %v", tb.errors)
	}
}

// clock is a settable clock for the request limits.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestWebLimitsAndShapes(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	ds := deepseektest.New(t, deepseektest.Options{SearchQPS: 2, FetchQPS: 1, Now: clk.Now})
	search := `{"query":"go","max_results":2}`
	for i, want := range []int{200, 200, 429} {
		status, msg, body := post(t, ds, deepseektest.SearchPath, ds.APIKey, search)
		if status != want {
			t.Errorf("search %d: %d %s", i, status, body)
		}
		if status == 429 && !strings.Contains(msg, "Rate Limit Reached") {
			t.Errorf("429 message %q", msg)
		}
		if status == 200 {
			var r deepseektest.SearchResponse
			if json.Unmarshal(body, &r) != nil || len(r.Results) != 2 || !r.Truncated || r.Results[0].URL != "https://example.com/go" {
				t.Errorf("search answer %s", body)
			}
		}
	}
	clk.Add(time.Second) // a new second: the limit starts over
	if status, _, _ := post(t, ds, deepseektest.SearchPath, ds.APIKey, search); status != 200 {
		t.Errorf("next second: %d", status)
	}
	ds.AddPage("https://example.com/", deepseektest.Page{Title: "Example", Markdown: "# Example"})
	status, _, body := post(t, ds, deepseektest.FetchPath, ds.APIKey, `{"url":"https://example.com/"}`)
	var f deepseektest.FetchResponse
	if status != 200 || json.Unmarshal(body, &f) != nil || f.StatusCode != 200 || f.Content != "# Example" || f.URL != "https://example.com/" {
		t.Errorf("fetch: %d %s", status, body)
	}
	if status, _, _ := post(t, ds, deepseektest.FetchPath, ds.APIKey, `{"url":"https://example.com/"}`); status != 429 {
		t.Errorf("second fetch in one second: %d", status)
	}
	for _, tt := range []struct{ path, key, body, message string }{
		{deepseektest.SearchPath, "bad", search, "Authentication Fails, Your api key is invalid"},
		{deepseektest.SearchPath, "", `{"query":"  "}`, "query must not be empty"},
		{deepseektest.SearchPath, "", `{"query":"x","max_results":50}`, "max_results must be between 1 and 20, got 50"},
		{deepseektest.FetchPath, "", `{"url":"example.com"}`, `url must be an absolute http or https URL, got "example.com"`},
	} {
		clk.Add(time.Second)
		key := tt.key
		if key == "" {
			key = ds.APIKey
		}
		if _, msg, _ := post(t, ds, tt.path, key, tt.body); msg != tt.message {
			t.Errorf("%s %s: %q, want %q", tt.path, tt.body, msg, tt.message)
		}
	}
}

func TestMaxTokensBound(t *testing.T) {
	ds := deepseektest.New(t, deepseektest.Options{})
	body := fmt.Sprintf(hello, "deepseek-flash", `,"max_tokens":400000`)
	if status, msg, _ := post(t, ds, "/chat/completions", ds.APIKey, body); status != 400 || msg != "Invalid max_tokens value, the valid range of max_tokens is [1, 393216]" {
		t.Errorf("got %d %q", status, msg)
	}
}

// A held reply streams its first chunk and waits; the client sees the start of the reply
// before the rest is released.
func TestHeldReply(t *testing.T) {
	ds := deepseektest.New(t, deepseektest.Options{})
	hold := make(chan struct{})
	ds.Enqueue(deepseektest.Reply{Reasoning: "thinking", Text: "done", Hold: hold})
	req, _ := http.NewRequest(http.MethodPost, ds.URL+"/chat/completions", strings.NewReader(fmt.Sprintf(hello, "deepseek-flash", "")))
	req.Header.Set("Authorization", "Bearer "+ds.APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	var seen strings.Builder
	for !strings.Contains(seen.String(), `"reasoning_content":"thinking"`) {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("before release: %v (read %q)", err, seen.String())
		}
		seen.WriteString(line)
	}
	if strings.Contains(seen.String(), "done") {
		t.Fatal("the text arrived before the hold was released")
	}
	close(hold)
	rest, _ := io.ReadAll(r)
	if !strings.Contains(string(rest), `"content":"done"`) || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Errorf("after release: %s", rest)
	}
}
