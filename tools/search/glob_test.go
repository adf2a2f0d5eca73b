package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// globPaths runs glob and returns the paths of its value.
func globPaths(t *testing.T, reg *tool.Registry, args string) []string {
	t.Helper()
	res := call(t, reg, "glob", args)
	if res.IsError {
		t.Fatalf("glob %s failed: %s", args, text(t, res))
	}
	var out GlobOutput
	if err := jsonv.Decode(res.Value, &out); err != nil {
		t.Fatal(err)
	}
	return out.Paths
}

func TestGlobPatterns(t *testing.T) {
	root := writeTree(t, map[string]string{
		"main.go":         "",
		"README.md":       "",
		"a/x.go":          "",
		"a/b/c.go":        "",
		"a/b/notes.txt":   "",
		"b/y.txt":         "",
		"docs/guide.md":   "",
		".github/ci.yml":  "",
		"weird {x}.go":    "",
		"a/b/deep/z_test": "",
	})
	reg := newRegistry(t, Config{Root: root})
	tests := []struct {
		args string
		want []string
	}{
		{`{"pattern":"*.go"}`, []string{"a/b/c.go", "a/x.go", "main.go", "weird {x}.go"}},
		{`{"pattern":"*.md"}`, []string{"README.md", "docs/guide.md"}},
		{`{"pattern":"a/*.go"}`, []string{"a/x.go"}},
		{`{"pattern":"/a/*.go"}`, []string{"a/x.go"}},
		{`{"pattern":"a/**/*.go"}`, []string{"a/b/c.go", "a/x.go"}},
		{`{"pattern":"**/*.txt"}`, []string{"a/b/notes.txt", "b/y.txt"}},
		{`{"pattern":"{a,b}/*.txt"}`, []string{"b/y.txt"}},
		{`{"pattern":"*.{md,yml}"}`, []string{".github/ci.yml", "README.md", "docs/guide.md"}},
		{`{"pattern":"[mR]*"}`, []string{"README.md", "main.go"}},
		{`{"pattern":"*_test"}`, []string{"a/b/deep/z_test"}},
		{`{"pattern":"*.go","path":"a"}`, []string{"a/b/c.go", "a/x.go"}},
		{`{"pattern":"b/*.go","path":"a"}`, []string{"a/b/c.go"}},
		{`{"pattern":"a/b/*.go","path":"a"}`, []string{"a/b/c.go"}}, // relative to the root, as in ripgrep
		{`{"pattern":"a/*.go","path":"a/b"}`, []string{}},
		{`{"pattern":"*","path":"a/b/deep"}`, []string{"a/b/deep/z_test"}},
		{`{"pattern":"*.go","path":"./a/../a"}`, []string{"a/b/c.go", "a/x.go"}},
		{`{"pattern":"*.go","path":"` + filepath.Join(root, "a") + `"}`, []string{"a/b/c.go", "a/x.go"}},
		{`{"pattern":"*.rs"}`, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, globPaths(t, reg, tt.args)); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGlobNewestFirst(t *testing.T) {
	root := writeTree(t, map[string]string{"old.go": "", "mid.go": "", "new.go": "", "tie-b.go": "", "tie-a.go": ""})
	touch(t, root, "old.go", baseTime.Add(-time.Hour))
	touch(t, root, "new.go", baseTime.Add(time.Hour))
	reg := newRegistry(t, Config{Root: root})
	res := call(t, reg, "glob", `{"pattern":"*.go"}`)
	if got, want := text(t, res), "new.go\nmid.go\ntie-a.go\ntie-b.go\nold.go"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	if res.IsError {
		t.Fatal("glob failed")
	}
	meta, _ := jsonv.Marshal(res.Meta)
	if got, want := string(meta), `{"shape":"paths","paths":["new.go","mid.go","tie-a.go","tie-b.go","old.go"],"truncated":false,"total":5}`; got != want {
		t.Errorf("meta = %s, want %s", got, want)
	}
}

func TestGlobNoFiles(t *testing.T) {
	reg := newRegistry(t, Config{Root: writeTree(t, map[string]string{"a.txt": ""})})
	res := call(t, reg, "glob", `{"pattern":"*.go"}`)
	if res.IsError || text(t, res) != "No files found" {
		t.Fatalf("got %+v", res)
	}
	c := reg.Get("glob", nil).PresentResult(tool.ParseArguments(`{"pattern":"*.go"}`), card.ToolResult{Content: res.Content, Meta: res.Meta})
	want := &card.Result{Card: card.Search, Shape: "paths", Paths: []string{}, Total: 0}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("card (-want +got):\n%s", diff)
	}
}

// TestIgnoreRules checks the walker against gitignore(5); the expectations were confirmed
// with git check-ignore.
func TestIgnoreRules(t *testing.T) {
	root := writeTree(t, map[string]string{
		".gitignore": strings.Join([]string{
			"# comment", "*.log", "!important.log", "/build", "docs/*.tmp", "vendor/", "!vendor/keep/",
			"lib/**", "!lib/keep.txt", `\#hash`, `\!bang`, "a{b}", "cache/", "",
		}, "\n"),
		"x.log":             "",
		"important.log":     "",
		"build/a":           "",
		"src/build/a":       "",
		"docs/a.tmp":        "",
		"docs/sub/a.tmp":    "",
		"vendor/keep/k":     "",
		"lib/keep.txt":      "",
		"lib/x":             "",
		"#hash":             "",
		"!bang":             "",
		"a{b}":              "",
		"ab":                "",
		"src/.gitignore":    "local.txt\n!*.log\n",
		"src/local.txt":     "",
		"local.txt":         "",
		"src/y.log":         "",
		"cache":             "a file named like an ignored directory",
		".git/config":       "",
		".git/info/exclude": "excluded.txt\n",
		"excluded.txt":      "",
		"sub/excluded.txt":  "",
		"crlf/.gitignore":   "drop.me\r\n",
		"crlf/drop.me":      "",
	})
	reg := newRegistry(t, Config{Root: root})
	want := []string{
		".gitignore", "ab", "cache", "crlf/.gitignore", "docs/sub/a.tmp",
		"important.log", "lib/keep.txt", "local.txt", "src/.gitignore", "src/build/a", "src/y.log",
	}
	if diff := cmp.Diff(want, globPaths(t, reg, `{"pattern":"*"}`)); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	// The same rules apply when the search starts below a directory that holds them.
	if diff := cmp.Diff([]string{"src/.gitignore", "src/build/a", "src/y.log"}, globPaths(t, reg, `{"pattern":"*","path":"src"}`)); diff != "" {
		t.Errorf("paths under src (-want +got):\n%s", diff)
	}
	// An explicitly named ignored directory is searched, as ripgrep does.
	if diff := cmp.Diff([]string{"build/a"}, globPaths(t, reg, `{"pattern":"*","path":"build"}`)); diff != "" {
		t.Errorf("paths under build (-want +got):\n%s", diff)
	}
	// VCS metadata is never listed, even when asked for.
	if got := globPaths(t, reg, `{"pattern":"*","path":".git"}`); len(got) != 0 {
		t.Errorf("paths under .git = %v, want none", got)
	}

	all := newRegistry(t, Config{Root: root, GlobIncludeIgnored: true})
	if got := globPaths(t, all, `{"pattern":"*.log"}`); !cmp.Equal(got, []string{"important.log", "src/y.log", "x.log"}) {
		t.Errorf("GlobIncludeIgnored paths = %v", got)
	}
}

func TestIgnoreLineParsing(t *testing.T) {
	tests := []struct {
		line string
		want ignoreRule
		ok   bool
	}{
		{"", ignoreRule{}, false},
		{"   ", ignoreRule{}, false},
		{"# c", ignoreRule{}, false},
		{"/", ignoreRule{}, false},
		{"!", ignoreRule{}, false},
		{"*.o", ignoreRule{glob: "*.o"}, true},
		{"*.o   ", ignoreRule{glob: "*.o"}, true},
		{`a\ `, ignoreRule{glob: `a\ `}, true},
		{"!keep", ignoreRule{glob: "keep", negate: true}, true},
		{"dir/", ignoreRule{glob: "dir", dirOnly: true}, true},
		{"/root.txt", ignoreRule{glob: "root.txt", anchored: true}, true},
		{"a/b", ignoreRule{glob: "a/b", anchored: true}, true},
		{"a/**", ignoreRule{glob: "a/**", anchored: true, subtree: "a"}, true},
		{"x{y}", ignoreRule{glob: `x\{y\}`}, true},
		{"bad[", ignoreRule{}, false},
	}
	for _, tt := range tests {
		got, ok := parseIgnoreLine(tt.line)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("parseIgnoreLine(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func TestGlobSkipsSymlinksAndSpecialFiles(t *testing.T) {
	root := writeTree(t, map[string]string{"real/a.go": ""})
	outside := writeTree(t, map[string]string{"secret.go": ""})
	if err := os.Symlink(filepath.Join(outside, "secret.go"), filepath.Join(root, "link.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, Config{Root: root})
	if got := globPaths(t, reg, `{"pattern":"*.go"}`); !cmp.Equal(got, []string{"real/a.go"}) {
		t.Errorf("paths = %v, want [real/a.go]", got)
	}
	res := call(t, reg, "glob", `{"pattern":"*.go","path":"linkdir"}`)
	if code(res) != "FS_SANDBOX_DENIED" || text(t, res) != `Error: cannot search "linkdir": the path leads outside the workspace` {
		t.Errorf("symlink escape: %s (%s)", text(t, res), code(res))
	}
}

func TestGlobErrors(t *testing.T) {
	root := writeTree(t, map[string]string{"f.txt": ""})
	reg := newRegistry(t, Config{Root: root})
	tests := []struct {
		args, text, code string
	}{
		{`{"pattern":"  "}`, "Error: pattern must be a non-empty string", ""},
		{`{"pattern":"*","path":" "}`, "Error: path must be a non-empty string when given", ""},
		{`{"pattern":"[a"}`, `Error: glob pattern rejected: "[a" is not a valid glob`, CodeInvalidPattern},
		{`{"pattern":"*","path":".."}`, `Error: cannot search "..": the path leads outside the workspace`, "FS_SANDBOX_DENIED"},
		{`{"pattern":"*","path":"/etc"}`, `Error: cannot search "/etc": the path leads outside the workspace`, "FS_SANDBOX_DENIED"},
		{`{"pattern":"*","path":"nope"}`, `Error: glob search failed: path "nope" does not exist`, CodeFailed},
		{`{"pattern":"*","path":"f.txt"}`, `Error: glob search failed: path "f.txt" is not a directory`, CodeFailed},
		{`{}`, `Error: invalid arguments: missing required property "pattern"`, tool.CodeInvalidArgs},
	}
	for _, tt := range tests {
		res := call(t, reg, "glob", tt.args)
		if !res.IsError || text(t, res) != tt.text || code(res) != tt.code {
			t.Errorf("glob %s = %q (%q), want %q (%q)", tt.args, text(t, res), code(res), tt.text, tt.code)
		}
		if res.Meta != nil {
			t.Errorf("glob %s: a failure has meta %v", tt.args, res.Meta)
		}
	}
}

// manyFiles returns a tree of n files per top-level directory, named so that their path
// order is their age order (the first is the newest).
func manyFiles(t *testing.T, dirs map[string]int) string {
	t.Helper()
	files := map[string]string{}
	for d, n := range dirs {
		for i := range n {
			files[fmt.Sprintf("%s/f%03d.txt", d, i)] = ""
		}
	}
	root := writeTree(t, files)
	for d, n := range dirs {
		for i := range n {
			touch(t, root, fmt.Sprintf("%s/f%03d.txt", d, i), baseTime.Add(-time.Duration(i)*time.Minute))
		}
	}
	return root
}

var spillRE = regexp.MustCompile(`stored at: (\S+)\. `)

func TestGlobOverCapHead(t *testing.T) {
	root := manyFiles(t, map[string]int{"a": 150})
	spill := t.TempDir()
	reg := newRegistry(t, Config{Root: root, SpillDir: spill, GlobHead: true})
	res := call(t, reg, "glob", `{"pattern":"*.txt"}`)
	got := text(t, res)
	var want []string
	for i := range 100 {
		want = append(want, fmt.Sprintf("a/f%03d.txt", i))
	}
	m := spillRE.FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no spill path in %q", got)
	}
	if filepath.Dir(m[1]) != spill {
		t.Errorf("spill file %s is not in %s", m[1], spill)
	}
	wantText := strings.Join(want, "\n") + "\n\n(Showing 100 of 150 paths. Full sorted result stored at: " + m[1] +
		". Use read with this absolute path and offset/limit; grep does not search it.)"
	if got != wantText {
		t.Errorf("text =\n%s\nwant\n%s", got, wantText)
	}
	data, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	var out GlobOutput
	if err := jsonv.Decode(res.Value, &out); err != nil || len(out.Paths) != 150 {
		t.Fatalf("value has %d paths (%v), want all 150", len(out.Paths), err)
	}
	if string(data) != strings.Join(out.Paths, "\n") {
		t.Errorf("spill file does not hold the complete list")
	}
	c := reg.Get("glob", nil).PresentResult(tool.ParseArguments(`{"pattern":"*.txt"}`), card.ToolResult{Content: res.Content, Meta: res.Meta})
	if c == nil || c.Card != card.Search || c.Shape != "paths" || !c.Truncated || c.Total != 150 || len(c.Paths) != 100 {
		t.Errorf("card = %+v", c)
	}
}

func TestGlobOverCapSampled(t *testing.T) {
	root := manyFiles(t, map[string]int{"a": 8, "b": 3, "c": 1})
	reg := newRegistry(t, Config{Root: root, GlobMaxResults: 6})
	res := call(t, reg, "glob", `{"pattern":"*.txt"}`)
	got := text(t, res)
	m := spillRE.FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no spill path in %q", got)
	}
	// Round robin over a, b, c (first-seen order of the newest-first list) until six.
	want := "a/f000.txt\na/f001.txt\na/f002.txt\nb/f000.txt\nb/f001.txt\nc/f000.txt\n\n" +
		"(Showing 6 of 12 paths, sampled across 3 of the 3 top-level entries this pattern matched instead of taken in modification-time order. " +
		"Full sorted result stored at: " + m[1] + ". Use read with this absolute path and offset/limit; grep does not search it.)"
	if got != want {
		t.Errorf("text =\n%s\nwant\n%s", got, want)
	}

	// Fewer slots than top-level entries: the footer says the sample is partial.
	reg2 := newRegistry(t, Config{Root: root, GlobMaxResults: 2})
	got2 := text(t, call(t, reg2, "glob", `{"pattern":"*.txt"}`))
	if !strings.Contains(got2, "(Showing 2 of 12 paths, sampled across 2 of the 3 top-level entries this pattern matched instead of taken in modification-time order. Narrow path to inspect a specific subtree. Full sorted result") {
		t.Errorf("text = %q", got2)
	}
}

func TestSampleTopLevel(t *testing.T) {
	tests := []struct {
		paths []string
		max   int
		root  string
		want  sample
	}{
		{[]string{"a", "b", "c"}, 2, ".", sample{items: []string{"a", "b"}, shown: 2, total: 3}},
		{[]string{"x/1", "y/1", "x/2", "x/3", "y/2"}, 3, ".", sample{items: []string{"x/1", "x/2", "y/1"}, shown: 2, total: 2}},
		{[]string{"s/x/1", "s/y/1", "s/x/2"}, 2, "s", sample{items: []string{"s/x/1", "s/y/1"}, shown: 2, total: 2}},
		{[]string{"s/x/1", "s/x/2", "s/x/3"}, 2, "s/", sample{items: []string{"s/x/1", "s/x/2"}, shown: 1, total: 1}},
	}
	for _, tt := range tests {
		got := sampleTopLevel(tt.paths, tt.max, tt.root)
		if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(sample{})); diff != "" {
			t.Errorf("sampleTopLevel(%v, %d, %q) (-want +got):\n%s", tt.paths, tt.max, tt.root, diff)
		}
	}
}

// TestNestedCallsDoNotSpill runs glob from inside another tool, as Code Mode does: the
// nested result keeps its inline page and reports that the complete list was not saved.
func TestNestedCallsDoNotSpill(t *testing.T) {
	root := manyFiles(t, map[string]int{"a": 5})
	spill := t.TempDir()
	reg := newRegistry(t, Config{Root: root, SpillDir: spill, GlobMaxResults: 2, GlobHead: true})
	type outerOut struct {
		Text string `json:"text"`
	}
	outer := tool.Must(tool.New("outer", "runs glob nested",
		func(ctx context.Context, c *tool.Call, _ struct{}) (outerOut, error) {
			res := reg.Execute(ctx, tool.Input{CallID: "sub-1", Name: "glob", Args: tool.ParseArguments(`{"pattern":"*"}`), Parent: c.Token()})
			if res.Meta != nil {
				return outerOut{}, fmt.Errorf("a nested call got meta %v", res.Meta)
			}
			return outerOut{Text: res.Content[0].Text}, nil
		}))
	if _, err := reg.Register(outer); err != nil {
		t.Fatal(err)
	}
	res := call(t, reg, "outer", `{}`)
	if res.IsError {
		t.Fatal(text(t, res))
	}
	var out outerOut
	if err := jsonv.Decode(res.Value, &out); err != nil {
		t.Fatal(err)
	}
	if want := "a/f000.txt\na/f001.txt\n\n(Showing 2 of 5 paths. The complete result could not be saved; narrow pattern or path to see more.)"; out.Text != want {
		t.Errorf("nested text = %q, want %q", out.Text, want)
	}
	if entries, _ := os.ReadDir(spill); len(entries) != 0 {
		t.Errorf("a nested call spilled %d files", len(entries))
	}
}

// TestSpillSkippedWhenContentReplaced: a post-execute policy that replaced the content wins.
func TestSpillSkippedWhenContentReplaced(t *testing.T) {
	root := manyFiles(t, map[string]int{"a": 5})
	spill := t.TempDir()
	reg := newRegistry(t, Config{Root: root, SpillDir: spill, GlobMaxResults: 2})
	reg.OnPostExecute(func(ctx context.Context, exec *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		d, err := next()
		d.ReplaceContent = true
		d.Content = content.Texts("replaced")
		return d, err
	})
	res := call(t, reg, "glob", `{"pattern":"*"}`)
	if got := text(t, res); got != "replaced" {
		t.Errorf("text = %q, want the policy's", got)
	}
	if entries, _ := os.ReadDir(spill); len(entries) != 0 {
		t.Errorf("spilled %d files although the content was replaced", len(entries))
	}
}

func TestGlobRawOutputOverflow(t *testing.T) {
	root := manyFiles(t, map[string]int{"a": 20})
	reg := newRegistry(t, Config{Root: root, RawOutputBytes: 100})
	res := call(t, reg, "glob", `{"pattern":"*"}`)
	if code(res) != CodeRawOutputOverflow || text(t, res) != "Error: glob matched more than 100 bytes of paths; narrow pattern or path and retry" {
		t.Errorf("got %q (%s)", text(t, res), code(res))
	}
}

func TestGlobAbortedMidSearch(t *testing.T) {
	set, err := Config{Root: manyFiles(t, map[string]int{"a": 3})}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	g := &globTool{set: set, walker: walker{root: set.root, honourIgnores: true, hidden: true}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = g.run(ctx, nil, GlobInput{Pattern: "*"})
	if info := tool.InfoOf(err); info == nil || info.Code != CodeAborted {
		t.Fatalf("err = %v, want %s", err, CodeAborted)
	}
	if err.Error() != "glob was aborted before completion (tool timeout or caller cancellation)" {
		t.Errorf("message = %q", err.Error())
	}
}

func TestGlobCallCard(t *testing.T) {
	reg := newRegistry(t, Config{Root: t.TempDir()})
	def := reg.Get("glob", nil)
	tests := []struct {
		args string
		want *card.Call
	}{
		{`{"pattern":"**/*.go"}`, &card.Call{Card: card.Generic, Title: "Glob **/*.go", Kind: card.KindSearch, RawInput: "**/*.go"}},
		{`{"pattern":"*.md","path":"docs"}`, &card.Call{Card: card.Generic, Title: "Glob *.md in docs", Kind: card.KindSearch, RawInput: "*.md"}},
		{`{"path":"docs"}`, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, def.PresentCall(tool.ParseArguments(tt.args))); diff != "" {
			t.Errorf("PresentCall(%s) (-want +got):\n%s", tt.args, diff)
		}
	}
}

// TestSymlinkedRoot: a workspace configured through a symbolic link accepts absolute paths
// spelled either way.
func TestSymlinkedRoot(t *testing.T) {
	real := writeTree(t, map[string]string{"sub/a.go": ""})
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, Config{Root: link})
	for _, p := range []string{filepath.Join(link, "sub"), filepath.Join(real, "sub"), "sub"} {
		if got := globPaths(t, reg, `{"pattern":"*.go","path":"`+p+`"}`); !cmp.Equal(got, []string{"sub/a.go"}) {
			t.Errorf("path %s: %v", p, got)
		}
	}
}
