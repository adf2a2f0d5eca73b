package approval_test

import (
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/policy/rules"
	"github.com/dsh-go/dsh/tool"
)

// screen is a terminal's output: it records everything written and lets a test wait for a
// text to appear.
type screen struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

func newScreen() *screen { return &screen{changed: make(chan struct{}, 1)} }

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.buf.Write(p)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor blocks until text has been written n times in all.
func (s *screen) waitFor(text string, n int) {
	for strings.Count(s.String(), text) < n {
		<-s.changed
	}
}

type term struct {
	t      *testing.T
	tty    *approval.Terminal
	keys   *io.PipeWriter
	screen *screen
}

func newTerm(t *testing.T) *term {
	t.Helper()
	r, w := io.Pipe()
	tm := &term{t: t, keys: w, screen: newScreen()}
	tm.tty = approval.NewTerminal(r, tm.screen)
	t.Cleanup(func() {
		w.Close()
		tm.tty.Close()
	})
	return tm
}

func (tm *term) typeLine(s string) {
	if _, err := io.WriteString(tm.keys, s); err != nil {
		tm.t.Fatal(err)
	}
}

var pushQuestion = approval.Question{
	ToolName: "bash",
	CallID:   "call_1",
	Reason:   `tool "bash" requires approval by permission rule "bash(git push*)"`,
	Argument: rules.Argument{Name: "command", Kind: rules.KindCommand, Value: "git push origin main"},
}

// ask runs one question on its own goroutine.
func (tm *term) ask(ctx context.Context, q approval.Question) <-chan approval.Reply {
	ch := make(chan approval.Reply, 1)
	go func() {
		r, err := tm.tty.Prompt(ctx, q)
		if err != nil {
			tm.t.Error(err)
		}
		ch <- r
	}()
	return ch
}

func TestTerminalAnswers(t *testing.T) {
	tests := []struct {
		typed []string
		want  approval.Reply
	}{
		{[]string{"y\n"}, approval.Reply{Outcome: tool.ApprovalAllowedOnce}},
		{[]string{" Yes \n"}, approval.Reply{Outcome: tool.ApprovalAllowedOnce}},
		{[]string{"n\n"}, approval.Reply{Outcome: tool.ApprovalRejected}},
		{[]string{"NO\n"}, approval.Reply{Outcome: tool.ApprovalRejected}},
		{[]string{"a\n"}, approval.Reply{Outcome: tool.ApprovalAllowedOnce, Always: true}},
		{[]string{"always\r\n"}, approval.Reply{Outcome: tool.ApprovalAllowedOnce, Always: true}},
		{[]string{"maybe\n", "\n", "n\n"}, approval.Reply{Outcome: tool.ApprovalRejected}},
		{[]string{"f\n", "use git push --dry-run first\n"}, approval.Reply{Outcome: tool.ApprovalRejected, Feedback: "use git push --dry-run first"}},
		{[]string{"s\n", "y\n"}, approval.Reply{Outcome: tool.ApprovalAllowedOnce}}, // no Save: "s" is not an answer
	}
	for _, tt := range tests {
		tm := newTerm(t)
		got := tm.ask(context.Background(), pushQuestion)
		tm.screen.waitFor("Allow?", 1)
		for i, s := range tt.typed {
			tm.typeLine(s)
			if i < len(tt.typed)-1 {
				if tt.typed[i] == "f\n" {
					tm.screen.waitFor("Tell the model why", 1)
				} else {
					tm.screen.waitFor("Please answer", i+1)
				}
			}
		}
		if r := <-got; r != tt.want {
			t.Errorf("typed %q: %+v, want %+v", tt.typed, r, tt.want)
		}
	}
}

func TestTerminalScreen(t *testing.T) {
	tm := newTerm(t)
	got := tm.ask(context.Background(), pushQuestion)
	tm.screen.waitFor("Allow?", 1)
	tm.typeLine("what\n")
	tm.screen.waitFor("Please answer", 1)
	tm.typeLine("y\n")
	testwait.Recv(t, got, "a value on got")
	// The reason is shown once, without the internal call id; the answer in human words.
	answers := "[y]es · [n]o · [f] no, tell the model why · [a]lways (this command, this session)"
	want := "\n? bash needs your approval\n" +
		"  tool \"bash\" requires approval by permission rule \"bash(git push*)\"\n" +
		"  command: git push origin main\n" +
		"Allow? " + answers + ": " +
		"Please answer " + answers + ": " +
		"✓ allowed once\n"
	if s := tm.screen.String(); s != want {
		t.Errorf("screen\n%q\nwant\n%q", s, want)
	}
}

func TestFormatQuestion(t *testing.T) {
	mcp := approval.Question{ToolName: "mcp__gh__issue", Args: jsonv.NewObject(jsonv.Member{Name: "title", Value: "a\nb"}),
		Argument: rules.Argument{Name: "arguments", Kind: rules.KindText, Value: `{"title":"a\nb"}`}}
	if got, want := approval.FormatQuestion(mcp), "\n? mcp__gh__issue needs your approval\n  arguments: {\"title\":\"a\\nb\"}\n"; got != want {
		t.Errorf("mcp question\n%q\nwant\n%q", got, want)
	}
	long := approval.Question{ToolName: "write", Argument: rules.Argument{Name: "file_path", Kind: rules.KindPath, Value: strings.Repeat("é", 300) + "\nx"}}
	got := approval.FormatQuestion(long)
	if !strings.Contains(got, "  file_path: "+strings.Repeat("é", 250)+"… (+102 bytes)\n") {
		t.Errorf("long question %q", got)
	}
}

// TestTerminalTypedAhead checks a line typed while no question shows does not answer the
// next question.
func TestTerminalTypedAhead(t *testing.T) {
	tm := newTerm(t)
	ctx, cancel := context.WithCancel(context.Background())
	first := tm.ask(ctx, pushQuestion)
	tm.screen.waitFor("Allow?", 1)
	cancel()
	if r := testwait.Recv(t, first, "a value on first"); r.Outcome != tool.ApprovalCancelled {
		t.Fatalf("cancelled question: %+v", r)
	}
	if !strings.HasSuffix(tm.screen.String(), "\n(cancelled)\n") {
		t.Errorf("screen %q", tm.screen.String())
	}
	tm.typeLine("y\n") // no question is showing
	testwait.Until(t, "the terminal to read the early line", func() bool { return tm.tty.Buffered() > 0 })
	second := tm.ask(context.Background(), pushQuestion)
	tm.screen.waitFor("Allow?", 2)
	tm.typeLine("n\n")
	if r := testwait.Recv(t, second, "a value on second"); r.Outcome != tool.ApprovalRejected {
		t.Errorf("second question answered by the early line: %+v", r)
	}
}

// TestTerminalOneAtATime checks concurrent questions are shown and answered in turn.
func TestTerminalOneAtATime(t *testing.T) {
	tm := newTerm(t)
	a := tm.ask(context.Background(), pushQuestion)
	tm.screen.waitFor("Allow?", 1)
	b := tm.ask(context.Background(), pushQuestion)
	tm.typeLine("y\n")
	if r := testwait.Recv(t, a, "a value on a"); r.Outcome != tool.ApprovalAllowedOnce {
		t.Errorf("first: %+v", r)
	}
	tm.screen.waitFor("Allow?", 2)
	tm.typeLine("n\n")
	if r := testwait.Recv(t, b, "a value on b"); r.Outcome != tool.ApprovalRejected {
		t.Errorf("second: %+v", r)
	}
	// A question waiting for its turn can be cancelled.
	c := tm.ask(context.Background(), pushQuestion)
	tm.screen.waitFor("Allow?", 3)
	ctx, cancel := context.WithCancel(context.Background())
	d := tm.ask(ctx, pushQuestion)
	cancel()
	if r := testwait.Recv(t, d, "a value on d"); r.Outcome != tool.ApprovalCancelled {
		t.Errorf("waiting question: %+v", r)
	}
	tm.typeLine("a\n")
	if r := testwait.Recv(t, c, "a value on c"); !r.Always {
		t.Errorf("third: %+v", r)
	}
}

// TestTerminalInputEnds checks a closed input makes this and later questions unavailable.
func TestTerminalInputEnds(t *testing.T) {
	tm := newTerm(t)
	got := tm.ask(context.Background(), pushQuestion)
	tm.screen.waitFor("Allow?", 1)
	tm.keys.Close()
	if r := testwait.Recv(t, got, "a value on got"); r.Outcome != tool.ApprovalUnavailable {
		t.Errorf("%+v", r)
	}
	if r, _ := tm.tty.Prompt(context.Background(), pushQuestion); r.Outcome != tool.ApprovalUnavailable {
		t.Errorf("later question: %+v", r)
	}
	// A last line without a newline still counts.
	r, w := io.Pipe()
	tty := approval.NewTerminal(r, io.Discard)
	defer tty.Close()
	go func() {
		io.WriteString(w, "y")
		w.Close()
	}()
	if rep, _ := tty.Prompt(context.Background(), pushQuestion); rep.Outcome != tool.ApprovalAllowedOnce {
		t.Errorf("unterminated line: %+v", rep)
	}
}

// TestTerminalAnswerPipedBeforeTheQuestion: input that is waiting before the first question
// (an answer piped into dsh) answers that question; the reader starts with it.
func TestTerminalAnswerPipedBeforeTheQuestion(t *testing.T) {
	tests := []struct {
		input string
		want  tool.ApprovalOutcome
	}{
		{"y\n", tool.ApprovalAllowedOnce},
		{"n\n", tool.ApprovalRejected},
		{"y", tool.ApprovalAllowedOnce}, // a last line without a newline
		{"", tool.ApprovalUnavailable},  // the input ended before anything was typed
	}
	for _, tt := range tests {
		t.Run(strings.TrimSpace(tt.input), func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			// The whole answer is in the pipe, and the pipe closed, before the terminal exists.
			if _, err := io.WriteString(w, tt.input); err != nil {
				t.Fatal(err)
			}
			w.Close()
			tty := approval.NewTerminal(r, io.Discard)
			defer tty.Close()
			rep, err := tty.Prompt(testwait.Context(t), pushQuestion)
			if err != nil || rep.Outcome != tt.want {
				t.Errorf("Prompt with %q piped in first = %+v, %v; want %s", tt.input, rep, err, tt.want)
			}
		})
	}
}

func TestTerminalClosed(t *testing.T) {
	tm := newTerm(t)
	tm.tty.Close()
	if r, _ := tm.tty.Prompt(context.Background(), pushQuestion); r.Outcome != tool.ApprovalUnavailable {
		t.Errorf("%+v", r)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestTerminalWriteFails(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	tty := approval.NewTerminal(r, failWriter{})
	defer tty.Close()
	if _, err := tty.Prompt(context.Background(), pushQuestion); err == nil {
		t.Error("no error for a failing terminal")
	}
}

func TestForStdio(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if approval.IsTerminal(r) || approval.IsTerminal(nil) {
		t.Error("a pipe is a terminal")
	}
	p := approval.ForStdio(r, w)
	if rep, err := p.Prompt(context.Background(), pushQuestion); err != nil || rep.Outcome != tool.ApprovalUnavailable {
		t.Errorf("piped stdio: %+v %v", rep, err)
	}
}
