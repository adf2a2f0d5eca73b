package fs

import (
	"math"
	"regexp"
	"strings"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
)

// langByExt maps lower-case file extensions to the language hint of read cards.
var langByExt = map[string]string{
	"ts": "ts", "tsx": "tsx", "mts": "ts", "cts": "ts",
	"js": "js", "jsx": "jsx", "mjs": "js", "cjs": "js",
	"json": "json", "jsonc": "json",
	"py": "py", "rb": "rb", "go": "go", "rs": "rs", "java": "java",
	"c": "c", "h": "c", "cc": "cpp", "cpp": "cpp", "hpp": "cpp", "cxx": "cpp",
	"cs": "cs", "kt": "kotlin", "swift": "swift", "php": "php",
	"sh": "sh", "bash": "sh", "zsh": "sh",
	"yaml": "yaml", "yml": "yaml", "toml": "toml", "ini": "ini",
	"md": "md", "markdown": "md", "mdx": "mdx",
	"html": "html", "htm": "html", "css": "css", "scss": "scss", "less": "less",
	"sql": "sql", "xml": "xml", "lua": "lua",
}

// LangFromPath returns the syntax-highlighting hint for p's extension (case-insensitive), or
// "" for an unknown extension and for dotfiles without one.
func LangFromPath(p string) string {
	base := p[strings.LastIndexAny(p, `/\`)+1:]
	dot := strings.LastIndexByte(base, '.')
	if dot <= 0 {
		return ""
	}
	return langByExt[strings.ToLower(base[dot+1:])]
}

// readEnvelope matches the read envelope and captures its body.
var readEnvelope = regexp.MustCompile(`(?s)\A<path>[^\n]*</path>\n<type>file</type>\n<content>\n(.*)\n</content>\z`)

// readResultCard is the completed card of a read: the window from the persisted meta and the
// envelope's body as fallback content. Errors, malformed meta and content that is not one
// read envelope get the generic card.
func readResultCard(_ readArgs, res card.ToolResult) *card.Result {
	if res.IsError {
		return nil
	}
	m, ok := readMetaFrom(res.Meta)
	if !ok || len(res.Content) != 1 || res.Content[0].Type != content.TypeText {
		return nil
	}
	body := readEnvelope.FindStringSubmatch(res.Content[0].Text)
	if body == nil {
		return nil
	}
	lines := make([]card.ReadLine, len(m.Lines))
	for i, l := range m.Lines {
		lines[i] = card.ReadLine{Number: l.Number, Text: l.Text}
	}
	return &card.Result{
		Card:       card.Read,
		Path:       m.Path,
		Offset:     m.Offset,
		Lines:      lines,
		TotalLines: m.TotalLines,
		Lang:       m.Lang,
		Content:    content.Texts(body[1]),
	}
}

// readMetaFrom narrows persisted meta to a read window, rejecting anything a replayed log
// could hold that does not describe one: offsets and line numbers must be 1-based integers,
// line numbers increasing from offset and at most totalLines.
func readMetaFrom(meta any) (ReadMeta, bool) {
	o, ok := meta.(*jsonv.Object)
	if !ok {
		return ReadMeta{}, false
	}
	var m ReadMeta
	p, ok1 := member[string](o, "path")
	offset, ok2 := intMember(o, "offset", 1)
	total, ok3 := intMember(o, "totalLines", 0)
	lines, ok4 := member[[]any](o, "lines")
	if !(ok1 && ok2 && ok3 && ok4) {
		return m, false
	}
	if v, present := o.Get("lang"); present {
		lang, ok := v.(string)
		if !ok {
			return m, false
		}
		m.Lang = lang
	}
	m.Path, m.Offset, m.TotalLines = p, offset, total
	m.Lines = make([]Line, 0, len(lines))
	prev := offset - 1
	for _, l := range lines {
		lo, ok := l.(*jsonv.Object)
		if !ok {
			return m, false
		}
		n, ok1 := intMember(lo, "number", 1)
		text, ok2 := member[string](lo, "text")
		if !ok1 || !ok2 || n <= prev || n > total {
			return m, false
		}
		prev = n
		m.Lines = append(m.Lines, Line{Number: n, Text: text})
	}
	return m, true
}

// member returns o's member name when it has type T.
func member[T any](o *jsonv.Object, name string) (T, bool) {
	v, _ := o.Get(name)
	t, ok := v.(T)
	return t, ok
}

// intMember returns o's member name when it is an integer of at least least.
func intMember(o *jsonv.Object, name string, least int) (int, bool) {
	f, ok := member[float64](o, name)
	if !ok || f != math.Trunc(f) || f < float64(least) || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

// member0 returns the member name of v, a jsonv object, when it has type T; the zero value
// otherwise.
func member0[T any](v any, name string) T {
	var t T
	if o, ok := v.(*jsonv.Object); ok {
		t, _ = member[T](o, name)
	}
	return t
}

// diffsValue returns diffs as a jsonv array of {path, oldText, newText} objects.
func diffsValue(diffs []card.FileDiff) []any {
	out := make([]any, len(diffs))
	for i, d := range diffs {
		var old any
		if d.OldText != nil {
			old = *d.OldText
		}
		out[i] = jsonv.NewObject(
			jsonv.Member{Name: "path", Value: d.Path},
			jsonv.Member{Name: "oldText", Value: old},
			jsonv.Member{Name: "newText", Value: d.NewText},
		)
	}
	return out
}

// diffsFromMeta narrows persisted meta to a non-empty list of file diffs.
func diffsFromMeta(meta any) []card.FileDiff {
	o, ok := meta.(*jsonv.Object)
	if !ok {
		return nil
	}
	list, ok := member[[]any](o, "diffs")
	if !ok || len(list) == 0 {
		return nil
	}
	diffs := make([]card.FileDiff, 0, len(list))
	for _, d := range list {
		do, ok := d.(*jsonv.Object)
		if !ok {
			return nil
		}
		p, ok1 := member[string](do, "path")
		newText, ok2 := member[string](do, "newText")
		oldV, ok3 := do.Get("oldText")
		if !ok1 || !ok2 || !ok3 {
			return nil
		}
		var old *string
		switch x := oldV.(type) {
		case nil:
		case string:
			old = &x
		default:
			return nil
		}
		diffs = append(diffs, card.FileDiff{Path: p, OldText: old, NewText: newText})
	}
	return diffs
}

// writeCallCard is the pending card of a write: the new content as a creation, since the old
// content is unknown before the call runs.
func writeCallCard(in writeArgs) *card.Call {
	return &card.Call{
		Card:      card.Diff,
		Title:     "Write " + in.FilePath,
		Diffs:     []card.FileDiff{{Path: in.FilePath, NewText: in.Content}},
		Locations: []card.FileLocation{{Path: in.FilePath}},
	}
}

// writeResultCard is the completed card of a write: the applied hunks, or the whole new
// content when there are none (a creation, an identical overwrite, old meta).
func writeResultCard(in writeArgs, res card.ToolResult) *card.Result {
	if res.IsError {
		return nil
	}
	diffs := diffsFromMeta(res.Meta)
	if diffs == nil {
		diffs = []card.FileDiff{{Path: in.FilePath, NewText: in.Content}}
	}
	return &card.Result{Card: card.Diff, Title: "Write " + in.FilePath, Diffs: diffs}
}

// editCallCard is the pending card of an edit: the literal replacement.
func editCallCard(in editArgs) *card.Call {
	var old *string
	if in.OldString != "" {
		s := in.OldString
		old = &s
	}
	return &card.Call{
		Card:      card.Diff,
		Title:     "Edit " + in.FilePath,
		Diffs:     []card.FileDiff{{Path: in.FilePath, OldText: old, NewText: in.NewString}},
		Locations: []card.FileLocation{{Path: in.FilePath}},
	}
}

// editResultCard is the completed card of an edit: the applied hunks from the meta, or the
// generic card without them.
func editResultCard(in editArgs, res card.ToolResult) *card.Result {
	if res.IsError {
		return nil
	}
	diffs := diffsFromMeta(res.Meta)
	if diffs == nil {
		return nil
	}
	return &card.Result{Card: card.Diff, Title: "Edit " + in.FilePath, Diffs: diffs}
}
