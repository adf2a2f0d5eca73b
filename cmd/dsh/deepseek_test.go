package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/internal/deepseektest"
)

// deepseekSandbox is a sandbox whose model server is a DeepSeek stand-in: dsh is told the
// server is DeepSeek (DSH_PROVIDER), so it behaves as it does with api.deepseek.com.
func deepseekSandbox(t *testing.T) (*sandbox, *deepseektest.Server) {
	t.Helper()
	s := newSandbox(t)
	ds := deepseektest.New(t, deepseektest.Options{})
	s.env["DSH_BASE_URL"] = ds.URL
	s.env["DSH_PROVIDER"] = "deepseek"
	s.env["DEEPSEEK_API_KEY"] = ds.APIKey
	return s, ds
}

// A turn that searches, fetches and answers, against the stand-in: thinking is on, the
// reasoning goes back with every tool-calling message (the stand-in refuses it otherwise),
// the web tools show their cards, and the usage and its estimated cost are printed and
// kept in the log.
func TestRunAgainstDeepSeekWithWebTools(t *testing.T) {
	s, ds := deepseekSandbox(t)
	ds.SetSearch("dsh harness", deepseektest.SearchResponse{Answer: "dsh runs tool calls.", Results: []deepseektest.SearchResult{
		{URL: "https://example.com/dsh", Title: "dsh", Snippet: "A Go harness."}}})
	ds.AddPage("https://example.com/dsh", deepseektest.Page{Title: "dsh", Markdown: "dsh is a Go library and CLI."})
	ds.Enqueue(
		deepseektest.Reply{Reasoning: "Search first.", ToolCalls: []deepseektest.ToolCall{deepseektest.Call("web_search", `{"queries":["dsh harness"]}`)},
			Usage: &deepseektest.Usage{CacheHit: 0, CacheMiss: 1000, Completion: 100, Reasoning: 20}},
		deepseektest.Reply{Reasoning: "Read the page.", ToolCalls: []deepseektest.ToolCall{deepseektest.Call("web_fetch", `{"url":"https://example.com/dsh"}`)},
			Usage: &deepseektest.Usage{CacheHit: 896, CacheMiss: 300, Completion: 50, Reasoning: 10}},
		deepseektest.Reply{Text: "dsh is a Go library and CLI [dsh](https://example.com/dsh).",
			Usage: &deepseektest.Usage{CacheHit: 1152, CacheMiss: 200, Completion: 40}},
	)
	r := s.dsh("run", "what is dsh?").want(t, 0)
	if r.stdout != "dsh is a Go library and CLI [dsh](https://example.com/dsh).\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	mustContain(t, "transcript", r.stderr,
		"dsh · deepseek-flash via deepseek",
		"Search dsh harness", "1 source", "dsh — https://example.com/dsh",
		"Fetch https://example.com/dsh", "HTTP 200",
		"usage: 3,548 input tokens (2,048 cached) · 190 output (30 reasoning) · 2 web requests · ≈ ¥")
	reqs := ds.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d chat requests", len(reqs))
	}
	for i, q := range reqs {
		if q.Status != 200 || q.Model != "deepseek-flash" || q.Thinking != "enabled" || q.ReasoningEffort != "" {
			t.Errorf("request %d: status %d model %q thinking %q effort %q", i, q.Status, q.Model, q.Thinking, q.ReasoningEffort)
		}
		if !slices.Contains(q.Tools, "web_search") || !slices.Contains(q.Tools, "web_fetch") {
			t.Errorf("request %d offers %v", i, q.Tools)
		}
	}
	if n := len(ds.WebRequests()); n != 2 {
		t.Errorf("%d web requests", n)
	}
	// The log keeps the usage per step, with the model; session show sums it.
	id, _ := sessionID(t, r.stderr)
	show := s.dsh("session", "show", id).want(t, 0)
	mustContain(t, "session show", show.stdout, "Search dsh harness", "Fetch https://example.com/dsh",
		"usage: 3,548 input tokens (2,048 cached) · 190 output (30 reasoning) · 2 web requests · ≈ ¥")
	js := s.dsh("session", "show", "--json", id).want(t, 0)
	var usages []string
	for _, l := range strings.Split(strings.TrimSpace(js.stdout), "\n") {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Usage json.RawMessage `json:"usage"`
			} `json:"data"`
		}
		json.Unmarshal([]byte(l), &ev)
		if ev.Type == "assistant/message" {
			usages = append(usages, string(ev.Data.Usage))
		}
	}
	if len(usages) != 3 || usages[1] != `{"inputTokens":300,"outputTokens":50,"cacheReadTokens":896,"reasoningTokens":10,"model":"deepseek-flash"}` {
		t.Errorf("logged usage = %v", usages)
	}
}

// A second turn adds to the session's usage; session show lists each turn.
func TestUsageAcrossTurns(t *testing.T) {
	s, ds := deepseekSandbox(t)
	s.env["DSH_MODEL"] = "deepseek-v4-pro"
	ds.Enqueue(deepseektest.Reply{Text: "one", Usage: &deepseektest.Usage{CacheMiss: 1_000_000, Completion: 0}})
	r := s.dsh("run", "first").want(t, 0)
	id, _ := sessionID(t, r.stderr)
	// 1M cache-miss tokens of deepseek-v4-pro: ¥9 at peak, ¥4.50 off-peak.
	if !regexp.MustCompile(`usage: 1,000,000 input tokens · 0 output · ≈ ¥(9\.00 \(peak hours\)|4\.50 \(off-peak hours\)) \(estimated\)`).MatchString(r.stderr) {
		t.Errorf("first turn:\n%s", r.stderr)
	}
	ds.Enqueue(deepseektest.Reply{Text: "two", Usage: &deepseektest.Usage{CacheHit: 1_000_000}})
	r = s.dsh("run", "--resume", id, "second").want(t, 0)
	mustContain(t, "second turn", r.stderr, "usage: 1,000,000 input tokens (1,000,000 cached) · 0 output · ≈ ¥0.", "session so far: 2,000,000 input tokens (1,000,000 cached)")
	show := s.dsh("session", "show", id).want(t, 0)
	mustContain(t, "session show", show.stdout, "turn 1: 1,000,000 input tokens", "turn 2: 1,000,000 input tokens (1,000,000 cached)", "usage: 2,000,000 input tokens")
}

// A model priced in the configuration is estimated; one that is not says so.
func TestUsageWithConfiguredPrices(t *testing.T) {
	s, ds := deepseekSandbox(t)
	os.MkdirAll(s.home, 0o755)
	os.WriteFile(filepath.Join(s.home, "config.yaml"), []byte("pricing:\n  models: {deepseek-flash: {cacheHit: 0, cacheMiss: 100, output: 0}}\n  offPeakFactor: 1\n"), 0o644)
	ds.Enqueue(deepseektest.Reply{Text: "ok", Usage: &deepseektest.Usage{CacheMiss: 10_000}})
	r := s.dsh("run", "hi").want(t, 0)
	if !regexp.MustCompile(`usage: 10,000 input tokens · 0 output · ≈ ¥1\.00 \((peak|off-peak) hours\) \(estimated\)`).MatchString(r.stderr) {
		t.Errorf("configured price:\n%s", r.stderr)
	}

	// Another OpenAI-compatible server: no DeepSeek fields are sent, and a model the table
	// has no price for is counted but not priced.
	s2 := newSandbox(t)
	rep := textReply("Hello.")
	rep.events = append(rep.events, `{"id":"c","object":"chat.completion.chunk","model":"local-model","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`)
	srv := newChatServer(t, rep)
	r = s2.dsh("run", "--base-url", srv.srv.URL, "--model", "local-model", "hi").want(t, 0)
	mustContain(t, "unpriced model", r.stderr, "usage: 10 input tokens · 2 output · cost unknown (no price for test-model)\n")
	body := srv.requests()[0]
	if _, ok := body["thinking"]; ok || body["model"] != "local-model" {
		t.Errorf("request to a non-DeepSeek server: %v", body)
	}
	if _, ok := body["reasoning_effort"]; ok {
		t.Errorf("request to a non-DeepSeek server: %v", body)
	}
}

func TestRetiredModelFailsBeforeAnyRequest(t *testing.T) {
	for _, model := range []string{"deepseek-chat", "deepseek-reasoner"} {
		s, ds := deepseekSandbox(t)
		r := s.dsh("run", "--model", model, "hi").want(t, 1)
		mustContain(t, model, r.stderr, `model "`+model+`" was retired by DeepSeek on 2026-07-24`, `use "deepseek-flash" instead`)
		if n := len(ds.Requests()); n != 0 {
			t.Errorf("%s: %d requests were made", model, n)
		}
		if strings.Count(r.stderr, "retired") != 1 {
			t.Errorf("%s: the error is printed more than once:\n%s", model, r.stderr)
		}
	}
}

func TestThinkingFlags(t *testing.T) {
	s, ds := deepseekSandbox(t)
	ds.Enqueue(deepseektest.Text("fast"))
	r := s.dsh("run", "--thinking", "disabled", "--reasoning-effort", "high", "--model", "deepseek-v4-pro", "hi").want(t, 0)
	q := ds.Requests()[0]
	if q.Thinking != "disabled" || q.ReasoningEffort != "high" || q.Model != "deepseek-v4-pro" {
		t.Errorf("request: thinking %q effort %q model %q", q.Thinking, q.ReasoningEffort, q.Model)
	}
	if r.stdout != "fast\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	bad := s.dsh("run", "--thinking", "maybe", "hi").want(t, 2)
	mustContain(t, "bad flag", bad.stderr, `flag --thinking: thinking must be "enabled" or "disabled", got "maybe"`)
}

// Only 429, 5xx and connection failures are retried, and the count is the requests made.
func TestRunRetriesOnlyTransientFailures(t *testing.T) {
	tests := []struct {
		name     string
		replies  []deepseektest.Reply
		requests int
		want     string
	}{
		{"400", []deepseektest.Reply{deepseektest.Fail(400)}, 1, "rejected the request (HTTP 400): Invalid request (INVALID_REQUEST)\n"},
		{"401", []deepseektest.Reply{deepseektest.Fail(401)}, 1, "the API key was rejected by"},
		{"401 in the stream", []deepseektest.Reply{{Status: 401, InBand: true}}, 1, "reported an error in the middle of the stream (HTTP 401): Authentication Fails, Your api key is invalid (check DEEPSEEK_API_KEY)"},
		{"400 in the stream", []deepseektest.Reply{{Status: 400, InBand: true, Message: "bad"}}, 1, "(HTTP 400): bad (INVALID_REQUEST)\n"},
		{"503 then ok", []deepseektest.Reply{{Status: 503, RetryAfter: time.Millisecond}, deepseektest.Text("ok")}, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ds := deepseekSandbox(t)
			ds.Enqueue(tt.replies...)
			r := s.dsh("run", "hi")
			if n := len(ds.Requests()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			if tt.want == "" {
				r.want(t, 0)
				return
			}
			r.want(t, 1)
			mustContain(t, "error", r.stderr, tt.want)
			if strings.Contains(r.stderr, "attempts") {
				t.Errorf("one request, but the error counts attempts:\n%s", r.stderr)
			}
		})
	}
}

func TestCallWebSearch(t *testing.T) {
	s, ds := deepseekSandbox(t)
	r := s.dsh("call", "web_search", `{"queries":["go modules"]}`).want(t, 0)
	mustContain(t, "card", r.stdout, "Search go modules", "3 sources", "About go modules — https://example.com/go-modules")
	if n := len(ds.WebRequests()); n != 1 {
		t.Errorf("%d web requests", n)
	}
	js := s.dsh("call", "--json", "web_fetch", `{"url":"https://example.com/none"}`).want(t, 0)
	mustContain(t, "json", js.stdout, `"statusCode":404`)
	bad := s.dsh("call", "web_fetch", `{"url":"ftp://example.com"}`).want(t, 1)
	mustContain(t, "bad url", bad.stdout+bad.stderr, `url "ftp://example.com" is not an absolute http or https URL`)
}

// A page longer than the inline limit is spilled like any tool's output.
func TestLongPageIsSpilled(t *testing.T) {
	s, ds := deepseekSandbox(t)
	s.env["DSH_SPILL_DIR"] = t.TempDir()
	ds.AddPage("https://example.com/long", deepseektest.Page{Markdown: strings.Repeat("A long line of Markdown.\n", 4000)})
	r := s.dsh("call", "--json", "web_fetch", `{"url":"https://example.com/long"}`).want(t, 0)
	m := policySpill.FindStringSubmatch(strings.ReplaceAll(r.stdout, `\n`, "\n"))
	if m == nil {
		t.Fatalf("the long page was not spilled:\n%.600s", r.stdout)
	}
	data, err := os.ReadFile(m[1])
	if err != nil || !strings.HasPrefix(string(data), "Fetched https://example.com/long (HTTP 200)") || len(data) < 100_000 {
		t.Errorf("spill file %s: %d bytes, %v", m[1], len(data), err)
	}
}

// The web tools are DeepSeek's: not offered for another server unless web.baseUrl names one.
func TestWebToolsOnlyWhereTheAPIsAre(t *testing.T) {
	s := newSandbox(t)
	s.env["DSH_BASE_URL"] = "http://127.0.0.1:9/v1"
	r := s.dsh("tools", "--json").want(t, 0)
	if strings.Contains(r.stdout, "web_search") {
		t.Errorf("web_search offered for a non-DeepSeek server")
	}
	s.dsh("call", "web_search", `{"queries":["x"]}`).want(t, 1)

	ds := deepseektest.New(t, deepseektest.Options{})
	s.env["DSH_WEB_BASE_URL"] = ds.URL
	s.env["DEEPSEEK_API_KEY"] = ds.APIKey
	r = s.dsh("tools", "--json").want(t, 0)
	mustContain(t, "tools", r.stdout, "web_search", "web_fetch")
	s.dsh("call", "web_search", `{"queries":["x"]}`).want(t, 0)

	// No key: a clear error naming the variable, and no request.
	delete(s.env, "DEEPSEEK_API_KEY")
	miss := s.dsh("call", "web_fetch", `{"url":"https://example.com/"}`).want(t, 1)
	mustContain(t, "missing key", miss.stdout+miss.stderr, "DEEPSEEK_API_KEY is not set")
	if n := len(ds.WebRequests()); n != 1 {
		t.Errorf("%d web requests", n)
	}
}

// The web tools pass the permission rules like every tool: a deny rule on a URL pattern
// stops the call before any request, and an ask rule without a terminal denies it.
func TestWebToolsFollowPermissionRules(t *testing.T) {
	s, ds := deepseekSandbox(t)
	r := s.dsh("call", "--deny", "web_fetch(https://blocked.example.com/*)", "web_fetch", `{"url":"https://blocked.example.com/page"}`).want(t, 1)
	mustContain(t, "deny", r.stdout+r.stderr, "web_fetch(https://blocked.example.com/*)")
	r = s.dsh("call", "--ask", "web_search", "web_search", `{"queries":["x"]}`).want(t, 1)
	if n := len(ds.WebRequests()); n != 0 {
		t.Errorf("%d web requests were made:\n%s", n, r.stdout+r.stderr)
	}
	s.dsh("call", "--deny", "web_fetch(https://blocked.example.com/*)", "web_fetch", `{"url":"https://example.com/"}`).want(t, 0)
}
