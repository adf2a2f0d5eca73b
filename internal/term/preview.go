package term

import (
	"path/filepath"
	"strings"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/jsonv"
)

// Preview renders everything a person needs to judge a call before it runs — what an
// approval question shows: a command with its working directory (workdir when the card
// names none, and what a relative one is relative to), the diff of an edit or the content of a write (windowed, with "+N −M"), or
// the arguments of any other tool, indented as JSON. The title line starts with "●".
func (r Renderer) Preview(name string, c card.Call, workdir string) string {
	var b strings.Builder
	bullet := r.Cyan("●")
	switch c.Card {
	case card.Terminal:
		cmd := lines(c.Title)
		if len(cmd) == 0 {
			cmd = []string{""}
		}
		b.WriteString(bullet + " " + r.Bold("$ "+r.clip(cmd[0], 4)) + "\n")
		r.body(&b, cmd[1:], "    ", true, r.Bold)
		dir := c.Cwd
		switch {
		case dir == "":
			dir = workdir
		case !filepath.IsAbs(dir) && workdir != "":
			dir = filepath.Join(workdir, dir)
		}
		if dir != "" {
			b.WriteString("  " + r.Dim(r.clip("in "+Sanitize(dir), 2)) + "\n")
		}
		if d := firstLine(c.Description); d != "" {
			b.WriteString("  " + r.Dim(r.clip(d, 2)) + "\n")
		}
	case card.Diff:
		title := firstLine(c.Title)
		if title == "" {
			title = Sanitize(name)
		}
		b.WriteString(bullet + " " + r.Bold(r.clip(title, 2)) + "\n")
		for _, d := range c.Diffs {
			r.diff(&b, d)
		}
	default:
		title := firstLine(c.Title)
		if title == "" {
			title = Sanitize(name)
		}
		b.WriteString(bullet + " " + r.Bold(r.clip(title, 2)) + "\n")
		if len(c.Content) > 0 {
			r.body(&b, lines(textOf(c.Content)), "  ", true, r.Dim)
		}
		if c.RawInput != nil {
			if s, ok := c.RawInput.(string); ok {
				r.body(&b, lines(s), "  │ ", true, nil)
			} else if js, err := jsonv.MarshalIndent(c.RawInput, "  "); err == nil {
				r.body(&b, lines(string(js)), "  ", true, nil)
			}
		}
	}
	return b.String()
}
