package term

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func ptr[T any](v T) *T { return &v }

func obj(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonv.ParseString(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCallCards(t *testing.T) {
	tests := []struct {
		name, tool string
		card       card.Call
	}{
		{"call_read", "read", card.Call{Card: card.Generic, Title: "Read src/main.go (1 - 2000)", Kind: card.KindRead,
			Locations: []card.FileLocation{{Path: "src/main.go", Line: 1}}}},
		{"call_generic_raw", "glob", card.Call{Card: card.Generic, Title: "glob", Kind: card.KindOther,
			RawInput: obj(t, `{"pattern":"**/*.go","path":"src"}`)}},
		{"call_terminal", "bash", card.Call{Card: card.Terminal, Title: "go test ./...", Description: "Run the tests", Cwd: "pkg"}},
		{"call_terminal_multiline", "bash", card.Call{Card: card.Terminal, Title: "set -e\nmake\nmake install"}},
		{"call_run_code", "run_code", card.Call{Card: card.Generic, Title: "Read both files in parallel", Kind: card.KindExecute,
			RawInput: "const [a, b] = await Promise.all([\n  tools.read({file_path: \"a\"}),\n  tools.read({file_path: \"b\"}),\n]);\nreturn a.totalLines + b.totalLines;"}},
		{"call_execute_oneline", "run_code", card.Call{Card: card.Generic, Title: "Count", Kind: card.KindExecute, RawInput: "return 1 + 1;"}},
		{"call_diff", "edit", card.Call{Card: card.Diff, Title: "Edit main.go", Diffs: []card.FileDiff{{Path: "main.go", OldText: ptr("a"), NewText: "b"}}}},
		{"call_background", "bash", card.Call{Card: card.Generic, Title: "sleep 100", Kind: card.KindExecute, RawInput: "sleep 100",
			Content: content.Texts("wait in the background")}},
		{"call_hostile", "evil\x1b[2J", card.Call{Card: card.Generic, Title: "\x1b]0;pwned\x07title\rover", RawInput: obj(t, `{"x":"\u001b[31mred"}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, tt.name, Renderer{}.Call(tt.tool, tt.card))
		})
	}
}

func TestResultCards(t *testing.T) {
	long := make([]string, 30)
	for i := range long {
		long[i] = "line " + string(rune('a'+i%26))
	}
	tests := []struct {
		name, tool string
		card       card.Result
		isError    bool
	}{
		{"result_read", "read", card.Result{Card: card.Read, Path: "/ws/src/main.go", Offset: 1, TotalLines: 3, Lang: "go",
			Lines: []card.ReadLine{{Number: 1, Text: "package main"}, {Number: 2, Text: ""}, {Number: 3, Text: "func main() {}"}}}, false},
		{"result_read_capped", "read", card.Result{Card: card.Read, Path: "/ws/big.txt", Offset: 8, TotalLines: 100,
			Lines: func() []card.ReadLine {
				var ls []card.ReadLine
				for i := 8; i < 40; i++ {
					ls = append(ls, card.ReadLine{Number: i, Text: "x"})
				}
				return ls
			}()}, false},
		{"result_diff_edit", "edit", card.Result{Card: card.Diff, Title: "Edit main.go", Diffs: []card.FileDiff{{Path: "main.go",
			OldText: ptr("package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n"),
			NewText: "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n"}}}, false},
		{"result_diff_create", "write", card.Result{Card: card.Diff, Title: "Write notes.md", Diffs: []card.FileDiff{{Path: "notes.md",
			NewText: "# Notes\n\n- one\n"}}}, false},
		{"result_terminal_ok", "bash", card.Result{Card: card.Terminal, Output: "ok  \tdemo\t0.01s\n", ExitCode: ptr(0)}, false},
		{"result_terminal_fail", "bash", card.Result{Card: card.Terminal, Output: strings.Join(long, "\n"), ExitCode: ptr(2)}, false},
		{"result_terminal_signal", "bash", card.Result{Card: card.Terminal, Output: "[timed out after 300ms]", Signal: "SIGTERM"}, false},
		{"result_search_paths", "glob", card.Result{Card: card.Search, Shape: "paths", Paths: []string{"a.go", "b/c.go"}, Total: 2}, false},
		{"result_search_matches", "grep", card.Result{Card: card.Search, Shape: "matches", Truncated: true, Total: 300,
			Files: []card.SearchFile{{Path: "a.go", Matches: []card.SearchMatch{{LineNumber: 3, Line: "func A() {"}, {LineNumber: 9, Line: "func AA() {"}}}, {Path: "b.go", Matches: []card.SearchMatch{{LineNumber: 1, Line: "func B()"}}}}}, false},
		{"result_web_fetch", "web_fetch", card.Result{Card: card.Web, WebKind: "fetch", URL: "https://example.com", StatusCode: 200}, false},
		{"result_generic", "job_list", card.Result{Card: card.Generic, Title: "job_list", Content: content.Texts("no jobs\n")}, false},
		{"result_error", "bash", card.Result{Card: card.Generic, Title: "bash", Content: content.Texts(`Error: tool "bash" is denied by permission rule "bash(rm -rf *)"`)}, true},
		{"result_hostile", "read", card.Result{Card: card.Generic, Content: content.Texts("ok\x1b[2J\x1b]52;c;ZXZpbA==\x07\r\nnext\x9b1m\xff")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, tt.name, Renderer{}.Result(tt.tool, tt.card, tt.isError))
		})
	}
}

func TestColorAndWidth(t *testing.T) {
	r := Renderer{Color: true, Width: 24}
	got := r.Result("bash", card.Result{Card: card.Generic, Content: content.Texts("Error: a rather long message that is cut")}, true)
	want := "\x1b[31m✗\x1b[0m bash\n  \x1b[31mError: a rather long …\x1b[0m\n"
	if got != want {
		t.Errorf("coloured, clipped error card:\n got %q\nwant %q", got, want)
	}
	if got := (Renderer{}).Red("x"); got != "x" {
		t.Errorf("plain Red = %q, want no escapes", got)
	}
}

func TestMaxLines(t *testing.T) {
	text := "1\n2\n3\n4\n5\n"
	for _, tt := range []struct {
		max  int
		want string
	}{
		{2, "✓ x\n  1\n  2\n  … 3 more lines\n"},
		{-1, "✓ x\n  1\n  2\n  3\n  4\n  5\n"},
		{4, "✓ x\n  1\n  2\n  3\n  4\n  … 1 more line\n"},
	} {
		got := Renderer{MaxLines: tt.max}.Result("x", card.Result{Card: card.Generic, Content: content.Texts(text)}, false)
		if got != tt.want {
			t.Errorf("MaxLines %d:\n got %q\nwant %q", tt.max, got, tt.want)
		}
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\n":   "plain\ttext\n",
		"a\x1b[31mb":      "a^[[31mb",
		"crlf\r\nline":    "crlf\nline",
		"lone\rcr":        "lone^Mcr",
		"bell\x07del\x7f": "bell^Gdel^?",
		"c1\u009b2J":      "c1\\u009b2J",
		"bad\xffutf8":     "bad\ufffdutf8",
		"ünïcödé ok":      "ünïcödé ok",
		"\x00":            "^@",
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestColorEnabled(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ColorEnabled(f, env(nil)) {
		t.Error("a regular file is not a terminal")
	}
	if ColorEnabled(&strings.Builder{}, env(nil)) {
		t.Error("a buffer is not a terminal")
	}
	if Width(&strings.Builder{}, env(map[string]string{"COLUMNS": "77"})) != 77 {
		t.Error("COLUMNS sets the width")
	}
	if Width(f, env(map[string]string{"COLUMNS": "x"})) != 0 {
		t.Error("a file has no width")
	}
	if r := For(f, env(map[string]string{"NO_COLOR": "1"})); r.Color || r.Width != 0 {
		t.Errorf("For(file) = %+v, want plain", r)
	}
}
