// Package linediff computes line diffs: the shortest edit script between two lists of
// lines, shared by the file tools' diff cards and the terminal's diff rendering.
package linediff

// Kind is the kind of one line of an edit script.
type Kind uint8

// Line kinds.
const (
	Equal Kind = iota
	Delete
	Insert
)

// Op is one line of an edit script: kept, deleted from the old text or inserted by the new.
type Op struct {
	Kind Kind
	Text string
}

// Script returns a shortest edit script turning a into b (Myers' O((N+M)D) algorithm):
// applying its deletions and insertions to a yields b, and its equal lines are a longest
// common subsequence. It reports false, and no script, when more than maxEdits edits are
// needed, so that callers can bound the work on large, very different inputs.
func Script(a, b []string, maxEdits int) ([]Op, bool) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		if n+m > maxEdits {
			return nil, false
		}
		script := make([]Op, 0, n+m)
		for _, l := range a {
			script = append(script, Op{Delete, l})
		}
		for _, l := range b {
			script = append(script, Op{Insert, l})
		}
		return script, true
	}
	// Compare interned ids instead of strings.
	ids := map[string]int{}
	intern := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	x, y := intern(a), intern(b)
	maxD := min(n+m, maxEdits)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	for d := 0; d <= maxD; d++ {
		// Save the frontier of step d-1 over the diagonals step d can come from.
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
		for k := -d; k <= d; k += 2 {
			var i int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				i = v[off+k+1] // down: an insertion
			} else {
				i = v[off+k-1] + 1 // right: a deletion
			}
			j := i - k
			for i < n && j < m && x[i] == y[j] {
				i++
				j++
			}
			v[off+k] = i
			if i >= n && j >= m {
				return backtrack(a, b, trace, d), true
			}
		}
	}
	return nil, false
}

// backtrack rebuilds the edit script from the saved frontiers.
func backtrack(a, b []string, trace [][]int, dEnd int) []Op {
	i, j := len(a), len(b)
	var rev []Op
	for d := dEnd; d > 0; d-- {
		t := trace[d] // t[k+d] is the frontier of step d-1 on diagonal k
		k := i - j
		var prevK int
		if k == -d || (k != d && t[k-1+d] < t[k+1+d]) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevI := t[prevK+d]
		prevJ := prevI - prevK
		for i > prevI && j > prevJ {
			i--
			j--
			rev = append(rev, Op{Equal, a[i]})
		}
		if prevK == k+1 {
			j--
			rev = append(rev, Op{Insert, b[j]})
		} else {
			i--
			rev = append(rev, Op{Delete, a[i]})
		}
		i, j = prevI, prevJ
	}
	for i > 0 && j > 0 {
		i--
		j--
		rev = append(rev, Op{Equal, a[i]})
	}
	for l, r := 0, len(rev)-1; l < r; l, r = l+1, r-1 {
		rev[l], rev[r] = rev[r], rev[l]
	}
	return rev
}
