package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

func grepTree(t *testing.T) string {
	return writeTree(t, map[string]string{
		"main.go":          "package main\n\nfunc main() {\n\thello()\n}\n",
		"hello.go":         "package main\n\nfunc hello() {\n\tprintln(\"Hello\")\n}\n",
		"docs/notes.md":    "say hello\r\nand goodbye\r\n",
		"bin/blob":         "hello\x00binary",
		".env":             "hello=secret",
		".hidden/h.go":     "func hello() {}",
		"gen/out.go":       "func hello() {}",
		".gitignore":       "gen/\n",
		"latin1.txt":       "hello caf\xe9\n",
		"noeol.txt":        "first\nhello last",
		"nested/deep/x.go": "// hello from deep\n",
	})
}

func TestGrepText(t *testing.T) {
	reg := newRegistry(t, Config{Root: grepTree(t)})
	tests := []struct {
		args, want string
	}{
		{`{"pattern":"hello"}`, "Found 6 matches\n\n" +
			"docs/notes.md\nLine 1: say hello\n\n" +
			"hello.go\nLine 3: func hello() {\n\n" +
			"latin1.txt\nLine 1: (line is not valid UTF-8)\n\n" +
			"main.go\nLine 4: \thello()\n\n" +
			"nested/deep/x.go\nLine 1: // hello from deep\n\n" +
			"noeol.txt\nLine 2: hello last"},
		{`{"pattern":"(?i)^func hello","include":"*.go"}`, "Found 1 match\n\nhello.go\nLine 3: func hello() {"},
		{`{"pattern":"hello","include":"nested/**/*.go"}`, "Found 1 match\n\nnested/deep/x.go\nLine 1: // hello from deep"},
		{`{"pattern":"hello","path":"nested"}`, "Found 1 match\n\nnested/deep/x.go\nLine 1: // hello from deep"},
		{`{"pattern":"main","path":"main.go"}`, "Found 2 matches\n\nmain.go\nLine 1: package main\nLine 3: func main() {"},
		{`{"pattern":"hello","path":"gen/out.go"}`, "Found 1 match\n\ngen/out.go\nLine 1: func hello() {}"},
		// As in ripgrep, "$" matches before "\n" only, so a CRLF line needs "\r?$".
		{`{"pattern":"goodbye$"}`, "No matches found"},
		{`{"pattern":"goodbye\\r?$"}`, "Found 1 match\n\ndocs/notes.md\nLine 2: and goodbye"},
		{`{"pattern":"^$","path":"main.go"}`, "Found 1 match\n\nmain.go\nLine 2: "},
		{`{"pattern":"\\Apackage","path":"main.go"}`, "Found 1 match\n\nmain.go\nLine 1: package main"},
		{`{"pattern":"nothing-like-this"}`, "No matches found"},
		{`{"pattern":"\\t","include":"*.go"}`, "Found 2 matches\n\nhello.go\nLine 4: \tprintln(\"Hello\")\n\nmain.go\nLine 4: \thello()"},
	}
	for _, tt := range tests {
		res := call(t, reg, "grep", tt.args)
		if res.IsError {
			t.Errorf("grep %s failed: %s", tt.args, text(t, res))
			continue
		}
		if got := text(t, res); got != tt.want {
			t.Errorf("grep %s =\n%q\nwant\n%q", tt.args, got, tt.want)
		}
	}
}

func TestGrepValueAndMeta(t *testing.T) {
	reg := newRegistry(t, Config{Root: grepTree(t)})
	res := call(t, reg, "grep", `{"pattern":"hello\\(","include":"*.go"}`)
	if res.IsError {
		t.Fatal(text(t, res))
	}
	var out GrepOutput
	if err := jsonv.Decode(res.Value, &out); err != nil {
		t.Fatal(err)
	}
	want := []GrepMatch{
		{Path: "hello.go", LineNumber: 3, Line: "func hello() {"},
		{Path: "main.go", LineNumber: 4, Line: "\thello()"},
	}
	if diff := cmp.Diff(want, out.Matches); diff != "" {
		t.Errorf("matches (-want +got):\n%s", diff)
	}
	meta, _ := jsonv.Marshal(res.Meta)
	wantMeta := `{"shape":"matches","files":[{"path":"hello.go","matches":[{"lineNumber":3,"line":"func hello() {"}]},{"path":"main.go","matches":[{"lineNumber":4,"line":"\thello()"}]}],"truncated":false,"total":2}`
	if string(meta) != wantMeta {
		t.Errorf("meta = %s\nwant   %s", meta, wantMeta)
	}
	c := reg.Get("grep", nil).PresentResult(tool.ParseArguments(`{"pattern":"x"}`), card.ToolResult{Content: res.Content, Meta: res.Meta})
	wantCard := &card.Result{Card: card.Search, Shape: "matches", Total: 2, Files: []card.SearchFile{
		{Path: "hello.go", Matches: []card.SearchMatch{{LineNumber: 3, Line: "func hello() {"}}},
		{Path: "main.go", Matches: []card.SearchMatch{{LineNumber: 4, Line: "\thello()"}}},
	}}
	if diff := cmp.Diff(wantCard, c); diff != "" {
		t.Errorf("card (-want +got):\n%s", diff)
	}
}

func TestSearchCardFallbacks(t *testing.T) {
	meta := func(s string) any {
		v, err := jsonv.ParseString(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name string
		res  card.ToolResult
	}{
		{"error", card.ToolResult{IsError: true, Meta: meta(`{"shape":"matches","files":[],"truncated":false,"total":0}`)}},
		{"no meta", card.ToolResult{}},
		{"not an object", card.ToolResult{Meta: meta(`[1]`)}},
		{"other shape", card.ToolResult{Meta: meta(`{"shape":"paths","paths":[],"truncated":false,"total":0}`)}},
		{"missing total", card.ToolResult{Meta: meta(`{"shape":"matches","files":[],"truncated":false}`)}},
		{"bad files", card.ToolResult{Meta: meta(`{"shape":"matches","files":[{"path":1}],"truncated":false,"total":0}`)}},
		{"bad total", card.ToolResult{Meta: meta(`{"shape":"matches","files":[],"truncated":false,"total":"x"}`)}},
	}
	for _, tt := range tests {
		if c := searchCard(tt.res, "matches"); c != nil {
			t.Errorf("%s: card = %+v, want nil", tt.name, c)
		}
	}
}

func TestGrepErrors(t *testing.T) {
	root := grepTree(t)
	reg := newRegistry(t, Config{Root: root})
	outside := writeTree(t, map[string]string{"secret.txt": "hello"})
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "escape.txt")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args, text, code string
	}{
		{`{"pattern":""}`, "Error: pattern must be a non-empty string", ""},
		{`{"pattern":"x","path":""}`, "Error: path must be a non-empty string when given", ""},
		{`{"pattern":"x","include":" "}`, "Error: include must be a non-empty glob when given", ""},
		{`{"pattern":"x","include":"!*.go"}`, `Error: include must be a positive glob filter; negated patterns ("!…") are not supported`, ""},
		{`{"pattern":"x","include":"*.go,*.md"}`, "Error: include must be one glob, not a comma-separated list (use {a,b} alternation instead)", ""},
		{`{"pattern":"x","include":"[a"}`, `Error: grep pattern rejected: include "[a" is not a valid glob`, CodeInvalidPattern},
		{`{"pattern":"(x"}`, "Error: grep pattern rejected: error parsing regexp: missing closing ): `(x`", CodeInvalidPattern},
		{`{"pattern":"(?<=a)b"}`, "Error: grep pattern rejected: error parsing regexp: invalid named capture: `(?<=a)b`", CodeInvalidPattern},
		{`{"pattern":"x","path":"../x"}`, `Error: cannot search "../x": the path leads outside the workspace`, "FS_SANDBOX_DENIED"},
		{`{"pattern":"x","path":"escape.txt"}`, `Error: cannot search "escape.txt": the path leads outside the workspace`, "FS_SANDBOX_DENIED"},
		{`{"pattern":"x","path":"missing"}`, `Error: grep search failed: path "missing" does not exist`, CodeFailed},
		{`{"pattern":"x","path":3}`, `Error: invalid arguments: "path" must be a string`, tool.CodeInvalidArgs},
	}
	for _, tt := range tests {
		res := call(t, reg, "grep", tt.args)
		if !res.IsError || text(t, res) != tt.text || code(res) != tt.code {
			t.Errorf("grep %s = %q (%q), want %q (%q)", tt.args, text(t, res), code(res), tt.text, tt.code)
		}
	}
}

// TestExtraArgumentIgnored checks that glob and grep ignore an argument they do not declare
// (their inferred schemas are open), as a model sometimes adds one.
func TestExtraArgumentIgnored(t *testing.T) {
	reg := newRegistry(t, Config{Root: writeTree(t, map[string]string{"a.go": "needle\n"})})
	for _, tt := range []struct{ name, args, want string }{
		{"grep", `{"pattern":"needle","extra":1}`, "a.go"},
		{"glob", `{"pattern":"*.go","recursive":true}`, "a.go"},
	} {
		res := call(t, reg, tt.name, tt.args)
		if res.IsError || !strings.Contains(text(t, res), tt.want) {
			t.Errorf("%s %s = %q (%q), want a success naming %s", tt.name, tt.args, text(t, res), code(res), tt.want)
		}
	}
}

func TestGrepOverCap(t *testing.T) {
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "match %d\n", i)
	}
	long := "match " + strings.Repeat("é", 1500) + "\n"
	root := writeTree(t, map[string]string{"a.txt": b.String(), "b.txt": long})
	spill := t.TempDir()
	reg := newRegistry(t, Config{Root: root, SpillDir: spill})
	res := call(t, reg, "grep", `{"pattern":"^match"}`)
	got := text(t, res)
	m := spillRE.FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no spill path in %q", got[max(0, len(got)-300):])
	}
	var body strings.Builder
	body.WriteString("Found 250 of 301 matches\n\na.txt")
	for i := range 250 {
		fmt.Fprintf(&body, "\nLine %d: match %d", i+1, i)
	}
	body.WriteString("\n\n(Full grep result stored at: " + m[1] + ". Use read with this absolute path and offset/limit; grep does not search it.)")
	if got != body.String() {
		t.Errorf("text tail = %q", got[max(0, len(got)-300):])
	}
	data, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	full := string(data)
	preview := "match " + strings.Repeat("é", 997) + " (line truncated)" // 2000 bytes cut on a rune boundary
	if !strings.HasPrefix(full, "Found 301 matches\n\na.txt\nLine 1: match 0\n") || !strings.HasSuffix(full, "\n\nb.txt\nLine 1: "+preview) {
		t.Errorf("spill file = %q…%q", full[:60], full[max(0, len(full)-80):])
	}
	var out GrepOutput
	if err := jsonv.Decode(res.Value, &out); err != nil || len(out.Matches) != 301 || out.Matches[300].Line != strings.TrimSuffix(long, "\n") {
		t.Errorf("the value does not keep every complete match (%v)", err)
	}
	c := reg.Get("grep", nil).PresentResult(tool.ParseArguments(`{"pattern":"^match"}`), card.ToolResult{Content: res.Content, Meta: res.Meta})
	if c == nil || !c.Truncated || c.Total != 301 || len(c.Files) != 1 || len(c.Files[0].Matches) != 250 {
		t.Errorf("card = %+v", c)
	}
}

func TestGrepMetaByteCap(t *testing.T) {
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("f%02d.txt", i)] = "needle " + strings.Repeat("x", 500) + "\n"
	}
	reg := newRegistry(t, Config{Root: writeTree(t, files), MetaMaxBytes: 2000})
	res := call(t, reg, "grep", `{"pattern":"needle"}`)
	b, _ := jsonv.Marshal(res.Meta)
	if len(b) > 2000 {
		t.Errorf("meta is %d bytes, over the 2000-byte cap", len(b))
	}
	var m matchesMeta
	if err := jsonv.Decode(res.Meta, &m); err != nil {
		t.Fatal(err)
	}
	if !m.Truncated || m.Total != 20 || len(m.Files) == 0 || len(m.Files) >= 20 {
		t.Errorf("meta: truncated=%v total=%d files=%d", m.Truncated, m.Total, len(m.Files))
	}
	// The model still sees every match: only the card is bounded.
	if !strings.HasPrefix(text(t, res), "Found 20 matches") {
		t.Errorf("text = %.40q", text(t, res))
	}
}

func TestGrepRawOutputOverflow(t *testing.T) {
	root := writeTree(t, map[string]string{"a.txt": strings.Repeat("hit\n", 100), "b/c.txt": strings.Repeat("hit\n", 100)})
	reg := newRegistry(t, Config{Root: root, RawOutputBytes: 1000})
	for _, args := range []string{`{"pattern":"hit"}`, `{"pattern":"hit","path":"a.txt"}`} {
		res := call(t, reg, "grep", args)
		if code(res) != CodeRawOutputOverflow || text(t, res) != "Error: grep matched more than 1000 bytes of lines; narrow pattern, path, or include and retry" {
			t.Errorf("grep %s = %q (%s)", args, text(t, res), code(res))
		}
	}
}

func TestGrepAborted(t *testing.T) {
	set, err := Config{Root: grepTree(t)}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	g := &grepTool{set: set, walker: walker{root: set.root, honourIgnores: true}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = g.run(ctx, nil, GrepInput{Pattern: "hello"})
	if info := tool.InfoOf(err); info == nil || info.Code != CodeAborted {
		t.Fatalf("err = %v, want %s", err, CodeAborted)
	}
	// The search itself stops at a cancelled context, and its workers with it.
	eng, err := compileGrep("hello")
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := set.resolveTarget("grep", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.search(ctx, eng, tgt, nil); err == nil {
		t.Fatal("a cancelled search succeeded")
	}
}

func TestGrepCallCard(t *testing.T) {
	reg := newRegistry(t, Config{Root: t.TempDir()})
	got := reg.Get("grep", nil).PresentCall(tool.ParseArguments(`{"pattern":"TODO","path":"src","include":"*.go"}`))
	want := &card.Call{Card: card.Generic, Title: "Grep TODO in src (*.go)", Kind: card.KindSearch, RawInput: "TODO"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("card (-want +got):\n%s", diff)
	}
}

func TestGrepSkipsUnreadableAndSpecialFiles(t *testing.T) {
	root := writeTree(t, map[string]string{"ok.txt": "hello\n"})
	if err := mkfifo(filepath.Join(root, "pipe")); err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, Config{Root: root})
	res := call(t, reg, "grep", `{"pattern":"hello"}`)
	if got := text(t, res); got != "Found 1 match\n\nok.txt\nLine 1: hello" {
		t.Errorf("text = %q", got)
	}
}

func TestPreviewLine(t *testing.T) {
	tests := []struct {
		line string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 10, "abcdefghij (line truncated)"},
		{"aaaaaaaaaé", 10, "aaaaaaaaa (line truncated)"},
		{"ééééé", 5, "éé (line truncated)"},
	}
	for _, tt := range tests {
		if got := previewLine(tt.line, tt.max); got != tt.want {
			t.Errorf("previewLine(%q, %d) = %q, want %q", tt.line, tt.max, got, tt.want)
		}
	}
}

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o644) }

// TestReadOnlyToolsRunInParallel checks glob and grep are concurrency-safe (they only read),
// so the scheduler and Code Mode overlap their calls; a call with invalid arguments stays
// exclusive, as for every tool.
func TestReadOnlyToolsRunInParallel(t *testing.T) {
	reg := newRegistry(t, Config{Root: writeTree(t, map[string]string{"a.go": "x\n"})})
	for _, tt := range []struct {
		name, args string
		want       tool.ExecMode
	}{
		{"glob", `{"pattern":"*.go"}`, tool.Parallel},
		{"grep", `{"pattern":"x"}`, tool.Parallel},
		{"glob", `{"pattern":1}`, tool.Exclusive},
		{"grep", `{}`, tool.Exclusive},
	} {
		in := tool.Input{CallID: "c", Name: tt.name, Args: tool.ParseArguments(tt.args)}
		if got := reg.ExecutionMode(in); got != tt.want {
			t.Errorf("%s %s: mode %v, want %v", tt.name, tt.args, got, tt.want)
		}
	}
}
