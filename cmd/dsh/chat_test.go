package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyDsh is the built dsh binary running on a pseudo-terminal, driven like a person would.
type ptyDsh struct {
	t    *testing.T
	cmd  *exec.Cmd
	pty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer // everything the terminal showed, "\r\n" folded to "\n"
	mark int          // where the next expect starts looking
	more chan struct{}
	done chan struct{} // closed when the output ends
	ctx  context.Context
}

// startPTY starts bin with args on a new 100x30 terminal, in dir, with env.
func startPTY(t *testing.T, bin, dir string, env []string, args ...string) *ptyDsh {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	// Every wait is bounded by the test's deadline (or a generous one without -timeout).
	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Minute)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(-10*time.Second))
	p := &ptyDsh{t: t, cmd: cmd, pty: f, more: make(chan struct{}, 1), done: make(chan struct{}), ctx: ctx}
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			if n > 0 {
				p.mu.Lock()
				p.out.Write(buf[:n])
				p.mu.Unlock()
				select {
				case p.more <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
		<-p.done
		cancel()
	})
	return p
}

// text returns the output so far with the terminal's line endings folded.
func (p *ptyDsh) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.ReplaceAll(p.out.String(), "\r\n", "\n")
}

// expectWithin bounds each expect: a step of a chat never takes long, so a missing output
// fails the test quickly (and the test's own deadline bounds it in any case).
const expectWithin = 90 * time.Second

// expect waits until the output after the mark holds want, and moves the mark past it.
func (p *ptyDsh) expect(want string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, expectWithin)
	defer cancel()
	for {
		s := p.text()
		if i := strings.Index(s[p.mark:], want); i >= 0 {
			p.mark += i + len(want)
			return
		}
		select {
		case <-p.more:
		case <-p.done:
			if s := p.text(); strings.Contains(s[p.mark:], want) {
				continue
			}
			p.t.Fatalf("dsh ended before showing %q; after the mark it showed:\n%s", want, p.text()[p.mark:])
		case <-ctx.Done():
			p.t.Fatalf("timed out waiting for %q; after the mark the terminal showed:\n%s", want, p.text()[p.mark:])
		}
	}
}

// send types s.
func (p *ptyDsh) send(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.pty, s); err != nil {
		p.t.Fatal(err)
	}
}

// wait waits for dsh to exit and returns its exit status.
func (p *ptyDsh) wait() int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-p.ctx.Done():
		p.t.Fatalf("dsh did not exit; the terminal showed:\n%s", p.text())
	}
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		p.t.Fatal(err)
	}
	return 0
}

var (
	builtOnce sync.Once
	builtBin  string
	builtErr  error
	builtDir  string // removed when the package's tests end (TestMain)
)

// builtDsh builds the dsh binary once for the tests that drive it on a terminal.
func builtDsh(t *testing.T) string {
	t.Helper()
	builtOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dsh-bin-")
		if err != nil {
			builtErr = err
			return
		}
		builtDir = dir
		builtBin = filepath.Join(dir, "dsh")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			builtErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if builtErr != nil {
		t.Fatal(builtErr)
	}
	return builtBin
}

// chatEnv is the environment of a chat under test: its own dsh home, no colour.
func chatEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "DSH_HOME=" + home, "TERM=xterm", "NO_COLOR=1", "LANG=C.UTF-8"}
}

// chatScript is the scripted model's replies; SLEEP is replaced by a marker no other
// process runs, so that the test can find the command's process.
const chatScript = `{"text":"Hello from the script.","usage":{"inputTokens":12,"outputTokens":5}}
{"toolCalls":[{"id":"c1","name":"bash","arguments":{"command":"sleep SLEEP","description":"Wait a long time"}}]}
{"text":"Still here after the interrupt."}
{"text":"Got both pasted lines."}
`

// TestChatThroughPTY drives "dsh" on a terminal with a scripted model: a turn, slash
// commands, Ctrl-C cancelling a running command's turn (not the program), multi-line
// input by backslash and by bracketed paste, /usage, Ctrl-C and Ctrl-D at the prompt; then
// "dsh --continue" shows the history, /clear starts a new session and /resume returns to the
// first by an id prefix.
func TestChatThroughPTY(t *testing.T) {
	bin := builtDsh(t)
	home, ws := t.TempDir(), t.TempDir()
	scriptPath := filepath.Join(t.TempDir(), "chat.jsonl")
	marker := uniqueMarker()
	if err := os.WriteFile(scriptPath, []byte(strings.Replace(chatScript, "SLEEP", marker, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := chatEnv(home)
	p := startPTY(t, bin, ws, env, "--script", scriptPath, "--allow", "bash(sleep *)")
	p.expect("scripted model")
	p.expect("/help for commands")
	p.expect("› ")
	p.send("hello\r")
	p.expect("Hello from the script.")
	p.expect("— turn 1 completed\n")
	if strings.Count(p.text(), "hello") != 1 {
		t.Errorf("the typed message is shown more than once:\n%s", p.text())
	}
	p.expect("› ")

	p.send("/help\r")
	p.expect("/resume [ID]")
	p.send("/modle\r")
	p.expect("unknown command /modle (did you mean /model?); /help lists the commands")
	p.send("/mode code\r")
	p.expect("mode: code")
	p.send("/mode\r")
	p.expect("mode: code")
	p.send("/mode native\r")
	p.expect("mode: native")
	p.send("/model other\r")
	p.expect("the scripted model (--script) replays a file; it cannot be switched")

	// Ctrl-C while a command runs stops the turn, not dsh. The card is drawn before the
	// command's process starts; a Ctrl-C between its fork and its own process group (a few
	// microseconds) would reach the command too, so the key is pressed once sleep runs.
	p.send("wait for it\r")
	p.expect("$ sleep " + marker)
	waitSleepers(t, marker, 1)
	p.send("\x03")
	p.expect("— turn 2 aborted")
	p.expect("› ")

	// A trailing backslash continues the message on the next line.
	p.send("first line \\\r")
	p.expect("… ")
	p.send("second line\r")
	p.expect("Still here after the interrupt.")
	p.expect("— turn 3 completed")

	// A bracketed paste keeps its lines; Enter sends it.
	p.send("\x1b[200~pasted one\rpasted two\r\x1b[201~")
	p.expect("… ")
	p.send("\r")
	p.expect("Got both pasted lines.")
	p.expect("— turn 4 completed")

	p.send("/usage\r")
	p.expect("usage: 12 input tokens · 5 output")

	// Ctrl-C at the prompt (once it is shown: the terminal is then in raw mode) clears
	// the input and warns; Ctrl-D quits.
	p.expect("› ")
	p.send("half-typed\x03")
	p.expect("(Ctrl-C again or Ctrl-D to quit)")
	p.expect("› ")
	p.send("\x04")
	p.expect("saved · continue it with dsh --continue")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d; the terminal showed:\n%s", code, p.text())
	}
	id := regexp.MustCompile(`session (\S+) saved`).FindStringSubmatch(p.text())[1]

	// --continue picks the session up and shows its history.
	p = startPTY(t, bin, ws, env, "--continue", "--script", scriptPath)
	p.expect("session " + id)
	p.expect("› hello\nHello from the script.\n— turn 1 completed")
	// The log holds the multi-line messages as typed: the backslash continued the line,
	// the paste kept its lines.
	p.expect("› first line \n  second line\n")
	p.expect("› pasted one\n  pasted two\n")
	p.expect("— turn 4 completed")
	p.expect("› ")
	p.send("/clear\r")
	p.expect("session ")
	p.expect("› ")
	p.send("/resume\r")
	p.expect(id)
	p.send("/resume " + id[:len(id)-4] + "\r")
	p.expect("session " + id)
	p.expect("› hello\n")
	p.expect("› ")
	p.send("/quit\r")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d; the terminal showed:\n%s", code, p.text())
	}
}

// TestChatModelSwitch switches models with /model: the next request names the new model.
func TestChatModelSwitch(t *testing.T) {
	bin := builtDsh(t)
	home, ws := t.TempDir(), t.TempDir()
	srv := newChatServer(t, textReply("First answer."), textReply("Second answer."))
	env := append(chatEnv(home), "LOCAL_KEY=sk-local")
	p := startPTY(t, bin, ws, env, "--base-url", srv.srv.URL, "--model", "model-one", "--api-key-env", "LOCAL_KEY")
	p.expect("dsh · model-one via")
	p.expect("› ")
	p.send("hi\r")
	p.expect("First answer.")
	p.expect("› ")
	p.send("/model\r")
	p.expect("model: model-one")
	p.send("/model model-two\r")
	p.expect("model: model-two (from the next turn on)")
	p.send("again\r")
	p.expect("Second answer.")
	p.expect("— turn 2 completed")
	p.send("/quit\r")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d:\n%s", code, p.text())
	}
	reqs := srv.requests()
	if len(reqs) != 2 || reqs[0]["model"] != "model-one" || reqs[1]["model"] != "model-two" {
		t.Errorf("the requests named %v and %v", reqs[0]["model"], reqs[len(reqs)-1]["model"])
	}
}

// TestChatNeedsATerminal: with no terminal on standard input the chat points to dsh run.
func TestChatNeedsATerminal(t *testing.T) {
	s := newSandbox(t)
	for _, args := range [][]string{nil, {"chat"}, {"--continue"}} {
		r := s.dsh(args...).want(t, 2)
		if want := "dsh chat: the chat needs a terminal on standard input; for scripts and pipes use dsh run \"task\" (or dsh run - to read the task from standard input)\n"; r.stderr != want {
			t.Errorf("dsh %v: stderr = %q", args, r.stderr)
		}
	}
}

const approvalScript = `{"toolCalls":[{"id":"c1","name":"bash","arguments":{"command":"echo approved","description":"Say it"}}]}
{"expectToolResults":["c1"],"text":"Approved and ran."}
{"toolCalls":[{"id":"c2","name":"bash","arguments":{"command":"echo twice","description":"Say it again"}}]}
{"text":"Next message arrived."}
`

// TestChatApproval answers approval questions in the chat: y runs the call, and the next
// message still reaches the chat (the question's reader does not keep reading the
// terminal); Ctrl-C at a question cancels the turn, not the chat.
func TestChatApproval(t *testing.T) {
	bin := builtDsh(t)
	home, ws := t.TempDir(), t.TempDir()
	scriptPath := filepath.Join(t.TempDir(), "approval.jsonl")
	if err := os.WriteFile(scriptPath, []byte(approvalScript), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startPTY(t, bin, ws, chatEnv(home), "--script", scriptPath, "--ask", "bash(echo *)")
	p.expect("› ")
	p.send("say it\r")
	p.expect("? bash needs your approval")
	p.expect("$ echo approved")
	p.expect("Allow? [y]es · [n]o · [f] no, tell the model why · [a]lways")
	p.send("y\r")
	p.expect("✓ allowed once")
	p.expect("approved\n")
	p.expect("Approved and ran.")
	p.expect("— turn 1 completed")
	p.expect("› ")
	p.send("again\r")
	p.expect("Allow? [y]es")
	p.send("\x03")
	p.expect("— turn 2 aborted")
	p.expect("› ")
	p.send("next\r")
	p.expect("Next message arrived.")
	p.expect("— turn 3 completed")
	p.expect("› ")
	p.send("/quit\r")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d:\n%s", code, p.text())
	}
}
