package search

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"regexp/syntax"
)

const (
	initialBuf   = 128 << 10 // per-worker read buffer
	maxLineBuf   = 64 << 20  // a longer line is matched on its first maxLineBuf bytes only
	binaryWindow = 8 << 10   // a NUL byte in this prefix marks a file binary
)

// grepEngine matches a regular expression line by line.
//
// Testing every line separately costs a regexp call per line, so a chunk of lines is first
// searched as a whole by a prefilter (pre), and only the lines where pre finds a match are
// tested with the exact expression (re). pre is re in multi-line mode ("^" and "$" match at
// line boundaries) with every way of matching "\n" removed, so it matches within one line
// only (which keeps the scan linear) and matches wherever re matches a whole line. An
// expression that anchors at the start or end of the whole text (\A, \z, or multi-line mode
// turned off) gets no prefilter: every line is tested.
type grepEngine struct {
	re      *regexp.Regexp
	pre     *regexp.Regexp // nil: test every line with re
	maxLine int            // the read buffer's limit: a longer line is matched on its head
}

func compileGrep(pattern string) (*grepEngine, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	e := &grepEngine{re: re, maxLine: maxLineBuf}
	tree, err := syntax.Parse("(?m)"+pattern, syntax.Perl)
	if err == nil && !usesTextAnchors(tree) {
		if pre, err := regexp.Compile(withoutNewlines(tree).String()); err == nil {
			e.pre = pre
		}
	}
	return e, nil
}

// usesTextAnchors reports whether a multi-line expression still anchors at the start or
// end of the whole text.
func usesTextAnchors(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginText || re.Op == syntax.OpEndText {
		return true
	}
	for _, s := range re.Sub {
		if usesTextAnchors(s) {
			return true
		}
	}
	return false
}

// withoutNewlines rewrites re in place so that it cannot match "\n": "." never matches it,
// character classes lose it, and a literal containing it matches nothing.
func withoutNewlines(re *syntax.Regexp) *syntax.Regexp {
	switch re.Op {
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == '\n' {
				return &syntax.Regexp{Op: syntax.OpNoMatch}
			}
		}
	case syntax.OpCharClass:
		var out []rune
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if lo <= '\n' && '\n' <= hi {
				if lo < '\n' {
					out = append(out, lo, '\n'-1)
				}
				if hi > '\n' {
					out = append(out, '\n'+1, hi)
				}
				continue
			}
			out = append(out, lo, hi)
		}
		if len(out) == 0 {
			return &syntax.Regexp{Op: syntax.OpNoMatch}
		}
		re.Rune = out
	}
	for i, s := range re.Sub {
		re.Sub[i] = withoutNewlines(s)
	}
	return re
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
	for pos < len(chunk) {
		lineStart := pos
		if e.pre != nil {
			loc := e.pre.FindIndex(chunk[pos:])
			if loc == nil {
				break
			}
			start := pos + loc[0]
			lineStart = pos + bytes.LastIndexByte(chunk[pos:start], '\n') + 1
			if lineStart >= len(chunk) {
				break // an empty match after the final newline is not a line
			}
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
