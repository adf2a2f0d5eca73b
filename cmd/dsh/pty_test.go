package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/creack/pty"
)

// ptyScreen collects what a process writes to its terminal and lets a test wait for text.
type ptyScreen struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
	closed  chan struct{}
}

func readPTY(f *os.File) *ptyScreen {
	s := &ptyScreen{changed: make(chan struct{}, 1), closed: make(chan struct{})}
	go func() {
		defer close(s.closed)
		b := make([]byte, 4096)
		for {
			n, err := f.Read(b)
			s.mu.Lock()
			s.buf.Write(b[:n])
			s.mu.Unlock()
			select {
			case s.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

func (s *ptyScreen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor blocks until text appears on the screen, the terminal closes or the test's
// deadline passes.
func (s *ptyScreen) waitFor(t *testing.T, text string) {
	t.Helper()
	for !strings.Contains(s.String(), text) {
		select {
		case <-s.changed:
		case <-s.closed:
			if !strings.Contains(s.String(), text) {
				t.Fatalf("the terminal closed before %q appeared:\n%s", text, s.String())
			}
		case <-t.Context().Done():
			t.Fatalf("%q did not appear:\n%s", text, s.String())
		}
	}
}

// A real dsh run on a terminal: the approval question shows the edit's diff, its reason
// once and no call id; "f" sends the typed reason to the model; the status region is held
// while the question waits.
func TestApprovalOnATerminal(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home, ws, dir := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scriptPath := filepath.Join(dir, "s.jsonl")
	script := `{"toolCalls":[{"id":"call_read_1","name":"read","arguments":"{\"file_path\":\"a.txt\"}"}]}
{"toolCalls":[{"id":"call_edit_2","name":"edit","arguments":"{\"file_path\":\"a.txt\",\"old_string\":\"hello\",\"new_string\":\"goodbye\"}"}]}
{"expectToolResults":["call_edit_2"],"text":"understood"}
`
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe, "run", "--ask", "edit", "--script", scriptPath, "change it")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "DSH_TEST_AS_DSH=1", "DSH_HOME="+home, "NO_COLOR=1", "COLUMNS=120")
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	screen := readPTY(tty)
	screen.waitFor(t, "Allow?")
	asked := len(screen.String())
	io.WriteString(tty, "f\n")
	screen.waitFor(t, "Tell the model why")
	io.WriteString(tty, "use sed instead\n")
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		t.Fatalf("dsh run: %v\n%s", err, screen.String())
	}
	tty.Close()
	<-screen.closed
	out := strings.ReplaceAll(screen.String(), "\r\n", "\n")
	mustContain(t, "terminal", out,
		"? edit needs your approval", "a.txt modified +1 −1", "- hello", "+ goodbye",
		"[f] no, tell the model why", "✗ rejected, the model is told why",
		`the user rejected tool "edit": use sed instead`, "understood")
	if n := strings.Count(out, `requires approval by permission rule "edit"`); n != 1 {
		t.Errorf("the reason is shown %d times:\n%s", n, out)
	}
	for _, bad := range []string{"call_edit_2", "allowed-once", "approval asked"} {
		if strings.Contains(out, bad) {
			t.Errorf("the terminal shows %q:\n%s", bad, out)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(data) != "hello\n" {
		t.Errorf("the rejected edit changed the file: %q", data)
	}
	// While the question waited, the status region was not drawn over it.
	between := screen.String()[asked:]
	if i := strings.Index(between, "Tell the model why"); i >= 0 && strings.Contains(between[:i], "running edit") {
		t.Errorf("the status region was drawn over the question:\n%q", between[:i])
	}
}
