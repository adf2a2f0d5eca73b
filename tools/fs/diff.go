package fs

import (
	"strings"

	"github.com/dsh-go/dsh/card"
)

// diffContext is how many unchanged lines surround each hunk of a write or edit diff.
const diffContext = 3

// maxDiffEdits bounds the edit distance the line diff searches for; beyond it the changed
// middle of the texts is shown as one replacement, which is correct if not minimal.
const maxDiffEdits = 1000

// hunkDiffs returns one diff per changed region between before and after, each with up to
// three lines of context on either side, in file order; nil when the texts are equal. Nearby
// changes (at most six unchanged lines apart) share a hunk. A hunk without old lines (the
// old text was empty) has a nil OldText. Every diff carries path, the file_path as given.
func hunkDiffs(path, before, after string) []card.FileDiff {
	if before == after {
		return nil
	}
	ops := diffLines(splitLines(before), splitLines(after))
	var diffs []card.FileDiff
	var oldSide, newSide []string
	open := false
	emit := func() {
		var old *string
		if len(oldSide) > 0 {
			s := strings.Join(oldSide, "\n")
			old = &s
		}
		diffs = append(diffs, card.FileDiff{Path: path, OldText: old, NewText: strings.Join(newSide, "\n")})
		oldSide, newSide, open = nil, nil, false
	}
	context := func(lines []string) {
		for _, l := range lines {
			l = strings.TrimSuffix(l, "\n")
			oldSide = append(oldSide, l)
			newSide = append(newSide, l)
		}
	}
	for i, op := range ops {
		switch op.kind {
		case opDelete, opInsert:
			if !open {
				open = true
				if i > 0 {
					prev := ops[i-1].lines
					context(prev[max(0, len(prev)-diffContext):])
				}
			}
			for _, l := range op.lines {
				l = strings.TrimSuffix(l, "\n")
				if op.kind == opDelete {
					oldSide = append(oldSide, l)
				} else {
					newSide = append(newSide, l)
				}
			}
		case opEqual:
			if !open {
				continue
			}
			if len(op.lines) <= 2*diffContext && i < len(ops)-1 {
				context(op.lines)
				continue
			}
			context(op.lines[:min(len(op.lines), diffContext)])
			emit()
		}
	}
	if open {
		emit()
	}
	return diffs
}

// splitLines splits s into lines that keep their "\n"; the last line may lack one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

type opKind byte

const (
	opEqual opKind = iota
	opDelete
	opInsert
)

// diffOp is a run of lines that are equal, deleted from a or inserted from b.
type diffOp struct {
	kind  opKind
	lines []string
}

// diffLines returns a line edit script from a to b: runs in order, deletions before
// insertions within a change. The common prefix and suffix are matched first; the middle
// uses Myers' O((N+M)D) algorithm, or one replacement when D exceeds maxDiffEdits.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []diffOp
	push := func(k opKind, lines []string) {
		if len(lines) == 0 {
			return
		}
		if n := len(ops); n > 0 && ops[n-1].kind == k {
			ops[n-1].lines = append(ops[n-1].lines, lines...)
			return
		}
		ops = append(ops, diffOp{kind: k, lines: append([]string(nil), lines...)})
	}
	push(opEqual, a[:pre])
	midA, midB := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if script, ok := myers(midA, midB); ok {
		// Group each change's deletions before its insertions.
		for i := 0; i < len(script); {
			if script[i].kind == opEqual {
				push(opEqual, []string{script[i].line})
				i++
				continue
			}
			var del, ins []string
			for ; i < len(script) && script[i].kind != opEqual; i++ {
				if script[i].kind == opDelete {
					del = append(del, script[i].line)
				} else {
					ins = append(ins, script[i].line)
				}
			}
			push(opDelete, del)
			push(opInsert, ins)
		}
	} else {
		push(opDelete, midA)
		push(opInsert, midB)
	}
	push(opEqual, a[len(a)-suf:])
	return ops
}

type lineOp struct {
	kind opKind
	line string
}

// myers returns a shortest edit script from a to b, or false when it needs more than
// maxDiffEdits edits.
func myers(a, b []string) ([]lineOp, bool) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		script := make([]lineOp, 0, n+m)
		for _, l := range a {
			script = append(script, lineOp{opDelete, l})
		}
		for _, l := range b {
			script = append(script, lineOp{opInsert, l})
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
	maxD := min(n+m, maxDiffEdits)
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
func backtrack(a, b []string, trace [][]int, dEnd int) []lineOp {
	i, j := len(a), len(b)
	var rev []lineOp
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
			rev = append(rev, lineOp{opEqual, a[i]})
		}
		if prevK == k+1 {
			j--
			rev = append(rev, lineOp{opInsert, b[j]})
		} else {
			i--
			rev = append(rev, lineOp{opDelete, a[i]})
		}
		i, j = prevI, prevJ
	}
	for i > 0 && j > 0 {
		i--
		j--
		rev = append(rev, lineOp{opEqual, a[i]})
	}
	for l, r := 0, len(rev)-1; l < r; l, r = l+1, r-1 {
		rev[l], rev[r] = rev[r], rev[l]
	}
	return rev
}
