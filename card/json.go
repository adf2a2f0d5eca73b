package card

import (
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
)

// Value returns the call card in its wire shape (docs/behaviour.md §12): the members of its variant, with
// optional members only when set.
func (c *Call) Value() *jsonv.Object {
	o := &jsonv.Object{}
	o.Set("card", c.Card)
	o.Set("title", c.Title)
	switch c.Card {
	case Terminal:
		setString(o, "description", c.Description)
		setString(o, "cwd", c.Cwd)
	case Diff:
		o.Set("diffs", diffsValue(c.Diffs))
		if len(c.Locations) > 0 {
			o.Set("locations", locationsValue(c.Locations))
		}
	default:
		setString(o, "kind", c.Kind)
		if c.RawInput != nil {
			if v, err := jsonv.Snapshot(c.RawInput); err == nil {
				o.Set("rawInput", v)
			}
		}
		if c.Content != nil {
			o.Set("content", content.ListValue(c.Content))
		}
		if len(c.Locations) > 0 {
			o.Set("locations", locationsValue(c.Locations))
		}
	}
	return o
}

// MarshalJSON encodes the call card in its wire shape.
func (c *Call) MarshalJSON() ([]byte, error) { return jsonv.Marshal(c.Value()) }

// Value returns the result card in its wire shape (docs/behaviour.md §12). Members the variant requires
// (search truncated/total, read offset/lines/totalLines, …) are always present.
func (r *Result) Value() *jsonv.Object {
	o := &jsonv.Object{}
	o.Set("card", r.Card)
	switch r.Card {
	case Terminal:
		setString(o, "title", r.Title)
		setString(o, "output", r.Output)
		if r.ExitCode != nil {
			o.Set("exitCode", float64(*r.ExitCode))
		}
		setString(o, "signal", r.Signal)
	case Diff:
		setString(o, "title", r.Title)
		o.Set("diffs", diffsValue(r.Diffs))
	case Search:
		o.Set("shape", r.Shape)
		setString(o, "title", r.Title)
		if r.Shape == "paths" {
			paths := make([]any, len(r.Paths))
			for i, p := range r.Paths {
				paths[i] = p
			}
			o.Set("paths", paths)
		} else {
			files := make([]any, len(r.Files))
			for i, f := range r.Files {
				ms := make([]any, len(f.Matches))
				for j, m := range f.Matches {
					ms[j] = jsonv.NewObject(jsonv.Member{Name: "lineNumber", Value: float64(m.LineNumber)}, jsonv.Member{Name: "line", Value: m.Line})
				}
				files[i] = jsonv.NewObject(jsonv.Member{Name: "path", Value: f.Path}, jsonv.Member{Name: "matches", Value: ms})
			}
			o.Set("files", files)
		}
		o.Set("truncated", r.Truncated)
		o.Set("total", float64(r.Total))
	case Read:
		setString(o, "title", r.Title)
		o.Set("path", r.Path)
		o.Set("offset", float64(r.Offset))
		lines := make([]any, len(r.Lines))
		for i, l := range r.Lines {
			lines[i] = jsonv.NewObject(jsonv.Member{Name: "number", Value: float64(l.Number)}, jsonv.Member{Name: "text", Value: l.Text})
		}
		o.Set("lines", lines)
		o.Set("totalLines", float64(r.TotalLines))
		setString(o, "lang", r.Lang)
		if r.Content != nil {
			o.Set("content", content.ListValue(r.Content))
		}
	case Web:
		o.Set("kind", r.WebKind)
		setString(o, "title", r.Title)
		if r.WebKind == "fetch" {
			o.Set("url", r.URL)
			o.Set("statusCode", float64(r.StatusCode))
		} else {
			srcs := make([]any, len(r.Sources))
			for i, s := range r.Sources {
				so := jsonv.NewObject(jsonv.Member{Name: "url", Value: s.URL})
				setString(so, "title", s.Title)
				setString(so, "snippet", s.Snippet)
				setString(so, "publishedAt", s.PublishedAt)
				srcs[i] = so
			}
			o.Set("sources", srcs)
			setString(o, "answer", r.Answer)
		}
		o.Set("truncated", r.Truncated)
	default:
		setString(o, "title", r.Title)
		if r.Content != nil {
			o.Set("content", content.ListValue(r.Content))
		}
	}
	return o
}

// MarshalJSON encodes the result card in its wire shape.
func (r *Result) MarshalJSON() ([]byte, error) { return jsonv.Marshal(r.Value()) }

func setString(o *jsonv.Object, name, v string) {
	if v != "" {
		o.Set(name, v)
	}
}

func diffsValue(diffs []FileDiff) []any {
	out := make([]any, len(diffs))
	for i, d := range diffs {
		var old any
		if d.OldText != nil {
			old = *d.OldText
		}
		out[i] = jsonv.NewObject(jsonv.Member{Name: "path", Value: d.Path}, jsonv.Member{Name: "oldText", Value: old}, jsonv.Member{Name: "newText", Value: d.NewText})
	}
	return out
}

func locationsValue(locs []FileLocation) []any {
	out := make([]any, len(locs))
	for i, l := range locs {
		lo := jsonv.NewObject(jsonv.Member{Name: "path", Value: l.Path})
		if l.Line > 0 {
			lo.Set("line", float64(l.Line))
		}
		out[i] = lo
	}
	return out
}
