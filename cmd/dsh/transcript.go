package main

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// transcript renders a session's events as the terminal shows them: the user's input,
// the assistant's text, a card per tool call and per result, Code Mode sub-calls, approval
// questions and how each turn ended. The live run and "dsh session show" use the same
// renderer on the same events, so a replay shows exactly what the run showed.
//
// Live, the assistant's text arrives as deltas (TextDelta) before its assistant/message
// event; the event then only ends the line. On a terminal a status region stays below the
// transcript (see progress.go): the model's elapsed time and output so far while it works,
// the calls running and their elapsed time while tools run, and the last lines of a running
// command's output.
type transcript struct {
	mu    sync.Mutex
	out   *term.Status
	prog  progress // what the status region shows
	r     term.Renderer
	reg   *tool.Registry
	calls map[string]pendingCall
	model string // the model's name for the status line
	chars int    // reasoning characters of the current reply
	open  bool   // streamed text left the cursor mid-line
	// prompting says a person answers approval questions on this terminal: the prompt
	// shows the question and the answer, so the transcript does not repeat them.
	prompting bool
	stream    bool // the current reply's text was streamed
}

// pendingCall is what a result card needs from its call.
type pendingCall struct {
	name string
	args any
}

func newTranscript(w io.Writer, r term.Renderer, live bool, reg *tool.Registry) *transcript {
	return newTranscriptClock(w, r, live, reg, term.SystemClock{})
}

// newTranscriptClock is newTranscript with the status region on clock.
func newTranscriptClock(w io.Writer, r term.Renderer, live bool, reg *tool.Registry, clock term.Clock) *transcript {
	t := &transcript{out: term.NewStatusClock(w, live, r, clock), r: r, reg: reg, calls: map[string]pendingCall{}}
	t.prog.init()
	return t
}

func (t *transcript) print(s string) {
	if t.open {
		s = "\n" + s
		t.open = false
	}
	io.WriteString(t.out, s)
}

// stepStart shows the status region while the model works on its reply.
func (t *transcript) stepStart() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.chars, t.stream = 0, false
	t.prog.modelStarted(t.model, t.out.Now())
	t.out.SetView(t.prog.view)
}

// reasoningDelta counts reasoning on the status line; reasoning is not printed.
func (t *transcript) reasoningDelta(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len([]rune(s))
	t.chars += n
	t.prog.modelOutput(n, true)
}

// textDelta streams the assistant's text.
func (t *transcript) textDelta(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.prog.modelOutput(len([]rune(s)), false)
	s = term.Sanitize(s)
	if s == "" {
		return
	}
	t.stream = true
	io.WriteString(t.out, s)
	t.open = !strings.HasSuffix(s, "\n")
}

// stop erases the status line.
func (t *transcript) stop() { t.out.Stop() }

// event renders one logged event.
func (t *transcript) event(e session.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.r
	switch e.Type {
	case session.TypeUserMessage:
		p, err := session.DecodeUserMessage(e)
		if err != nil {
			return
		}
		m := p.Message
		text := term.Sanitize(strings.TrimSpace(textOf(m.Content)))
		switch {
		case m.Source == nil || m.Source.Kind == "user":
			t.print(r.Bold("› "+strings.ReplaceAll(text, "\n", "\n  ")) + "\n")
		case m.Source.Kind == "plugin":
			what := m.Source.Summary
			if what == "" {
				what = firstLine(text)
			}
			t.print(r.Yellow("↳ "+term.Sanitize(m.Source.Plugin)+": "+term.Sanitize(what)) + "\n")
		default:
			t.print(r.Dim("↳ context: "+firstLine(text)) + "\n")
		}
	case session.TypeAssistantMessage:
		p, err := session.DecodeAssistantMessage(e)
		if err != nil {
			return
		}
		t.prog.modelDone()
		t.out.Refresh()
		if t.stream {
			if t.open {
				io.WriteString(t.out, "\n")
				t.open = false
			}
			t.stream = false
			return
		}
		if text := strings.TrimSpace(textOf(textBlocks(p.Message.Content))); text != "" {
			t.print(term.Sanitize(text) + "\n")
		}
	case session.TypeToolCall:
		p, err := session.DecodeToolCall(e)
		if err != nil {
			return
		}
		args := tool.ParseArguments(p.Arguments)
		t.calls[p.CallID] = pendingCall{name: p.Name, args: args}
		t.prog.callStarted(p.CallID, p.Name, t.out.Now())
		t.print(r.Call(p.Name, agent.CallCard(t.def(p.Name), p.Name, args)))
	case session.TypeToolResult:
		p, err := session.DecodeToolResult(e)
		if err != nil {
			return
		}
		c := t.calls[p.CallID]
		delete(t.calls, p.CallID)
		t.prog.callEnded(p.CallID)
		res := card.ToolResult{Content: p.Content, IsError: p.IsError, Meta: p.Meta}
		t.print(r.Result(c.name, agent.ResultCard(t.def(c.name), c.name, c.args, res), p.IsError))
	case session.TypeCodeDispatchStart:
		p, err := session.DecodeCodeDispatchStart(e)
		if err != nil {
			return
		}
		t.prog.callStarted(p.SubCallID, p.Name, t.out.Now())
		t.out.Refresh()
	case session.TypeCodeDispatch:
		p, err := session.DecodeCodeDispatch(e)
		if err != nil {
			return
		}
		t.prog.callEnded(p.SubCallID)
		mark := r.Green("✓")
		if p.IsError {
			mark = r.Red("✗")
		}
		line := term.Sanitize(p.Name) + " " + compactArgs(p.Arguments)
		if p.IsError {
			line += " → " + firstLine(textOf(p.Content))
		}
		t.print("  " + mark + " " + r.Dim(r.Clip(line, 4)) + "\n")
	case session.TypeApprovalAsked:
		if t.prompting {
			return // the prompt shows the question and its reason
		}
		p, err := session.DecodeApprovalAsked(e)
		if err != nil {
			return
		}
		line := "? " + term.Sanitize(p.ToolName) + " needed approval"
		if p.Reason != "" {
			line += ": " + term.Sanitize(p.Reason)
		}
		t.print(r.Yellow(line) + "\n")
	case session.TypeApprovalDecided:
		p, err := session.DecodeApprovalDecided(e)
		if err != nil {
			return
		}
		if t.prompting && personAnswered(p.Answer) {
			return // the prompt showed the answer
		}
		t.print(describeDecision(r, p) + "\n")
	case session.TypeTurnEnd:
		p, err := session.DecodeTurnEnd(e)
		if err != nil {
			return
		}
		t.prog.reset()
		t.out.Clear()
		line := fmt.Sprintf("— turn %d %s", p.Turn, agent.DescribeEnd(p.Reason))
		if p.Reason.Kind == session.EndCompleted {
			t.print(r.Dim(line) + "\n")
		} else {
			t.print(r.Red(term.Sanitize(line)) + "\n")
		}
	}
}

// personAnswered reports whether an approval answer was typed by a person (rather than
// given by a remembered "always", a preset or the lack of anyone to ask).
func personAnswered(answer string) bool {
	switch answer {
	case approval.AnswerYes, approval.AnswerNo, approval.AnswerNoFeedback, approval.AnswerAlwaysSession, approval.AnswerAlwaysSaved:
		return true
	}
	return false
}

// describeDecision says how an approval question was answered, in words.
func describeDecision(r term.Renderer, p session.ApprovalDecided) string {
	switch p.Answer {
	case approval.AnswerYes:
		return r.Green("✓ allowed once")
	case approval.AnswerAlwaysSession:
		return r.Green("✓ allowed for this session")
	case approval.AnswerAlwaysSaved:
		return r.Green("✓ allowed — saved allow rule " + term.Sanitize(p.Rule))
	case approval.AnswerRemembered:
		return r.Green("✓ allowed (an earlier \"always\")")
	case approval.AnswerAuto:
		return r.Green("✓ allowed by the full-auto preset")
	case approval.AnswerNo:
		return r.Red("✗ rejected")
	case approval.AnswerNoFeedback:
		return r.Red("✗ rejected: " + term.Sanitize(p.Feedback))
	case approval.AnswerNever:
		return r.Red("✗ rejected (approval policy never)")
	}
	switch p.Outcome {
	case session.ApprovalAllowedOnce:
		return r.Green("✓ allowed once")
	case session.ApprovalRejected:
		return r.Red("✗ rejected")
	case session.ApprovalCancelled:
		return r.Red("✗ approval cancelled")
	case session.ApprovalUnavailable:
		return r.Red("✗ not approved: nobody to ask")
	}
	return r.Yellow("? approval " + term.Sanitize(p.Outcome))
}

// def returns the definition presenting cards for a tool name (nil when unknown: the
// generic cards).
func (t *transcript) def(name string) *tool.Definition {
	if t.reg == nil {
		return nil
	}
	return t.reg.Get(name, nil)
}

// textOf joins the text blocks of a content list.
func textOf(blocks []content.Block) string {
	var parts []string
	for _, b := range blocks {
		if b.Type == content.TypeText {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// textBlocks keeps the text blocks of an assistant message (not reasoning or tool calls).
func textBlocks(blocks []content.Block) []content.Block {
	var out []content.Block
	for _, b := range blocks {
		if b.Type == content.TypeText {
			out = append(out, b)
		}
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(term.Sanitize(s))
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// compactArgs renders sub-call arguments on one line, shortened.
func compactArgs(v any) string {
	s := term.Sanitize(jsonText(v))
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	return s
}
