package viewer_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/dsh-go/dsh/internal/browsertest"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
	"github.com/dsh-go/dsh/viewer"
)

var screenshots = flag.String("screenshots", "", "write the viewer's screenshots (viewer-list.png, viewer-session.png) to this directory, e.g. ../docs")

// browser starts headless Chromium for one test; every action is bounded by the test's
// context. dialogs counts the JavaScript dialogs (alert, confirm) any page opened.
func browser(t *testing.T) (ctx context.Context, dialogs *atomic.Int32) {
	t.Helper()
	dialogs = new(atomic.Int32)
	ctx = browsertest.Start(t, func(ev any) {
		switch ev.(type) {
		case *page.EventJavascriptDialogOpening, page.EventJavascriptDialogOpening:
			dialogs.Add(1)
		}
	})
	return ctx, dialogs
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// text returns the visible text of the page, each run of white space one space (the
// layout breaks lines the terminal keeps together).
func text(t *testing.T, ctx context.Context) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(s), " ")
}

func TestBrowserRecordedSession(t *testing.T) {
	store := newStore(t)
	id, _ := record(t, store, false)
	srv := serve(t, viewer.Options{Store: store})
	ctx, dialogs := browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/session/"+id),
		chromedp.WaitVisible(chromedp.CSS(`.turn-end`)),
	); err != nil {
		t.Fatal(err)
	}
	pwned := eval[string](t, ctx, `typeof window.pwned`)
	jsLinks := eval[int](t, ctx, `document.querySelectorAll('a[href^="javascript:" i], [onerror], [onclick]').length`)
	scripts := eval[int](t, ctx, `document.querySelectorAll('script').length`)
	if pwned != "undefined" || dialogs.Load() != 0 {
		t.Errorf("the hostile output ran: window.pwned is %s, %d dialogs", pwned, dialogs.Load())
	}
	if jsLinks != 0 {
		t.Errorf("%d javascript: links or event handlers on the page", jsLinks)
	}
	if scripts != 1 {
		t.Errorf("%d script elements, want only the viewer's", scripts)
	}
	body := text(t, ctx)
	// The cards a terminal shows for this session.
	mustContain(t, "page text", body,
		"› fix the <b>failing</b> test",
		"✓ grep · 1 match in 1 file",
		"Edit main.go", "println(\"old side\")", "println(\"new side\")",
		"$ make test", "run the tests · in /work/app", "✓ bash · make test · exit 0",
		"<script>window.pwned = 1</script>", "^[[31mred^[[0m",
		"✓ web_search · 2 sources", "evil source",
		"● Count the lines", "✓ read {\"file_path\":\"a.txt\"}", "✗ read {\"file_path\":\"missing.txt\"} → no such file",
		"? bash needs approval: matches ask rule bash(git push*)", "✗ rejected: not on Fridays",
		"— turn 1 completed",
	)
	// The sub-calls are inside the run_code card.
	if nested := eval[int](t, ctx, `document.querySelectorAll('[data-call="c5"] .subs .sub').length`); nested != 2 {
		t.Errorf("%d sub-calls nested in the run_code card, want 2", nested)
	}
	// The list links to the session.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.Click(chromedp.CSS(`a[href="/session/`+id+`"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn-end`))); err != nil {
		t.Fatal(err)
	}
}

func TestBrowserLiveSessionAndApproval(t *testing.T) {
	store := newStore(t)
	id, r := record(t, store, true)
	sockets := t.TempDir()
	ch, err := approval.ListenSession(sockets, id)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	srv := serve(t, viewer.Options{Store: store, Approvals: sockets})
	ctx, dialogs := browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/session/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#live-note`)),
	); err != nil {
		t.Fatal(err)
	}
	// Another turn is logged: it appears without a reload.
	r.add(session.TurnStart{Turn: 2}.Event())
	r.user("second turn: <img src=x onerror=alert(1)>")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.Search(`//pre[contains(., "second turn: <img src=x")]`))); err != nil {
		t.Fatalf("the live event did not appear: %v", err)
	}
	// The running session asks; the page answers.
	c := r.add(session.ToolCall{Turn: 2, Step: 1, CallID: "c8", Name: "bash", Arguments: `{"command":"rm -rf build"}`}.Event())
	svc, err := approval.New(approval.Config{Prompter: ch, Auditor: approval.NewSessionAuditor(r.log)})
	if err != nil {
		t.Fatal(err)
	}
	decided := make(chan tool.ApprovalOutcome, 1)
	go func() {
		out, _ := svc.Approve(testwait.Context(t), tool.ApprovalRequest{ToolName: "bash", CallID: "c8", Reason: "bash asks before it runs"})
		decided <- out
	}()
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(`[data-call="c8"].answer button.yes`)),
		chromedp.Click(chromedp.CSS(`[data-call="c8"].answer button.yes`)),
	); err != nil {
		t.Fatalf("answering on the page: %v", err)
	}
	if got := testwait.Recv(t, decided, "the session's decision"); got != tool.ApprovalAllowedOnce {
		t.Fatalf("the session got %s, want allowed-once", got)
	}
	r.result("c8", "removed", false, c.Seq)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.Search(`//div[contains(@class, "decided") and contains(., "allowed once")]`))); err != nil {
		t.Fatalf("the answer did not appear on the page: %v", err)
	}
	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d dialogs opened", n)
	}
	record(t, store, false) // a finished session beside the live one, for the list's picture
	shoot(t, ctx, srv.URL, id)
}

// shoot captures the two pages; with -screenshots DIR they are written there (the
// README's pictures), else to a temporary directory.
func shoot(t *testing.T, ctx context.Context, base, id string) {
	t.Helper()
	dir := *screenshots
	if dir == "" {
		dir = t.TempDir()
	}
	for name, u := range map[string]string{"viewer-list.png": base + "/", "viewer-session.png": base + "/session/" + id} {
		if err := chromedp.Do(ctx, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS(`main`))); err != nil {
			t.Fatal(err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(png), "\x89PNG") {
			t.Fatalf("%s is not a PNG", name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
