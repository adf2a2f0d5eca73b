package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/internal/temporaltest"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// temporalServer is the dev server of the durable-run tests, started on first use and
// stopped by TestMain.
var temporalServer temporaltest.Shared

// durableWorld is a dsh home shared by the workers of one test, and the server they use.
type durableWorld struct {
	t    *testing.T
	addr string
	home string
	exe  string
	dir  string
	// store, when set, is the sessions.store URL of every dsh the test starts.
	store string
}

func newDurableWorld(t *testing.T) *durableWorld {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &durableWorld{t: t, addr: temporalServer.Addr(t), home: filepath.Join(t.TempDir(), "home"), exe: exe, dir: t.TempDir()}
}

// workspace makes a workspace directory.
func (w *durableWorld) workspace(name string) string {
	w.t.Helper()
	ws := filepath.Join(w.dir, name)
	if err := os.MkdirAll(ws, 0o755); err != nil {
		w.t.Fatal(err)
	}
	ws, err := filepath.EvalSymlinks(ws)
	if err != nil {
		w.t.Fatal(err)
	}
	return ws
}

// script writes a model script and returns its path.
func (w *durableWorld) script(name, text string) string {
	w.t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// dshProcess is a dsh subprocess, in a process group of its own.
type dshProcess struct {
	cmd    *exec.Cmd
	out    *outputBuffer // stdout and stderr
	exited chan struct{} // closed when it has exited; err is then set
	err    error
}

// start starts "dsh args…" in ws as a subprocess (this test binary acting as dsh). The
// test's cleanup stops it.
func (w *durableWorld) start(ws string, args ...string) *dshProcess {
	w.t.Helper()
	cmd := exec.Command(w.exe, args...)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "DSH_TEST_AS_DSH=1", "DSH_HOME="+w.home, "NO_COLOR=1")
	if w.store != "" {
		cmd.Env = append(cmd.Env, "DSH_SESSIONS_STORE="+w.store)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &dshProcess{cmd: cmd, out: &outputBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	w.t.Cleanup(func() { p.stop(w.t) })
	return p
}

// worker starts "dsh worker" serving queue for ws.
func (w *durableWorld) worker(ws, queue, scriptPath string, extra ...string) *dshProcess {
	args := []string{"worker", "--temporal", w.addr, "--queue", queue}
	if scriptPath != "" {
		args = append(args, "--script", scriptPath)
	} else {
		args = append(args, "--no-model")
	}
	return w.start(ws, append(args, extra...)...)
}

// wait waits, within the test's deadline, for the process to exit and returns its error.
func (p *dshProcess) wait(t *testing.T, what string) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-testwait.Context(t).Done():
		t.Fatalf("gave up waiting for %s:\n%s", what, p.out)
		return nil
	}
}

// stop ends the process with SIGTERM (SIGKILL after a bound) and waits for it.
func (p *dshProcess) stop(t *testing.T) {
	select {
	case <-p.exited:
		return
	default:
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		t.Errorf("dsh %v did not stop on SIGTERM:\n%s", p.cmd.Args[1:], p.out)
	}
}

// kill kills the process group with SIGKILL and waits for it.
func (p *dshProcess) kill() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

// outputBuffer collects a subprocess's output.
type outputBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *outputBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *outputBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// run runs "dsh run --temporal …" in-process on a goroutine and returns its outcome.
func (w *durableWorld) run(ctx context.Context, ws, id string, args ...string) <-chan result {
	s := &sandbox{t: w.t, ws: ws, home: w.home, env: map[string]string{"DSH_HOME": w.home}}
	if w.store != "" {
		s.env["DSH_SESSIONS_STORE"] = w.store
	}
	ch := make(chan result, 1)
	go func() {
		ch <- s.dshCtx(ctx, append([]string{"run", "--temporal", w.addr, "--resume", id}, args...)...)
	}()
	return ch
}

// client connects the test to the server.
func (w *durableWorld) client() client.Client {
	w.t.Helper()
	c, err := client.Dial(client.Options{HostPort: w.addr, Logger: tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(c.Close)
	return c
}

// events loads a session's log from the shared home.
func (w *durableWorld) events(id string) []session.Event {
	w.t.Helper()
	store, err := session.Open(filepath.Join(w.home, "sessions"), session.Options{})
	if err != nil {
		w.t.Fatal(err)
	}
	l, err := store.Load(context.Background(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	return l.Events
}

// results checks that every tool/call has exactly one tool/result citing it, in call order,
// and returns the results by call id.
func durableResults(t *testing.T, events []session.Event) map[string]session.ToolResult {
	t.Helper()
	checkClosed(t, events)
	out := map[string]session.ToolResult{}
	var calls, results []string
	for _, e := range events {
		switch e.Type {
		case session.TypeToolCall:
			c, _ := session.DecodeToolCall(e)
			calls = append(calls, c.CallID)
		case session.TypeToolResult:
			r, err := session.DecodeToolResult(e)
			if err != nil {
				t.Fatal(err)
			}
			out[r.CallID] = r
			results = append(results, r.CallID)
		}
	}
	if fmt.Sprint(calls) != fmt.Sprint(results) {
		t.Fatalf("results %v do not commit in call order %v", results, calls)
	}
	return out
}

func code(r session.ToolResult) string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

func bashCall(id, command string) string {
	return fmt.Sprintf(`{"id":%q,"name":"bash","arguments":{"command":%q,"description":"test"}}`, id, command)
}

func newSessionID() string { return session.NewID(time.Now()) }

// TestDurableWorkerCrashMidTool kills the tool worker with SIGKILL while a bash body is
// blocked, starts a new one, and checks that the run completes: the killed call (not
// retried: bash is not read-only) has exactly one result, TOOL_OUTCOME_UNKNOWN, and the next
// step's call runs on the restarted worker.
func TestDurableWorkerCrashMidTool(t *testing.T) {
	w := newDurableWorld(t)
	ws := w.workspace("ws")
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "gate"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := w.script("crash.jsonl", fmt.Sprintf(`{"toolCalls":[%s]}
{"toolCalls":[{"id":"r1","name":"read","arguments":{"file_path":"a.txt"}}]}
{"text":"done"}
`, bashCall("b1", "touch started; read x < gate; echo $x")))
	w.worker(ws, "sess", script)
	tools := w.worker(ws, "tools", "")
	id := newSessionID()
	ran := w.run(t.Context(), ws, id, "--queue", "sess", "--tool-queue", "tools", "--heartbeat-timeout", "3s", "crash")
	testwait.Until(t, "the bash body to start", func() bool {
		_, err := os.Stat(filepath.Join(ws, "started"))
		return err == nil
	})
	tools.kill()
	w.worker(ws, "tools", "")
	res := testwait.Recv(t, ran, "dsh run to end")
	res.want(t, 0)
	mustContain(t, "stdout", res.stdout, "tool bash (b1): error TOOL_OUTCOME_UNKNOWN", "tool read (r1): ok", "done")
	results := durableResults(t, w.events(id))
	if c := code(results["b1"]); c != session.CodeToolOutcomeUnknown {
		t.Fatalf("b1 ended %q", c)
	}
	if r := results["r1"]; r.IsError {
		t.Fatalf("r1 failed: %+v", r)
	}
}

// TestDurableApprovalFromAnotherProcess answers a pending approval with "dsh approve" run as
// a separate process; a second session's call is rejected with a reason.
func TestDurableApprovalFromAnotherProcess(t *testing.T) {
	w := newDurableWorld(t)
	ws := w.workspace("ws")
	script := w.script("approve.jsonl", fmt.Sprintf(`{"toolCalls":[%s]}
{"text":"ok"}
`, bashCall("b1", "echo hi > approved.txt")))
	w.worker(ws, "q", script, "--approval", "read-only")
	c := w.client()
	id := newSessionID()
	ran := w.run(t.Context(), ws, id, "--queue", "q", "touch it")
	testwait.Until(t, "the approval question", func() bool {
		v, err := c.QueryWorkflow(t.Context(), "dsh-session-"+id, "", durable.QueryPending)
		if err != nil {
			return false
		}
		var p []durable.PendingApproval
		return v.Get(&p) == nil && len(p) == 1 && p[0].CallID == "b1"
	})
	if _, err := os.Stat(filepath.Join(ws, "approved.txt")); err == nil {
		t.Fatal("the call ran before it was approved")
	}
	// A wrong call id is refused.
	bad := w.start(ws, "approve", "--temporal", w.addr, id, "nope", "yes")
	if err := bad.wait(t, "dsh approve of a wrong call"); err == nil || !strings.Contains(bad.out.String(), `no call "nope" is waiting`) {
		t.Fatalf("approve of a wrong call: %v\n%s", err, bad.out)
	}
	ok := w.start(ws, "approve", "--temporal", w.addr, id, "b1", "yes")
	if err := ok.wait(t, "dsh approve"); err != nil {
		t.Fatalf("dsh approve: %v\n%s", err, ok.out)
	}
	mustContain(t, "dsh approve", ok.out.String(), "call b1 of session "+id+": approved")
	res := testwait.Recv(t, ran, "dsh run to end")
	res.want(t, 0)
	mustContain(t, "stdout", res.stdout, "approval needed: bash", "tool bash (b1): ok")
	if _, err := os.Stat(filepath.Join(ws, "approved.txt")); err != nil {
		t.Fatalf("the approved call did not run: %v", err)
	}
	evs := w.events(id)
	durableResults(t, evs)
	var asked, decided bool
	for _, e := range evs {
		asked = asked || e.Type == session.TypeApprovalAsked
		decided = decided || e.Type == session.TypeApprovalDecided
	}
	if !asked || !decided {
		t.Fatalf("the log lacks the approval audit: %v", typesOf(evs))
	}
}

// TestDurableCancel cancels the session workflow while a bash body runs: the body is
// stopped, the running call ends aborted, the unstarted one ABORTED_BEFORE_DISPATCH, and the
// turn ends aborted.
func TestDurableCancel(t *testing.T) {
	w := newDurableWorld(t)
	ws := w.workspace("ws")
	script := w.script("cancel.jsonl", fmt.Sprintf(`{"toolCalls":[%s,%s]}
`, bashCall("b1", "touch started; exec sleep 1000"), bashCall("b2", "touch never")))
	w.worker(ws, "q", script)
	c := w.client()
	id := newSessionID()
	ran := w.run(t.Context(), ws, id, "--queue", "q", "--heartbeat-timeout", "3s", "cancel me")
	testwait.Until(t, "the bash body to start", func() bool {
		_, err := os.Stat(filepath.Join(ws, "started"))
		return err == nil
	})
	if err := c.CancelWorkflow(t.Context(), "dsh-session-"+id, ""); err != nil {
		t.Fatal(err)
	}
	res := testwait.Recv(t, ran, "dsh run to end")
	res.want(t, 1)
	mustContain(t, "stderr", res.stderr, "ended: aborted")
	evs := w.events(id)
	results := durableResults(t, evs)
	if r := results["b1"]; !r.IsError || code(r) != tool.CodeAborted {
		t.Fatalf("b1: %+v", r)
	}
	if r := results["b2"]; code(r) != tool.CodeAbortedBeforeDispatch {
		t.Fatalf("b2: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "never")); err == nil {
		t.Fatal("the unstarted call ran")
	}
	end, err := session.DecodeTurnEnd(evs[len(evs)-1])
	if err != nil || end.Reason.Kind != session.EndAborted {
		t.Fatalf("turn end %+v %v", end, err)
	}
}

// TestDurableTwoQueues runs a session whose worker is on one queue and whose tools run on
// another worker, in another workspace: the command runs where the tool queue's files are.
func TestDurableTwoQueues(t *testing.T) {
	w := newDurableWorld(t)
	wsA, wsB := w.workspace("a"), w.workspace("b")
	script := w.script("two.jsonl", fmt.Sprintf(`{"toolCalls":[%s]}
{"text":"ok"}
`, bashCall("b1", "pwd > where.txt")))
	w.worker(wsA, "queue-a", script)
	w.worker(wsB, "queue-b", "")
	id := newSessionID()
	res := testwait.Recv(t, w.run(t.Context(), wsA, id, "--queue", "queue-a", "--tool-queue", "queue-b", "where"), "dsh run to end")
	res.want(t, 0)
	got, err := os.ReadFile(filepath.Join(wsB, "where.txt"))
	if err != nil {
		t.Fatalf("the command did not run in the tool queue's workspace: %v", err)
	}
	if strings.TrimSpace(string(got)) != wsB {
		t.Fatalf("the command ran in %q, want %q", got, wsB)
	}
	if _, err := os.Stat(filepath.Join(wsA, "where.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the command also ran in the session's workspace: %v", err)
	}
	durableResults(t, w.events(id))
}

func TestDurableCommandsRefuseBadUsage(t *testing.T) {
	s := newSandbox(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"worker"}, "needs --temporal HOST:PORT and --queue NAME"},
		{[]string{"worker", "--temporal", "nohost", "--queue", "q"}, "--temporal wants HOST:PORT"},
		{[]string{"approve", "--temporal", "127.0.0.1:1", "s", "c"}, "want SESSION CALL yes|no"},
		{[]string{"approve", "--temporal", "127.0.0.1:1", "s", "c", "maybe"}, "the answer must be yes or no"},
		{[]string{"approve", "--temporal=127.0.0.1:1", "s", "c"}, "want SESSION CALL yes|no"},
		{[]string{"run", "--temporal", "127.0.0.1:1", "task"}, "needs --queue NAME"},
	}
	for _, c := range cases {
		r := s.dsh(c.args...).want(t, 2)
		mustContain(t, fmt.Sprint(c.args), r.stderr, c.want)
	}
}

func typesOf(evs []session.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}
