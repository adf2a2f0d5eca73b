package search

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	initialBuf   = 128 << 10 // per-worker read buffer
	maxLineBuf   = 64 << 20  // a longer line is matched on its first maxLineBuf bytes only
	binaryWindow = 8 << 10   // a NUL byte in this prefix marks a file binary
)

// grepEngine matches a regular expression line by line.
//
// Calling the regexp on every line costs a call per line, and Go's regexp has no fast
// scanner for most expressions. So when every match must contain one of a few literal
// strings (foo in \bfoo\b, one of foo and bar in foo|bar), a chunk of lines is first
// scanned for those literals with bytes.Index, and only the lines holding one are matched.
// Otherwise every line is matched: Go's regexp runs faster on one short line (backtracking)
// than on a large buffer (NFA), so a whole-buffer regexp prefilter does not pay off (see
// BenchmarkEngine*).
type grepEngine struct {
	re       *regexp.Regexp
	literals []literal // every match contains one of them; nil when unknown
	maxLine  int       // the read buffer's limit: a longer line is matched on its head
}

// literal is a string every match may be required to contain, case-folded or exact.
type literal struct {
	text string
	fold bool // ASCII case-insensitive
}

// index returns the position of the first occurrence of l in s, or -1.
func (l literal) index(s []byte) int {
	if !l.fold {
		return bytes.Index(s, []byte(l.text))
	}
	return indexFold(s, l.text)
}

// indexFold finds lit in s ignoring ASCII case. It scans with bytes.IndexByte for the
// rarest byte of lit, in both cases, and compares around each hit; the next hit of each
// case is remembered, so every byte of s is scanned at most twice.
func indexFold(s []byte, lit string) int {
	a := rarestByte(lit)
	lo, up := lit[a]|0x20, lit[a]&^0x20
	if lo < 'a' || lo > 'z' {
		lo, up = lit[a], lit[a]
	}
	next := func(from int, c byte) int {
		if i := bytes.IndexByte(s[from:], c); i >= 0 {
			return from + i
		}
		return len(s)
	}
	nlo, nup := -1, -1
	for p := a; p < len(s); {
		if nlo < p {
			nlo = next(p, lo)
		}
		at := nlo
		if up != lo {
			if nup < p {
				nup = next(p, up)
			}
			at = min(at, nup)
		}
		start := at - a
		if at >= len(s) || start+len(lit) > len(s) {
			return -1
		}
		if bytes.EqualFold(s[start:start+len(lit)], []byte(lit)) {
			return start
		}
		p = at + 1
	}
	return -1
}

// letterRarity orders letters from common to rare in source code and prose.
const letterRarity = "etaoinsrlcdhupmfgybwvkxjqz"

// rarestByte returns the index of the byte of lit least likely to occur in text.
func rarestByte(lit string) int {
	best, bestRank := 0, -1
	for i := 0; i < len(lit); i++ {
		rank := strings.IndexByte(letterRarity, lit[i]|0x20)
		if c := lit[i] | 0x20; c < 'a' || c > 'z' {
			rank = strings.IndexByte(letterRarity, 'm') // digits and punctuation: middling
		}
		if rank > bestRank {
			best, bestRank = i, rank
		}
	}
	return best
}

// maxLiterals bounds the literal set worth scanning for.
const maxLiterals = 8

func compileGrep(pattern string) (*grepEngine, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	e := &grepEngine{re: re, maxLine: maxLineBuf}
	if tree, err := syntax.Parse(pattern, syntax.Perl); err == nil {
		e.literals = requiredLiterals(tree.Simplify())
	}
	return e, nil
}

// requiredLiterals returns strings one of which every match of re contains, or nil when it
// cannot tell. It errs on the side of nil: a wrong set would lose matches.
func requiredLiterals(re *syntax.Regexp) []literal {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return nil
		}
		if re.Flags&syntax.FoldCase == 0 {
			return []literal{{text: string(re.Rune)}}
		}
		if !asciiFoldable(re.Rune) {
			return nil
		}
		return []literal{{text: string(re.Rune), fold: true}}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0])
		}
	case syntax.OpConcat:
		// Every match contains a match of each part: the part with the best set will do.
		var best []literal
		for _, sub := range re.Sub {
			if l := requiredLiterals(sub); l != nil && (best == nil || betterLiterals(l, best)) {
				best = l
			}
		}
		return best
	case syntax.OpAlternate:
		var all []literal
		for _, sub := range re.Sub {
			l := requiredLiterals(sub)
			if l == nil {
				return nil
			}
			all = append(all, l...)
		}
		if len(all) > maxLiterals {
			return nil
		}
		return all
	}
	return nil
}

// asciiFoldable reports whether every rune is ASCII and case-folds only to ASCII: not k or
// s, which fold to the Kelvin sign and the long s too.
func asciiFoldable(rs []rune) bool {
	for _, r := range rs {
		if r >= utf8.RuneSelf {
			return false
		}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f >= utf8.RuneSelf {
				return false
			}
		}
	}
	return true
}

// betterLiterals prefers fewer literals, then a longer shortest one.
func betterLiterals(a, b []literal) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return shortest(a) > shortest(b)
}

func shortest(ls []literal) int {
	n := -1
	for _, l := range ls {
		if n < 0 || len(l.text) < n {
			n = len(l.text)
		}
	}
	return n
}

// scan calls emit with the 1-based number and the content (without "\n") of every
// matching line of r. It reports binary (and emits nothing) when the first 8 KiB hold a NUL
// byte. *buf is the reusable read buffer; it grows for long lines.
func (e *grepEngine) scan(r io.Reader, buf *[]byte, emit func(n int, line []byte) error) (binary bool, err error) {
	b := *buf
	defer func() { *buf = b }()
	filled := 0
	lineNo := 1
	first := true
	eof := false
	skipping := false // discarding the rest of an overlong line
	for {
		for !eof && filled < len(b) {
			n, err := r.Read(b[filled:])
			filled += n
			if errors.Is(err, io.EOF) {
				eof = true
			} else if err != nil {
				return false, err
			} else if n == 0 {
				return false, io.ErrNoProgress
			}
		}
		if first {
			first = false
			if bytes.IndexByte(b[:min(filled, binaryWindow)], 0) >= 0 {
				return true, nil
			}
		}
		data := b[:filled]
		if skipping {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				filled = 0
				if eof {
					return false, nil
				}
				continue
			}
			skipping = false
			lineNo++
			filled = copy(b, data[i+1:])
			continue
		}
		var chunk []byte
		switch last := bytes.LastIndexByte(data, '\n'); {
		case eof:
			chunk = data
		case last >= 0:
			chunk = data[:last+1]
		case len(b) < e.maxLine:
			nb := make([]byte, min(2*len(b), e.maxLine))
			copy(nb, data)
			b = nb
			continue
		default:
			// A line longer than the largest buffer: match its head, drop the rest.
			chunk = data
			skipping = true
		}
		if lineNo, err = e.scanChunk(chunk, lineNo, emit); err != nil {
			return false, err
		}
		if eof {
			return false, nil
		}
		filled = copy(b, data[len(chunk):])
	}
}

// scanChunk matches the lines of chunk (whole lines, the last possibly unterminated),
// numbering them from lineNo, and returns the number of the line after it.
func (e *grepEngine) scanChunk(chunk []byte, lineNo int, emit func(n int, line []byte) error) (int, error) {
	pos, counted := 0, 0
	// next[i] is the next position of literal i at or after the position it was searched
	// from, len(chunk) when there is none; -1 until searched.
	var next []int
	if len(e.literals) > 0 {
		next = make([]int, len(e.literals))
		for i := range next {
			next[i] = -1
		}
	}
	for pos < len(chunk) {
		lineStart := pos
		if next != nil {
			start := len(chunk)
			for i, lit := range e.literals {
				if next[i] < pos {
					if j := lit.index(chunk[pos:]); j >= 0 {
						next[i] = pos + j
					} else {
						next[i] = len(chunk)
					}
				}
				start = min(start, next[i])
			}
			if start >= len(chunk) {
				break
			}
			lineStart = pos + bytes.LastIndexByte(chunk[pos:start], '\n') + 1
		}
		lineEnd := len(chunk)
		if i := bytes.IndexByte(chunk[lineStart:], '\n'); i >= 0 {
			lineEnd = lineStart + i
		}
		lineNo += bytes.Count(chunk[counted:lineStart], newline)
		counted = lineStart
		if line := chunk[lineStart:lineEnd]; e.re.Match(line) {
			if err := emit(lineNo, line); err != nil {
				return lineNo, err
			}
		}
		pos = lineEnd + 1
	}
	if counted < len(chunk) {
		lineNo += bytes.Count(chunk[counted:], newline)
	}
	return lineNo, nil
}

var newline = []byte{'\n'}
