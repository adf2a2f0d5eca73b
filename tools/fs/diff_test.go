package fs

import (
	"strings"
	"testing"

	"github.com/dsh-go/dsh/card"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

func sp(s string) *string { return &s }

func TestHunkDiffs(t *testing.T) {
	lines := func(n int, change map[int]string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			if c, ok := change[i]; ok {
				b.WriteString(c)
			} else {
				b.WriteString("l" + strings.Repeat("I", i%5) + string(rune('a'+i%26)))
			}
			b.WriteByte('\n')
		}
		return b.String()
	}
	base := lines(30, nil)
	tests := []struct {
		name          string
		before, after string
		want          []card.FileDiff
	}{
		{"equal", "a\nb\n", "a\nb\n", nil},
		{"replace with context", "a\nb\nc\nOLD\nd\ne\nf\n", "a\nb\nc\nNEW\nd\ne\nf\n",
			[]card.FileDiff{{Path: "p", OldText: sp("a\nb\nc\nOLD\nd\ne\nf"), NewText: "a\nb\nc\nNEW\nd\ne\nf"}}},
		{"create from empty", "", "x\ny\n", []card.FileDiff{{Path: "p", OldText: nil, NewText: "x\ny"}}},
		{"delete all", "x\n", "", []card.FileDiff{{Path: "p", OldText: sp("x"), NewText: ""}}},
		{"insert at top", "a\nb\nc\nd\ne\n", "new\na\nb\nc\nd\ne\n",
			[]card.FileDiff{{Path: "p", OldText: sp("a\nb\nc"), NewText: "new\na\nb\nc"}}},
		{"final newline added", "a\nb", "a\nb\n", []card.FileDiff{{Path: "p", OldText: sp("a\nb"), NewText: "a\nb"}}},
		{"six apart share a hunk", base, lines(30, map[int]string{5: "X", 12: "Y"}), nil},
		{"seven apart split", base, lines(30, map[int]string{5: "X", 13: "Y"}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hunkDiffs("p", tt.before, tt.after)
			switch tt.name {
			case "six apart share a hunk":
				if len(got) != 1 {
					t.Fatalf("%d hunks, want 1", len(got))
				}
				if n := strings.Count(*got[0].OldText, "\n") + 1; n != 3+1+6+1+3 {
					t.Errorf("old side has %d lines, want 14", n)
				}
				return
			case "seven apart split":
				if len(got) != 2 {
					t.Fatalf("%d hunks, want 2", len(got))
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("hunks (-want +got):\n%s", diff)
			}
		})
	}
}

// lcs is the length of the longest common subsequence, by dynamic programming.
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

func TestDiffLinesProperties(t *testing.T) {
	line := rapid.SampledFrom([]string{"a\n", "b\n", "c\n", "d\n", "a", "\n"})
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.SliceOfN(line, 0, 40).Draw(t, "a")
		b := rapid.SliceOfN(line, 0, 40).Draw(t, "b")
		ops := diffLines(a, b)
		var gotA, gotB []string
		edits := 0
		for i, op := range ops {
			if len(op.lines) == 0 {
				t.Fatalf("empty run %d", i)
			}
			if i > 0 && ops[i-1].kind == op.kind {
				t.Fatalf("runs %d and %d have the same kind", i-1, i)
			}
			switch op.kind {
			case opEqual:
				gotA = append(gotA, op.lines...)
				gotB = append(gotB, op.lines...)
			case opDelete:
				gotA = append(gotA, op.lines...)
				edits += len(op.lines)
			case opInsert:
				gotB = append(gotB, op.lines...)
				edits += len(op.lines)
			}
		}
		if strings.Join(gotA, "") != strings.Join(a, "") || len(gotA) != len(a) {
			t.Fatalf("script does not rebuild a")
		}
		if strings.Join(gotB, "") != strings.Join(b, "") || len(gotB) != len(b) {
			t.Fatalf("script does not rebuild b")
		}
		if want := len(a) + len(b) - 2*lcs(a, b); edits != want {
			t.Fatalf("%d edits, the minimum is %d", edits, want)
		}
	})
}

func TestHunkDiffsProperties(t *testing.T) {
	line := rapid.SampledFrom([]string{"a", "b", "c", "d", ""})
	rapid.Check(t, func(t *rapid.T) {
		before := strings.Join(rapid.SliceOfN(line, 0, 30).Draw(t, "before"), "\n")
		after := strings.Join(rapid.SliceOfN(line, 0, 30).Draw(t, "after"), "\n")
		hunks := hunkDiffs("p", before, after)
		if (len(hunks) == 0) != (before == after) {
			t.Fatalf("%d hunks for before==after %v", len(hunks), before == after)
		}
		// Each side of a hunk is a run of whole lines of its text, and hunks are in order.
		bl, al := "\n"+before+"\n", "\n"+after+"\n"
		bAt, aAt := 0, 0
		for _, h := range hunks {
			if h.OldText != nil {
				i := strings.Index(bl[bAt:], "\n"+*h.OldText+"\n")
				if i < 0 {
					t.Fatalf("old side %q is not a run of lines of %q after %d", *h.OldText, before, bAt)
				}
				bAt += i + 1
			}
			i := strings.Index(al[aAt:], "\n"+h.NewText+"\n")
			if i < 0 && !(h.NewText == "" && after == "") {
				t.Fatalf("new side %q is not a run of lines of %q after %d", h.NewText, after, aAt)
			}
			if i >= 0 {
				aAt += i + 1
			}
		}
	})
}

// TestDiffFallback checks the replacement used when the edit distance is too large.
func TestDiffFallback(t *testing.T) {
	var a, b []string
	for i := range 3 * maxDiffEdits {
		a = append(a, "a"+string(rune('0'+i%10))+"\n")
		b = append(b, "b"+string(rune('0'+i%10))+"\n")
	}
	a = append([]string{"same\n"}, a...)
	b = append([]string{"same\n"}, b...)
	ops := diffLines(a, b)
	if len(ops) != 3 || ops[0].kind != opEqual || ops[1].kind != opDelete || ops[2].kind != opInsert {
		t.Fatalf("ops = %d runs", len(ops))
	}
	if len(ops[1].lines) != 3*maxDiffEdits || len(ops[2].lines) != 3*maxDiffEdits {
		t.Errorf("replacement sizes %d/%d", len(ops[1].lines), len(ops[2].lines))
	}
}
