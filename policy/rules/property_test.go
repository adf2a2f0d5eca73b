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
