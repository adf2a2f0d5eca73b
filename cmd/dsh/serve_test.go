package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/session"
)

// webRun starts "dsh run --approve-from web" on a script whose bash call needs approval
// (the read-only preset asks before commands), and waits until its question is logged.
// It returns the session's store, id and log path, and the run's outcome channel.
func webRun(t *testing.T, s *sandbox, extra ...string) (session.Store, string, string, <-chan result) {
	t.Helper()
	script := writeScript(t, `{"toolCalls":[{"id":"call_1","name":"bash","arguments":{"command":"echo approved-and-ran","description":"Say it"}}]}`,
		`{"expectToolResults":["call_1"],"text":"The command ran."}`)
	ctx := testwait.Context(t)
	done := make(chan result, 1)
	args := append([]string{"run", "--script", script, "--approval", "read-only", "--approve-from", "web"}, extra...)
	go func() { done <- s.dshCtx(ctx, append(args, "say something")...) }()
	c, err := loadConfig(&env{cwd: s.ws, getenv: func(k string) string { return s.env[k] }}, s.ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	store, err := openStore(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var id, path string
	testwait.Until(t, "the approval question in the session log", func() bool {
		infos, err := store.List(ctx)
		if err != nil || len(infos) != 1 {
			return false
		}
		l, err := store.Load(ctx, infos[0].Header.ID)
		if err != nil {
			return false
		}
		for _, e := range l.Events {
			if e.Type == session.TypeApprovalAsked {
				id, path = l.Header.ID, l.Path
				return true
			}
		}
		return false
	})
	return store, id, path, done
}

// TestApproveCommandAnswersARunningSession answers the question of a running "dsh run"
// with "dsh approve": the call runs and the turn completes.
func TestApproveCommandAnswersARunningSession(t *testing.T) {
	s := newSandbox(t)
	_, id, _, done := webRun(t, s)
	sock, err := approval.SocketPath(approval.SocketDir(s.home), id)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("approval socket: %v %v", fi, err)
	}
	// Bad answers are usage errors and change nothing.
	s.dsh("approve", id, "call_1", "maybe").want(t, 2)
	s.dsh("approve", id, "call_1").want(t, 2)
	r := s.dsh("approve", id, "call_9", "yes").want(t, 1)
	mustContain(t, "unknown call", r.stderr, `no question about call "call_9" is waiting`)
	// The question may be logged a moment before it waits for its answer.
	testwait.Until(t, "dsh approve to be taken", func() bool {
		return s.dsh("approve", id[:8], "call_1", "yes").code == 0
	})
	res := testwait.Recv(t, done, "dsh run to end")
	if res.code != 0 {
		t.Fatalf("dsh run: %d\n%s", res.code, res.stderr)
	}
	mustContain(t, "transcript", res.stderr, "? bash needed approval", "dsh approve "+id+" call_1 yes|no", "✓ allowed once", "\n  approved-and-ran\n", "— turn 1 completed")
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("the approval socket outlived the run: %v", err)
	}
	// The session is over: nothing takes answers any more.
	r = s.dsh("approve", id, "call_1", "no", "--reason", "too late").want(t, 1)
	mustContain(t, "after the run", r.stderr, "takes no answers from outside")
}

// TestApproveCommandRejectsWithReason: "no" with --reason reaches the model as the
// rejection's feedback.
func TestApproveCommandRejectsWithReason(t *testing.T) {
	s := newSandbox(t)
	_, id, _, done := webRun(t, s)
	testwait.Until(t, "dsh approve to be taken", func() bool {
		return s.dsh("approve", id, "call_1", "no", "--reason", "use printf").code == 0
	})
	res := testwait.Recv(t, done, "dsh run to end")
	mustContain(t, "transcript", res.stderr, "✗ rejected: use printf", `Error: the user rejected tool "bash": use printf`)
	if strings.Contains(res.stderr, "\n  approved-and-ran\n") {
		t.Errorf("the rejected command ran:\n%s", res.stderr)
	}
}

func TestApproveFromFlag(t *testing.T) {
	s := newSandbox(t)
	r := s.dsh("run", "--approve-from", "slack", "task").want(t, 2)
	mustContain(t, "usage error", r.stderr, `--approve-from must be terminal or web, got "slack"`)
}

// TestSessionServe starts "dsh session serve" on a free loopback port and reads a page.
func TestSessionServe(t *testing.T) {
	s := newSandbox(t)
	s.dsh("run", "--script", writeScript(t, `{"text":"hello from the script"}`), "greet").want(t, 0)
	ctx, cancel := context.WithCancel(testwait.Context(t))
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errb strings.Builder
		e := &env{stdout: pw, stderr: &errb, cwd: s.ws, getenv: func(k string) string { return s.env[k] }}
		done <- run(ctx, e, []string{"session", "serve", "--addr", "127.0.0.1:0"})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	url := strings.TrimSpace(strings.TrimPrefix(line, "dsh session viewer: "))
	if !strings.HasPrefix(url, "http://127.0.0.1:") || strings.Contains(url, "token") {
		t.Fatalf("printed %q", line)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	mustContain(t, "list page", string(b), "greet", "completed")
	cancel()
	if code := testwait.Recv(t, done, "the server to stop"); code != 130 && code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func TestSessionServeToken(t *testing.T) {
	s := newSandbox(t)
	r := s.dsh("session", "serve", "--addr", "nonsense").want(t, 2)
	mustContain(t, "bad address", r.stderr, `--addr "nonsense": want host:port`)
	ctx, cancel := context.WithCancel(testwait.Context(t))
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errb strings.Builder
		e := &env{stdout: pw, stderr: &errb, cwd: s.ws, getenv: func(k string) string { return s.env[k] }}
		done <- run(ctx, e, []string{"session", "serve", "--addr", "0.0.0.0:0"})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	if !strings.Contains(line, "/?token=") || len(line) < 60 {
		t.Fatalf("a non-loopback address printed no token: %q", line)
	}
	cancel()
	testwait.Recv(t, done, "the server to stop")
}

// TestApproveFromWebLeavesNothingOnEarlyFailure: a first turn that fails before any reply
// leaves no session, with --approve-from web too: its socket and directory go with it.
func TestApproveFromWebLeavesNothingOnEarlyFailure(t *testing.T) {
	s := newSandbox(t)
	s.dsh("run", "--script", writeScript(t, `{"error":"the model is down"}`), "--approve-from", "web", "hello").want(t, 1)
	root := filepath.Join(s.home, "sessions")
	entries, err := os.ReadDir(root)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("left behind in %s: %v", root, entries)
	}
}

// TestChatApproveFromWeb: the chat started with --approve-from web does not ask on its
// terminal; "dsh approve" answers, and the turn goes on.
func TestChatApproveFromWeb(t *testing.T) {
	bin := builtDsh(t)
	home, ws := t.TempDir(), t.TempDir()
	p := startPTY(t, bin, ws, chatEnv(home), "--script", writeScript(t, strings.Split(strings.TrimSpace(approvalScript), "\n")...), "--ask", "bash(echo *)", "--approve-from", "web")
	p.expect("› ")
	p.send("say it\r")
	p.expect("? bash needed approval")
	p.expect(" c1 yes|no")
	m := regexp.MustCompile(`dsh approve (\S+) c1 yes\|no`).FindStringSubmatch(p.text())
	if m == nil {
		t.Fatalf("no dsh approve hint:\n%s", p.text())
	}
	if strings.Contains(p.text(), "Allow? [y]es") {
		t.Fatalf("the chat asked on its terminal:\n%s", p.text())
	}
	var out, errb strings.Builder
	e := &env{stdout: &out, stderr: &errb, cwd: ws, getenv: func(k string) string {
		if k == "DSH_HOME" || k == "HOME" {
			return home
		}
		return ""
	}}
	if code := run(testwait.Context(t), e, []string{"approve", m[1], "c1", "yes"}); code != 0 {
		t.Fatalf("dsh approve: %d %s", code, errb.String())
	}
	p.expect("✓ allowed once")
	p.expect("Approved and ran.")
	p.expect("— turn 1 completed")
	p.expect("› ")
	p.send("/quit\r")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d:\n%s", code, p.text())
	}
}

// TestApproveCommandWithPostgres: with the sessions in PostgreSQL, --approve-from web
// listens under the dsh home all the same and "dsh approve" answers through it.
func TestApproveCommandWithPostgres(t *testing.T) {
	s := newSandbox(t)
	s.env["DSH_SESSIONS_STORE"] = pg.Database(t)
	store, id, _, done := webRun(t, s)
	defer closeStore(store)
	testwait.Until(t, "dsh approve to be taken", func() bool {
		return s.dsh("approve", id[:10], "call_1", "yes").code == 0
	})
	res := testwait.Recv(t, done, "dsh run to end")
	if res.code != 0 {
		t.Fatalf("dsh run: %d\n%s", res.code, res.stderr)
	}
	mustContain(t, "transcript", res.stderr, "✓ allowed once", "\n  approved-and-ran\n", "— turn 1 completed")
	if _, err := os.Stat(filepath.Join(s.home, "sessions")); err == nil {
		t.Errorf("a session directory was written although the store is PostgreSQL")
	}
}
