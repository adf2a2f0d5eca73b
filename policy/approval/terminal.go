package approval

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/mattn/go-isatty"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// Terminal is the interactive prompter: it writes each question to out and reads the answer,
// one line, from in — y or yes (allow this call), n or no (reject it), a or always (allow it
// and every later call of the same tool with the same primary argument in this session).
// Any other answer is asked again. When in ends, every question (this one and later ones) is
// ApprovalUnavailable. Questions are asked one at a time; a line typed while no question
// was showing is ignored, so an early keystroke cannot answer a question not yet seen.
//
// A Terminal reads in on a goroutine of its own, started by the first question. It ends when
// in ends or fails, or after Close once its current read returns.
type Terminal struct {
	in  *bufio.Reader
	out io.Writer

	turn  chan struct{} // a one-slot semaphore: one question at a time
	start sync.Once
	lines chan line
	quit  chan struct{}
	close sync.Once
	gen   atomic.Uint64 // the number of the question showing
}

// line is one line read, stamped with the question showing when it was read.
type line struct {
	text string
	gen  uint64
}

// NewTerminal returns a prompter reading answers from in and writing questions to out.
func NewTerminal(in io.Reader, out io.Writer) *Terminal {
	return &Terminal{
		in:    bufio.NewReader(in),
		out:   out,
		turn:  make(chan struct{}, 1),
		lines: make(chan line, 1),
		quit:  make(chan struct{}),
	}
}

// Close stops the reading goroutine once its current read returns. Later questions are
// ApprovalUnavailable.
func (t *Terminal) Close() error {
	t.close.Do(func() { close(t.quit) })
	return nil
}

// read delivers the lines of in until it ends or the terminal is closed.
func (t *Terminal) read() {
	defer close(t.lines)
	for {
		s, err := t.in.ReadString('\n')
		if s != "" {
			select {
			case t.lines <- line{text: s, gen: t.gen.Load()}:
			case <-t.quit:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Prompt asks q on the terminal and waits for an answer or for ctx to be cancelled.
func (t *Terminal) Prompt(ctx context.Context, q Question) (Reply, error) {
	select {
	case t.turn <- struct{}{}:
	case <-ctx.Done():
		return Reply{Outcome: tool.ApprovalCancelled}, nil
	}
	defer func() { <-t.turn }()
	select {
	case <-t.quit:
		return Reply{Outcome: tool.ApprovalUnavailable}, nil
	default:
	}
	t.start.Do(func() { go t.read() })
	gen := t.gen.Add(1)
	if _, err := io.WriteString(t.out, FormatQuestion(q)); err != nil {
		return Reply{}, fmt.Errorf("approval: writing the question: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			io.WriteString(t.out, "\n(cancelled)\n")
			return Reply{Outcome: tool.ApprovalCancelled}, nil
		case l, ok := <-t.lines:
			if !ok {
				io.WriteString(t.out, "\n(no answer: input closed)\n")
				return Reply{Outcome: tool.ApprovalUnavailable}, nil
			}
			if l.gen != gen {
				continue // typed before this question appeared
			}
			switch strings.ToLower(strings.TrimSpace(l.text)) {
			case "y", "yes":
				return Reply{Outcome: tool.ApprovalAllowedOnce}, nil
			case "n", "no":
				return Reply{Outcome: tool.ApprovalRejected}, nil
			case "a", "always":
				return Reply{Outcome: tool.ApprovalAllowedOnce, Always: true}, nil
			default:
				io.WriteString(t.out, "Please answer y (yes), n (no) or a (always): ")
			}
		}
	}
}

// maxShown bounds how much of an argument a question shows.
const maxShown = 500

// FormatQuestion renders q as the Terminal shows it, ending with the answer prompt.
func FormatQuestion(q Question) string {
	var b strings.Builder
	b.WriteString("\nApproval needed: tool " + q.ToolName)
	if q.CallID != "" {
		b.WriteString(" (call " + q.CallID + ")")
	}
	b.WriteString("\n")
	if q.Reason != "" {
		b.WriteString("  reason: " + oneLine(q.Reason) + "\n")
	}
	always := "this tool"
	switch {
	case q.Remembers():
		b.WriteString("  " + q.Argument.Name + ": " + oneLine(q.Argument.Value) + "\n")
		always = "this " + strings.ReplaceAll(q.Argument.Name, "_", " ")
	case q.Args != nil:
		if j, err := jsonv.Marshal(q.Args); err == nil {
			b.WriteString("  arguments: " + oneLine(string(j)) + "\n")
		}
	}
	b.WriteString("Allow? [y]es, [n]o, [a]lways (" + always + ", for this session): ")
	return b.String()
}

// oneLine shortens s to maxShown bytes and shows its line breaks as ⏎.
func oneLine(s string) string {
	if len(s) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + fmt.Sprintf("… (+%d bytes)", len(s)-cut)
	}
	return strings.ReplaceAll(s, "\n", "⏎")
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	fd := f.Fd()
	return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
}

// ForStdio returns a Terminal on in and out when both are terminals, and NonInteractive
// otherwise (CI, pipes, redirections).
func ForStdio(in, out *os.File) Prompter {
	if IsTerminal(in) && IsTerminal(out) {
		return NewTerminal(in, out)
	}
	return NonInteractive()
}
