package viewer_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/session/pgstore"
	"github.com/dsh-go/dsh/tool"
	"github.com/dsh-go/dsh/viewer"
)

// counting is a store that counts its Loads (and, embedding a session.Watcher store,
// stays one).
type counting struct {
	session.Store
	session.Watcher
	loads atomic.Int32
}

func newCounting(s interface {
	session.Store
	session.Watcher
}) *counting {
	return &counting{Store: s, Watcher: s}
}

func (c *counting) Load(ctx context.Context, id string) (*session.Loaded, error) {
	c.loads.Add(1)
	return c.Store.Load(ctx, id)
}

// follow opens the event stream of a session from index from.
func follow(t *testing.T, ctx context.Context, base, id string, from int) *bufio.Scanner {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/session/"+id+"/events?from="+itoa(from), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("events: status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	return sc
}

// TestPostgresSessionLiveAndApproval: with the sessions in PostgreSQL, a running
// session's page follows it (its writer's lease says it is live, its event count that it
// grew) and its approval question is answered from the page.
func TestPostgresSessionLiveAndApproval(t *testing.T) {
	ctx, cancel := context.WithCancel(testwait.Context(t))
	defer cancel()
	store, err := pgstore.Open(ctx, pg.Database(t), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	done, _ := record(t, store, false)
	id, r := record(t, store, true)
	sockets := t.TempDir()
	srv := serve(t, viewer.Options{Store: store, Approvals: sockets})

	_, body := get(t, http.DefaultClient, srv.URL+"/", nil)
	mustContain(t, "list", body, `badge-live">live`, `badge-completed">completed`, "/session/"+done, "fix the &lt;b&gt;failing&lt;/b&gt; test")
	_, body = get(t, http.DefaultClient, srv.URL+"/session/"+id, nil)
	mustContain(t, "live page", body, `id="live-note"`, `data-live="true"`)

	sc := follow(t, ctx, srv.URL, id, len(r.log.Events()))
	if got := readSSE(t, sc, "status"); !strings.Contains(got, `"live":true`) {
		t.Fatalf("status = %s", got)
	}
	r.add(session.TurnStart{Turn: 2}.Event())
	r.user("from the database")
	if got := readSSE(t, sc, "ev"); !strings.Contains(got, "from the database") {
		t.Fatalf("event = %s", got)
	}

	// The session asks; the page answers through the socket under the sockets directory.
	ch, err := approval.ListenSession(sockets, id)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	svc, err := approval.New(approval.Config{Prompter: ch, Auditor: approval.NewSessionAuditor(r.log)})
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{})
	ch.Asked = func(approval.Question) { close(asked) }
	r.add(session.ToolCall{Turn: 2, Step: 1, CallID: "c8", Name: "bash", Arguments: `{"command":"make"}`}.Event())
	decided := make(chan tool.ApprovalOutcome, 1)
	go func() {
		out, _ := svc.Approve(ctx, tool.ApprovalRequest{ToolName: "bash", CallID: "c8", Reason: "bash asks"})
		decided <- out
	}()
	testwait.Recv(t, asked, "the question")
	r.log.Flush()
	if got := readSSE(t, sc, "ev"); !strings.Contains(got, "make") {
		t.Fatalf("event = %s", got)
	}
	if got := readSSE(t, sc, "ev"); !strings.Contains(got, "Allow once") {
		t.Fatalf("the question arrived without its form: %s", got)
	}
	_, body = get(t, http.DefaultClient, srv.URL+"/session/"+id, nil)
	code, body := post(t, srv.URL+"/session/"+id+"/approve", url.Values{"csrf": {csrfOf(t, body)}, "callId": {"c8"}, "decision": {"yes"}}, srv.URL)
	if code != http.StatusSeeOther {
		t.Fatalf("answer: %d %s", code, body)
	}
	if got := testwait.Recv(t, decided, "the decision"); got != tool.ApprovalAllowedOnce {
		t.Fatalf("outcome = %s", got)
	}
	r.log.Flush()
	if got := readSSE(t, sc, "ev"); !strings.Contains(got, `"answered":"`) || !strings.Contains(got, "allowed once") {
		t.Fatalf("the answer's event = %s", got)
	}
	// The writer lets go of the session: the stream says it stopped.
	if err := r.log.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readSSE(t, sc, "status"); !strings.Contains(got, `"live":false`) {
		t.Fatalf("status = %s", got)
	}
}

// TestListReadsOnlyWhatItShows: the list shows a page of sessions, newest first; a
// session it had to load to summarize is not loaded again while its log is unchanged, and
// a store that keeps summaries (PostgreSQL) is not loaded at all.
func TestListReadsOnlyWhatItShows(t *testing.T) {
	ctx := testwait.Context(t)
	files := newStore(t)
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 5 {
		l, err := files.Create(ctx, session.Header{ID: "20261201T10000" + itoa(i) + "Z-0000000" + itoa(i), Cwd: "/w", CreatedAt: start.Add(time.Duration(i) * time.Second).UnixMilli()})
		if err != nil {
			t.Fatal(err)
		}
		l.AppendDurable(session.TurnStart{Turn: 1}.Event())
		l.AppendDurable(session.UserMessage{Message: content.Message{Content: content.Texts("prompt number " + itoa(i))}}.Event())
		l.AppendDurable(session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}}.Event())
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, l.Header().ID)
	}
	store := newCounting(files)
	srv := serve(t, viewer.Options{Store: store, PageSize: 2})

	_, body := get(t, http.DefaultClient, srv.URL+"/", nil)
	mustContain(t, "page 1", body, "page 1 of 3 (5 sessions)", "prompt number 4", "prompt number 3", `href="/?page=2" rel="next"`)
	if strings.Contains(body, "prompt number 2") || strings.Index(body, "prompt number 4") > strings.Index(body, "prompt number 3") {
		t.Errorf("page 1 is not the two newest sessions, newest first:\n%s", body)
	}
	if n := store.loads.Load(); n != 2 {
		t.Errorf("the first page loaded %d sessions, want 2", n)
	}
	get(t, http.DefaultClient, srv.URL+"/", nil)
	if n := store.loads.Load(); n != 2 {
		t.Errorf("showing the unchanged page again loaded %d more sessions", n-2)
	}
	// A session that grows is loaded again, alone.
	w, err := files.Resume(ctx, ids[4])
	if err != nil {
		t.Fatal(err)
	}
	w.AppendDurable(session.TurnStart{Turn: 2}.Event())
	w.Close()
	_, body = get(t, http.DefaultClient, srv.URL+"/", nil)
	if n := store.loads.Load(); n != 3 {
		t.Errorf("after one session changed, %d loads, want 3", n)
	}
	mustContain(t, "page 1 after a change", body, `badge-interrupted">interrupted`)
	_, body = get(t, http.DefaultClient, srv.URL+"/?page=3", nil)
	mustContain(t, "page 3", body, "prompt number 0", `href="/?page=2" rel="prev"`)
	if strings.Contains(body, "prompt number 1") || strings.Contains(body, `rel="next"`) {
		t.Errorf("page 3 shows more than the oldest session:\n%s", body)
	}
	for _, tt := range []struct {
		query string
		code  int
		want  string
	}{
		{"page=0", 400, "want a page number from 1"},
		{"page=two", 400, "want a page number from 1"},
		{"page=01", 400, "want a page number from 1"},
		{"page=4", 404, "there are 5 sessions, 2 a page (3 pages)"},
	} {
		resp, body := get(t, http.DefaultClient, srv.URL+"/?"+tt.query, nil)
		if resp.StatusCode != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("?%s: %d, want %d with %q", tt.query, resp.StatusCode, tt.code, tt.want)
		}
	}

	// PostgreSQL keeps every closed session's summary: the list loads none.
	ps, err := pgstore.Open(ctx, pg.Database(t), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	record(t, ps, false)
	record(t, ps, false)
	pstore := newCounting(ps)
	psrv := serve(t, viewer.Options{Store: pstore})
	_, body = get(t, http.DefaultClient, psrv.URL+"/", nil)
	mustContain(t, "PostgreSQL list", body, `badge-completed">completed`, "1200 / 85")
	if n := pstore.loads.Load(); n != 0 {
		t.Errorf("the PostgreSQL list loaded %d sessions, want none", n)
	}
}

// TestEventsWithoutWatcher: a store that cannot say when a session changed is followed by
// reloading it.
func TestEventsWithoutWatcher(t *testing.T) {
	ctx, cancel := context.WithCancel(testwait.Context(t))
	defer cancel()
	files := newStore(t)
	id, r := record(t, files, true)
	srv := serve(t, viewer.Options{Store: struct{ session.Store }{files}})
	sc := follow(t, ctx, srv.URL, id, len(r.log.Events()))
	if got := readSSE(t, sc, "status"); !strings.Contains(got, `"live":false`) {
		t.Fatalf("status = %s", got)
	}
	r.add(session.TurnStart{Turn: 2}.Event())
	r.user("seen without a watcher")
	for {
		got := readSSE(t, sc, "ev")
		if strings.Contains(got, "seen without a watcher") {
			break
		}
	}
}
