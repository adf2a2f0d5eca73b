package viewer

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// item is one rendered event: which template draws it and with what. Parent names the
// call whose card holds it (a Code Mode sub-call inside its run_code card).
type item struct {
	Kind   string // user, context, plugin, assistant, call, result, sub, asked, decided, turn-end, moved
	Index  int    // the event's position in the log
	Parent string // the call id of the enclosing card, "" for the top level
	Root   string // the outermost call of a sub-call

	Text  string // message text, or the line of a simple event
	Bad   bool   // shown as a failure
	Name  string // the tool name
	Call  *card.Call
	Res   *card.Result
	ID    string // a call id, or an approval question's id
	Subs  []item // sub-calls nested in a call card
	Reply *pending
	Diffs []diffView
}

// pending is an approval question still waiting, with how it can be answered.
type pending struct {
	QuestionID, CallID string
	CanAnswer          bool   // the session listens for answers from here
	Session, CSRF      string // where the answer form posts, and its secret
}

// renderer turns a session's events into items, remembering what a result card needs from
// its call.
type renderer struct {
	def   func(name string) *tool.Definition
	calls map[string]pendingCall
}

// pendingCall is what a result card needs from its call.
type pendingCall struct {
	name string
	args any
}

func newRenderer(def func(string) *tool.Definition) *renderer {
	return &renderer{def: def, calls: map[string]pendingCall{}}
}

func (r *renderer) definition(name string) *tool.Definition {
	if r.def == nil {
		return nil
	}
	return r.def(name)
}

// event renders one event; ok is false for events a terminal does not show either.
func (r *renderer) event(i int, e session.Event) (item, bool) {
	it := item{Index: i}
	switch e.Type {
	case session.TypeUserMessage:
		p, err := session.DecodeUserMessage(e)
		if err != nil {
			return undecodable(i, e, err), true
		}
		m := p.Message
		it.Text = strings.TrimSpace(textOf(m.Content))
		switch {
		case m.Source == nil || m.Source.Kind == "user":
			it.Kind = "user"
		case m.Source.Kind == "plugin":
			it.Kind = "plugin"
			it.Name = m.Source.Plugin
			if m.Source.Summary != "" {
				it.Text = m.Source.Summary
			}
		default:
			it.Kind = "context"
		}
	case session.TypeAssistantMessage:
		p, err := session.DecodeAssistantMessage(e)
		if err != nil {
			return undecodable(i, e, err), true
		}
		it.Kind = "assistant"
		it.Text = strings.TrimSpace(textOf(p.Message.Content))
		if it.Text == "" {
			return it, false
		}
	case session.TypeToolCall:
		p, err := session.DecodeToolCall(e)
		if err != nil {
			return undecodable(i, e, err), true
		}
		args := tool.ParseArguments(p.Arguments)
		r.calls[p.CallID] = pendingCall{name: p.Name, args: args}
		c := agent.CallCard(r.definition(p.Name), p.Name, args)
		it.Kind, it.Name, it.ID, it.Call = "call", p.Name, p.CallID, &c
		it.Diffs = diffViews(c.Diffs)
	case session.TypeToolResult:
		p, err := session.DecodeToolResult(e)
		if err != nil {
			return undecodable(i, e, err), true
		}
		c := r.calls[p.CallID]
		delete(r.calls, p.CallID)
		res := agent.ResultCard(r.definition(c.name), c.name, c.args, card.ToolResult{Content: p.Content, IsError: p.IsError, Meta: p.Meta})
		it.Kind, it.Name, it.ID, it.Res = "result", c.name, p.CallID, &res
		it.Bad = p.IsError || term.FailedCommand(res)
		it.Diffs = diffViews(res.Diffs)
	case session.TypeCodeDispatch:
		p, err := session.DecodeCodeDispatch(e)
		if err != nil {
			return undecodable(i, e, err), true
		}
		it.Kind, it.Name, it.ID, it.Parent, it.Root = "sub", p.Name, p.SubCallID, p.ParentCallID, p.RootCallID
		it.Text = compactJSON(p.Arguments)
		it.Bad = p.IsError
		if p.IsError {
			it.Text += " → " + firstLine(textOf(p.Content))
		}
	case session.TypeApprovalAsked:
		p, err := session.DecodeApprovalAsked(e)
		if err != nil {
			return undecodable(i, e, err), true
		}
		it.Kind, it.Name, it.ID, it.Text = "asked", p.ToolName, p.ID, p.Reason
		it.Reply = &pending{QuestionID: p.ID, CallID: p.CallID}
	case session.TypeApprovalDecided:
		p, err := session.DecodeApprovalDecided(e)
		if err != nil {
			return undecodable(i, e, err), true
		}
		it.Kind, it.ID = "decided", p.ID
		it.Text, it.Bad = describeDecision(p)
	case session.TypeTurnEnd:
		p, err := session.DecodeTurnEnd(e)
		if err != nil {
			return undecodable(i, e, err), true
		}
		it.Kind = "turn-end"
		it.Text = fmt.Sprintf("turn %d %s", p.Turn, agent.DescribeEnd(p.Reason))
		it.Bad = p.Reason.Kind != session.EndCompleted
	case session.TypeWorkspaceMoved:
		o, _ := e.Data.(*jsonv.Object)
		from, to := member(o, "from"), member(o, "to")
		it.Kind, it.Text = "moved", "the session moved from "+from+" to "+to
	default:
		return it, false
	}
	return it, true
}

func member(o *jsonv.Object, name string) string {
	if o == nil {
		return ""
	}
	v, _ := o.Get(name)
	s, _ := v.(string)
	return s
}

// undecodable shows an event the log holds but this viewer cannot read, rather than
// hiding it.
func undecodable(i int, e session.Event, err error) item {
	return item{Kind: "turn-end", Index: i, Bad: true, Text: fmt.Sprintf("(event %d, %s, cannot be shown: %v)", i, e.Type, err)}
}

// describeDecision says how an approval question was answered, as the terminal does.
func describeDecision(p session.ApprovalDecided) (string, bool) {
	switch p.Answer {
	case approval.AnswerYes:
		return "✓ allowed once", false
	case approval.AnswerAlwaysSession:
		return "✓ allowed for this session", false
	case approval.AnswerAlwaysSaved:
		return "✓ allowed — saved allow rule " + p.Rule, false
	case approval.AnswerRemembered:
		return "✓ allowed (an earlier \"always\")", false
	case approval.AnswerAuto:
		return "✓ allowed by the full-auto preset", false
	case approval.AnswerNo:
		return "✗ rejected", true
	case approval.AnswerNoFeedback:
		return "✗ rejected: " + p.Feedback, true
	case approval.AnswerNever:
		return "✗ rejected (approval policy never)", true
	}
	switch p.Outcome {
	case session.ApprovalAllowedOnce:
		return "✓ allowed once", false
	case session.ApprovalRejected:
		return "✗ rejected", true
	case session.ApprovalCancelled:
		return "✗ approval cancelled", true
	case session.ApprovalUnavailable:
		return "✗ not approved: nobody to ask", true
	}
	return "? approval " + p.Outcome, true
}

// textOf joins the text blocks of a content list and names the others.
func textOf(blocks []content.Block) string {
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case content.TypeText:
			parts = append(parts, b.Text)
		case content.TypeReasoning:
		default:
			parts = append(parts, "["+b.Type+" content]")
		}
	}
	return strings.Join(parts, "\n")
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return first
}

// compactJSON renders a value on one line, shortened.
func compactJSON(v any) string {
	if v == nil {
		return ""
	}
	b, err := jsonv.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if r := []rune(s); len(r) > 120 {
		s = string(r[:119]) + "…"
	}
	return s
}

// diffView is one file's change laid out side by side: the old text on the left, the new
// on the right, changed lines paired, three lines of context around each change.
type diffView struct {
	Path           string
	Label          string // created or modified
	Added, Removed int
	Rows           []diffRow
}

// diffRow is one row of a side-by-side diff; a zero line number leaves its side empty.
type diffRow struct {
	Gap              bool // the unchanged lines between two hunks
	OldNo, NewNo     int
	Old, New         string
	OldKind, NewKind string // "del", "ins" or "eq"
}

func diffViews(ds []card.FileDiff) []diffView {
	var out []diffView
	for _, d := range ds {
		out = append(out, sideBySide(d))
	}
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// sideBySide lays out one file's change.
func sideBySide(d card.FileDiff) diffView {
	v := diffView{Path: d.Path, Label: "modified"}
	var oldLines []string
	if d.OldText == nil {
		v.Label = "created"
	} else {
		oldLines = splitLines(*d.OldText)
	}
	ops := term.Diff(oldLines, splitLines(d.NewText))
	// Number every op on its sides.
	type numbered struct {
		op           term.Op
		oldNo, newNo int
	}
	all := make([]numbered, len(ops))
	o, n := 0, 0
	for i, op := range ops {
		switch op.Kind {
		case term.OpDelete:
			o++
			all[i] = numbered{op, o, 0}
			v.Removed++
		case term.OpInsert:
			n++
			all[i] = numbered{op, 0, n}
			v.Added++
		default:
			o++
			n++
			all[i] = numbered{op, o, n}
		}
	}
	// Keep three lines of context around the changes.
	keep := make([]bool, len(all))
	for i, x := range all {
		if x.op.Kind != term.OpEqual {
			for j := max(0, i-3); j <= min(len(all)-1, i+3); j++ {
				keep[j] = true
			}
		}
	}
	for i := 0; i < len(all); {
		if !keep[i] {
			for i < len(all) && !keep[i] {
				i++
			}
			if len(v.Rows) > 0 && i < len(all) {
				v.Rows = append(v.Rows, diffRow{Gap: true})
			}
			continue
		}
		x := all[i]
		if x.op.Kind == term.OpEqual {
			v.Rows = append(v.Rows, diffRow{OldNo: x.oldNo, NewNo: x.newNo, Old: x.op.Text, New: x.op.Text, OldKind: "eq", NewKind: "eq"})
			i++
			continue
		}
		// A run of deletions and insertions: pair them row by row.
		var dels, ins []numbered
		for i < len(all) && keep[i] && all[i].op.Kind != term.OpEqual {
			if all[i].op.Kind == term.OpDelete {
				dels = append(dels, all[i])
			} else {
				ins = append(ins, all[i])
			}
			i++
		}
		for k := 0; k < max(len(dels), len(ins)); k++ {
			var row diffRow
			if k < len(dels) {
				row.OldNo, row.Old, row.OldKind = dels[k].oldNo, dels[k].op.Text, "del"
			}
			if k < len(ins) {
				row.NewNo, row.New, row.NewKind = ins[k].newNo, ins[k].op.Text, "ins"
			}
			v.Rows = append(v.Rows, row)
		}
	}
	return v
}

// safeURL returns u when it is an http or https URL a link may point at, "" otherwise: a
// javascript:, data: or other scheme from a tool's output is shown as text, never linked.
func safeURL(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return ""
	}
	return p.String()
}

// plural counts a noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// resultSummary is the part of a result card's header after the tool name, as the
// terminal's: the window of a read, the files of a diff, a command's status, the matches
// of a search, the sources of a web search.
func resultSummary(name string, c *card.Result) string {
	title := firstLine(c.Title)
	if title == name {
		title = ""
	}
	var parts []string
	add := func(ps ...string) {
		for _, p := range ps {
			if p != "" {
				parts = append(parts, p)
			}
		}
	}
	switch c.Card {
	case card.Read:
		window := fmt.Sprintf("no lines (%d in file)", c.TotalLines)
		if n := len(c.Lines); n > 0 {
			window = fmt.Sprintf("lines %d-%d of %d", c.Lines[0].Number, c.Lines[n-1].Number, c.TotalLines)
		}
		add(c.Path, window)
	case card.Diff:
		add(title, plural(len(c.Diffs), "file", "files"))
	case card.Terminal:
		status := ""
		switch {
		case c.Signal != "":
			status = "killed by " + c.Signal
		case c.ExitCode != nil:
			status = "exit " + strconv.Itoa(*c.ExitCode)
		}
		add(title, status)
	case card.Search:
		var s string
		if c.Shape == "paths" {
			s = plural(len(c.Paths), "path", "paths")
		} else {
			n := 0
			for _, f := range c.Files {
				n += len(f.Matches)
			}
			s = plural(n, "match", "matches") + " in " + plural(len(c.Files), "file", "files")
		}
		if c.Truncated {
			s += fmt.Sprintf(" (truncated, %d total)", c.Total)
		}
		add(title, s)
	case card.Web:
		if c.WebKind == "fetch" {
			s := ""
			if c.StatusCode != 0 {
				s = "HTTP " + strconv.Itoa(c.StatusCode)
			}
			if c.Truncated {
				s += " (truncated)"
			}
			add(title, c.URL, strings.TrimSpace(s))
		} else {
			add(title, plural(len(c.Sources), "source", "sources"))
		}
	default:
		add(title)
	}
	return strings.Join(parts, " · ")
}

// terminalOutput is what a terminal card shows: the command's output, or its content when
// the card carries none.
func terminalOutput(c *card.Result) string {
	if c.Output != "" {
		return c.Output
	}
	return unfence(textOf(c.Content))
}

// unfence drops a Markdown code fence around a whole text: the page shows the text itself.
func unfence(s string) string {
	ls := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(ls) >= 2 && strings.HasPrefix(ls[0], "```") && strings.TrimSpace(ls[len(ls)-1]) == "```" {
		return strings.Join(ls[1:len(ls)-1], "\n")
	}
	return s
}

// rawInput is a call card's raw input as the page shows it: a string as it is, anything
// else as compact JSON.
func rawInput(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return compactJSON(v)
}
