package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/internal/deepseektest"
	"github.com/dsh-go/dsh/tool"
	"github.com/dsh-go/dsh/tools/web"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is the stand-in's clock; the tools' Sleep advances it instead of waiting.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	slept  []time.Duration
	cancel bool // Sleep reports the context as ended instead of waiting
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept = append(c.slept, d)
	if c.cancel {
		return context.Canceled
	}
	c.now = c.now.Add(d)
	return ctx.Err()
}

func (c *fakeClock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// env is a registry with the web tools on a stand-in.
type env struct {
	ds    *deepseektest.Server
	reg   *tool.Registry
	clock *fakeClock
}

func newEnv(t *testing.T, opts deepseektest.Options, cfg web.Config) *env {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)}
	opts.Now = clock.Now
	ds := deepseektest.New(t, opts)
	if cfg.BaseURL == "" {
		cfg.BaseURL = ds.URL
	}
	if cfg.APIKey == "" {
		cfg.APIKey = ds.APIKey
	}
	cfg.Sleep = clock.Sleep
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	undo, err := web.Install(reg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(undo)
	return &env{ds: ds, reg: reg, clock: clock}
}

func (e *env) call(t *testing.T, name, args string) *tool.Result {
	t.Helper()
	return e.callCtx(context.Background(), name, args)
}

func (e *env) callCtx(ctx context.Context, name, args string) *tool.Result {
	return e.reg.Execute(ctx, tool.Input{CallID: "c1", Name: name, Args: tool.ParseArguments(args)})
}

func text(r *tool.Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func code(r *tool.Result) string {
	if r.Error == nil || r.Error.Info == nil {
		return ""
	}
	return r.Error.Info.Code
}

func resultCard(t *testing.T, reg *tool.Registry, name, args string, r *tool.Result) *card.Result {
	t.Helper()
	def := lookup(reg, name)
	if def == nil || def.PresentResult == nil {
		t.Fatalf("%s has no result card", name)
	}
	return def.PresentResult(tool.ParseArguments(args), card.ToolResult{Content: r.Content, IsError: r.IsError, Meta: r.Meta})
}

func TestSearchOneQuery(t *testing.T) {
	e := newEnv(t, deepseektest.Options{}, web.Config{})
	e.ds.SetSearch("go generics", deepseektest.SearchResponse{
		Answer: "Go has had generics since 1.18.",
		Results: []deepseektest.SearchResult{
			{URL: "https://go.dev/doc/tutorial/generics", Title: "Tutorial: Getting started with generics", Snippet: "This tutorial introduces the basics of generics in Go.", PublishedAt: "2022-03-15"},
			{URL: "https://go.dev/blog/intro-generics"},
		},
	})
	args := `{"queries":["go generics"]}`
	r := e.call(t, "web_search", args)
	if r.IsError {
		t.Fatalf("web_search failed: %s", text(r))
	}
	want := "Go has had generics since 1.18.\n\nSources:\n" +
		"- [Tutorial: Getting started with generics](https://go.dev/doc/tutorial/generics) — This tutorial introduces the basics of generics in Go. (2022-03-15)\n" +
		"- [https://go.dev/blog/intro-generics](https://go.dev/blog/intro-generics)\n\n" +
		"Cite the URLs you use as markdown links."
	if got := text(r); got != want {
		t.Errorf("content:\n%s\nwant:\n%s", got, want)
	}
	c := resultCard(t, e.reg, "web_search", args, r)
	if c == nil || c.Card != card.Web || c.WebKind != "search" || len(c.Sources) != 2 || c.Answer == "" || c.Sources[0].PublishedAt != "2022-03-15" {
		t.Errorf("card = %+v", c)
	}
	reqs := e.ds.WebRequests()
	if len(reqs) != 1 || reqs[0].Path != deepseektest.SearchPath || reqs[0].Header.Get("Authorization") != "Bearer "+e.ds.APIKey {
		t.Fatalf("requests = %+v", reqs)
	}
	var body map[string]any
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil || body["query"] != "go generics" || body["max_results"] != float64(8) {
		t.Errorf("request body = %s", reqs[0].Body)
	}
}

func TestSearchMergesQueriesByRank(t *testing.T) {
	e := newEnv(t, deepseektest.Options{}, web.Config{MaxResults: 3})
	src := func(urls ...string) deepseektest.SearchResponse {
		r := deepseektest.SearchResponse{}
		for _, u := range urls {
			r.Results = append(r.Results, deepseektest.SearchResult{URL: u})
		}
		return r
	}
	e.ds.SetSearch("a", src("https://a/1", "https://shared", "https://a/3"))
	e.ds.SetSearch("b", src("https://shared", "https://b/2"))
	r := e.call(t, "web_search", `{"queries":["a","b","a"]}`)
	if r.IsError {
		t.Fatal(text(r))
	}
	var out web.SearchOutput
	b, _ := json.Marshal(r.Value)
	json.Unmarshal(b, &out)
	var urls []string
	for _, s := range out.Sources {
		urls = append(urls, s.URL)
	}
	// Rank 1 of a, rank 1 of b, rank 2 of a (shared, seen), rank 2 of b — then the cap.
	if strings.Join(urls, " ") != "https://a/1 https://shared https://b/2" || !out.Truncated {
		t.Errorf("sources = %v, truncated %v", urls, out.Truncated)
	}
	if n := len(e.ds.WebRequests()); n != 2 {
		t.Errorf("%d requests: a repeated query must run once", n)
	}
}

func TestFetch(t *testing.T) {
	e := newEnv(t, deepseektest.Options{}, web.Config{})
	e.ds.AddPage("https://example.com/a", deepseektest.Page{Title: "A", Markdown: "Some *text*.", FinalURL: "https://example.com/a/"})
	args := `{"url":"https://example.com/a"}`
	r := e.call(t, "web_fetch", args)
	if r.IsError {
		t.Fatal(text(r))
	}
	if got, want := text(r), "Fetched https://example.com/a/ (HTTP 200)\n\n# A\n\nSome *text*."; got != want {
		t.Errorf("content %q, want %q", got, want)
	}
	c := resultCard(t, e.reg, "web_fetch", args, r)
	if c == nil || c.WebKind != "fetch" || c.URL != "https://example.com/a/" || c.StatusCode != 200 {
		t.Errorf("card = %+v", c)
	}
	// A page the site answers with 404 is a result, not a failure.
	r = e.call(t, "web_fetch", `{"url":"https://example.com/missing"}`)
	if r.IsError || !strings.HasPrefix(text(r), "Fetched https://example.com/missing (HTTP 404)") {
		t.Errorf("missing page: %v %q", r.IsError, text(r))
	}
}

func TestBadArgumentsAndConfiguration(t *testing.T) {
	tests := []struct {
		name, tool, args string
		cfg              web.Config
		code             string
		message          string
	}{
		{"no queries", "web_search", `{"queries":[]}`, web.Config{}, web.CodeInvalidArgs, "at least one query"},
		{"too many queries", "web_search", `{"queries":["a","b","c","d","e"]}`, web.Config{}, web.CodeInvalidArgs, "at most 4 queries, got 5"},
		{"blank query", "web_search", `{"queries":["a"," "]}`, web.Config{}, web.CodeInvalidArgs, "queries[1] is blank"},
		{"not a URL", "web_fetch", `{"url":"file:///etc/passwd"}`, web.Config{}, web.CodeInvalidArgs, `"file:///etc/passwd" is not an absolute http or https URL`},
		{"empty URL", "web_fetch", `{"url":""}`, web.Config{}, web.CodeInvalidArgs, "url must be a non-empty string"},
		{"no key", "web_fetch", `{"url":"https://x.org"}`, web.Config{APIKey: " ", APIKeyEnv: "MY_KEY"}, web.CodeMissingAPIKey, "MY_KEY is not set"},
		{"no endpoint", "web_search", `{"queries":["a"]}`, web.Config{BaseURL: "-"}, web.CodeNoEndpoint, "web.baseUrl"},
		{"wrong endpoint", "web_search", `{"queries":["a"]}`, web.Config{BaseURL: "+/nothing"}, web.CodeNoEndpoint, "was not found (HTTP 404)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			var e *env
			switch cfg.BaseURL {
			case "-":
				// No endpoint: a registry without one.
				reg, _ := tool.NewRegistry(tool.Config{})
				undo, err := web.Install(reg, web.Config{APIKey: "k"})
				if err != nil {
					t.Fatal(err)
				}
				defer undo()
				ds := deepseektest.New(t, deepseektest.Options{})
				e = &env{ds: ds, reg: reg}
			case "+/nothing":
				ds := deepseektest.New(t, deepseektest.Options{})
				cfg.BaseURL = ds.URL + "/nothing"
				e = newEnv(t, deepseektest.Options{}, cfg)
				e.ds = ds
			default:
				if cfg.APIKey == " " {
					cfg.APIKey = ""
					e = newEnv(t, deepseektest.Options{APIKey: "unused"}, web.Config{APIKeyEnv: cfg.APIKeyEnv, APIKey: ""})
					// newEnv filled the key in; install a keyless registry on the same stand-in.
					reg, _ := tool.NewRegistry(tool.Config{})
					undo, err := web.Install(reg, web.Config{BaseURL: e.ds.URL, APIKeyEnv: cfg.APIKeyEnv})
					if err != nil {
						t.Fatal(err)
					}
					defer undo()
					e.reg = reg
				} else {
					e = newEnv(t, deepseektest.Options{}, cfg)
				}
			}
			r := e.call(t, tt.tool, tt.args)
			if !r.IsError || code(r) != tt.code || !strings.Contains(text(r), tt.message) {
				t.Errorf("result %v %s %q, want %s containing %q", r.IsError, code(r), text(r), tt.code, tt.message)
			}
			if tt.code != web.CodeNoEndpoint && len(e.ds.WebRequests()) != 0 {
				t.Errorf("a request was made: %+v", e.ds.WebRequests())
			}
		})
	}
}

func TestInstallRejectsBadConfig(t *testing.T) {
	for _, cfg := range []web.Config{{BaseURL: "ftp://x"}, {BaseURL: "localhost:8080"}, {MaxResults: 21}, {MaxQueries: -1}} {
		reg, _ := tool.NewRegistry(tool.Config{})
		if _, err := web.Install(reg, cfg); err == nil {
			t.Errorf("Install(%+v) accepted it", cfg)
		}
	}
}

// The Fetch API's per-second limit answers 429; the tool waits (on the fake clock) and
// retries, so the call succeeds.
func TestRateLimitIsRetriedWithBackoff(t *testing.T) {
	e := newEnv(t, deepseektest.Options{FetchQPS: 1}, web.Config{})
	e.ds.AddPage("https://example.com/", deepseektest.Page{Markdown: "hi"})
	if r := e.call(t, "web_fetch", `{"url":"https://example.com/"}`); r.IsError {
		t.Fatal(text(r))
	}
	r := e.call(t, "web_fetch", `{"url":"https://example.com/"}`) // same second: limited
	if r.IsError {
		t.Fatalf("second fetch failed: %s", text(r))
	}
	statuses := []int{}
	for _, q := range e.ds.WebRequests() {
		statuses = append(statuses, q.Status)
	}
	if fmt.Sprint(statuses) != "[200 429 200]" {
		t.Errorf("statuses = %v", statuses)
	}
	if s := e.clock.Slept(); len(s) != 1 || s[0] != time.Second { // the API's Retry-After
		t.Errorf("slept %v", s)
	}
}

func TestRetriesAreBoundedAndCounted(t *testing.T) {
	tests := []struct {
		name     string
		fail     []deepseektest.Reply
		code     string
		requests int
		slept    []time.Duration
	}{
		{"429 every time", repeat(deepseektest.Reply{Status: 429}, 5), web.CodeRateLimit, 3, []time.Duration{time.Second, 2 * time.Second}},
		{"503 then ok", []deepseektest.Reply{{Status: 503}}, "", 2, []time.Duration{time.Second}},
		{"401", []deepseektest.Reply{{Status: 401}}, web.CodeAuth, 1, nil},
		{"400", []deepseektest.Reply{{Status: 400, Message: "bad query"}}, web.CodeRejected, 1, nil},
		{"Retry-After too long", []deepseektest.Reply{{Status: 429, RetryAfter: time.Hour}}, web.CodeRateLimit, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, deepseektest.Options{}, web.Config{MaxRetries: 2})
			e.ds.FailWeb(deepseektest.SearchPath, tt.fail...)
			r := e.call(t, "web_search", `{"queries":["q"]}`)
			n := len(e.ds.WebRequests())
			if n != tt.requests || fmt.Sprint(e.clock.Slept()) != fmt.Sprint(tt.slept) {
				t.Errorf("%d requests, slept %v; want %d, %v", n, e.clock.Slept(), tt.requests, tt.slept)
			}
			if tt.code == "" {
				if r.IsError {
					t.Fatal(text(r))
				}
				return
			}
			msg := text(r)
			if !r.IsError || code(r) != tt.code {
				t.Fatalf("result %s %q, want %s", code(r), msg, tt.code)
			}
			if counted := strings.Contains(msg, fmt.Sprintf("(gave up after %d attempts)", n)); counted != (n > 1) {
				t.Errorf("message %q with %d requests", msg, n)
			}
		})
	}
}

// By default a rate-limited request is retried four times, waiting 1, 2, 4 and 8 seconds.
func TestDefaultRetries(t *testing.T) {
	e := newEnv(t, deepseektest.Options{}, web.Config{})
	e.ds.FailWeb(deepseektest.FetchPath, repeat(deepseektest.Reply{Status: 429}, 9)...)
	r := e.call(t, "web_fetch", `{"url":"https://example.com/"}`)
	if !r.IsError || code(r) != web.CodeRateLimit || !strings.HasSuffix(text(r), "(gave up after 5 attempts)") || len(e.ds.WebRequests()) != 5 {
		t.Errorf("%s %q after %d requests", code(r), text(r), len(e.ds.WebRequests()))
	}
	if got := fmt.Sprint(e.clock.Slept()); got != "[1s 2s 4s 8s]" {
		t.Errorf("slept %s", got)
	}
}

// A server that cannot be reached is retried like a 429, then reported.
func TestUnreachableAPI(t *testing.T) {
	ds := deepseektest.New(t, deepseektest.Options{})
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	e := newEnv(t, deepseektest.Options{}, web.Config{BaseURL: closed.URL, MaxRetries: 1})
	e.ds = ds
	r := e.call(t, "web_search", `{"queries":["x"]}`)
	msg := text(r)
	if !r.IsError || code(r) != web.CodeTransport || !strings.Contains(msg, "could not reach "+closed.URL+"/v1/tools/search: dial tcp") ||
		!strings.HasSuffix(msg, "(gave up after 2 attempts)") || strings.Contains(msg, "Post ") {
		t.Errorf("%s %q", code(r), msg)
	}
}

func repeat(r deepseektest.Reply, n int) []deepseektest.Reply {
	out := make([]deepseektest.Reply, n)
	for i := range out {
		out[i] = r
	}
	return out
}

// A call cancelled while it waits to retry ends at once as WEB_ABORTED.
func TestCancelledWhileWaiting(t *testing.T) {
	e := newEnv(t, deepseektest.Options{}, web.Config{})
	e.clock.cancel = true
	e.ds.FailWeb(deepseektest.FetchPath, deepseektest.Reply{Status: 429})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := e.callCtx(ctx, "web_fetch", `{"url":"https://example.com/"}`)
	if !r.IsError || code(r) != web.CodeAborted || len(e.ds.WebRequests()) != 1 {
		t.Errorf("result %v %s %q after %d requests", r.IsError, code(r), text(r), len(e.ds.WebRequests()))
	}
}

// Several web calls at once are safe (run with -race) and each gets its own page.
func TestConcurrentCalls(t *testing.T) {
	e := newEnv(t, deepseektest.Options{}, web.Config{})
	const n = 12
	for i := range n {
		e.ds.AddPage(fmt.Sprintf("https://example.com/%d", i), deepseektest.Page{Markdown: fmt.Sprintf("page %d", i)})
	}
	var wg sync.WaitGroup
	results := make([]*tool.Result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.reg.Execute(context.Background(), tool.Input{CallID: fmt.Sprint("c", i), Name: "web_fetch",
				Args: tool.ParseArguments(fmt.Sprintf(`{"url":"https://example.com/%d"}`, i))})
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.IsError || !strings.HasSuffix(text(r), fmt.Sprintf("page %d", i)) {
			t.Errorf("call %d: %q", i, text(r))
		}
	}
	for name, args := range map[string]string{"web_search": `{"queries":["a"]}`, "web_fetch": `{"url":"https://x.org"}`} {
		if def := lookup(e.reg, name); def == nil || def.ConcurrencySafe == nil || !def.ConcurrencySafe(tool.ParseArguments(args)) {
			t.Errorf("%s is not concurrency-safe", name)
		}
	}
}

// One failed query fails the search and cancels the others.
func TestOneFailedQueryFailsTheSearch(t *testing.T) {
	e := newEnv(t, deepseektest.Options{}, web.Config{MaxRetries: -1})
	e.ds.FailWeb(deepseektest.SearchPath, deepseektest.Reply{Status: 400, Message: "bad query"})
	r := e.call(t, "web_search", `{"queries":["a","b"]}`)
	if !r.IsError || code(r) != web.CodeRejected || !strings.Contains(text(r), "bad query") || !strings.Contains(text(r), "query \"") {
		t.Errorf("result %s %q", code(r), text(r))
	}
}

func lookup(reg *tool.Registry, name string) *tool.Definition {
	for _, d := range reg.Definitions(reg.Global()) {
		if d.Name == name {
			return d
		}
	}
	return nil
}
