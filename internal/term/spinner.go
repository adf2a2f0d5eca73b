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

// Status is a one-line progress indicator for a terminal: a spinner and a label, redrawn in
// place while something runs (a model streaming its reply), and erased before anything
// else is printed. On a writer that is not a terminal it writes nothing at all, so piped
// output stays clean.
//
// All output that shares the terminal with a Status must go through its Write (or be
// preceded by Clear), so the indicator never interleaves with it. A Status is safe for
// concurrent use; Stop ends its goroutine.
type Status struct {
	w       io.Writer
	enabled bool
	tick    time.Duration
	render  func(frame, label string) string

	mu      sync.Mutex
	label   string
	frame   int
	shown   bool // the indicator is on the screen
	running bool
	stop    chan struct{}
	done    chan struct{}
}

// NewStatus returns a Status writing to w. It is active only when enabled (normally:
// w is a terminal); r styles the indicator and width bounds its line.
func NewStatus(w io.Writer, enabled bool, r Renderer) *Status {
	width := r.Width
	return &Status{
		w:       w,
		enabled: enabled,
		tick:    100 * time.Millisecond,
		render: func(frame, label string) string {
			line := frame + " " + label
			if width > 1 && utf8.RuneCountInString(line) > width-1 {
				line = Renderer{Width: width - 1}.clip(line, 0)
			}
			return r.Cyan(frame) + r.Dim(strings.TrimPrefix(line, frame))
		},
	}
}

// Show displays label with a spinner and keeps it turning until Clear, Write or Stop.
// Calling Show again only changes the label.
func (s *Status) Show(label string) {
	if !s.enabled {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.label = Sanitize(strings.ReplaceAll(label, "\n", " "))
	s.drawLocked()
	if !s.running {
		s.running = true
		s.stop = make(chan struct{})
		s.done = make(chan struct{})
		go s.loop(s.stop, s.done)
	}
}

func (s *Status) loop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(s.tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.mu.Lock()
			if s.running {
				s.frame = (s.frame + 1) % len(spinnerFrames)
				s.drawLocked()
			}
			s.mu.Unlock()
		}
	}
}

func (s *Status) drawLocked() {
	io.WriteString(s.w, "\r\x1b[2K"+s.render(spinnerFrames[s.frame], s.label))
	s.shown = true
}

func (s *Status) eraseLocked() {
	if s.shown {
		io.WriteString(s.w, "\r\x1b[2K")
		s.shown = false
	}
}

// Clear erases the indicator and stops it turning; Show brings it back.
func (s *Status) Clear() {
	if !s.enabled {
		return
	}
	s.mu.Lock()
	s.eraseLocked()
	stop, done := s.halt()
	s.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// halt marks the spinner stopped and returns its goroutine's channels (nil when none runs).
func (s *Status) halt() (chan struct{}, chan struct{}) {
	if !s.running {
		return nil, nil
	}
	s.running = false
	stop, done := s.stop, s.done
	s.stop, s.done = nil, nil
	return stop, done
}

// Write erases the indicator (stopping it) and writes p to the underlying writer.
func (s *Status) Write(p []byte) (int, error) {
	s.Clear()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Stop erases the indicator and waits for its goroutine to end. The Status may be shown
// again afterwards.
func (s *Status) Stop() { s.Clear() }
