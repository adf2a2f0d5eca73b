package rules

import (
	"strings"
	"unicode"
)

// piece is one simple command of a shell command line.
type piece struct {
	text     string // white space normalized, quotes kept
	unquoted string // the same with quotes and backslash escapes removed
	redirect bool   // has an unquoted ">"
}

// reservedWords are dropped from the front of a piece: they do not name the command run.
var reservedWords = map[string]bool{
	"{": true, "}": true, "!": true, "if": true, "then": true, "else": true, "elif": true,
	"do": true, "while": true, "until": true, "time": true,
}

// splitCommand splits a shell command line into its simple commands (see the package
// documentation). It is a lexical approximation of POSIX shell syntax that errs towards
// more, smaller pieces.
func splitCommand(cmd string) []piece {
	var sc scanner
	rs := []rune(cmd)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		next := rune(0)
		if i+1 < len(rs) {
			next = rs[i+1]
		}
		switch {
		case sc.single:
			sc.inWord = true
			if r == '\'' {
				sc.single = false
			} else {
				sc.w.bare.WriteRune(r)
			}
			sc.w.raw.WriteRune(r)
		case r == '\\':
			if next == '\n' { // a line continuation joins the lines
				i++
				continue
			}
			sc.w.raw.WriteRune(r)
			sc.inWord = true
			if next != 0 {
				i++
				sc.w.raw.WriteRune(next)
				sc.w.bare.WriteRune(next)
			}
		case r == '`' || (r == '$' && next == '('):
			// Command substitution: its contents are commands of their own, in or out of
			// double quotes, with quoting of their own.
			sc.endPiece()
			switch {
			case r == '$':
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
			sc.inWord = true
			if r == '"' {
				sc.double = false
			} else {
				sc.w.bare.WriteRune(r)
			}
			sc.w.raw.WriteRune(r)
		case r == '\'':
			sc.single, sc.inWord = true, true
			sc.w.raw.WriteRune(r)
		case r == '"':
			sc.double, sc.inWord = true, true
			sc.w.raw.WriteRune(r)
		case r == '>' || r == '<':
			sc.char(r)
			switch {
			case next == '&': // ">&2", "2>&1", "<&0": duplicates a descriptor, names no file
				i++
				sc.char(next)
			case r == '>' && next == '>': // ">>": appends to a file
				i++
				sc.char(next)
				sc.redirectFrom()
			case r == '>' && next == '|': // ">|": overwrites a file
				i++
				sc.char(next)
				sc.redirectFrom()
			case r == '>' && next != '(': // ">(…)" is a process substitution
				sc.redirectFrom()
			}
		case r == '&' && next == '>': // "&>file": stdout and stderr to a file
			sc.char(r)
		case r == '(':
			sc.endPiece()
			sc.nest = append(sc.nest, frame{'(', false})
		case r == ')':
			sc.endPiece()
			if n := len(sc.nest); n > 0 && sc.nest[n-1].open == '(' {
				sc.double = sc.nest[n-1].double
				sc.nest = sc.nest[:n-1]
			}
		case r == ';' || r == '&' || r == '|' || r == '\n':
			sc.endPiece()
		case unicode.IsSpace(r):
			sc.endWord()
		default:
			sc.char(r)
		}
	}
	sc.endPiece()
	return sc.pieces
}

// scanner is the state of splitCommand.
type scanner struct {
	pieces   []piece
	cur      []wordText
	w        word
	inWord   bool
	single   bool // inside '…'
	double   bool // inside "…"
	redirect bool // the current piece redirects output to a file
	// pending is set after an output redirection operator until its target word is known;
	// target is where the target starts in the current word's unquoted text.
	pending bool
	target  int
	// nest records the open substitutions and subshells, with the double-quote state to
	// restore when each closes.
	nest []frame
}

// frame is one open "$(", "(" or "`".
type frame struct {
	open   rune
	double bool
}

func (sc *scanner) char(r rune) {
	sc.w.raw.WriteRune(r)
	sc.w.bare.WriteRune(r)
	sc.inWord = true
}

// redirectFrom notes an output redirection whose target follows in the current word or the
// next one.
func (sc *scanner) redirectFrom() {
	sc.pending, sc.target = true, sc.w.bare.Len()
}

func (sc *scanner) endWord() {
	if !sc.inWord {
		return
	}
	if sc.pending {
		if t := sc.w.bare.String()[sc.target:]; t != "" {
			// Discarding output is not writing a file.
			if t != "/dev/null" {
				sc.redirect = true
			}
			sc.pending = false
		} else {
			sc.target = 0 // the target is the next word
		}
	}
	sc.cur = append(sc.cur, wordText{raw: sc.w.raw.String(), bare: sc.w.bare.String()})
	sc.w.raw.Reset()
	sc.w.bare.Reset()
	sc.inWord = false
}

func (sc *scanner) endPiece() {
	sc.endWord()
	if sc.pending {
		sc.redirect = true // no target word: assume the worst
	}
	if p, ok := makePiece(sc.cur, sc.redirect); ok {
		sc.pieces = append(sc.pieces, p)
	}
	sc.cur, sc.redirect, sc.pending, sc.target = nil, false, false, 0
}

// word accumulates one shell word, as written and with quoting removed.
type word struct{ raw, bare strings.Builder }

// wordText is a finished word.
type wordText struct{ raw, bare string }

// makePiece builds a piece from its words, dropping leading assignments and reserved words.
func makePiece(words []wordText, redirect bool) (piece, bool) {
	i := 0
	for ; i < len(words); i++ {
		raw := words[i].raw
		if reservedWords[raw] || isAssignment(raw) {
			continue
		}
		break
	}
	words = words[i:]
	if len(words) == 0 {
		return piece{}, false
	}
	raw := make([]string, len(words))
	bare := make([]string, len(words))
	for j := range words {
		raw[j] = words[j].raw
		bare[j] = words[j].bare
	}
	return piece{text: strings.Join(raw, " "), unquoted: strings.Join(bare, " "), redirect: redirect}, true
}

// isAssignment reports whether a word is a variable assignment NAME=value.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// normalizeSpace collapses runs of white space outside quotes to one space and trims the
// ends: the whole-command form a command pattern is also matched against.
func normalizeSpace(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	single, double, space := false, false, false
	for _, r := range strings.TrimSpace(s) {
		if !single && !double && unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		switch {
		case r == '\'' && !double:
			single = !single
		case r == '"' && !single:
			double = !double
		}
		b.WriteRune(r)
	}
	return b.String()
}
