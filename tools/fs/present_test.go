package fs

import (
	"fmt"
	"testing"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
	"github.com/google/go-cmp/cmp"
)

func presentCall(t *testing.T, e *env, name, args string) *card.Call {
	t.Helper()
	def := e.reg.Get(name, nil)
	return def.PresentCall(tool.ParseArguments(args))
}

func presentResult(t *testing.T, e *env, name, args string, res card.ToolResult) *card.Result {
	t.Helper()
	def := e.reg.Get(name, nil)
	return def.PresentResult(tool.ParseArguments(args), res)
}

// durable projects a live result to what the log keeps.
func durable(t *testing.T, res *tool.Result) card.ToolResult {
	t.Helper()
	// Round-trip meta through JSON text, as a replay from the log would.
	var meta any
	if res.Meta != nil {
		b, err := jsonv.Marshal(res.Meta)
		if err != nil {
			t.Fatal(err)
		}
		if meta, err = jsonv.Parse(b); err != nil {
			t.Fatal(err)
		}
	}
	return card.ToolResult{Content: content.Clone(res.Content), IsError: res.IsError, Meta: meta}
}

func TestReadCallCard(t *testing.T) {
	e := newEnv(t, Config{})
	tests := []struct {
		args  string
		title string
		line  int
	}{
		{`{"file_path":"src/a.ts","offset":12,"limit":40}`, "Read src/a.ts (12 - 51)", 12},
		{`{"file_path":"a.txt"}`, "Read a.txt", 1},
		{`{"file_path":"a.txt","offset":5}`, "Read a.txt (from line 5)", 5},
		{`{"file_path":"a.txt","limit":10}`, "Read a.txt (1 - 10)", 1},
		{`{"file_path":"a.txt","offset":2,"limit":0.5}`, "Read a.txt (2 - 1.5)", 2},
	}
	for _, tt := range tests {
		got := presentCall(t, e, "read", tt.args)
		want := &card.Call{Card: card.Generic, Title: tt.title, Kind: card.KindRead, Locations: []card.FileLocation{{Path: tool.ParseArguments(tt.args).(*jsonv.Object).Members()[0].Value.(string), Line: tt.line}}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.args, diff)
		}
	}
	if got := presentCall(t, e, "read", `{"offset":1}`); got != nil {
		t.Errorf("invalid arguments: card %+v, want the generic fallback", got)
	}
}

func TestReadResultCard(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("x.py", "a = 1\nb = 2\n")
	args := `{"file_path":"x.py","limit":1}`
	res := e.call("read", args)
	mustOK(t, res)
	got := presentResult(t, e, "read", args, durable(t, res))
	want := &card.Result{
		Card: card.Read, Path: e.path("x.py"), Offset: 1, TotalLines: 2, Lang: "py",
		Lines:   []card.ReadLine{{Number: 1, Text: "a = 1"}},
		Content: content.Texts("1: a = 1\n\n(Showing lines 1-1 of 2. Use offset=2 to continue.)"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("card (-want +got):\n%s", diff)
	}

	good := durable(t, res)
	meta := func(s string) any { v, _ := jsonv.ParseString(s); return v }
	declines := map[string]card.ToolResult{
		"error":          {Content: good.Content, IsError: true, Meta: good.Meta},
		"no meta":        {Content: good.Content},
		"two blocks":     {Content: append(content.Clone(good.Content), content.Text("x")), Meta: good.Meta},
		"not envelope":   {Content: content.Texts("hello"), Meta: good.Meta},
		"offset 0":       {Content: good.Content, Meta: meta(`{"path":"p","offset":0,"lines":[],"totalLines":0}`)},
		"fractional":     {Content: good.Content, Meta: meta(`{"path":"p","offset":1.5,"lines":[],"totalLines":3}`)},
		"line < offset":  {Content: good.Content, Meta: meta(`{"path":"p","offset":2,"lines":[{"number":1,"text":"a"}],"totalLines":3}`)},
		"line > total":   {Content: good.Content, Meta: meta(`{"path":"p","offset":1,"lines":[{"number":4,"text":"a"}],"totalLines":3}`)},
		"not increasing": {Content: good.Content, Meta: meta(`{"path":"p","offset":1,"lines":[{"number":2,"text":"a"},{"number":2,"text":"b"}],"totalLines":3}`)},
		"bad lang":       {Content: good.Content, Meta: meta(`{"path":"p","offset":1,"lines":[],"totalLines":3,"lang":7}`)},
		"meta array":     {Content: good.Content, Meta: []any{}},
	}
	for name, r := range declines {
		if got := presentResult(t, e, "read", args, r); got != nil {
			t.Errorf("%s: card %+v, want the generic fallback", name, got)
		}
	}
	// An empty body is still an envelope.
	empty := card.ToolResult{Content: content.Texts(envelope("/p", "(End of file - total 0 lines)")), Meta: meta(`{"path":"/p","offset":1,"lines":[],"totalLines":0}`)}
	if got := presentResult(t, e, "read", `{"file_path":"p"}`, empty); got == nil || got.Content[0].Text != "(End of file - total 0 lines)" {
		t.Errorf("empty read card = %+v", got)
	}
}

func TestWriteCards(t *testing.T) {
	e := newEnv(t, Config{})
	call := presentCall(t, e, "write", `{"file_path":"out.txt","content":"hello"}`)
	want := &card.Call{Card: card.Diff, Title: "Write out.txt", Diffs: []card.FileDiff{{Path: "out.txt", NewText: "hello"}}, Locations: []card.FileLocation{{Path: "out.txt"}}}
	if diff := cmp.Diff(want, call); diff != "" {
		t.Errorf("call card (-want +got):\n%s", diff)
	}
	// Create: no hunks, the whole file.
	args := `{"file_path":"new.txt","content":"fresh\n"}`
	res := e.call("write", args)
	mustOK(t, res)
	got := presentResult(t, e, "write", args, durable(t, res))
	if diff := cmp.Diff(&card.Result{Card: card.Diff, Title: "Write new.txt", Diffs: []card.FileDiff{{Path: "new.txt", NewText: "fresh\n"}}}, got); diff != "" {
		t.Errorf("create card (-want +got):\n%s", diff)
	}
	// Overwrite: the hunks from the meta, on replay too.
	args = `{"file_path":"new.txt","content":"fresh\nmore\n"}`
	res = e.call("write", args)
	mustOK(t, res)
	got = presentResult(t, e, "write", args, durable(t, res))
	if diff := cmp.Diff(&card.Result{Card: card.Diff, Title: "Write new.txt", Diffs: []card.FileDiff{{Path: "new.txt", OldText: sp("fresh"), NewText: "fresh\nmore"}}}, got); diff != "" {
		t.Errorf("overwrite card (-want +got):\n%s", diff)
	}
	// Malformed meta falls back to the whole file; errors get the generic card.
	bad, _ := jsonv.ParseString(`{"diffs":[{"path":1}]}`)
	got = presentResult(t, e, "write", `{"file_path":"a.txt","content":"y"}`, card.ToolResult{Content: content.Texts("x"), Meta: bad})
	if diff := cmp.Diff(&card.Result{Card: card.Diff, Title: "Write a.txt", Diffs: []card.FileDiff{{Path: "a.txt", NewText: "y"}}}, got); diff != "" {
		t.Errorf("malformed meta card (-want +got):\n%s", diff)
	}
	if got := presentResult(t, e, "write", args, card.ToolResult{IsError: true}); got != nil {
		t.Errorf("error card = %+v", got)
	}
}

func TestEditCards(t *testing.T) {
	e := newEnv(t, Config{})
	call := presentCall(t, e, "edit", `{"file_path":"a.txt","old_string":"","new_string":"seed"}`)
	want := &card.Call{Card: card.Diff, Title: "Edit a.txt", Diffs: []card.FileDiff{{Path: "a.txt", NewText: "seed"}}, Locations: []card.FileLocation{{Path: "a.txt"}}}
	if diff := cmp.Diff(want, call); diff != "" {
		t.Errorf("call card (-want +got):\n%s", diff)
	}
	call = presentCall(t, e, "edit", `{"file_path":"a.txt","old_string":"x","new_string":"y"}`)
	if call.Diffs[0].OldText == nil || *call.Diffs[0].OldText != "x" {
		t.Errorf("call card old text = %v", call.Diffs[0].OldText)
	}
	e.put("a.txt", "one\ntwo\n")
	mustOK(t, e.call("read", `{"file_path":"a.txt"}`))
	args := `{"file_path":"a.txt","old_string":"two","new_string":"2"}`
	res := e.call("edit", args)
	mustOK(t, res)
	got := presentResult(t, e, "edit", args, durable(t, res))
	if diff := cmp.Diff(&card.Result{Card: card.Diff, Title: "Edit a.txt", Diffs: []card.FileDiff{{Path: "a.txt", OldText: sp("one\ntwo"), NewText: "one\n2"}}}, got); diff != "" {
		t.Errorf("result card (-want +got):\n%s", diff)
	}
	empty, _ := jsonv.ParseString(`{"diffs":[]}`)
	for name, r := range map[string]card.ToolResult{
		"error":       {IsError: true, Meta: durable(t, res).Meta},
		"no meta":     {Content: res.Content},
		"empty diffs": {Content: res.Content, Meta: empty},
	} {
		if got := presentResult(t, e, "edit", args, r); got != nil {
			t.Errorf("%s: card %+v, want the generic fallback", name, got)
		}
	}
}

func TestLangFromPath(t *testing.T) {
	for p, want := range map[string]string{
		"a.ts": "ts", "A.TSX": "tsx", "dir.d/x.GO": "go", `c:\x\y.rs`: "rs", "k.kt": "kotlin",
		"h.h": "c", "x.hpp": "cpp", ".gitignore": "", "Makefile": "", "x.constructor": "",
		"x.": "", "a.b/c": "", "notes.markdown": "md", "s.zsh": "sh",
	} {
		if got := LangFromPath(p); got != want {
			t.Errorf("LangFromPath(%q) = %q, want %q", p, got, want)
		}
	}
}

func ExampleLangFromPath() {
	fmt.Println(LangFromPath("cmd/main.go"), LangFromPath("README.MD"), LangFromPath(".env") == "")
	// Output: go md true
}
