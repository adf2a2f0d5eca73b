package main

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/session"
)

// fakeClock is a term.Clock the test moves.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	ticks chan time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Ticker(time.Duration) (<-chan time.Time, func()) { return c.ticks, func() {} }

// advance moves the clock and delivers a tick to tr's status region, then waits until it
// has been drawn: stopping the ticking goroutine waits for its draw (it is then restarted).
func (c *fakeClock) advance(tr *transcript, d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	c.ticks <- c.Now()
	tr.out.SetView(nil)
	tr.out.SetView(tr.prog.view)
}

// screenAfter returns what was written since mark and the new mark.
func screenAfter(b *syncBuffer, mark int) (string, int) {
	s := b.String()
	return s[mark:], len(s)
}

// The status region stays and moves while the model thinks and while a 60 s command runs,
// with the command's last output lines; it used to be drawn once and erased.
func TestLiveProgress(t *testing.T) {
	var screen syncBuffer
	clock := &fakeClock{now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), ticks: make(chan time.Time)}
	tr := newTranscriptClock(&screen, term.Renderer{}, true, nil, clock)
	defer tr.stop()
	tr.model = "deepseek-flash"
	mark := 0
	var got string

	tr.stepStart()
	got, mark = screenAfter(&screen, mark)
	mustContain(t, "waiting", got, "waiting for deepseek-flash · 0s")

	tr.reasoningDelta(strings.Repeat("x", 400))
	clock.advance(tr, 12*time.Second)
	got, mark = screenAfter(&screen, mark)
	mustContain(t, "thinking", got, "deepseek-flash · thinking · 12s · ≈100 tokens")

	tr.textDelta("Running the tests.\n")
	tr.event(session.AssistantMessage{Message: content.Message{Role: content.RoleAssistant, Content: content.Texts("Running the tests.")}}.Event())
	tr.event(session.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "bash", Arguments: `{"command":"go test ./...","description":"test"}`}.Event())
	got, mark = screenAfter(&screen, mark)
	mustContain(t, "call", got, "Running the tests.\n", "● bash ", "running bash · 0s")

	tr.prog.output("c1", "stdout", []byte("ok  \tpkg/a\t0.1s\nok  \tpkg/b\t0.2s\nFAIL pkg/c\nrunning pkg/d"))
	clock.advance(tr, 60*time.Second)
	got, mark = screenAfter(&screen, mark)
	mustContain(t, "running", got, "  │ ok      pkg/b    0.2s\n  │ FAIL pkg/c\n  │ running pkg/d\n", "running bash · 1m00s")
	if strings.Contains(got, "pkg/a") {
		t.Errorf("the tail shows more than %d lines:\n%s", tailLines, got)
	}

	tr.event(session.ToolResult{Turn: 1, Step: 1, CallID: "c1", Content: content.Texts("exit 1")}.Event())
	got, mark = screenAfter(&screen, mark)
	if !strings.HasSuffix(got, "✓ bash\n  exit 1\n") {
		t.Errorf("the region stayed after the call ended: %q", got)
	}
}

// Nothing is drawn when the output is not a terminal.
func TestNoProgressWhenNotATerminal(t *testing.T) {
	var screen syncBuffer
	clock := &fakeClock{now: time.Now(), ticks: make(chan time.Time)}
	tr := newTranscriptClock(&screen, term.Renderer{}, false, nil, clock)
	tr.model = "m"
	tr.stepStart()
	tr.reasoningDelta("hmm")
	tr.event(session.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "bash", Arguments: `{"command":"ls","description":"list"}`}.Event())
	tr.prog.output("c1", "stdout", []byte("a\n"))
	tr.stop()
	got := screen.String()
	if strings.ContainsAny(got, "\r\x1b") || strings.Contains(got, "running") || strings.Contains(got, "│ a") {
		t.Errorf("drawn on a pipe: %q", got)
	}
}

func TestProgressLabels(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var p progress
	p.init()
	if _, _, ok := p.view(t0); ok {
		t.Error("an idle view shows something")
	}
	p.callStarted("a", "read", t0)
	p.callStarted("b", "read", t0.Add(time.Second))
	p.callStarted("c", "grep", t0.Add(2*time.Second))
	if _, label, _ := p.view(t0.Add(65 * time.Second)); label != "running read ×2, grep · 1m05s" {
		t.Errorf("label %q", label)
	}
	p.output("c", "stdout", []byte("50%\r75%\r100%\ndone"))
	p.output("unknown", "stdout", []byte("ignored\n"))
	if tail, _, _ := p.view(t0); strings.Join(tail, "|") != "100%|done" {
		t.Errorf("tail %q", tail)
	}
	p.reset()
	p.modelStarted("m", t0)
	if _, label, _ := p.view(t0.Add(3 * time.Second)); label != "waiting for m · 3s" {
		t.Errorf("label %q", label)
	}
	p.modelOutput(8, false)
	if _, label, _ := p.view(t0.Add(3 * time.Second)); label != "m · writing · 3s · ≈2 tokens" {
		t.Errorf("label %q", label)
	}
}

// FuzzProgressOutput feeds arbitrary command output, in arbitrary chunks, to the live tail:
// it never shows more than tailLines lines, no line holds a newline, and the last complete
// line of plain output is shown.
func FuzzProgressOutput(f *testing.F) {
	f.Add([]byte("one\ntwo\nthree\nfour\n"), uint8(3))
	f.Add([]byte("10%\r50%\r100%\ndone"), uint8(1))
	f.Add([]byte("\x1b[31mred\x1b[0m\r\n\xff\xfe\n"), uint8(2))
	f.Add([]byte(strings.Repeat("x", 5000)+"\n"), uint8(7))
	f.Fuzz(func(t *testing.T, out []byte, step uint8) {
		var p progress
		p.init()
		t0 := time.Unix(0, 0)
		p.callStarted("c", "bash", t0)
		n := int(step%16) + 1
		for i := 0; i < len(out); i += n {
			p.output("c", "stdout", out[i:min(i+n, len(out))])
		}
		tail, label, ok := p.view(t0)
		if !ok || label != "running bash · 0s" {
			t.Fatalf("view %v %q", ok, label)
		}
		if len(tail) > tailLines {
			t.Fatalf("%d tail lines", len(tail))
		}
		for _, l := range tail {
			if strings.Contains(l, "\n") {
				t.Fatalf("tail line with a newline: %q", l)
			}
		}
		if !strings.ContainsAny(string(out), "\r") && strings.HasSuffix(string(out), "\n") && len(out) > 1 {
			lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			// A very long line is kept by its end only.
			if last := lines[len(lines)-1]; len(tail) == 0 || !strings.HasSuffix(last, tail[len(tail)-1]) || (last != "" && tail[len(tail)-1] == "") {
				t.Fatalf("tail %.200q does not end with the last line %.200q", tail, last)
			}
		}
	})
}

// BenchmarkProgressOutput measures recording a running command's output for the live tail
// (called for every chunk a command writes).
func BenchmarkProgressOutput(b *testing.B) {
	var p progress
	p.init()
	p.callStarted("c", "bash", time.Unix(0, 0))
	chunk := []byte(strings.Repeat("compiling package github.com/example/x\n", 20))
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		p.output("c", "stdout", chunk)
	}
}
