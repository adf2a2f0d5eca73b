package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/policy/approval"
)

// tailLines is how many lines of a running command's output the status region shows.
const tailLines = 3

// progress is what the live status region of a run shows: the model at work (elapsed time,
// an estimate of the tokens so far, thinking or writing), or the calls running (names and
// the elapsed time of the oldest) with the last lines of the newest one's output. It has
// its own lock, never held while calling into the Status, because the Status calls view
// under its own.
type progress struct {
	mu       sync.Mutex
	model    string
	modelOn  bool
	since    time.Time
	runes    int
	thinking bool
	running  map[string]*running
	seq      int
}

// running is one call in flight.
type running struct {
	name  string
	start time.Time
	seq   int
	lines []string // the last complete output lines
	part  string   // the output after the last newline
}

func (p *progress) init() { p.running = map[string]*running{} }

func (p *progress) modelStarted(model string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.model, p.modelOn, p.since, p.runes, p.thinking = model, true, now, 0, false
}

func (p *progress) modelOutput(runes int, thinking bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runes += runes
	p.thinking = thinking
}

func (p *progress) modelDone() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.modelOn = false
}

func (p *progress) callStarted(id, name string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	p.running[id] = &running{name: name, start: now, seq: p.seq}
}

func (p *progress) callEnded(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, id)
}

func (p *progress) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.modelOn = false
	clear(p.running)
}

// output records a chunk of a running call's output (a tool.Progress).
func (p *progress) output(callID, _ string, chunk []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.running[callID]
	if r == nil {
		return
	}
	text := r.part + string(chunk)
	parts := strings.Split(text, "\n")
	for _, l := range parts[:len(parts)-1] {
		l = lastSegment(l)
		if len(l) > 4096 {
			l = l[len(l)-4096:] // the region shows a line's start; memory stays bounded
		}
		r.lines = append(r.lines, l)
	}
	if len(r.lines) > tailLines {
		r.lines = slices.Clone(r.lines[len(r.lines)-tailLines:])
	}
	r.part = parts[len(parts)-1]
	if len(r.part) > 4096 {
		r.part = r.part[len(r.part)-4096:]
	}
}

// lastSegment is what a terminal shows of a line redrawn with carriage returns (progress
// bars): the text after the last one.
func lastSegment(l string) string {
	l = strings.TrimSuffix(l, "\r")
	if i := strings.LastIndexByte(l, '\r'); i >= 0 {
		return l[i+1:]
	}
	return l
}

// view is the term.View of the status region.
func (p *progress) view(now time.Time) ([]string, string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.running) > 0 {
		calls := make([]*running, 0, len(p.running))
		for _, r := range p.running {
			calls = append(calls, r)
		}
		slices.SortFunc(calls, func(a, b *running) int { return a.seq - b.seq })
		counts := map[string]int{}
		var names []string
		for _, r := range calls {
			if counts[r.name] == 0 {
				names = append(names, r.name)
			}
			counts[r.name]++
		}
		for i, n := range names {
			if counts[n] > 1 {
				names[i] = fmt.Sprintf("%s ×%d", n, counts[n])
			}
		}
		label := "running " + strings.Join(names, ", ") + " · " + elapsed(now.Sub(calls[0].start))
		var tail []string
		for i := len(calls) - 1; i >= 0; i-- {
			r := calls[i]
			if len(r.lines) > 0 || r.part != "" {
				tail = slices.Clone(r.lines)
				if part := lastSegment(r.part); part != "" {
					tail = append(tail, part)
				}
				if len(tail) > tailLines {
					tail = tail[len(tail)-tailLines:]
				}
				break
			}
		}
		return tail, label, true
	}
	if !p.modelOn {
		return nil, "", false
	}
	what := "waiting for " + p.model
	switch {
	case p.runes > 0 && p.thinking:
		what = p.model + " · thinking"
	case p.runes > 0:
		what = p.model + " · writing"
	}
	label := what + " · " + elapsed(now.Sub(p.since))
	if p.runes > 0 {
		label += fmt.Sprintf(" · ≈%d tokens", (p.runes+3)/4)
	}
	return nil, label, true
}

// elapsed renders a duration as a person reads it: 7s, 1m05s.
func elapsed(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s < 60 {
		return fmt.Sprintf("%ds", s)
	}
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}

// holdingPrompter keeps the status region off the terminal while a question is asked on it.
type holdingPrompter struct {
	inner  approval.Prompter
	mu     sync.Mutex
	status *term.Status // set once the transcript exists
}

func (h *holdingPrompter) setStatus(s *term.Status) {
	h.mu.Lock()
	h.status = s
	h.mu.Unlock()
}

// Prompt holds the status region, asks, and releases it.
func (h *holdingPrompter) Prompt(ctx context.Context, q approval.Question) (approval.Reply, error) {
	h.mu.Lock()
	s := h.status
	h.mu.Unlock()
	if s != nil {
		s.Hold()
		defer s.Release()
	}
	return h.inner.Prompt(ctx, q)
}

// Close closes the inner prompter when it has a Close.
func (h *holdingPrompter) Close() error {
	if c, ok := h.inner.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}
