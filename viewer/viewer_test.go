package viewer_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
	"github.com/dsh-go/dsh/viewer"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, client *http.Client, u string, mod func(*http.Request)) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testwait.Context(t), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(req)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func mustContain(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

func TestSessionPageRendersEveryCard(t *testing.T) {
	store := newStore(t)
	id, _ := record(t, store, false)
	srv := serve(t, viewer.Options{Store: store})
	resp, body := get(t, http.DefaultClient, srv.URL+"/session/"+id, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	mustContain(t, "session page", body,
		"fix the &lt;b&gt;failing&lt;/b&gt; test", // the user's message, escaped
		"Let me look.",
		"1 match in 1 file", "<td class=\"no\">4</td>", // the search card
		"Edit main.go", `<td class="del"><pre>	println(&#34;old side&#34;)</pre>`, `<td class="ins"><pre>	println(&#34;new side&#34;)</pre>`, // the diff, both sides
		`<pre class="command">make test</pre>`, "run the tests · in /work/app", "exit 0", // the shell card
		"Go documentation", `<a href="https://go.dev/doc/"`, // a web source
		"Count the lines", `id="subs-c5"`, "read {&#34;file_path&#34;:&#34;a.txt&#34;}", "read {&#34;file_path&#34;:&#34;missing.txt&#34;} → no such file", // Code Mode with its sub-calls
		"needs approval: matches ask rule bash(git push*)", "✗ rejected: not on Fridays", // the approval and its answer
		"— turn 1 completed",
		"tokens 1200 in, 85 out",
	)
	// The sub-calls are nested in their run_code card.
	runCode := body[strings.Index(body, `data-call="c5"`):]
	runCode = runCode[:strings.Index(runCode, `data-call="c5"`[:0]+"</div>\n</div>")]
	if !strings.Contains(runCode, "missing.txt") {
		t.Errorf("the sub-calls are not inside the run_code card:\n%s", runCode)
	}
}

func TestHostileOutputIsInert(t *testing.T) {
	store := newStore(t)
	id, _ := record(t, store, false)
	srv := serve(t, viewer.Options{Store: store})
	_, body := get(t, http.DefaultClient, srv.URL+"/session/"+id, nil)
	for _, bad := range []string{"<script>window", "<img src=x", "onerror=\"", `href="javascript:`, "\x1b", "\x07"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page carries %q", bad)
		}
	}
	mustContain(t, "escaped output", body,
		"&lt;script&gt;window.pwned = 1&lt;/script&gt;",
		"^[[31mred^[[0m", // ANSI shown as inert text
		"evil source",    // the javascript: source is text, not a link
	)
	if strings.Count(body, "<script") != 1 || !strings.Contains(body, `<script src="/static/app.js" defer></script>`) {
		t.Errorf("the page has a script besides the viewer's own")
	}
}

func TestSecurityHeaders(t *testing.T) {
	store := newStore(t)
	id, _ := record(t, store, false)
	srv := serve(t, viewer.Options{Store: store})
	for _, path := range []string{"/", "/session/" + id, "/static/app.js", "/nowhere", "/session/nope"} {
		resp, _ := get(t, http.DefaultClient, srv.URL+path, nil)
		if got := resp.Header.Get("Content-Security-Policy"); got != "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'" {
			t.Errorf("%s: CSP = %q", path, got)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options = %q", path, got)
		}
	}
	resp, _ := get(t, http.DefaultClient, srv.URL+"/static/app.js", nil)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("app.js Content-Type = %q", ct)
	}
}

func TestListPage(t *testing.T) {
	store := newStore(t)
	id, _ := record(t, store, false)
	live, _ := record(t, store, true)
	srv := serve(t, viewer.Options{Store: store})
	resp, body := get(t, http.DefaultClient, srv.URL+"/", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	mustContain(t, "list", body, "/session/"+id, "/session/"+live, "/work/app", "fix the &lt;b&gt;failing&lt;/b&gt; test",
		`badge-completed">completed`, `badge-live">live`, "1200 / 85")
}

func TestErrors(t *testing.T) {
	store := newStore(t)
	id, _ := record(t, store, false)
	srv := serve(t, viewer.Options{Store: store})
	tests := []struct {
		name, path string
		code       int
		want       string
	}{
		{"unknown session", "/session/nope", 404, "no session &#34;nope&#34;"},
		{"unknown page", "/nowhere", 404, "no page at /nowhere"},
		{"invalid id", "/session/%FF%FE", 400, "invalid id"},
		{"bad from", "/session/" + id + "/events?from=-1", 400, "want a non-negative event index, got &#34;-1&#34;"},
		{"bad from text", "/session/" + id + "/events?from=x", 400, "want a non-negative event index"},
		{"prefix", "/session/" + id[:6], 200, id},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, http.DefaultClient, srv.URL+tt.path, nil)
			if resp.StatusCode != tt.code || !strings.Contains(body, tt.want) {
				t.Fatalf("%s: %d, want %d with %q:\n%s", tt.path, resp.StatusCode, tt.code, tt.want, body)
			}
		})
	}
}

func TestHostCheckWithoutToken(t *testing.T) {
	store := newStore(t)
	srv := serve(t, viewer.Options{Store: store})
	for host, want := range map[string]int{"localhost:8377": 200, "127.0.0.1": 200, "[::1]:80": 200, "evil.example:8377": 403, "10.0.0.1:8377": 403} {
		resp, body := get(t, http.DefaultClient, srv.URL+"/", func(r *http.Request) { r.Host = host })
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d: %s", host, resp.StatusCode, want, body)
		}
	}
}

func TestToken(t *testing.T) {
	store := newStore(t)
	srv := serve(t, viewer.Options{Store: store, Token: "s3cret-token"})
	tests := []struct {
		name   string
		path   string
		cookie string
		code   int
	}{
		{"none", "/", "", 401},
		{"wrong query", "/?token=guess", "", 401},
		{"wrong cookie", "/", "guess", 401},
		{"prefix of the token", "/?token=s3cret", "", 401},
		{"cookie", "/", "s3cret-token", 200},
		{"query sets the cookie", "/?token=s3cret-token", "", 303},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := get(t, noRedirect, srv.URL+tt.path, func(r *http.Request) {
				r.Host = "evil.example" // with a token, any host name is fine
				if tt.cookie != "" {
					r.AddCookie(&http.Cookie{Name: viewer.TokenCookie, Value: tt.cookie})
				}
			})
			if resp.StatusCode != tt.code {
				t.Fatalf("%d, want %d", resp.StatusCode, tt.code)
			}
			if tt.code == 303 {
				if loc := resp.Header.Get("Location"); loc != "/" {
					t.Errorf("redirect to %q, want / without the token", loc)
				}
				c := resp.Cookies()
				if len(c) != 1 || c[0].Value != "s3cret-token" || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode {
					t.Errorf("cookie = %+v", c)
				}
			}
		})
	}
}

// post submits an approval form.
func post(t *testing.T, u string, form url.Values, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testwait.Context(t), http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// csrfOf reads the form secret from a page.
func csrfOf(t *testing.T, body string) string {
	t.Helper()
	const mark = `name="csrf" value="`
	i := strings.Index(body, mark)
	if i < 0 {
		t.Fatalf("no approval form on the page")
	}
	rest := body[i+len(mark):]
	return rest[:strings.IndexByte(rest, '"')]
}

func TestApproveFromThePage(t *testing.T) {
	ctx := testwait.Context(t)
	store := newStore(t)
	l, err := store.Create(ctx, session.Header{Cwd: "/work/app"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := &recorder{t: t, log: l}
	r.add(session.TurnStart{Turn: 1}.Event())
	r.add(session.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "bash", Arguments: `{"command":"git push"}`}.Event())
	sockets := t.TempDir()
	ch, err := approval.ListenSession(sockets, l.Header().ID)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	svc, err := approval.New(approval.Config{Prompter: ch, Auditor: approval.NewSessionAuditor(l)})
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{})
	ch.Asked = func(approval.Question) { l.Flush(); close(asked) }
	decided := make(chan tool.ApprovalOutcome, 1)
	go func() {
		out, _ := svc.Approve(ctx, tool.ApprovalRequest{ToolName: "bash", CallID: "c1", Reason: "matches ask rule"})
		decided <- out
	}()
	testwait.Recv(t, asked, "the question")
	srv := serve(t, viewer.Options{Store: store, Approvals: sockets})
	page := srv.URL + "/session/" + l.Header().ID
	_, body := get(t, http.DefaultClient, page, nil)
	mustContain(t, "page", body, "needs approval: matches ask rule", "Allow once", "Reject")
	csrf := csrfOf(t, body)
	action := page + "/approve"
	tests := []struct {
		name   string
		form   url.Values
		origin string
		code   int
		want   string
	}{
		{"no secret", url.Values{"callId": {"c1"}, "decision": {"yes"}}, "", 403, "did not come from this viewer"},
		{"wrong secret", url.Values{"csrf": {"x" + csrf[1:]}, "callId": {"c1"}, "decision": {"yes"}}, "", 403, "did not come from this viewer"},
		{"other site", url.Values{"csrf": {csrf}, "callId": {"c1"}, "decision": {"yes"}}, "http://evil.example", 403, "from another site"},
		{"bad decision", url.Values{"csrf": {csrf}, "callId": {"c1"}, "decision": {"maybe"}}, "", 400, "decision must be"},
		{"no call", url.Values{"csrf": {csrf}, "decision": {"yes"}}, "", 400, "the call id is empty"},
		{"unknown call", url.Values{"csrf": {csrf}, "callId": {"c9"}, "decision": {"yes"}}, "", 409, "no question about call &#34;c9&#34;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := post(t, action, tt.form, tt.origin)
			if code != tt.code || !strings.Contains(body, tt.want) {
				t.Fatalf("%d, want %d with %q:\n%s", code, tt.code, tt.want, body)
			}
		})
	}
	code, body := post(t, action, url.Values{"csrf": {csrf}, "callId": {"c1"}, "decision": {"no"}, "reason": {"not today"}}, srv.URL)
	if code != 303 {
		t.Fatalf("answer: %d %s", code, body)
	}
	if got := testwait.Recv(t, decided, "the decision"); got != tool.ApprovalRejected {
		t.Fatalf("outcome = %s", got)
	}
}

func TestApproveNeedsARunningSession(t *testing.T) {
	store := newStore(t)
	id, _ := record(t, store, false)
	sockets := t.TempDir()
	srv := serve(t, viewer.Options{Store: store, Approvals: sockets})
	// A page of a live session with an open question shows the form; take its secret there.
	live, r := record(t, store, true)
	r.add(session.ApprovalAsked{ID: "q2", ToolName: "bash", CallID: "c9"}.Event())
	_, body := get(t, http.DefaultClient, srv.URL+"/session/"+live, nil)
	mustContain(t, "live page without a socket", body, "waiting for an answer in the terminal that runs the session")
	if strings.Contains(body, `name="csrf"`) {
		t.Fatalf("a session without an approval socket offers the form")
	}
	// The secret is the server's; a page with a form gives it away, so make one.
	ch, err := approval.ListenSession(sockets, live)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	_, body = get(t, http.DefaultClient, srv.URL+"/session/"+live, nil)
	csrf := csrfOf(t, body)
	code, body := post(t, srv.URL+"/session/"+id+"/approve", url.Values{"csrf": {csrf}, "callId": {"c6"}, "decision": {"yes"}}, "")
	if code != 409 || !strings.Contains(body, "takes no answers from this page") {
		t.Fatalf("%d: %s", code, body)
	}
}

// readSSE reads server-sent events until one of type want arrives, returning its data.
func readSSE(t *testing.T, sc *bufio.Scanner, want string) string {
	t.Helper()
	var typ string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && typ == want:
			return strings.TrimPrefix(line, "data: ")
		}
	}
	t.Fatalf("the stream ended before a %q event: %v", want, sc.Err())
	return ""
}

func TestEventsFollowALiveSession(t *testing.T) {
	ctx, cancel := context.WithCancel(testwait.Context(t))
	defer cancel()
	store := newStore(t)
	id, r := record(t, store, true)
	srv := serve(t, viewer.Options{Store: store})
	n := len(r.log.Events())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/session/"+id+"/events?from="+itoa(n), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	if got := readSSE(t, sc, "status"); !strings.Contains(got, `"live":true`) {
		t.Fatalf("status = %s", got)
	}
	r.add(session.TurnStart{Turn: 2}.Event())
	r.user("and now <script>window.pwned=5</script>")
	got := readSSE(t, sc, "ev")
	if !strings.Contains(got, `and now \u0026lt;script\u0026gt;`) {
		t.Fatalf("event = %s", got)
	}
	r.add(session.ToolCall{Turn: 2, Step: 1, CallID: "c7", Name: "run_code", Arguments: `{"code":"1"}`}.Event())
	readSSE(t, sc, "ev")
	r.add(session.CodeDispatch{RootCallID: "c7", ParentCallID: "c7", SubCallID: "c7:code:1", Name: "read", Arguments: map[string]any{}, Content: content0()}.Event())
	got = readSSE(t, sc, "ev")
	if !strings.Contains(got, `"parent":"c7"`) {
		t.Fatalf("sub-call event = %s", got)
	}
	// The writer closes the log: the stream says the session stopped.
	if err := r.log.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readSSE(t, sc, "status"); !strings.Contains(got, `"live":false`) {
		t.Fatalf("status = %s", got)
	}
}

func TestRecordedSessionShowsRecovery(t *testing.T) {
	store := newStore(t)
	l, err := store.Create(context.Background(), session.Header{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{t: t, log: l}
	r.add(session.TurnStart{Turn: 1}.Event())
	r.user("a turn dsh never finished")
	l.Close()
	srv := serve(t, viewer.Options{Store: store})
	_, body := get(t, http.DefaultClient, srv.URL+"/session/"+l.Header().ID, nil)
	mustContain(t, "interrupted session", body, "turn 1 interrupted (dsh stopped before it ended)", "recovery events close a turn")
	_, body = get(t, http.DefaultClient, srv.URL+"/", nil)
	mustContain(t, "list", body, `badge-interrupted">interrupted`)
}
