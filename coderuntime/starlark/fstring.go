package starlark

import (
	"strings"

	"go.starlark.net/syntax"
)

// Python f-strings, which Starlark lacks, are rewritten into a call of a hidden built-in:
//
//	f"{n} file{'s' if n != 1 else ''}: {names!r:>20}"
//
// becomes
//
//	__dsh_ƒstring__("", (n), "", "", " file", ('s' if n != 1 else ''), "", "", ": ", (names), "r", ">20", "")
//
// that is the literal parts (re-emitted as ordinary string literals with the f-string's
// quotes and raw prefix, so their escapes mean what they meant) alternating with, for each
// replacement field, the expression (left where it was written, so its positions and
// nested rewrites stay exact), the conversion and the format spec. The built-in formats
// each field as Python's format() does (see formatField). A self-documenting field
// ({x=}) adds its source text to the literal before it. The built-in's name holds a
// non-ASCII letter, so that no binding global (portable identifiers are ASCII) can shadow it.

// fstringBuiltin is the name of the hidden built-in f-strings call.
const fstringBuiltin = "__dsh_ƒstring__"

// fstring rewrites the f-string whose prefix w starts at start (column startCol); s.pos is
// at its opening quote.
func (s *scanner) fstring(start int, startCol int32, w string) *prepError {
	fail := func(msg string) *prepError {
		return &prepError{line: s.line, col: s.col, msg: "f-string: " + msg}
	}
	prefix := "" // the prefix the literal parts keep: r for a raw f-string
	if strings.ContainsAny(w, "rR") {
		prefix = "r"
	}
	q := s.src[s.pos]
	quote := string(q)
	if s.tripleAt(s.pos, q) {
		quote = strings.Repeat(quote, 3)
	}
	s.advance(len(quote))
	s.fdepth++
	defer func() { s.fdepth-- }()

	var out strings.Builder // the replacement text of the current gap
	out.WriteString(fstringBuiltin + "(")
	var lit strings.Builder // the current literal part, as source text
	gapStart := start
	// literal emits the current literal part. A part that ends in an odd backslash (f"\{x}"
	// keeps the backslash) cannot be closed by a quote, so that backslash is added apart.
	literal := func() string {
		text := lit.String()
		lit.Reset()
		if !evenBackslashes(text) {
			return prefix + quote + text[:len(text)-1] + quote + ` + "\\"`
		}
		return prefix + quote + text + quote
	}
	for {
		if s.pos >= len(s.src) {
			return &prepError{line: s.line, col: startCol, msg: "f-string: unterminated string"}
		}
		c := s.src[s.pos]
		switch {
		case strings.HasPrefix(s.src[s.pos:], quote):
			s.advance(len(quote))
			out.WriteString(literal() + ")")
			s.edits = append(s.edits, edit{start: gapStart, end: s.pos, with: out.String(), replace: true})
			return nil
		case c == '\\':
			// A backslash protects the next character, in raw f-strings too, except a brace,
			// which still opens or closes a field.
			lit.WriteByte(c)
			s.advance(1)
			if s.pos < len(s.src) && s.src[s.pos] != '{' && s.src[s.pos] != '}' {
				if c := s.src[s.pos]; c == '\n' || c == '\r' {
					s.lineBreak(&lit)
				} else {
					r := s.pos
					s.advanceRune()
					lit.WriteString(s.src[r:s.pos])
				}
			}
		case c == '\n' || c == '\r':
			if len(quote) == 1 {
				return &prepError{line: s.line, col: startCol, msg: "f-string: unterminated string"}
			}
			s.lineBreak(&lit)
		case c == '{' && s.pos+1 < len(s.src) && s.src[s.pos+1] == '{', c == '}' && s.pos+1 < len(s.src) && s.src[s.pos+1] == '}':
			lit.WriteByte(c)
			s.advance(2)
		case c == '}':
			return fail("single '}' is not allowed")
		case c == '{':
			s.advance(1)
			f, perr := s.field(quote)
			if perr != nil {
				return perr
			}
			out.WriteString(literal())
			if f.selfDoc != "" {
				out.WriteString(" + " + syntax.Quote(f.selfDoc, false))
			}
			out.WriteString(", (")
			s.edits = append(s.edits, edit{start: gapStart, end: f.exprStart, with: out.String(), replace: true})
			out.Reset()
			// The expression is scanned like the rest of the program: await, nested
			// strings and f-strings inside it are rewritten too.
			if perr := s.scanUntil(f.exprEnd); perr != nil {
				return perr
			}
			for s.pos < f.end {
				if c := s.src[s.pos]; c == '\n' || c == '\r' {
					s.newline()
					s.startLine(true)
				} else {
					s.advanceRune()
				}
			}
			gapStart = f.exprEnd
			out.WriteString("), " + syntax.Quote(f.conversion, false) + ", " + syntax.Quote(f.spec, false) + ", ")
		default:
			r := s.pos
			s.advanceRune()
			lit.WriteString(s.src[r:s.pos])
		}
	}
}

// lineBreak copies the line break at s.pos into lit and starts a line inside the string.
func (s *scanner) lineBreak(lit *strings.Builder) {
	r := s.pos
	s.newline()
	lit.WriteString(s.src[r:s.pos])
	s.startLine(true)
}

// evenBackslashes reports whether text ends with an even number of backslashes.
func evenBackslashes(text string) bool {
	n := 0
	for i := len(text) - 1; i >= 0 && text[i] == '\\'; i-- {
		n++
	}
	return n%2 == 0
}

// fieldInfo describes one replacement field: {<expr>[=][!<conversion>][:<spec>]}.
type fieldInfo struct {
	exprStart, exprEnd int    // the expression
	end                int    // just past the closing brace
	selfDoc            string // the source text before the value, for {expr=}
	conversion         string // "", "r", "s" or "a"
	spec               string
}

// field parses the replacement field whose expression starts at s.pos, without consuming
// anything. quote is the f-string's quote, which an expression may not contain unless in a
// nested string literal.
func (s *scanner) field(quote string) (fieldInfo, *prepError) {
	fail := func(msg string) (fieldInfo, *prepError) { // at the field's opening brace
		return fieldInfo{}, &prepError{line: s.line, col: s.col - 1, msg: "f-string: " + msg}
	}
	f := fieldInfo{exprStart: s.pos}
	depth := 0
	i := s.pos
	src := s.src
	// The expression ends at the first top-level '}', '!' (not '!='), ':' or
	// self-documenting '='.
expr:
	for {
		if i >= len(src) {
			return fail("expecting '}'")
		}
		switch c := src[i]; {
		case c == '\'' || c == '"':
			// A nested string literal, which may use the f-string's own quotes (Python 3.12).
			i = stringEnd(src, i)
			continue
		case c == '#':
			return fail("the expression part cannot include '#'")
		case c == '(' || c == '[' || c == '{':
			depth++
		case (c == ')' || c == ']' || c == '}') && depth > 0:
			depth--
		case depth > 0:
		case c == '}' || c == ':':
			break expr
		case c == '!' && (i+1 >= len(src) || src[i+1] != '='):
			break expr
		case c == '=' && (i+1 >= len(src) || src[i+1] != '=') && (i == 0 || !strings.ContainsRune("=!<>", rune(src[i-1]))):
			j := i + 1
			for j < len(src) && strings.IndexByte(" \t\f\r\n", src[j]) >= 0 {
				j++
			}
			if j < len(src) && strings.IndexByte("}!:", src[j]) >= 0 {
				f.selfDoc = src[f.exprStart:j]
				if strings.ContainsAny(f.selfDoc, "\r\n") {
					return fail("a self-documenting expression must be on one line")
				}
				f.exprEnd = i
				i = j
				break expr
			}
		}
		i++
	}
	if f.selfDoc == "" {
		f.exprEnd = i
	}
	if strings.TrimSpace(strings.NewReplacer("\r", "", "\n", "").Replace(src[f.exprStart:f.exprEnd])) == "" {
		return fail("empty expression not allowed")
	}
	explicit := false
	if src[i] == '!' {
		if i+1 >= len(src) || strings.IndexByte("rsa", src[i+1]) < 0 {
			return fail("invalid conversion character: expected 's', 'r', or 'a'")
		}
		f.conversion, explicit = src[i+1:i+2], true
		i += 2
		if i >= len(src) || (src[i] != ':' && src[i] != '}') {
			return fail("expecting '}'")
		}
	}
	if src[i] == ':' {
		j := i + 1
		for j < len(src) && src[j] != '}' {
			switch src[j] {
			case '{':
				return fail("nested replacement fields in a format spec are not supported")
			case '\n', '\r':
				return fail("a format spec cannot contain a line break")
			case '\'', '"':
				if strings.HasPrefix(src[j:], quote) {
					return fail("expecting '}'")
				}
			}
			j++
		}
		if j >= len(src) {
			return fail("expecting '}'")
		}
		f.spec = src[i+1 : j]
		i = j
	}
	if f.selfDoc != "" && !explicit && f.spec == "" {
		f.conversion = "r" // {x=} shows repr(x) unless a format spec is given
	}
	f.end = i + 1
	return f, nil
}

// stringEnd returns the offset just past the string literal whose opening quote is at i
// (or the end of the line or text for an unterminated one).
func stringEnd(src string, i int) int {
	q := src[i]
	triple := i+2 < len(src) && src[i+1] == q && src[i+2] == q
	if triple {
		i += 3
	} else {
		i++
	}
	for i < len(src) {
		switch c := src[i]; {
		case c == '\\':
			i += 2
			continue
		case (c == '\n' || c == '\r') && !triple:
			return i
		case c == q:
			if !triple {
				return i + 1
			}
			if i+2 < len(src) && src[i+1] == q && src[i+2] == q {
				return i + 3
			}
		}
		i++
	}
	return len(src)
}
