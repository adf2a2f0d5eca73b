package rules_test

import (
	"fmt"
	"path"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/policy/internal/wildcard"
	"github.com/dsh-go/dsh/policy/rules"
)

// naiveSegs is an obviously correct (exponential) path-pattern matcher.
func naiveSegs(pat, segs []string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	if pat[0] == "**" {
		return naiveSegs(pat[1:], segs) || (len(segs) > 0 && naiveSegs(pat, segs[1:]))
	}
	return len(segs) > 0 && wildcard.Match(pat[0], segs[0]) && naiveSegs(pat[1:], segs[1:])
}

// TestPathPatternProperty checks path patterns against the naive matcher through Evaluate.
func TestPathPatternProperty(t *testing.T) {
	patSeg := rapid.SampledFrom([]string{"a", "b", "*", "**", "a*", "*b", ".env"})
	pathSeg := rapid.SampledFrom([]string{"a", "b", "ab", "ba", ".env", "x.env"})
	rapid.Check(t, func(t *rapid.T) {
		pat := rapid.SliceOfN(patSeg, 1, 5).Draw(t, "pattern")
		segs := rapid.SliceOfN(pathSeg, 0, 5).Draw(t, "path")
		pattern := strings.Join(pat, "/")
		r, err := rules.New(rules.Config{Deny: []string{"read(" + pattern + ")"}, Workspace: "/ws"})
		if err != nil {
			t.Fatal(err)
		}
		file := path.Join(segs...)
		got := r.Evaluate("read", js(t, fmt.Sprintf(`{"file_path":%q}`, file))).Kind == rules.Denied
		want := naiveSegs(pat, segs)
		if pat[0] == "**" {
			want = want || naiveSegs(pat, append([]string{"ws"}, segs...))
		}
		if got != want {
			t.Fatalf("read(%s) vs %q: denied %v, want %v", pattern, file, got, want)
		}
		// The same path given absolutely, or with a detour through "..", decides the same.
		abs := "/ws/" + file
		detour := "x/../" + file
		for _, p := range []string{abs, detour} {
			if again := r.Evaluate("read", js(t, fmt.Sprintf(`{"file_path":%q}`, p))).Kind == rules.Denied; again != got {
				t.Fatalf("read(%s): %q gives %v but %q gives %v", pattern, file, got, p, again)
			}
		}
	})
}

// TestCommandProperty checks the piece semantics on generated compound commands: a deny
// rule catches a denied piece anywhere, allow needs every piece allowed.
func TestCommandProperty(t *testing.T) {
	r, err := rules.New(rules.Config{
		Allow:     []string{"bash(ls*)", "bash(git status*)"},
		Deny:      []string{"bash(rm *)"},
		Workspace: "/ws",
	})
	if err != nil {
		t.Fatal(err)
	}
	simple := rapid.SampledFrom([]string{"ls", "ls -la", "git status", "git  status -s", "rm -rf x", "echo hi", "FOO=1 ls"})
	op := rapid.SampledFrom([]string{"; ", " && ", " || ", " | ", "\n", " & ", ";"})
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(t, "n")
		var b strings.Builder
		denied, allowed := false, true
		for i := range n {
			if i > 0 {
				b.WriteString(op.Draw(t, "op"))
			}
			c := simple.Draw(t, "cmd")
			switch rapid.IntRange(0, 3).Draw(t, "wrap") {
			case 1:
				c = "(" + c + ")"
			case 2:
				c = "echo $(" + c + ")"
				allowed = false // the echo piece is not allowed
			}
			b.WriteString(c)
			switch {
			case strings.HasPrefix(c, "rm") || strings.Contains(c, "(rm"):
				denied = true
			case strings.Contains(c, "echo hi"):
				allowed = false
			}
		}
		cmd := b.String()
		v := r.Evaluate("bash", js(t, fmt.Sprintf(`{"command":%q}`, cmd)))
		want := rules.NoOpinion
		switch {
		case denied:
			want = rules.Denied
		case allowed:
			want = rules.Allowed
		}
		if v.Kind != want {
			t.Fatalf("%q: %v (%s), want %v", cmd, v.Kind, v.Rule, want)
		}
	})
}

// TestWrappedCommandProperty builds commands by wrapping a simple command in random
// wrappers and shell contexts: a "bash(rm *)" deny rule catches rm however deep it is, and
// allow rules allow exactly the commands in which every program that runs is allowed.
func TestWrappedCommandProperty(t *testing.T) {
	r, err := rules.New(rules.Config{
		Allow:     []string{"bash(ls*)", "bash(git status*)", "bash(true)"},
		Deny:      []string{"bash(rm *)"},
		Workspace: "/ws",
	})
	if err != nil {
		t.Fatal(err)
	}
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	// Each wrapper keeps the command's meaning; contexts may add programs of their own
	// (echo is not allowed).
	wrappers := []func(string) string{
		func(c string) string { return "command " + c },
		func(c string) string { return "env A=1 " + c },
		func(c string) string { return "nohup " + c },
		func(c string) string { return "nice -n 5 " + c },
		func(c string) string { return "timeout 5 " + c },
		func(c string) string { return "sudo -u root " + c },
		func(c string) string { return "exec " + c },
		func(c string) string { return "time " + c },
	}
	contexts := []struct {
		wrap   func(string) string
		extra  bool // adds a program allow does not cover
		simple bool // the result is a simple command, which a wrapper may wrap
	}{
		{func(c string) string { return "( " + c + " )" }, false, false}, // "((" would be arithmetic
		{func(c string) string { return "{ " + c + "; }" }, false, false},
		{func(c string) string { return "bash -c " + quote(c) }, false, true},
		{func(c string) string { return "sh -ec " + quote(c) }, false, true},
		{func(c string) string { return "eval " + quote(c) }, false, true},
		{func(c string) string { return "if true; then " + c + "; fi" }, false, false},
		{func(c string) string { return "f() { " + c + "; }; f" }, true, false}, // f itself is a program
		{func(c string) string { return "echo $( " + c + " )" }, true, true},
		{func(c string) string { return "ls | " + c }, false, false},
		{func(c string) string { return c + " && git status" }, false, false},
		{func(c string) string { return "cat <( " + c + " )" }, true, true},
	}
	rapid.Check(t, func(t *rapid.T) {
		base := rapid.SampledFrom([]string{"rm f1", "rm -rf /", "/bin/rm f1", "ls -la", "git status", "true"}).Draw(t, "base")
		cmd := base
		extra, simple := false, true
		for range rapid.IntRange(0, 4).Draw(t, "layers") {
			if simple && rapid.Bool().Draw(t, "wrapper") {
				cmd = wrappers[rapid.IntRange(0, len(wrappers)-1).Draw(t, "w")](cmd)
				continue
			}
			ctx := contexts[rapid.IntRange(0, len(contexts)-1).Draw(t, "c")]
			cmd = ctx.wrap(cmd)
			extra, simple = extra || ctx.extra, ctx.simple
		}
		v := r.Evaluate("bash", js(t, fmt.Sprintf(`{"command":%q}`, cmd)))
		want := rules.NoOpinion
		switch {
		case strings.Contains(base, "rm"):
			want = rules.Denied
		case !extra:
			want = rules.Allowed
		}
		if v.Kind != want {
			t.Fatalf("%q: %v (%s), want %v", cmd, v.Kind, v.Rule, want)
		}
	})
}
