package term

// OpKind is the kind of one line of a diff.
type OpKind uint8

// Diff line kinds.
const (
	OpEqual OpKind = iota
	OpDelete
	OpInsert
)

// Op is one line of a line diff: kept, deleted from the old text or inserted by the new.
type Op struct {
	Kind OpKind
	Text string
}

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
		ops = append(ops, Op{OpEqual, l})
	}
	ops = append(ops, myers(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, Op{OpEqual, l})
	}
	return ops
}

// myers computes the middle part of Diff.
func myers(a, b []string) []Op {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return trivial(a, b)
	}
	max := n + m
	off := max
	v := make([]int, 2*max+2)
	var trace [][]int
	found := false
	for d := 0; d <= max && !found; d++ {
		if d*(n+m) > maxDiffCost {
			return trivial(a, b)
		}
		snap := make([]int, len(v))
		copy(snap, v)
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = true
				break
			}
		}
	}
	// Walk back through the snapshots (trace[d] holds v before round d).
	var rev []Op
	x, y := n, m
	for d := len(trace) - 1; d >= 0; d-- {
		v := trace[d]
		k := x - y
		var prevK int
		if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := v[off+prevK]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			rev = append(rev, Op{OpEqual, a[x-1]})
			x--
			y--
		}
		if d == 0 {
			break
		}
		if x == prevX {
			rev = append(rev, Op{OpInsert, b[y-1]})
		} else {
			rev = append(rev, Op{OpDelete, a[x-1]})
		}
		x, y = prevX, prevY
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

func trivial(a, b []string) []Op {
	ops := make([]Op, 0, len(a)+len(b))
	for _, l := range a {
		ops = append(ops, Op{OpDelete, l})
	}
	for _, l := range b {
		ops = append(ops, Op{OpInsert, l})
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
