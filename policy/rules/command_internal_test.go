package rules

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// forms renders an analysis compactly: each piece as its unquoted text, marked "*" when it
// is an innermost program, ">" when it writes a file, "+" when arguments are appended at
// run time, with its program-directory-less form after "~"; then "?" and the reason when
// something is unresolvable.
func forms(a *analysis) []string {
	var out []string
	for _, p := range a.pieces {
		s := p.unquoted
		if p.base != "" {
			s += " ~" + p.base
		}
		if p.inner {
			s += " *"
		}
		if p.redirect {
			s += " >"
		}
		if p.open {
			s += " +"
		}
		out = append(out, s)
	}
	if a.unresolved != "" {
		out = append(out, "? "+a.unresolved)
	}
	return out
}

func TestAnalyseCommand(t *testing.T) {
	tests := []struct {
		cmd  string
		want []string
	}{
		{"git status", []string{"git status *"}},
		{"  git   status\t-s  ", []string{"git status -s *"}},
		{"ls && rm -rf build", []string{"ls *", "rm -rf build *"}},
		{"a; b || c | d & e", []string{"a *", "b *", "c *", "d *", "e *"}},
		{"a\nb", []string{"a *", "b *"}},
		{"echo 'a; rm x'", []string{"echo a; rm x *"}},
		{`git "push" origin`, []string{"git push origin *"}},
		{`\rm -rf x`, []string{"rm -rf x *"}},
		{`r\m -rf x`, []string{"rm -rf x *"}},
		{"echo $(rm -rf x) done", []string{"echo $(rm -rf x) done *", "rm -rf x *"}},
		{"echo \"a $(b \"c d\") e\" f; g", []string{`echo a $(b "c d") e f *`, "b c d *", "g *"}},
		{"echo `whoami`", []string{"echo `whoami` *", "whoami *"}},
		{"echo '$(not run)'", []string{"echo $(not run) *"}},
		{"cat <(rm x) >(tee y)", []string{"cat <(rm x) >(tee y) *", "rm x *", "tee y *"}},
		{"(cd x; make)", []string{"cd x *", "make *"}},
		{"FOO=1 BAR=x git push", []string{"git push *"}},
		{"X=$(rm a)", []string{"rm a *"}},
		{"if true; then rm x; fi", []string{"true *", "rm x *"}},
		{"for f in $(ls); do rm $f; done", []string{"ls *", "rm $f *"}},
		{"while read l; do echo $l; done < in", []string{"read l *", "echo $l *"}},
		{"case $x in a) rm a;; *) ls;; esac", []string{"rm a *", "ls *"}},
		{"f() { rm x; }; f", []string{"rm x *", "f *"}},
		{"! grep x", []string{"grep x *"}},
		{"{ rm x; }", []string{"rm x *"}},
		{"time rm x", []string{"rm x *"}},
		{"export A=$(rm b)", []string{"export A=$(rm b) *", "rm b *"}},
		{"[[ -f $(rm c) ]]", []string{"[[ -f $(rm c) ]] *", "rm c *"}},
		{"echo ${X:-$(rm d)}", []string{"echo ${X:-$(rm d)} *", "rm d *"}},
		{"echo hi > out.txt", []string{"echo hi > out.txt * >"}},
		{"echo hi >> log", []string{"echo hi >> log * >"}},
		{"go test ./... 2>&1 | tail", []string{"go test ./... 2>&1 *", "tail *"}},
		{"make >/dev/null 2>&1", []string{"make > /dev/null 2>&1 *"}},
		{"make &> build.log", []string{"make &> build.log * >"}},
		{"cat <in.txt", []string{"cat < in.txt *"}},
		{"(ls; pwd) > out", []string{"ls * >", "pwd * >"}},
		{"echo $(ls) > out", []string{"echo $(ls) > out * >", "ls *"}},
		{"> f", []string{"> f * >"}},
		{"a \\\nb", []string{"a b *"}},
		{"", nil},
		{"# only a comment", nil},
		// Program paths.
		{"/bin/rm f1", []string{"/bin/rm f1 ~rm f1 *"}},
		{"./rm f1", []string{"./rm f1 ~rm f1 *"}},
		// Wrappers.
		{"command rm f1", []string{"command rm f1", "rm f1 *"}},
		{"command -v rm", []string{"command -v rm *"}},
		{"builtin cd x", []string{"builtin cd x", "cd x *"}},
		{"exec -a name rm f1", []string{"exec -a name rm f1", "rm f1 *"}},
		{"env rm f1", []string{"env rm f1", "rm f1 *"}},
		{"env -i -u HOME A=1 --chdir /tmp /bin/rm f1", []string{"env -i -u HOME A=1 --chdir /tmp /bin/rm f1", "/bin/rm f1 ~rm f1 *"}},
		{"env -S 'rm -f' f1", []string{"env -S rm -f f1", "rm -f f1 *"}},
		{"env", []string{"env *"}},
		{"nohup rm f1 &", []string{"nohup rm f1", "rm f1 *"}},
		{"nice -n 5 rm f1", []string{"nice -n 5 rm f1", "rm f1 *"}},
		{"nice -10 rm f1", []string{"nice -10 rm f1", "rm f1 *"}},
		{"/usr/bin/time -f %e rm f1", []string{"/usr/bin/time -f %e rm f1 ~time -f %e rm f1", "rm f1 *"}},
		{"timeout -s KILL 5 rm f1", []string{"timeout -s KILL 5 rm f1", "rm f1 *"}},
		{"timeout --kill-after=1 5s rm f1", []string{"timeout --kill-after=1 5s rm f1", "rm f1 *"}},
		{"stdbuf -oL rm f1", []string{"stdbuf -oL rm f1", "rm f1 *"}},
		{"setsid -f rm f1", []string{"setsid -f rm f1", "rm f1 *"}},
		{"sudo -u root -E rm f1", []string{"sudo -u root -E rm f1", "rm f1 *"}},
		{"sudo -l", []string{"sudo -l *"}},
		{"nohup nice env sudo rm f1", []string{"nohup nice env sudo rm f1", "nice env sudo rm f1", "env sudo rm f1", "sudo rm f1", "rm f1 *"}},
		{"echo f1 | xargs rm", []string{"echo f1 *", "xargs rm", "rm * +"}},
		{"xargs -0 -n 1 -I{} rm {}", []string{"xargs -0 -n 1 -I{} rm {}", "rm {} * +"}},
		{"find . -name '*.o' -exec rm {} \\;", []string{"find . -name *.o -exec rm {} ; *", "rm {} *"}},
		{"find . -execdir sh -c 'rm x' \\; -ok ls +", []string{"find . -execdir sh -c rm x ; -ok ls + *", "sh -c rm x", "rm x *", "ls *"}},
		{"flock /tmp/l -c 'rm f1'", []string{"flock /tmp/l -c rm f1", "rm f1 *"}},
		{"watch -n 1 'ls; rm f1'", []string{"watch -n 1 ls; rm f1", "ls *", "rm f1 *"}},
		{"busybox rm f1", []string{"busybox rm f1", "rm f1 *"}},
		// Shell strings.
		{"bash -c 'rm f1'", []string{"bash -c rm f1", "rm f1 *"}},
		{"sh -ec 'cd x && rm f1' name", []string{"sh -ec cd x && rm f1 name", "cd x *", "rm f1 *"}},
		{"bash -o pipefail -c \"ls | wc -l\"", []string{"bash -o pipefail -c ls | wc -l", "ls *", "wc -l *"}},
		{`bash -c "sh -c 'rm f1'"`, []string{"bash -c sh -c 'rm f1'", "sh -c rm f1", "rm f1 *"}},
		{"eval \"rm f1\"", []string{"eval rm f1", "rm f1 *"}},
		{"eval rm '$(ls)'", []string{"eval rm $(ls)", "rm $(ls) *", "ls *"}},
		{"trap 'rm f1' EXIT", []string{"trap rm f1 EXIT", "rm f1 *"}},
		{"trap - EXIT", []string{"trap - EXIT *"}},
		{"bash --version", []string{"bash --version *"}},
		// Unresolvable.
		{"$(echo rm) f1", []string{"$(echo rm) f1", "echo rm *", "? the program $(echo rm) is computed at run time"}},
		{"`echo rm` f1", []string{"`echo rm` f1", "echo rm *", "? the program `echo rm` is computed at run time"}},
		{"$X f1", []string{"$X f1", "? the program $X is computed at run time"}},
		{"/bin/r? f1", []string{"/bin/r? f1", "? the program /bin/r? is computed at run time"}},
		{"{rm,x} f1", []string{"{rm,x} f1", "? the program {rm,x} is computed at run time"}},
		{"$'\\x72m' f1", []string{"\\x72m f1", "? the program $'\\x72m' is computed at run time"}},
		{"eval \"$CMD\"", []string{"eval $CMD", "? eval runs a string computed at run time"}},
		{"bash -c \"$CMD\"", []string{"bash -c $CMD", "? bash: its argument \"$CMD\" is computed at run time and may stand for any options or command"}},
		{"env $OPTS rm f1", []string{"env $OPTS rm f1", "? env: its argument $OPTS is computed at run time and may stand for any options or command"}},
		{"source ./x.sh", []string{"source ./x.sh", "? source: it runs the commands of a file"}},
		{". x.sh", []string{". x.sh", "? .: it runs the commands of a file"}},
		{"bash x.sh", []string{"bash x.sh", "? bash: it runs the script x.sh"}},
		{"echo rm f1 | sh", []string{"echo rm f1 *", "sh", "? sh: it runs commands from its standard input"}},
		{"sudo -s", []string{"sudo -s", "? sudo: without a command it starts a shell reading commands the rules cannot see"}},
		{"alias x=rm", []string{"alias x=rm", "? alias: it makes a name run a command the rules cannot follow"}},
		{"hash -p /bin/rm x", []string{"hash -p /bin/rm x", "? hash: it makes a name run a command the rules cannot follow"}},
		{"enable -f ./x.so rm", []string{"enable -f ./x.so rm", "? enable: it makes a name run a command the rules cannot follow"}},
		{"mapfile -C 'rm f1' -c 1 a", []string{"mapfile -C rm f1 -c 1 a", "? mapfile: it makes a name run a command the rules cannot follow"}},
		{"alias", []string{"alias *"}},
		{"hash -r", []string{"hash -r *"}},
		{"timeout --unknown-with-value 5 rm", []string{"timeout --unknown-with-value 5 rm", "rm *"}},
		{"nice -x rm f1", []string{"nice -x rm f1", "rm f1 *"}},
		{"echo 'unterminated", []string{"? it does not parse as a shell command (1:6: reached EOF without closing quote `'`)"}},
		{"rm f1; (", []string{"? it does not parse as a shell command (1:8: `(` must be followed by a statement list)"}},
	}
	for _, tt := range tests {
		got := forms(analyseCommand(tt.cmd))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("analyseCommand(%q) (-want +got):\n%s", tt.cmd, diff)
		}
	}
}

// TestNesting checks the bounds: shell strings nested deeper than maxShellDepth, or more
// than maxParses of them, make the command unresolvable instead of being followed.
func TestNesting(t *testing.T) {
	cmd := "rm f1"
	for range maxShellDepth {
		cmd = "eval " + shellQuote(cmd)
	}
	if a := analyseCommand(cmd); a.unresolved != "" || !strings.HasSuffix(forms(a)[len(forms(a))-1], "rm f1 *") {
		t.Fatalf("depth %d: %v", maxShellDepth, forms(a))
	}
	if a := analyseCommand("eval " + shellQuote(cmd)); !strings.Contains(a.unresolved, "nested more than 8 deep") {
		t.Fatalf("depth %d: %v", maxShellDepth+1, forms(a))
	}
	many := strings.Repeat("eval ls; ", maxParses+1)
	if a := analyseCommand(many); !strings.Contains(a.unresolved, "more than 64 shell strings") {
		t.Fatalf("%d evals: %v", maxParses, a.unresolved)
	}
	// Deep nesting is refused before the parser recurses into it (1,000,000 "$(" would
	// overflow the stack).
	for _, unit := range []string{"$(", "(", "{ ", "`", "${x:-"} {
		deep := "rm f1; " + strings.Repeat(unit, 500000)
		if a := analyseCommand(deep); !strings.Contains(a.unresolved, "more than 2048 of the characters") {
			t.Fatalf("%q × 500000: %v", unit, a.unresolved)
		}
	}
	if a := analyseCommand(strings.Repeat("(", maxOpeners) + "ls" + strings.Repeat(")", maxOpeners)); a.unresolved != "" || len(a.pieces) != 1 {
		t.Fatalf("%d nested subshells: %v", maxOpeners, forms(a))
	}
	wrap := strings.Repeat("nohup ", maxUnwrap) + "rm f1"
	if a := analyseCommand(wrap); !strings.Contains(a.unresolved, "more than 32 wrapper commands") {
		t.Fatalf("%d wrappers: %v", maxUnwrap, a.unresolved)
	}
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func TestNormalizeSpace(t *testing.T) {
	for in, want := range map[string]string{
		"  git   status  ":    "git status",
		"echo 'a   b'  c":     "echo 'a   b' c",
		"echo \"a \t b\"\tc":  "echo \"a \t b\" c",
		"echo \\'  a  'b  c'": "echo \\' a 'b  c'",
		"":                    "",
	} {
		if got := normalizeSpace(in); got != want {
			t.Errorf("normalizeSpace(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCommandCache checks the cache is bounded, returns the analysis it made, and is safe
// for concurrent use.
func TestCommandCache(t *testing.T) {
	cc := newCommandCache()
	first := cc.analyse("git status")
	if again := cc.analyse("git status"); again != first {
		t.Fatal("a cached command was analysed again")
	}
	for i := range 3 * cacheSize {
		cc.analyse("echo " + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i/26))
	}
	if len(cc.cur) > cacheSize || len(cc.prev) > cacheSize {
		t.Fatalf("cache holds %d + %d commands, want at most %d each", len(cc.cur), len(cc.prev), cacheSize)
	}
	long := "echo " + strings.Repeat("z", cacheMaxLen)
	cc.analyse(long)
	if _, ok := cc.cur[long]; ok {
		t.Fatal("a command longer than cacheMaxLen was cached")
	}
	done := make(chan []string)
	for g := range 4 {
		go func() {
			var out []string
			for i := range 200 {
				out = append(out, forms(cc.analyse("rm f"+string(rune('0'+(g+i)%10))))...)
			}
			done <- out
		}()
	}
	for range 4 {
		for _, f := range <-done {
			if !strings.HasPrefix(f, "rm f") {
				t.Errorf("form %q", f)
			}
		}
	}
}

// TestPlainProgramProperty checks the shortcut for plain commands against the parser: on
// commands made of plain words (with a few that matter: wrappers, reserved words,
// assignments), operators and redirections, both analyses are the same.
func TestPlainProgramProperty(t *testing.T) {
	token := rapid.OneOf(
		rapid.StringMatching(`[a-zA-Z0-9_./,:=@%+^-]{1,6}`),
		rapid.SampledFrom([]string{"rm", "/bin/rm", "env", "A=1", "A+=1", "1A=2", "nohup", "sudo", "-u", "timeout", "5", "xargs",
			"bash", "-c", "eval", "if", "then", "time", "export", "let", "for", "in", "do", "done", "declare", "function", "=", "-",
			"2", "1", "/dev/null", "f"}),
		rapid.SampledFrom([]string{";", "&", "|", "&&", "||", ";;", "|&", "&>", ">", ">>", "<", ">&", "<&", "2>&1", ">/dev/null",
			"<<", "<>", ">|", "2>", "&>>"}),
	)
	blank := rapid.SampledFrom([]string{"", " ", "  ", "\t", " \t "})
	plain, all := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		all++
		toks := rapid.SliceOfN(token, 0, 8).Draw(t, "tokens")
		var b strings.Builder
		for _, tok := range toks {
			b.WriteString(blank.Draw(t, "blank"))
			b.WriteString(tok)
		}
		b.WriteString(blank.Draw(t, "blank"))
		cmd := b.String()
		if _, ok := plainProgram(cmd); !ok {
			return
		}
		plain++
		fast := analyseCommand(cmd)
		slow := &analysis{}
		slow.parse(cmd, 0)
		if diff := cmp.Diff(forms(slow), forms(fast)); diff != "" {
			t.Fatalf("%q: parser (-) and shortcut (+) differ:\n%s", cmd, diff)
		}
	})
	if plain*5 < all {
		t.Fatalf("only %d of %d generated commands took the shortcut: the property says little", plain, all)
	}
}

// FuzzPlainProgram checks the shortcut against the parser on arbitrary text: whatever it
// accepts, it reads exactly as the parser does.
func FuzzPlainProgram(f *testing.F) {
	for _, s := range []string{"git status --short", "cd src && go test ./... 2>&1 | tail -20", "a 2>f", "a2>f", "A=1 b >/dev/null", "a; b & c || d", "a &&", "if x", "a >&2", "a>&f", "a <&0 <in"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		if _, ok := plainProgram(cmd); !ok {
			return
		}
		slow := &analysis{}
		slow.parse(cmd, 0)
		if diff := cmp.Diff(forms(slow), forms(analyseCommand(cmd))); diff != "" {
			t.Fatalf("%q: parser (-) and shortcut (+) differ:\n%s", cmd, diff)
		}
	})
}
