package term

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
)

// DefaultMaxLines is how many lines of a card's body (output, file lines, diff lines, paths)
// a Renderer shows when MaxLines is zero.
const DefaultMaxLines = 20

// Renderer turns cards into text. The zero value renders plain text without line
// truncation, which is what a pipe or a log file gets.
type Renderer struct {
	// Color enables ANSI colours and bold/dim text.
	Color bool
	// Width truncates every line to this many columns (runes); 0 leaves lines whole.
	Width int
	// MaxLines bounds the body of a card; 0 means DefaultMaxLines, negative means no bound.
	MaxLines int
}

// SGR codes of the few styles cards use.
const (
	sgrBold   = "1"
	sgrDim    = "2"
	sgrRed    = "31"
	sgrGreen  = "32"
	sgrYellow = "33"
	sgrCyan   = "36"
)

// paint wraps s (already sanitized) in the SGR sequence code when colours are on.
func (r Renderer) paint(code, s string) string {
	if !r.Color || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// The style methods wrap already-safe text in a colour when colours are on; untrusted text
// must go through Sanitize first.

// Bold styles headers and commands.
func (r Renderer) Bold(s string) string { return r.paint(sgrBold, s) }

// Dim styles secondary text: context lines, descriptions, hints.
func (r Renderer) Dim(s string) string { return r.paint(sgrDim, s) }

// Red styles failures and deleted lines.
func (r Renderer) Red(s string) string { return r.paint(sgrRed, s) }

// Green styles successes and inserted lines.
func (r Renderer) Green(s string) string { return r.paint(sgrGreen, s) }

// Yellow styles warnings: non-zero exits, approval questions, reminders.
func (r Renderer) Yellow(s string) string { return r.paint(sgrYellow, s) }

// Cyan styles the bullets of pending calls and the status spinner.
func (r Renderer) Cyan(s string) string { return r.paint(sgrCyan, s) }

func (r Renderer) maxLines() int {
	switch {
	case r.MaxLines == 0:
		return DefaultMaxLines
	case r.MaxLines < 0:
		return int(^uint(0) >> 1)
	}
	return r.MaxLines
}

// Sanitize makes untrusted text safe to print: every control character but tab and newline
// (ESC, CR, BEL, backspace, DEL, the C1 range) is replaced by its caret notation ("^[",
// "^M", "^?") or, for C1 controls, by "\u0085"-style escapes, and invalid UTF-8 by U+FFFD.
// A CRLF line ending is an ordinary line ending.
func Sanitize(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		ru, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case ru == utf8.RuneError && size <= 1:
			b.WriteRune(utf8.RuneError)
		case ru == '\r' && i+1 < len(s) && s[i+1] == '\n':
			// CRLF: the newline that follows ends the line.
		case ru == '\t' || ru == '\n':
			b.WriteRune(ru)
		case ru < 0x20:
			b.WriteByte('^')
			b.WriteByte(byte(ru) + '@')
		case ru == 0x7f:
			b.WriteString("^?")
		case ru >= 0x80 && ru < 0xa0:
			fmt.Fprintf(&b, "\\u%04x", ru)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// clip cuts one sanitized line to the renderer's width, marking the cut with "…".
func (r Renderer) clip(line string, indent int) string {
	w := r.Width - indent
	if r.Width <= 0 || utf8.RuneCountInString(line) <= w {
		return line
	}
	if w <= 1 {
		return "…"
	}
	n := 0
	for i := range line {
		if n == w-1 {
			return line[:i] + "…"
		}
		n++
	}
	return line
}

// lines splits text into sanitized lines, dropping one trailing newline.
func lines(text string) []string {
	text = strings.TrimSuffix(Sanitize(text), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// body writes up to MaxLines of ls, each indented and clipped; when head is false the last
// lines are kept instead of the first (command output, where the end matters most).
func (r Renderer) body(b *strings.Builder, ls []string, indent string, head bool, style func(string) string) {
	max := r.maxLines()
	omitted := 0
	if len(ls) > max {
		omitted = len(ls) - max
		if head {
			ls = ls[:max]
		} else {
			ls = ls[omitted:]
		}
	}
	more := r.Dim(indent + "… " + plural(omitted, "more line", "more lines"))
	if !head && omitted > 0 {
		more = r.Dim(indent + "… " + plural(omitted, "earlier line", "earlier lines"))
		b.WriteString(more + "\n")
	}
	for _, l := range ls {
		l = r.clip(l, utf8.RuneCountInString(indent))
		if style != nil {
			l = style(l)
		}
		b.WriteString(indent + l + "\n")
	}
	if head && omitted > 0 {
		b.WriteString(more + "\n")
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// compactJSON renders a jsonv value on one line, or "" when it cannot.
func compactJSON(v any) string {
	b, err := jsonv.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// textOf joins the text of blocks with newlines; other blocks show as "[<type> content]".
func textOf(blocks []content.Block) string {
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		switch b.Type {
		case content.TypeText, content.TypeReasoning:
			parts = append(parts, b.Text)
		default:
			parts = append(parts, "["+b.Type+" content]")
		}
	}
	return strings.Join(parts, "\n")
}

// Call renders the pending card of a call to the tool name: one header line starting with
// "●" and, depending on the card, the command's description, the raw input or the content.
func (r Renderer) Call(name string, c card.Call) string {
	var b strings.Builder
	bullet := r.Cyan("●")
	switch c.Card {
	case card.Terminal:
		b.WriteString(bullet + " " + r.Bold("$") + " ")
		cmd := lines(c.Title)
		if len(cmd) == 0 {
			cmd = []string{""}
		}
		b.WriteString(r.Bold(r.clip(cmd[0], 4)) + "\n")
		for _, l := range cmd[1:] {
			b.WriteString("    " + r.Bold(r.clip(l, 4)) + "\n")
		}
		var meta []string
		if d := firstLine(c.Description); d != "" {
			meta = append(meta, d)
		}
		if c.Cwd != "" {
			meta = append(meta, "in "+Sanitize(c.Cwd))
		}
		if len(meta) > 0 {
			b.WriteString("  " + r.Dim(r.clip(strings.Join(meta, " · "), 2)) + "\n")
		}
	default:
		title := firstLine(c.Title)
		if title == "" {
			title = Sanitize(name)
		}
		header := bullet + " " + r.Bold(r.clip(title, 2))
		var block []string
		if c.RawInput != nil {
			if s, ok := c.RawInput.(string); ok {
				// A one-line input the title already shows adds nothing; a program or a
				// script (several lines, or what an execute card runs) is shown as a block.
				ls := lines(s)
				switch {
				case len(ls) == 1 && strings.Contains(title, ls[0]):
				case len(ls) > 1 || c.Kind == card.KindExecute:
					block = ls
				case len(ls) == 1:
					header += " " + r.Dim(r.clip(ls[0], 3+utf8.RuneCountInString(title)))
				}
			} else if js := compactJSON(c.RawInput); js != "" {
				header += " " + r.Dim(r.clip(Sanitize(js), 3+utf8.RuneCountInString(title)))
			}
		}
		b.WriteString(header + "\n")
		if len(c.Content) > 0 {
			r.body(&b, lines(textOf(c.Content)), "  ", true, r.Dim)
		}
		if len(block) > 0 {
			r.body(&b, block, "  │ ", true, nil)
		}
	}
	return b.String()
}

func firstLine(s string) string {
	ls := lines(s)
	if len(ls) == 0 {
		return ""
	}
	return ls[0]
}

// Result renders the completed card of a call to the tool name: a header line starting
// with "✓" (or "✗" when isError) naming the tool and summarizing the result, then the
// card's body — file lines, a diff, command output, paths or matches, or the content.
func (r Renderer) Result(name string, c card.Result, isError bool) string {
	var b strings.Builder
	mark := r.Green("✓")
	if isError || FailedCommand(c) {
		mark = r.Red("✗")
	}
	headStyle := func(s string) string { return s }
	head := func(parts ...string) {
		out := []string{Sanitize(name)}
		for _, p := range parts {
			if p != "" {
				out = append(out, p)
			}
		}
		b.WriteString(mark + " " + headStyle(r.clip(strings.Join(out, " · "), 2)) + "\n")
	}
	title := firstLine(c.Title)
	if title == Sanitize(name) {
		title = ""
	}
	switch c.Card {
	case card.Read:
		window := ""
		if n := len(c.Lines); n > 0 {
			window = fmt.Sprintf("lines %d-%d of %d", c.Lines[0].Number, c.Lines[n-1].Number, c.TotalLines)
		} else {
			window = fmt.Sprintf("no lines (%d in file)", c.TotalLines)
		}
		head(Sanitize(c.Path), window)
		width := len(strconv.Itoa(c.Offset + len(c.Lines)))
		ls := make([]string, len(c.Lines))
		for i, l := range c.Lines {
			ls[i] = fmt.Sprintf("%*d", width, l.Number) + " " + "│ " + Sanitize(strings.TrimSuffix(l.Text, "\n"))
		}
		r.body(&b, ls, "  ", true, nil)
	case card.Diff:
		head(title, plural(len(c.Diffs), "file", "files"))
		for _, d := range c.Diffs {
			r.diff(&b, d)
		}
	case card.Terminal:
		status := ""
		switch {
		case c.Signal != "":
			status = "killed by " + Sanitize(c.Signal)
		case c.ExitCode != nil:
			status = "exit " + strconv.Itoa(*c.ExitCode)
		}
		if FailedCommand(c) {
			headStyle = r.Red
		}
		head(title, status)
		out := lines(c.Output)
		if len(out) == 0 && len(c.Content) > 0 {
			out = lines(textOf(c.Content))
		}
		style := func(s string) string { return s }
		if isError || (c.ExitCode != nil && *c.ExitCode != 0) || c.Signal != "" {
			style = r.Yellow
		}
		r.body(&b, out, "  ", false, style)
	case card.Search:
		var summary string
		var ls []string
		if c.Shape == "paths" {
			summary = plural(len(c.Paths), "path", "paths")
			for _, p := range c.Paths {
				ls = append(ls, Sanitize(p))
			}
		} else {
			n := 0
			for _, f := range c.Files {
				n += len(f.Matches)
				for _, m := range f.Matches {
					ls = append(ls, Sanitize(f.Path)+":"+strconv.Itoa(m.LineNumber)+": "+Sanitize(strings.TrimSuffix(m.Line, "\n")))
				}
			}
			summary = plural(n, "match", "matches") + " in " + plural(len(c.Files), "file", "files")
		}
		if c.Truncated {
			summary += fmt.Sprintf(" (truncated, %d total)", c.Total)
		}
		head(title, summary)
		r.body(&b, ls, "  ", true, nil)
	case card.Web:
		switch c.WebKind {
		case "fetch":
			summary := ""
			if c.StatusCode != 0 {
				summary = "HTTP " + strconv.Itoa(c.StatusCode)
			}
			if c.Truncated {
				summary += " (truncated)"
			}
			head(title, Sanitize(c.URL), strings.TrimSpace(summary))
		default:
			head(title, plural(len(c.Sources), "source", "sources"))
			var ls []string
			for _, s := range c.Sources {
				l := Sanitize(s.URL)
				if s.Title != "" {
					l = firstLine(s.Title) + " — " + l
				}
				ls = append(ls, l)
			}
			r.body(&b, ls, "  ", true, nil)
			if c.Answer != "" {
				r.body(&b, lines(c.Answer), "  ", true, nil)
			}
		}
	default:
		head(title)
		style := func(s string) string { return s }
		if isError {
			style = r.Red
		}
		r.body(&b, unfence(lines(textOf(c.Content))), "  ", true, style)
	}
	return b.String()
}

// FailedCommand reports whether c is a terminal card of a command that failed: it exited
// with a non-zero status or a signal ended it. Such a result is still a success for the
// model (it reads the exit status), but a person must see it as a failure.
func FailedCommand(c card.Result) bool {
	return c.Card == card.Terminal && (c.Signal != "" || (c.ExitCode != nil && *c.ExitCode != 0))
}

// diff writes one file's change: the path with its counts ("+N −M"), then the changed lines
// with three lines of context, "-" lines red and "+" lines green. A change longer than the
// window keeps part of every run of removed and of added lines, so both sides stay visible.
func (r Renderer) diff(b *strings.Builder, d card.FileDiff) {
	newLines := lines(d.NewText)
	var oldLines []string
	label := "modified"
	if d.OldText == nil {
		label = "created"
	} else {
		oldLines = lines(*d.OldText)
	}
	ops := Diff(oldLines, newLines)
	added, removed := 0, 0
	for _, op := range ops {
		switch op.Kind {
		case OpInsert:
			added++
		case OpDelete:
			removed++
		}
	}
	counts := r.Green("+"+strconv.Itoa(added)) + " " + r.Red("−"+strconv.Itoa(removed))
	b.WriteString("  " + r.Bold(r.clip(Sanitize(d.Path), 2)) + " " + r.Dim(label) + " " + counts + "\n")
	type row struct {
		text  string
		style func(string) string
	}
	var rows []row
	for _, h := range Hunks(ops, 3) {
		if len(rows) > 0 {
			rows = append(rows, row{"⋮", r.Dim})
		}
		for _, op := range h {
			switch op.Kind {
			case OpDelete:
				rows = append(rows, row{"- " + op.Text, r.Red})
			case OpInsert:
				rows = append(rows, row{"+ " + op.Text, r.Green})
			default:
				rows = append(rows, row{"  " + op.Text, r.Dim})
			}
		}
	}
	limit := r.maxLines()
	if len(rows) > limit {
		// Cut every run of same-kind lines to a share of the window, so a long deletion
		// cannot hide the insertion after it.
		runs := 0
		for i := range rows {
			if i == 0 || rows[i].text[0] != rows[i-1].text[0] {
				runs++
			}
		}
		share := max(2, limit/max(runs, 1))
		var cut []row
		for i := 0; i < len(rows); {
			j := i
			for j < len(rows) && rows[j].text[0] == rows[i].text[0] {
				j++
			}
			run := rows[i:j]
			if len(run) > share {
				what := "more lines"
				switch run[0].text[0] {
				case '-':
					what = "more removed lines"
				case '+':
					what = "more added lines"
				}
				cut = append(cut, run[:share-1]...)
				cut = append(cut, row{fmt.Sprintf("… %d %s", len(run)-share+1, what), r.Dim})
			} else {
				cut = append(cut, run...)
			}
			i = j
		}
		rows = cut
	}
	if len(rows) > limit {
		// Many scattered changes: keep the window, and make sure it shows a removed and an
		// added line when the change has them.
		shown := slices.Clone(rows[:limit])
		for _, kind := range []byte{'-', '+'} {
			has := func(rs []row) int {
				for i, l := range rs {
					if l.text[0] == kind {
						return i
					}
				}
				return -1
			}
			if i := has(rows); i >= 0 && has(shown) < 0 {
				shown = append(shown, row{"⋮", r.Dim}, rows[i])
			}
		}
		rows = append(shown, row{"… more of the diff is not shown", r.Dim})
	}
	for _, l := range rows {
		b.WriteString("    " + l.style(r.clip(l.text, 4)) + "\n")
	}
}

// Clip cuts one line of already-sanitized text to the renderer's width, less indent
// columns already used, marking the cut with "…". Without a width it returns line whole.
func (r Renderer) Clip(line string, indent int) string { return r.clip(line, indent) }

// unfence drops the Markdown code fence around a whole body (a card's "```console" block):
// a terminal shows the text itself.
func unfence(ls []string) []string {
	if len(ls) >= 2 && strings.HasPrefix(ls[0], "```") && strings.TrimSpace(ls[len(ls)-1]) == "```" {
		return ls[1 : len(ls)-1]
	}
	return ls
}
