package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/dsh-go/dsh/internal/browsertest"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/session/pgstore"
)

// cliProcess is a dsh command running as its own process (the test binary as dsh), its
// output collected as it comes.
type cliProcess struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  map[string]*strings.Builder // "stdout", "stderr"
	exit chan struct{}               // closed once the process has exited
	err  error                       // cmd.Wait's, once exit is closed
}

// startDsh starts dsh with args in ws, with its own dsh home and env added. The process
// is killed, and waited for, when the test ends.
func startDsh(t *testing.T, home, ws string, env []string, args ...string) *cliProcess {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), append([]string{"DSH_TEST_AS_DSH=1", "DSH_HOME=" + home, "NO_COLOR=1"}, env...)...)
	p := &cliProcess{cmd: cmd, out: map[string]*strings.Builder{"stdout": {}, "stderr": {}}, exit: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dsh %s: %v", strings.Join(args, " "), err)
	}
	var readers sync.WaitGroup
	for name, r := range map[string]io.Reader{"stdout": stdout, "stderr": stderr} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			b := make([]byte, 4096)
			for {
				n, err := r.Read(b)
				p.mu.Lock()
				p.out[name].Write(b[:n])
				p.mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	go func() {
		readers.Wait() // Wait closes the pipes: read them to the end first
		p.err = cmd.Wait()
		close(p.exit)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exit:
		default:
			cmd.Process.Kill()
			<-p.exit
		}
	})
	return p
}

// text returns what the process wrote on stream ("stdout" or "stderr") so far.
func (p *cliProcess) text(stream string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out[stream].String()
}

// waitFor waits until the process wrote a line on stream that re matches and returns the
// match; it fails t if the process exits first or the test's time runs out.
func (p *cliProcess) waitFor(t *testing.T, stream string, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	testwait.Until(t, "dsh "+strings.Join(p.cmd.Args[1:], " ")+" to print "+re.String(), func() bool {
		m = re.FindStringSubmatch(p.text(stream))
		if m == nil {
			select {
			case <-p.exit:
				t.Fatalf("dsh %s exited before printing %s:\nstdout:\n%s\nstderr:\n%s", strings.Join(p.cmd.Args[1:], " "), re, p.text("stdout"), p.text("stderr"))
			default:
			}
		}
		return m != nil
	})
	return m
}

// exitCode waits for the process to end and returns its exit status.
func (p *cliProcess) exitCode(t *testing.T) int {
	t.Helper()
	testwait.Recv(t, p.exit, "dsh "+strings.Join(p.cmd.Args[1:], " ")+" to exit")
	err := p.err
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("dsh %s: %v", strings.Join(p.cmd.Args[1:], " "), err)
	return -1
}

// TestBrowserAnswersARunningSession: a real "dsh run --approve-from web" asks to run a
// command; a real "dsh session serve" shows the question on the session's page in headless
// Chromium; a click there answers it. The run goes on with the answer: the approved
// command runs, the rejected one does not and the model reads the reason; the session log
// holds the question, the answer and the call's result. With the file store and with
// PostgreSQL (the socket lives under the dsh home, not beside the log).
func TestBrowserAnswersARunningSession(t *testing.T) {
	tests := []struct {
		name     string
		postgres bool
		reason   string // "" approves
	}{
		{name: "approve, file store"},
		{name: "reject with a reason, PostgreSQL", postgres: true, reason: "use printf instead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testwait.Context(t)
			home, ws := t.TempDir(), t.TempDir()
			var env []string
			var store session.Store
			if tt.postgres {
				url := pg.Database(t)
				env = append(env, "DSH_SESSIONS_STORE="+url)
				ps, err := pgstore.Open(ctx, url, pgstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer ps.Close()
				store = ps
			} else {
				fs, err := session.Open(filepath.Join(home, "sessions"), session.Options{})
				if err != nil {
					t.Fatal(err)
				}
				store = fs
			}
			script := writeScript(t,
				`{"toolCalls":[{"id":"call_1","name":"bash","arguments":{"command":"echo approved-and-ran > ran.txt && cat ran.txt","description":"Say it"}}]}`,
				`{"expectToolResults":["call_1"],"text":"The model saw the answer."}`)
			run := startDsh(t, home, ws, env, "run", "--script", script, "--approval", "read-only", "--approve-from", "web", "say something")
			// The hint is printed once the question waits on the approval socket.
			m := run.waitFor(t, "stderr", regexp.MustCompile(`dsh approve (\S+) call_1 yes\|no`))
			id := m[1]
			serve := startDsh(t, home, ws, env, "session", "serve", "--addr", "127.0.0.1:0")
			url := serve.waitFor(t, "stdout", regexp.MustCompile(`dsh session viewer: (http://127\.0\.0\.1:\d+/)\n`))[1]

			bctx := browsertest.Start(t, nil)
			answer := `[data-call="call_1"].answer`
			if err := chromedp.Do(bctx,
				chromedp.Navigate(url+"session/"+id),
				chromedp.WaitVisible(chromedp.CSS(`#live-note`)),
				chromedp.WaitVisible(chromedp.CSS(answer+` button.yes`)),
			); err != nil {
				t.Fatalf("opening the session's page: %v\nrun's stderr:\n%s\nserve's stderr:\n%s", err, run.text("stderr"), serve.text("stderr"))
			}
			want := "allowed once"
			var click []chromedp.Action[chromedp.Void]
			if tt.reason == "" {
				click = append(click, chromedp.Click(chromedp.CSS(answer+` button.yes`)))
			} else {
				want = "rejected: " + tt.reason
				click = append(click,
					chromedp.SendKeys(chromedp.CSS(answer+` input[name="reason"]`), tt.reason),
					chromedp.Click(chromedp.CSS(answer+` button.no`)))
			}
			// The click posts the answer and the viewer redirects to the session's page:
			// wait for that page to load (a wait started on the page being left can miss
			// the new one) and check that the viewer took the answer.
			resp, err := chromedp.RunResponse(bctx, click...)
			if err != nil {
				t.Fatalf("answering on the page: %v\nrun's stderr:\n%s\nserve's stderr:\n%s", err, run.text("stderr"), serve.text("stderr"))
			}
			if resp.Status != 200 {
				body, _ := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
				t.Fatalf("answering on the page: the viewer replied %d (%s): %s\nrun's stderr:\n%s", resp.Status, resp.URL, body, run.text("stderr"))
			}
			// The answer comes back to the page, from the session's own log.
			if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.Search(`//div[contains(@class, "decided") and contains(., "`+want+`")]`))); err != nil {
				t.Fatalf("the answer on the page (%s): %v\nrun's stderr:\n%s\nserve's stderr:\n%s", resp.URL, err, run.text("stderr"), serve.text("stderr"))
			}
			if code := run.exitCode(t); code != 0 {
				t.Fatalf("dsh run: exit %d\n%s", code, run.text("stderr"))
			}
			mustContain(t, "run's transcript", run.text("stderr"), "— turn 1 completed")

			// The log: the question, the answer as given on the page, the call's result.
			l, err := store.Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var asked, decided bool
			var res *session.ToolResult
			for _, e := range l.Events {
				switch e.Type {
				case session.TypeApprovalAsked:
					p, err := session.DecodeApprovalAsked(e)
					asked = err == nil && p.CallID == "call_1"
				case session.TypeApprovalDecided:
					p, err := session.DecodeApprovalDecided(e)
					if err != nil {
						t.Fatal(err)
					}
					decided = true
					wantOutcome := session.ApprovalAllowedOnce
					if tt.reason != "" {
						wantOutcome = session.ApprovalRejected
					}
					if p.Outcome != wantOutcome || p.Feedback != tt.reason {
						t.Errorf("approval/decided = %+v, want outcome %s with feedback %q", p, wantOutcome, tt.reason)
					}
				case session.TypeToolResult:
					p, err := session.DecodeToolResult(e)
					if err != nil {
						t.Fatal(err)
					}
					if p.CallID == "call_1" {
						res = &p
					}
				}
			}
			if !asked || !decided || res == nil {
				t.Fatalf("the log lacks the question (%v), the answer (%v) or the result (%v)", asked, decided, res != nil)
			}
			text := ""
			for _, b := range res.Content {
				text += b.Text
			}
			_, ranErr := os.Stat(filepath.Join(ws, "ran.txt"))
			if tt.reason == "" {
				if res.IsError || !strings.Contains(text, "approved-and-ran") || ranErr != nil {
					t.Errorf("the approved command did not run: result %q (error %v), ran.txt: %v", text, res.IsError, ranErr)
				}
			} else {
				if !res.IsError || !strings.Contains(text, `the user rejected tool "bash": `+tt.reason) || ranErr == nil {
					t.Errorf("the rejection did not reach the model as such: result %q (error %v), ran.txt: %v", text, res.IsError, ranErr)
				}
			}

			// The viewer stops on an interrupt.
			serve.cmd.Process.Signal(os.Interrupt)
			if code := serve.exitCode(t); code != 0 && code != 130 {
				t.Errorf("dsh session serve: exit %d\n%s", code, serve.text("stderr"))
			}
		})
	}
}
