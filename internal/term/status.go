package term

import (
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// spinnerFrames are the frames of the progress indicator.
var spinnerFrames = [...]string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// Clock is the time source of a Status: Now for elapsed times and Ticker for redraws. Tests
// pass a fake one so that nothing depends on real time.
type Clock interface {
	Now() time.Time
	// Ticker returns a channel ticking every d and the function that stops it.
	Ticker(d time.Duration) (<-chan time.Time, func())
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Ticker returns a time.Ticker's channel and its Stop.
func (SystemClock) Ticker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// View is what a Status shows at a moment: a label after the spinner and, above it, a few
// lines of live output (the tail of a running command). ok is false when there is nothing
// to show; the region is then erased.
type View func(now time.Time) (tail []string, label string, ok bool)

// Status is a live region at the bottom of a terminal: a status line (a spinner and a label,
// such as the elapsed time and tokens of a streaming reply, or the calls running) with a
// few lines of live output above it, redrawn in place on every tick. Other output goes
// through Write, which erases the region, writes, and draws it again below — so the region
// stays on screen while the transcript scrolls above it. On a writer that is not a terminal
// (enabled false) it draws nothing at all, so piped output stays clean.
//
// A Status is safe for concurrent use; Stop ends its ticking goroutine.
type Status struct {
	w       io.Writer
	enabled bool
	r       Renderer
	clock   Clock
	tick    time.Duration

	mu     sync.Mutex
	view   View
	frame  int
	drawn  int  // lines of the region on screen, 0 when none
	mid    bool // the last output left the cursor mid-line: the region waits for a newline
	held   int  // Hold nesting: while held nothing is drawn
	ticker *ticking
}

// ticking is a running ticker goroutine.
type ticking struct{ stop, done chan struct{} }

// NewStatus returns a Status writing to w, active only when enabled (normally: w is a
// terminal), styled by r and bounded by its width, on the system clock.
func NewStatus(w io.Writer, enabled bool, r Renderer) *Status {
	return NewStatusClock(w, enabled, r, SystemClock{})
}

// NewStatusClock is NewStatus on clock.
func NewStatusClock(w io.Writer, enabled bool, r Renderer, clock Clock) *Status {
	return &Status{w: w, enabled: enabled, r: r, clock: clock, tick: 100 * time.Millisecond}
}

// Now returns the Status clock's time.
func (s *Status) Now() time.Time { return s.clock.Now() }

// Show displays a fixed label with a spinner until Clear or Stop.
func (s *Status) Show(label string) {
	s.SetView(func(time.Time) ([]string, string, bool) { return nil, label, true })
}

// SetView makes v what the region shows, redrawn now and on every tick; nil hides it.
func (s *Status) SetView(v View) {
	if !s.enabled {
		return
	}
	s.mu.Lock()
	s.view = v
	s.redrawLocked()
	var stop *ticking
	if v != nil && s.ticker == nil {
		s.ticker = &ticking{stop: make(chan struct{}), done: make(chan struct{})}
		ch, stopTicker := s.clock.Ticker(s.tick)
		go s.loop(ch, stopTicker, s.ticker)
	} else if v == nil {
		stop, s.ticker = s.ticker, nil
	}
	s.mu.Unlock()
	if stop != nil {
		close(stop.stop)
		<-stop.done
	}
}

// Refresh redraws the region now (after the state its view reads has changed).
func (s *Status) Refresh() {
	if !s.enabled {
		return
	}
	s.mu.Lock()
	s.redrawLocked()
	s.mu.Unlock()
}

func (s *Status) loop(ch <-chan time.Time, stopTicker func(), t *ticking) {
	defer close(t.done)
	defer stopTicker()
	for {
		select {
		case <-t.stop:
			return
		case <-ch:
			s.mu.Lock()
			s.frame = (s.frame + 1) % len(spinnerFrames)
			s.redrawLocked()
			s.mu.Unlock()
		}
	}
}

// redrawLocked erases the region and draws the view's current state.
func (s *Status) redrawLocked() {
	var b strings.Builder
	s.eraseTo(&b)
	if s.view != nil && s.held == 0 && !s.mid {
		if tail, label, ok := s.view(s.clock.Now()); ok {
			s.drawTo(&b, tail, label)
		}
	}
	if b.Len() > 0 {
		io.WriteString(s.w, b.String())
	}
}

// width is the column budget of one region line (never wrapping, so erasing stays exact).
func (s *Status) width() int {
	if s.r.Width > 1 {
		return s.r.Width - 1
	}
	return 79
}

func (s *Status) drawTo(b *strings.Builder, tail []string, label string) {
	w := s.width()
	clip := func(l string) string {
		l = Sanitize(strings.ReplaceAll(l, "\t", "    "))
		if utf8.RuneCountInString(l) > w {
			l = Renderer{Width: w}.clip(l, 0)
		}
		return l
	}
	for _, l := range tail {
		b.WriteString(s.r.Dim(clip("  │ "+strings.ReplaceAll(l, "\n", " "))) + "\n")
	}
	frame := spinnerFrames[s.frame]
	line := clip(frame + " " + strings.ReplaceAll(label, "\n", " "))
	b.WriteString(s.r.Cyan(frame) + s.r.Dim(strings.TrimPrefix(line, frame)))
	s.drawn = len(tail) + 1
}

// eraseTo writes what erases the region.
func (s *Status) eraseTo(b *strings.Builder) {
	if s.drawn == 0 {
		return
	}
	b.WriteString("\r\x1b[2K")
	for range s.drawn - 1 {
		b.WriteString("\x1b[1A\x1b[2K")
	}
	s.drawn = 0
}

// Write erases the region, writes p, and draws the region again once the cursor is at the
// start of a line.
func (s *Status) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.enabled {
		return s.w.Write(p)
	}
	var b strings.Builder
	s.eraseTo(&b)
	if b.Len() > 0 {
		io.WriteString(s.w, b.String())
	}
	n, err := s.w.Write(p)
	if len(p) > 0 {
		s.mid = p[len(p)-1] != '\n'
	}
	s.redrawLocked()
	return n, err
}

// Hold erases the region and draws nothing until the matching Release: for output that
// does not go through Write, such as an approval question read from the same terminal.
func (s *Status) Hold() {
	if !s.enabled {
		return
	}
	s.mu.Lock()
	s.held++
	s.redrawLocked()
	s.mu.Unlock()
}

// Release ends a Hold; the region is drawn again.
func (s *Status) Release() {
	if !s.enabled {
		return
	}
	s.mu.Lock()
	if s.held > 0 {
		s.held--
	}
	s.mid = false // the held output ended its line (a prompt is answered with Enter)
	s.redrawLocked()
	s.mu.Unlock()
}

// Clear hides the region: the same as SetView(nil).
func (s *Status) Clear() { s.SetView(nil) }

// Stop erases the region and waits for its goroutine to end. The Status may be shown
// again afterwards.
func (s *Status) Stop() { s.Clear() }
