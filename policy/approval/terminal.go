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

	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// Terminal is the interactive prompter: it writes each question to out — with a preview of
// what the call would do — and reads the answer, one line, from in: y or yes (allow this
// call), n or no (reject it), f or feedback (reject it, then read one more line: the message
// the model gets with the rejection), a or always (allow it and every later call of the same
// tool with the same primary argument in this session), s or save (as always, and add the
// allow rule to the user's configuration through Save). Any other answer is asked again.
// When in ends, every question (this one and later ones) is ApprovalUnavailable. Questions
// are asked one at a time; a line typed while no question was showing is ignored, so an
// early keystroke cannot answer a question not yet seen.
//
// A Terminal reads in on a goroutine of its own, started by the first question. It ends when
// in ends or fails, or after Close once its current read returns.
type Terminal struct {
	in  *bufio.Reader
	out io.Writer

	// Renderer styles the question (colours, width); the zero value is plain text.
	Renderer term.Renderer
	// Save, when set, saves an allow rule to the user's configuration for the "s" answer
	// and returns where it was saved; nil offers no "s".
	Save func(rule string) (where string, err error)

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
	// The question's generation is set before the reader starts: a line the reader takes
	// from here on belongs to this question (the first question's included), never to the
	// generation before it.
	gen := t.gen.Add(1)
	t.start.Do(func() { go t.read() })
	if _, err := io.WriteString(t.out, t.format(q)); err != nil {
		return Reply{}, fmt.Errorf("approval: writing the question: %w", err)
	}
	feedback := false // the next line is the rejection's message
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
			if feedback {
				msg := strings.TrimSpace(l.text)
				told := ""
				if msg != "" {
					told = t.Renderer.Dim(", the model is told why")
				}
				io.WriteString(t.out, t.Renderer.Red("✗ rejected")+told+"\n")
				return Reply{Outcome: tool.ApprovalRejected, Feedback: msg}, nil
			}
			switch strings.ToLower(strings.TrimSpace(l.text)) {
			case "y", "yes":
				io.WriteString(t.out, t.Renderer.Green("✓ allowed once")+"\n")
				return Reply{Outcome: tool.ApprovalAllowedOnce}, nil
			case "n", "no":
				io.WriteString(t.out, t.Renderer.Red("✗ rejected")+"\n")
				return Reply{Outcome: tool.ApprovalRejected}, nil
			case "f", "feedback":
				io.WriteString(t.out, "Tell the model why (one line): ")
				feedback = true
			case "a", "always":
				io.WriteString(t.out, t.Renderer.Green("✓ allowed for this session")+"\n")
				return Reply{Outcome: tool.ApprovalAllowedOnce, Always: true}, nil
			case "s", "save":
				if r, ok := t.save(q); ok {
					return r, nil
				}
				io.WriteString(t.out, t.answers(q, true))
			default:
				io.WriteString(t.out, t.answers(q, true))
			}
		}
	}
}

// save answers "s": the rule saved and the call allowed for the session, or false (with the
// reason written) when no rule can be saved.
func (t *Terminal) save(q Question) (Reply, bool) {
	if t.Save == nil {
		return Reply{}, false
	}
	rule, ok := q.AllowRule()
	if !ok {
		io.WriteString(t.out, "This call cannot be saved as a rule (its argument is empty, relative or holds a \"*\"); answer a to allow it for this session.\n")
		return Reply{}, false
	}
	where, err := t.Save(rule)
	if err != nil {
		io.WriteString(t.out, term.Sanitize(fmt.Sprintf("Could not save the rule: %v", err))+"\n")
		return Reply{}, false
	}
	io.WriteString(t.out, t.Renderer.Green("✓ allowed")+term.Sanitize(fmt.Sprintf(" — saved allow rule %q to %s", rule, where))+"\n")
	return Reply{Outcome: tool.ApprovalAllowedOnce, Always: true, Saved: rule}, true
}

// format renders q with the terminal's renderer and answers.
func (t *Terminal) format(q Question) string {
	return formatQuestion(t.Renderer, q) + t.answers(q, false)
}

// answers is the answer prompt; again says the last answer was not understood.
func (t *Terminal) answers(q Question, again bool) string {
	return answerPrompt(q, t.Save != nil, again)
}

// AnswerPrompt is the prompt the Terminal shows after a question, "Allow? " and the
// answers q takes, for a prompter that reads the answer its own way; save says whether
// saving the call as an allow rule is offered, again that the last answer was not
// understood ("Please answer " instead of "Allow? ").
func AnswerPrompt(q Question, save, again bool) string { return answerPrompt(q, save, again) }

func answerPrompt(q Question, save, again bool) string {
	always := "this tool"
	if q.Remembers() {
		always = "this " + strings.ReplaceAll(q.Argument.Name, "_", " ")
	}
	s := "[y]es · [n]o · [f] no, tell the model why · [a]lways (" + always + ", this session)"
	if save {
		s += " · [s]ave as a rule"
	}
	if again {
		return "Please answer " + s + ": "
	}
	return "Allow? " + s + ": "
}

// maxShown bounds how much of an argument a question shows.
const maxShown = 500

// FormatQuestion renders q, plain, as the Terminal shows it before its answer prompt: the
// tool, why it asks, and a preview of what the call would do.
func FormatQuestion(q Question) string { return formatQuestion(term.Renderer{}, q) }

func formatQuestion(r term.Renderer, q Question) string {
	var b strings.Builder
	b.WriteString("\n" + r.Yellow("? "+term.Sanitize(q.ToolName)+" needs your approval") + "\n")
	if q.Reason != "" {
		b.WriteString("  " + r.Dim(term.Sanitize(oneLine(q.Reason))) + "\n")
	}
	switch {
	case q.Card != nil:
		b.WriteString(r.Preview(q.ToolName, *q.Card, q.Workdir))
	case q.Remembers():
		b.WriteString("  " + term.Sanitize(q.Argument.Name+": "+oneLine(q.Argument.Value)) + "\n")
	case q.Args != nil:
		if j, err := jsonv.Marshal(q.Args); err == nil {
			b.WriteString("  arguments: " + term.Sanitize(oneLine(string(j))) + "\n")
		}
	}
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
