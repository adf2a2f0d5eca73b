package term

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a strings.Builder safe for the ticking goroutine.
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

// fakeClock is a Clock the test moves: Now is set, ticks are sent by hand.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	ticks chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), ticks: make(chan time.Time)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Ticker(time.Duration) (<-chan time.Time, func()) { return c.ticks, func() {} }

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// tick delivers two ticks: when the second is received the first has been drawn.
func (c *fakeClock) tick() {
	c.ticks <- c.Now()
	c.ticks <- c.Now()
}

func TestStatusDisabledWritesOnlyOutput(t *testing.T) {
	var buf syncBuffer
	s := NewStatusClock(&buf, false, Renderer{}, newFakeClock())
	s.Show("thinking")
	s.Write([]byte("text\n"))
	s.Hold()
	s.Release()
	s.Refresh()
	s.Stop()
	if got := buf.String(); got != "text\n" {
		t.Errorf("a disabled status wrote %q, want only the output", got)
	}
}

// The status line stays while the model streams and updates on every tick: the elapsed
// time moves although nothing else happens (it used to be drawn once and erased).
func TestStatusTicksWithElapsedTime(t *testing.T) {
	var buf syncBuffer
	clock := newFakeClock()
	start := clock.Now()
	s := NewStatusClock(&buf, true, Renderer{}, clock)
	defer s.Stop()
	s.SetView(func(now time.Time) ([]string, string, bool) {
		return nil, fmt.Sprintf("thinking · %ds", int(now.Sub(start).Seconds())), true
	})
	if !strings.HasSuffix(buf.String(), "⠋ thinking · 0s") {
		t.Fatalf("first draw %q", buf.String())
	}
	clock.advance(12 * time.Second)
	clock.tick()
	if !strings.Contains(buf.String(), "\r\x1b[2K⠙ thinking · 12s") {
		t.Errorf("no redraw with the elapsed time: %q", buf.String())
	}
	clock.advance(48 * time.Second)
	clock.tick()
	if !strings.Contains(buf.String(), "thinking · 60s") {
		t.Errorf("no redraw at 60s: %q", buf.String())
	}
}

// Output written through the Status scrolls above the region, which is drawn again after
// it — except while the output has left the cursor mid-line.
func TestStatusStaysBelowOutput(t *testing.T) {
	var buf syncBuffer
	s := NewStatusClock(&buf, true, Renderer{}, newFakeClock())
	defer s.Stop()
	s.Show("working")
	s.Write([]byte("hello\n"))
	if got, want := buf.String(), "⠋ working\r\x1b[2Khello\n⠋ working"; got != want {
		t.Errorf("after a line\n got %q\nwant %q", got, want)
	}
	s.Write([]byte("partial"))
	if strings.HasSuffix(buf.String(), "⠋ working") {
		t.Errorf("the region was drawn mid-line: %q", buf.String())
	}
	s.Write([]byte(" line\n"))
	if !strings.HasSuffix(buf.String(), "partial line\n⠋ working") {
		t.Errorf("the region did not come back after the line ended: %q", buf.String())
	}
	s.Stop()
	if !strings.HasSuffix(buf.String(), "\r\x1b[2K") {
		t.Errorf("Stop left the region on screen: %q", buf.String())
	}
}

// A live tail is drawn above the status line and erased line by line.
func TestStatusTail(t *testing.T) {
	var buf syncBuffer
	s := NewStatusClock(&buf, true, Renderer{Width: 20}, newFakeClock())
	defer s.Stop()
	s.SetView(func(time.Time) ([]string, string, bool) {
		return []string{"compiling\x1b[31m", "a very long line of output that does not fit"}, "running bash · 3s", true
	})
	s.Write([]byte("x\n"))
	want := "  │ compiling^[[31m\n  │ a very long li…\n⠋ running bash · 3s" +
		"\r\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K" + "x\n" +
		"  │ compiling^[[31m\n  │ a very long li…\n⠋ running bash · 3s"
	if got := buf.String(); got != want {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
}

// Hold keeps the region off the screen while something else (an approval question) uses
// the terminal.
func TestStatusHold(t *testing.T) {
	var buf syncBuffer
	clock := newFakeClock()
	s := NewStatusClock(&buf, true, Renderer{}, clock)
	defer s.Stop()
	s.Show("running bash")
	s.Hold()
	held := len(buf.String())
	clock.tick()
	s.Refresh()
	if got := buf.String()[held:]; got != "" {
		t.Errorf("drawn while held: %q", got)
	}
	s.Release()
	if !strings.HasSuffix(buf.String(), "running bash") {
		t.Errorf("not drawn after Release: %q", buf.String())
	}
}

func TestStatusHidesWhenViewHasNothing(t *testing.T) {
	var buf syncBuffer
	s := NewStatusClock(&buf, true, Renderer{}, newFakeClock())
	defer s.Stop()
	show := true
	s.SetView(func(time.Time) ([]string, string, bool) { return nil, "busy", show })
	show = false
	s.Refresh()
	if got := buf.String(); got != "⠋ busy\r\x1b[2K" {
		t.Errorf("got %q", got)
	}
}

// BenchmarkStatusWrite measures streamed text going through a live region: each delta
// erases and redraws it.
func BenchmarkStatusWrite(b *testing.B) {
	var sink strings.Builder
	s := NewStatusClock(&sink, true, Renderer{Width: 100}, newFakeClock())
	s.SetView(func(time.Time) ([]string, string, bool) {
		return []string{"ok  pkg/a", "ok  pkg/b"}, "deepseek-flash · writing · 12s · ≈340 tokens", true
	})
	defer s.Stop()
	line := []byte("a line of streamed model output\n")
	b.ReportAllocs()
	for b.Loop() {
		s.Write(line)
		if sink.Len() > 1<<20 {
			sink.Reset()
		}
	}
}
