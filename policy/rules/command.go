package rules

import (
	"strings"
)

// piece is one simple command of a shell command line.
type piece struct {
	text     string // white space normalized, quotes kept
	unquoted string // the same with quotes and backslash escapes removed
	redirect bool   // writes output to a file (an unquoted ">" not aimed at /dev/null)
}

// isReserved reports whether a word is dropped from the front of a piece: reserved words do
// not name the command that runs.
func isReserved(w []byte) bool {
	switch string(w) { // no allocation: the conversion is only compared
	case "{", "}", "!", "if", "then", "else", "elif", "do", "while", "until", "time":
		return true
	}
	return false
}

// isBlank reports whether c separates words (a newline separates commands instead).
func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

// splitCommand splits a shell command line into its simple commands (see the package
// documentation). It is a lexical approximation of POSIX shell syntax that errs towards
// more, smaller pieces. Every character it treats specially is ASCII, so it scans bytes: a
// byte of a multi-byte UTF-8 character never equals one of them.
func splitCommand(cmd string) []piece {
	var sc scanner
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		var next byte
		if i+1 < len(cmd) {
			next = cmd[i+1]
		}
		switch {
		case sc.single:
			sc.begin()
			if c == '\'' {
				sc.single = false
			} else {
				sc.bare = append(sc.bare, c)
			}
			sc.raw = append(sc.raw, c)
		case c == '\\':
			if next == '\n' { // a line continuation joins the lines
				i++
				continue
			}
			sc.begin()
			sc.raw = append(sc.raw, c)
			if i+1 < len(cmd) {
				i++
				sc.raw = append(sc.raw, next)
				sc.bare = append(sc.bare, next)
			}
		case c == '`' || (c == '$' && next == '('):
			// Command substitution: its contents are commands of their own, in or out of
			// double quotes, with quoting of their own.
			sc.endPiece()
			switch {
			case c == '$':
				i++
				sc.nest = append(sc.nest, frame{'(', sc.double})
				sc.double = false
			case len(sc.nest) > 0 && sc.nest[len(sc.nest)-1].open == '`':
				sc.double = sc.nest[len(sc.nest)-1].double
				sc.nest = sc.nest[:len(sc.nest)-1]
			default:
				sc.nest = append(sc.nest, frame{'`', sc.double})
				sc.double = false
			}
		case sc.double:
			sc.begin()
			if c == '"' {
				sc.double = false
			} else {
				sc.bare = append(sc.bare, c)
			}
			sc.raw = append(sc.raw, c)
		case c == '\'':
			sc.begin()
			sc.single = true
			sc.raw = append(sc.raw, c)
		case c == '"':
			sc.begin()
			sc.double = true
			sc.raw = append(sc.raw, c)
		case c == '>' || c == '<':
			sc.char(c)
			switch {
			case next == '&': // ">&2", "2>&1", "<&0": duplicates a descriptor, names no file
				i++
				sc.char(next)
			case c == '>' && (next == '>' || next == '|'): // ">>" appends, ">|" overwrites
				i++
				sc.char(next)
				sc.redirectFrom()
			case c == '>' && next != '(': // ">(…)" is a process substitution
				sc.redirectFrom()
			}
		case c == '&' && next == '>': // "&>file": stdout and stderr to a file
			sc.char(c)
		case c == '(':
			sc.endPiece()
			sc.nest = append(sc.nest, frame{'(', false})
		case c == ')':
			sc.endPiece()
			if n := len(sc.nest); n > 0 && sc.nest[n-1].open == '(' {
				sc.double = sc.nest[n-1].double
				sc.nest = sc.nest[:n-1]
			}
		case c == ';' || c == '&' || c == '|' || c == '\n':
			sc.endPiece()
		case isBlank(c):
			sc.endWord()
		default:
			sc.char(c)
		}
	}
	sc.endPiece()
	return sc.pieces
}

// scanner is the state of splitCommand. The words of the current piece accumulate in raw
// (as written) and bare (unquoted), separated by single spaces; the current word starts at
// rawStart and bareStart.
type scanner struct {
	pieces              []piece
	raw, bare           []byte
	rawStart, bareStart int
	words               int // words kept in the current piece
	inWord              bool
	single, double      bool // inside '…' or "…"
	redirect            bool // the current piece writes output to a file
	pending             bool // an output redirection's target is still to come
	target              int  // where that target starts in bare
	nest                []frame
}

// frame is one open "$(", "(" or "`", with the double-quote state to restore when it closes.
type frame struct {
	open   byte
	double bool
}

func (sc *scanner) char(c byte) {
	sc.begin()
	sc.raw = append(sc.raw, c)
	sc.bare = append(sc.bare, c)
}

// begin starts a word unless one is in progress.
func (sc *scanner) begin() {
	if sc.inWord {
		return
	}
	sc.inWord = true
	if sc.words > 0 {
		sc.raw = append(sc.raw, ' ')
		sc.bare = append(sc.bare, ' ')
	}
	sc.rawStart, sc.bareStart = len(sc.raw), len(sc.bare)
}

// redirectFrom notes an output redirection whose target follows in the current word or the
// next one.
func (sc *scanner) redirectFrom() {
	sc.pending, sc.target = true, len(sc.bare)
}

func (sc *scanner) endWord() {
	if !sc.inWord {
		return
	}
	sc.inWord = false
	if sc.pending {
		if t := sc.bare[sc.target:]; len(t) > 0 {
			if string(t) != "/dev/null" { // discarding output is not writing a file
				sc.redirect = true
			}
			sc.pending = false
		} else {
			sc.target = len(sc.bare) + 1 // the target is the next word, after its space
		}
	}
	raw := sc.raw[sc.rawStart:]
	if sc.words == 0 && (isReserved(raw) || isAssignment(raw)) {
		// Not the command's name: drop the word.
		sc.raw, sc.bare = sc.raw[:0], sc.bare[:0]
		if sc.pending {
			sc.target = 0
		}
		return
	}
	sc.words++
}

func (sc *scanner) endPiece() {
	sc.endWord()
	if sc.pending {
		sc.redirect = true // no target word: assume the worst
	}
	if sc.words > 0 {
		sc.pieces = append(sc.pieces, piece{text: string(sc.raw), unquoted: string(sc.bare), redirect: sc.redirect})
	}
	sc.raw, sc.bare = sc.raw[:0], sc.bare[:0]
	sc.words, sc.redirect, sc.pending, sc.target = 0, false, false, 0
}

// isAssignment reports whether a word is a variable assignment NAME=value.
func isAssignment(w []byte) bool {
	eq := -1
	for i, c := range w {
		if c == '=' {
			eq = i
			break
		}
	}
	if eq <= 0 {
		return false
	}
	for i, c := range w[:eq] {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// normalizeSpace collapses runs of blanks outside quotes to one space and trims the ends:
// the whole-command form a command pattern is also matched against. A string that needs no
// change is returned as is.
func normalizeSpace(s string) string {
	if !needsNormalizing(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	single, double, space := false, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !single && !double && (isBlank(c) || c == '\n') {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		switch {
		case c == '\'' && !double:
			single = !single
		case c == '"' && !single:
			double = !double
		}
		b.WriteByte(c)
	}
	return b.String()
}

// needsNormalizing reports whether s has leading or trailing blanks, a blank other than a
// single space, or two blanks in a row (conservatively, quotes are not considered).
func needsNormalizing(s string) bool {
	if s == "" {
		return false
	}
	if first, last := s[0], s[len(s)-1]; isBlank(first) || first == '\n' || isBlank(last) || last == '\n' {
		return true
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n' || (c == ' ' && i+1 < len(s) && s[i+1] == ' ') {
			return true
		}
	}
	return false
}
