package fs

import (
	"strings"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/internal/linediff"
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
	if script, ok := linediff.Script(midA, midB, maxDiffEdits); ok {
		// Group each change's deletions before its insertions.
		for i := 0; i < len(script); {
			if script[i].Kind == linediff.Equal {
				push(opEqual, []string{script[i].Text})
				i++
				continue
			}
			var del, ins []string
			for ; i < len(script) && script[i].Kind != linediff.Equal; i++ {
				if script[i].Kind == linediff.Delete {
					del = append(del, script[i].Text)
				} else {
					ins = append(ins, script[i].Text)
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
