package term

import "github.com/dsh-go/dsh/internal/linediff"

// OpKind is the kind of one line of a diff.
type OpKind = linediff.Kind

// Diff line kinds.
const (
	OpEqual  = linediff.Equal
	OpDelete = linediff.Delete
	OpInsert = linediff.Insert
)

// Op is one line of a line diff: kept, deleted from the old text or inserted by the new.
type Op = linediff.Op

// maxDiffCost bounds the work of Diff (edit distance times total lines); a change beyond it
// is shown as every old line deleted and every new line inserted.
const maxDiffCost = 4 << 20

// Diff returns a shortest line diff turning a into b (Myers' algorithm): applying the
// deletions and insertions to a yields b, and the equal lines are a longest common
// subsequence. Very large, very different inputs get the trivial diff instead.
func Diff(a, b []string) []Op {
	// Trim the common prefix and suffix: edits are usually local.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]Op, 0, len(a)+len(b)-pre-suf)
	for _, l := range a[:pre] {
		ops = append(ops, Op{Kind: OpEqual, Text: l})
	}
	midA, midB := a[pre:len(a)-suf], b[pre:len(b)-suf]
	mid, ok := linediff.Script(midA, midB, maxDiffCost/max(len(midA)+len(midB), 1))
	if !ok {
		mid = trivial(midA, midB)
	}
	ops = append(ops, mid...)
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, Op{Kind: OpEqual, Text: l})
	}
	return ops
}

func trivial(a, b []string) []Op {
	ops := make([]Op, 0, len(a)+len(b))
	for _, l := range a {
		ops = append(ops, Op{Kind: OpDelete, Text: l})
	}
	for _, l := range b {
		ops = append(ops, Op{Kind: OpInsert, Text: l})
	}
	return ops
}

// Hunks groups a diff into hunks: each change with up to context equal lines around it,
// changes closer than 2*context+1 lines sharing a hunk. A diff without changes has no hunk.
func Hunks(ops []Op, context int) [][]Op {
	var hunks [][]Op
	i := 0
	for i < len(ops) {
		// Find the next change.
		for i < len(ops) && ops[i].Kind == OpEqual {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(i-context, 0)
		// Extend while the gap of equal lines to the next change is small.
		end := i
		for end < len(ops) {
			for end < len(ops) && ops[end].Kind != OpEqual {
				end++
			}
			gap := end
			for gap < len(ops) && ops[gap].Kind == OpEqual {
				gap++
			}
			if gap == len(ops) || gap-end > 2*context {
				end = min(end+context, len(ops))
				break
			}
			end = gap
		}
		hunks = append(hunks, ops[start:end])
		i = end
	}
	return hunks
}
