package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/policy/approval"
)

func TestApprovalPresetFlag(t *testing.T) {
	bash := `{"command":"echo hi","description":"d"}`
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown preset", []string{"call", "--approval", "yolo", "read", `{"file_path":"a.txt"}`}, 2, `--approval: approval preset must be one of read-only, auto-edit or full-auto (got "yolo")`},
		{"read-only reads", []string{"call", "--approval", "read-only", "read", `{"file_path":"a.txt"}`}, 0, "✓ read"},
		{"read-only asks before bash", []string{"call", "--approval", "read-only", "bash", bash}, 1, "requires approval, but no approval channel is available"},
		{"read-only asks before write", []string{"call", "--approval", "read-only", "write", `{"file_path":"n.txt","content":"x"}`}, 1, "requires approval, but no approval channel is available"},
		{"auto-edit writes", []string{"call", "--approval", "auto-edit", "write", `{"file_path":"n.txt","content":"x"}`}, 0, "✓ write"},
		{"auto-edit asks before bash", []string{"call", "--approval", "auto-edit", "bash", bash}, 1, "requires approval, but no approval channel is available"},
		{"an allow rule still pre-approves", []string{"call", "--approval", "read-only", "--allow", "bash(echo *)", "bash", bash}, 0, "✓ bash · exit 0"},
		{"full-auto answers an ask rule", []string{"call", "--approval", "full-auto", "--ask", "bash(echo *)", "bash", bash}, 0, "✓ bash · exit 0"},
		{"full-auto keeps deny rules", []string{"call", "--approval", "full-auto", "--deny", "bash(echo *)", "bash", bash}, 1, "denied by permission rule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t)
			s.write("a.txt", "hello\n")
			r := s.dsh(tt.args...).want(t, tt.code)
			mustContain(t, "output", r.stdout+r.stderr, tt.want)
		})
	}
}

// A live run with a person answering on the terminal: the question shows the diff, the
// reason once and no call id, the answer in words; the transcript does not repeat them.
func TestApprovalPromptInRun(t *testing.T) {
	s := newSandbox(t)
	s.write("a.txt", "hello\n")
	c, err := loadConfig(&env{getenv: func(k string) string { return s.env[k] }}, s.ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Permissions.Ask = []string{"edit"}
	model, err := script.New([]script.Reply{
		{ToolCalls: []script.ToolCall{{ID: "call_edit_1", Name: "read", Arguments: `{"file_path":"a.txt"}`}}},
		{ToolCalls: []script.ToolCall{{ID: "call_edit_2", Name: "edit", Arguments: `{"file_path":"a.txt","old_string":"hello","new_string":"goodbye"}`}}},
		{Text: "done"},
	}, script.Options{})
	if err != nil {
		t.Fatal(err)
	}
	keys, typed := io.Pipe()
	errb := &watchedBuffer{changed: make(chan struct{}, 1)}
	prompter := approval.NewTerminal(keys, errb)
	defer prompter.Close()
	defer typed.Close()
	var out bytes.Buffer
	e := &env{stdout: &out, stderr: errb, cwd: s.ws, getenv: func(k string) string { return s.env[k] }}
	// The question appears before the answer is read; feed the answer after it shows.
	done := make(chan error, 1)
	go func() {
		done <- runAgent(context.Background(), e, agentRun{config: c, workspace: s.ws, model: model, task: "edit it", banner: "test", prompter: prompter})
	}()
	errb.waitFor("Allow?") // a line typed before the question shows is dropped
	io.WriteString(typed, "y\n")
	if err := <-done; err != nil {
		t.Fatalf("runAgent: %v\n%s", err, errb.String())
	}
	got := errb.String()
	mustContain(t, "transcript", got, "? edit needs your approval", "a.txt modified +1 −1", "- hello", "+ goodbye", "✓ allowed once\n")
	if n := strings.Count(got, `requires approval by permission rule "edit"`); n != 1 {
		t.Errorf("the reason is shown %d times:\n%s", n, got)
	}
	for _, bad := range []string{"call_edit_2", "allowed-once", "approval asked"} {
		if strings.Contains(got, bad) {
			t.Errorf("the transcript shows %q:\n%s", bad, got)
		}
	}
}

// watchedBuffer is a terminal's output that a test can wait on.
type watchedBuffer struct {
	syncBuffer
	changed chan struct{}
}

func (w *watchedBuffer) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	select {
	case w.changed <- struct{}{}:
	default:
	}
	return n, err
}

// waitFor blocks until text has been written.
func (w *watchedBuffer) waitFor(text string) {
	for !strings.Contains(w.String(), text) {
		<-w.changed
	}
}
