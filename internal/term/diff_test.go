package term

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// lcs is the length of a longest common subsequence, by dynamic programming.
func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// sides rebuilds the old and new texts from a diff.
func sides(ops []Op) (a, b []string) {
	for _, op := range ops {
		if op.Kind != OpInsert {
			a = append(a, op.Text)
		}
		if op.Kind != OpDelete {
			b = append(b, op.Text)
		}
	}
	return a, b
}

// TestDiffProperties checks that Diff reproduces both sides and is minimal: its equal lines
// are a longest common subsequence.
func TestDiffProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		line := rapid.SampledFrom([]string{"a", "b", "c", "d", ""})
		a := rapid.SliceOfN(line, 0, 12).Draw(t, "a")
		b := rapid.SliceOfN(line, 0, 12).Draw(t, "b")
		ops := Diff(a, b)
		gotA, gotB := sides(ops)
		if !slices.Equal(gotA, a) || !slices.Equal(gotB, b) {
			t.Fatalf("Diff(%q, %q) = %v does not rebuild its inputs (%q, %q)", a, b, ops, gotA, gotB)
		}
		eq := 0
		for _, op := range ops {
			if op.Kind == OpEqual {
				eq++
			}
		}
		if want := lcs(a, b); eq != want {
			t.Fatalf("Diff(%q, %q) keeps %d lines, the LCS has %d", a, b, eq, want)
		}
		// Hunks cover every change exactly once, in order.
		var changes, inHunks []Op
		for _, op := range ops {
			if op.Kind != OpEqual {
				changes = append(changes, op)
			}
		}
		for _, h := range Hunks(ops, 1) {
			if len(h) == 0 {
				t.Fatal("empty hunk")
			}
			for _, op := range h {
				if op.Kind != OpEqual {
					inHunks = append(inHunks, op)
				}
			}
		}
		if !slices.Equal(changes, inHunks) {
			t.Fatalf("hunks of %v hold changes %v, want %v", ops, inHunks, changes)
		}
	})
}

func TestHunks(t *testing.T) {
	a := []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}
	b := []string{"1", "two", "3", "4", "5", "6", "7", "8", "nine", "10"}
	hunks := Hunks(Diff(a, b), 1)
	if len(hunks) != 2 {
		t.Fatalf("got %d hunks, want 2: %v", len(hunks), hunks)
	}
	if got := len(Hunks(Diff(a, b), 3)); got != 1 {
		t.Errorf("with context 3 the changes share a hunk, got %d", got)
	}
	if got := Hunks(Diff(a, a), 3); got != nil {
		t.Errorf("no change, got hunks %v", got)
	}
}

func TestDiffLargeFallsBack(t *testing.T) {
	a := make([]string, 3000)
	b := make([]string, 3000)
	for i := range a {
		a[i] = "a" + string(rune(i))
		b[i] = "b" + string(rune(i))
	}
	ops := Diff(a, b)
	gotA, gotB := sides(ops)
	if !slices.Equal(gotA, a) || !slices.Equal(gotB, b) {
		t.Fatal("the trivial diff must still rebuild both sides")
	}
}

func BenchmarkDiff(b *testing.B) {
	old := make([]string, 500)
	for i := range old {
		old[i] = "line " + string(rune('a'+i%26))
	}
	nw := slices.Clone(old)
	nw[100], nw[300] = "changed", "changed too"
	b.ReportAllocs()
	for b.Loop() {
		Diff(old, nw)
	}
}
