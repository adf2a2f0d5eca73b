package linediff

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// lcs is the length of a longest common subsequence, by dynamic programming.
func lcs(a, b []string) int {
	prev := make([]int, len(b)+1)
	for i := range a {
		cur := make([]int, len(b)+1)
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev = cur
	}
	return prev[len(b)]
}

// TestScriptProperties checks that a script rebuilds both inputs and keeps a longest common
// subsequence, and that the edit bound is honoured.
func TestScriptProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		line := rapid.SampledFrom([]string{"a", "b", "c", "d", ""})
		a := rapid.SliceOfN(line, 0, 12).Draw(t, "a")
		b := rapid.SliceOfN(line, 0, 12).Draw(t, "b")
		ops, ok := Script(a, b, len(a)+len(b))
		if !ok {
			t.Fatalf("Script(%q, %q) gave up within its full bound", a, b)
		}
		var gotA, gotB []string
		eq, edits := 0, 0
		for _, op := range ops {
			switch op.Kind {
			case Equal:
				gotA, gotB = append(gotA, op.Text), append(gotB, op.Text)
				eq++
			case Delete:
				gotA = append(gotA, op.Text)
				edits++
			case Insert:
				gotB = append(gotB, op.Text)
				edits++
			}
		}
		if !slices.Equal(gotA, a) || !slices.Equal(gotB, b) {
			t.Fatalf("Script(%q, %q) = %v does not rebuild its inputs", a, b, ops)
		}
		if want := lcs(a, b); eq != want {
			t.Fatalf("Script(%q, %q) keeps %d lines, the LCS has %d", a, b, eq, want)
		}
		if edits > 0 {
			if _, ok := Script(a, b, edits-1); ok {
				t.Fatalf("Script(%q, %q) succeeded with a bound below its %d edits", a, b, edits)
			}
		}
	})
}

func TestScriptEmpty(t *testing.T) {
	ops, ok := Script(nil, []string{"x"}, 0)
	if ok {
		t.Fatalf("one insertion within a bound of 0: %v", ops)
	}
	ops, ok = Script(nil, []string{"x"}, 1)
	if !ok || len(ops) != 1 || ops[0] != (Op{Insert, "x"}) {
		t.Fatalf("ops = %v, %v", ops, ok)
	}
}
