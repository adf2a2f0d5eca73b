package rules

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitCommand(t *testing.T) {
	type p = piece
	tests := []struct {
		cmd  string
		want []piece
	}{
		{"git status", []p{{"git status", "git status", false}}},
		{"  git   status\t-s  ", []p{{"git status -s", "git status -s", false}}},
		{"ls && rm -rf build", []p{{"ls", "ls", false}, {"rm -rf build", "rm -rf build", false}}},
		{"a; b || c | d & e", []p{{"a", "a", false}, {"b", "b", false}, {"c", "c", false}, {"d", "d", false}, {"e", "e", false}}},
		{"a\nb", []p{{"a", "a", false}, {"b", "b", false}}},
		{"echo 'a; rm x'", []p{{"echo 'a; rm x'", "echo a; rm x", false}}},
		{`echo "a  && b"`, []p{{`echo "a  && b"`, "echo a  && b", false}}},
		{`git "push" origin`, []p{{`git "push" origin`, "git push origin", false}}},
		{`\rm -rf x`, []p{{`\rm -rf x`, "rm -rf x", false}}},
		{"echo $(rm -rf x) done", []p{{"echo", "echo", false}, {"rm -rf x", "rm -rf x", false}, {"done", "done", false}}},
		{"echo \"$(rm -rf x)\"", []p{{"echo \"", "echo ", false}, {"rm -rf x", "rm -rf x", false}, {"\"", "", false}}},
		{"echo \"a $(b \"c d\") e\" f; g", []p{{"echo \"a ", "echo a ", false}, {"b \"c d\"", "b c d", false}, {" e\" f", " e f", false}, {"g", "g", false}}},
		{"echo `a` b `c`", []p{{"echo", "echo", false}, {"a", "a", false}, {"b", "b", false}, {"c", "c", false}}},
		{"echo `whoami`", []p{{"echo", "echo", false}, {"whoami", "whoami", false}}},
		{"echo '$(not run)'", []p{{"echo '$(not run)'", "echo $(not run)", false}}},
		{"(cd x; make)", []p{{"cd x", "cd x", false}, {"make", "make", false}}},
		{"FOO=1 BAR=x git push", []p{{"git push", "git push", false}}},
		{"if true; then rm x; fi", []p{{"true", "true", false}, {"rm x", "rm x", false}, {"fi", "fi", false}}},
		{"! grep x", []p{{"grep x", "grep x", false}}},
		{"{ rm x; }", []p{{"rm x", "rm x", false}}},
		{"echo hi > out.txt", []p{{"echo hi > out.txt", "echo hi > out.txt", true}}},
		{"echo hi >out.txt", []p{{"echo hi >out.txt", "echo hi >out.txt", true}}},
		{"echo hi >> log", []p{{"echo hi >> log", "echo hi >> log", true}}},
		{"go test ./... 2>&1 | tail", []p{{"go test ./... 2>&1", "go test ./... 2>&1", false}, {"tail", "tail", false}}},
		{"make >/dev/null 2>&1", []p{{"make >/dev/null 2>&1", "make >/dev/null 2>&1", false}}},
		{"make > /dev/null", []p{{"make > /dev/null", "make > /dev/null", false}}},
		{"make &> build.log", []p{{"make &> build.log", "make &> build.log", true}}},
		{"cat <in.txt", []p{{"cat <in.txt", "cat <in.txt", false}}},
		{"echo x >", []p{{"echo x >", "echo x >", true}}},
		{"a \\\nb", []p{{"a b", "a b", false}}},
		{"", nil},
		{" ; ;; & ", nil},
		{"echo 'unterminated", []p{{"echo 'unterminated", "echo unterminated", false}}},
	}
	for _, tt := range tests {
		got := splitCommand(tt.cmd)
		if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(piece{})); diff != "" {
			t.Errorf("splitCommand(%q) (-want +got):\n%s", tt.cmd, diff)
		}
	}
}

func TestNormalizeSpace(t *testing.T) {
	for in, want := range map[string]string{
		"  git   status  ":   "git status",
		"echo 'a   b'  c":    "echo 'a   b' c",
		"echo \"a \t b\"\tc": "echo \"a \t b\" c",
		"":                   "",
	} {
		if got := normalizeSpace(in); got != want {
			t.Errorf("normalizeSpace(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzSplitCommand checks the splitter on arbitrary input: it never panics, pieces are never
// empty, and a command with no shell syntax at all is one piece, its normalized self.
func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{"git status", "ls && rm -rf x", "echo \"$(a 'b')\" `c`", "FOO=1 x > y 2>&1 | z", "a \\\nb", "((", "))", "\"", "'", "$(", "`", "> ", "&>x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		pieces := splitCommand(cmd)
		for _, p := range pieces {
			if p.text == "" {
				t.Fatalf("%q: empty piece in %+v", cmd, pieces)
			}
		}
		if strings.ContainsAny(cmd, ";&|\n()`$'\"\\<>\t\r\v\f=!{}") {
			return
		}
		for _, w := range strings.Fields(cmd) {
			if isReserved([]byte(w)) {
				return
			}
		}
		want := normalizeSpace(cmd)
		if want == "" {
			if len(pieces) != 0 {
				t.Fatalf("%q: pieces %+v", cmd, pieces)
			}
			return
		}
		if len(pieces) != 1 || pieces[0].text != want || pieces[0].unquoted != want || pieces[0].redirect {
			t.Fatalf("%q: pieces %+v, want one %q", cmd, pieces, want)
		}
	})
}
