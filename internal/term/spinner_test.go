package term

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/internal/testwait"
)

// syncBuffer is a strings.Builder safe for the spinner goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStatusDisabledWritesOnlyOutput(t *testing.T) {
	var buf syncBuffer
	s := NewStatus(&buf, false, Renderer{})
	s.Show("thinking")
	s.Write([]byte("text\n"))
	s.Show("again")
	s.Stop()
	if got := buf.String(); got != "text\n" {
		t.Errorf("a disabled status wrote %q, want only the output", got)
	}
}

func TestStatusShowsAndErases(t *testing.T) {
	var buf syncBuffer
	s := NewStatus(&buf, true, Renderer{})
	s.tick = time.Millisecond
	s.Show("waiting for the model")
	// Wait until the spinner has turned at least once.
	testwait.Until(t, "the spinner to turn", func() bool { return strings.Contains(buf.String(), spinnerFrames[1]) })
	s.Write([]byte("hello\n"))
	after := len(buf.String())
	s.Show("thinking · 12 chars")
	s.Stop()
	s.Stop() // idempotent
	out := buf.String()
	if !strings.Contains(out, "⠋ waiting for the model") {
		t.Errorf("no indicator in %q", out)
	}
	if !strings.Contains(out, "\r\x1b[2Khello\n") {
		t.Errorf("the indicator was not erased before the output: %q", out)
	}
	if !strings.HasSuffix(out, "\r\x1b[2K") {
		t.Errorf("Stop left the indicator on screen: %q", out)
	}
	if !strings.Contains(out[after:], "thinking · 12 chars") {
		t.Errorf("Show after Write did not bring the indicator back: %q", out[after:])
	}
}

func TestStatusSanitizesAndClips(t *testing.T) {
	var buf syncBuffer
	s := NewStatus(&buf, true, Renderer{Width: 12})
	s.Show("a\x1b[2Jvery long label\nwith lines")
	s.Stop()
	out := buf.String()
	if strings.Contains(out, "\x1b[2J") || strings.Contains(out, "\n") {
		t.Errorf("label not sanitized: %q", out)
	}
	if !strings.Contains(out, "⠋ a^[[2Jve…") {
		t.Errorf("label not clipped to the width: %q", out)
	}
}
