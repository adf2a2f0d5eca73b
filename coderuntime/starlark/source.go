package starlark

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"
)

// The source preparation turns a Python-flavoured program body into Starlark source text
// before it is parsed. It works on tokens, never inside string literals or comments, and it
// never adds or removes a line, so line numbers stay those of the program; the columns it
// shifts are recorded in a columnMap so that error positions can be reported against the
// text the model wrote.
//
// The rewrites:
//   - a program indented as a whole (every line that starts a statement shares a prefix of
//     leading whitespace) is dedented, as a function body may be;
//   - `await <expr>` becomes `<expr>`: binding calls complete before they return, so there
//     is nothing to wait for;
//   - `async def` becomes `def`;
//   - `import asyncio`, `import json` and `import math` statements become `pass`: those
//     modules are predeclared;
//   - an f-string becomes a call of a hidden built-in that formats its fields the way
//     Python does (see fstring.go); the expressions in it stay where they are.
//
// Other Python syntax that Starlark cannot express is left alone so that the parser
// rejects it.

// isImportable reports whether an import statement may name module: the predeclared ones.
func isImportable(module string) bool {
	return module == "asyncio" || module == "json" || module == "math"
}

// prepared is a program ready for the Starlark parser.
type prepared struct {
	src   string
	cols  columnMap
	edits []edit // what was rewritten, in order
}

// prepError is a problem found while preparing the source, at a position of the original
// program.
type prepError struct {
	line, col int32
	msg       string
}

// edit removes src[start:end] or, when with is set, overwrites it with with padded by
// spaces to the same width. A replacing edit writes with as it is instead: it may differ in
// width but holds the same line breaks as the text it replaces.
type edit struct {
	start, end int
	with       string
	replace    bool
}

// anchor says that from output column out on, output columns map to original columns by
// adding (orig - out), or, when flat (text that replaced other text), all to orig.
type anchor struct {
	out, orig int32
	flat      bool
}

// columnMap maps columns of the prepared text back to the program's; lines never move.
type columnMap map[int32][]anchor

// original returns the program column of the prepared column col on line.
func (m columnMap) original(line, col int32) int32 {
	best := anchor{out: 1, orig: 1}
	for _, a := range m[line] {
		if a.out > col {
			break
		}
		best = a
	}
	if best.flat {
		return best.orig
	}
	return best.orig + (col - best.out)
}

// lineInfo is what the scanner learns about one physical line.
type lineInfo struct {
	start     int  // byte offset of the line
	inString  bool // the line starts inside a string literal
	continued bool // the line continues a statement (inside brackets or after a backslash)
	indent    int  // bytes of leading blanks (spaces, tabs, form feeds)
	blank     bool // nothing but blanks, or blanks and a comment
}

// prepare rewrites program as described above.
func prepare(program string) (prepared, *prepError) {
	s := scanner{src: program}
	edits, lines, perr := s.scan()
	if perr != nil {
		return prepared{}, perr
	}
	edits = append(dedent(program, lines), edits...)
	if len(edits) == 0 {
		return prepared{src: program}, nil
	}
	sortEdits(edits)
	p := apply(program, edits)
	p.edits = edits
	return p, nil
}

// dedent returns the edits that remove the whitespace prefix every line that starts a
// statement shares, as a function body indented as a whole is valid Python. Lines that
// start inside a string literal keep their text; blank and comment-only lines, and lines
// that continue a statement, lose what they have of the prefix.
func dedent(src string, lines []lineInfo) []edit {
	prefix, found := "", false
	for _, l := range lines {
		if l.inString || l.blank || l.continued {
			continue
		}
		ws := src[l.start : l.start+l.indent]
		if !found {
			prefix, found = ws, true
			continue
		}
		prefix = commonPrefix(prefix, ws)
		if prefix == "" {
			return nil
		}
	}
	if prefix == "" {
		return nil
	}
	var edits []edit
	for _, l := range lines {
		if l.inString {
			continue
		}
		n := len(commonPrefix(prefix, src[l.start:l.start+l.indent]))
		if n > 0 {
			edits = append(edits, edit{start: l.start, end: l.start + n})
		}
	}
	return edits
}

func commonPrefix(a, b string) string {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return a[:i]
		}
	}
	return a[:n]
}

// sortEdits orders edits by start. Starts are distinct: a dedent edit starts a line that
// begins with blanks, a scanner edit starts at a word.
func sortEdits(edits []edit) {
	slices.SortFunc(edits, func(a, b edit) int { return cmp.Compare(a.start, b.start) })
}

// apply performs the edits and records how output columns map to program columns.
func apply(src string, edits []edit) prepared {
	var b strings.Builder
	b.Grow(len(src))
	cols := columnMap{}
	var line, outCol, origCol int32 = 1, 1, 1
	// copyTo copies src[pos:end] to the output, tracking lines and columns.
	pos := 0
	lastCR := false // the output ends with a line break that is a lone \r
	copyTo := func(end int) {
		for pos < end {
			c := src[pos]
			switch {
			case c == '\n' || c == '\r':
				lastCR = c == '\r'
				if c == '\r' && pos+1 < len(src) && src[pos+1] == '\n' {
					b.WriteByte(c)
					pos++
					c = '\n'
					lastCR = false
				}
				b.WriteByte(c)
				pos++
				line, outCol, origCol = line+1, 1, 1
			case c < utf8.RuneSelf:
				b.WriteByte(c)
				pos++
				outCol++
				origCol++
			default:
				_, w := utf8.DecodeRuneInString(src[pos:])
				b.WriteString(src[pos : pos+w])
				pos += w
				outCol++
				origCol++
			}
		}
	}
	for _, e := range edits {
		if e.start < pos {
			continue // overlapping edit (cannot happen: edits touch disjoint tokens)
		}
		copyTo(e.start)
		// Edited text is ASCII on one line: blanks, `await`, `async`, import statements.
		width := int32(e.end - e.start)
		pos = e.end
		if e.with == "" && outCol == 1 && lastCR && pos < len(src) && src[pos] == '\n' {
			// Removing the whole line would join a lone \r and the next \n into one line
			// break: blank it instead.
			e.with = " "
		}
		if e.replace {
			orig, with := src[e.start:e.end], e.with
			for first := true; ; first = false {
				origLine, origBreak, origRest := cutLine(orig)
				withLine, withBreak, withRest := cutLine(with)
				if !first {
					line, outCol, origCol = line+1, 1, 1
				}
				cols[line] = append(cols[line], anchor{out: outCol, orig: origCol, flat: true})
				b.WriteString(withLine)
				b.WriteString(withBreak)
				outCol += int32(utf8.RuneCountInString(withLine))
				origCol += int32(utf8.RuneCountInString(origLine))
				if withBreak == "" || origBreak == "" {
					break
				}
				lastCR = withBreak == "\r"
				orig, with = origRest, withRest
			}
			cols[line] = append(cols[line], anchor{out: outCol, orig: origCol})
			continue
		}
		if e.with != "" {
			b.WriteString(e.with)
			b.WriteString(strings.Repeat(" ", e.end-e.start-len(e.with)))
			outCol += width
			origCol += width
			continue
		}
		origCol += width
		cols[line] = append(cols[line], anchor{out: outCol, orig: origCol})
	}
	copyTo(len(src))
	return prepared{src: b.String(), cols: cols}
}

// cutLine splits s at its first line break (\n, \r\n or \r).
func cutLine(s string) (line, brk, rest string) {
	i := strings.IndexAny(s, "\r\n")
	if i < 0 {
		return s, "", ""
	}
	n := 1
	if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
		n = 2
	}
	return s[:i], s[i : i+n], s[i+n:]
}

// scanner finds the token-level edits in a program and describes its lines.
type scanner struct {
	src   string
	pos   int
	line  int32
	col   int32 // 1-based rune column of pos
	lines []lineInfo
	edits []edit
	// prevDot: the previous significant token was '.', so an identifier is an attribute.
	prevDot bool
	// depth is the bracket nesting; continued is set by a backslash before a line break.
	depth     int
	continued bool
	// fdepth is the nesting of f-strings being scanned: their lines start inside a string.
	fdepth int
}

func (s *scanner) scan() ([]edit, []lineInfo, *prepError) {
	s.line, s.col = 1, 1
	s.startLine(false)
	if perr := s.scanUntil(len(s.src)); perr != nil {
		return nil, nil, perr
	}
	return s.edits, s.lines, nil
}

// scanUntil scans tokens up to offset end: the whole program, or the expression of an
// f-string replacement field.
func (s *scanner) scanUntil(end int) *prepError {
	for s.pos < end {
		c := s.src[s.pos]
		switch {
		case c == '\n' || c == '\r':
			s.newline()
			s.startLine(s.fdepth > 0)
			s.continued = false
		case c == ' ' || c == '\t' || c == '\f':
			s.advance(1)
		case c == '#':
			for s.pos < len(s.src) && s.src[s.pos] != '\n' && s.src[s.pos] != '\r' {
				s.advanceRune()
			}
		case c == '\\':
			s.advance(1) // a line continuation, or a stray backslash for the parser
			if s.pos < len(s.src) && (s.src[s.pos] == '\n' || s.src[s.pos] == '\r') {
				s.continued = true
			}
		case c == '(' || c == '[' || c == '{':
			s.advance(1)
			s.prevDot = false
			s.depth++
		case c == ')' || c == ']' || c == '}':
			s.advance(1)
			s.prevDot = false
			if s.depth > 0 {
				s.depth--
			}
		case c == '\'' || c == '"':
			s.prevDot = false
			s.stringLiteral()
		case '0' <= c && c <= '9':
			s.prevDot = false
			s.number()
		case c == '.':
			if s.pos+1 < len(s.src) && '0' <= s.src[s.pos+1] && s.src[s.pos+1] <= '9' {
				s.prevDot = false
				s.number()
				continue
			}
			s.advance(1)
			s.prevDot = true
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= utf8.RuneSelf:
			if perr := s.word(); perr != nil {
				return perr
			}
		default:
			s.advance(1)
			s.prevDot = false
		}
	}
	return nil
}

func (s *scanner) advance(n int) {
	s.pos += n
	s.col += int32(n)
}

func (s *scanner) advanceRune() {
	if s.src[s.pos] < utf8.RuneSelf {
		s.advance(1)
		return
	}
	_, w := utf8.DecodeRuneInString(s.src[s.pos:])
	s.pos += w
	s.col++
}

// newline consumes a line break (\n, \r\n or \r, as the Starlark scanner reads them).
func (s *scanner) newline() {
	if s.src[s.pos] == '\r' && s.pos+1 < len(s.src) && s.src[s.pos+1] == '\n' {
		s.pos++
	}
	s.pos++
	s.line++
	s.col = 1
}

// startLine records the line that begins at s.pos.
func (s *scanner) startLine(inString bool) {
	l := lineInfo{start: s.pos, inString: inString, continued: s.depth > 0 || s.continued}
	if !inString {
		i := s.pos
		for i < len(s.src) && (s.src[i] == ' ' || s.src[i] == '\t' || s.src[i] == '\f') {
			i++
		}
		l.indent = i - s.pos
		l.blank = i == len(s.src) || s.src[i] == '\n' || s.src[i] == '\r' || s.src[i] == '#'
	}
	s.lines = append(s.lines, l)
}

// onlyBlanksBefore reports whether the current line holds only blanks before offset i,
// once the words already removed from it are gone.
func (s *scanner) onlyBlanksBefore(i int) bool {
	j := s.lines[len(s.lines)-1].start
	k := len(s.edits)
	for k > 0 && s.edits[k-1].start >= j {
		k--
	}
	for j < i {
		if k < len(s.edits) && s.edits[k].start == j && s.edits[k].with == "" {
			j = s.edits[k].end
			k++
			continue
		}
		if c := s.src[j]; c != ' ' && c != '\t' && c != '\f' {
			return false
		}
		j++
	}
	return true
}

func (s *scanner) number() {
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		if c == '.' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			// An exponent sign belongs to the number: 1e-5.
			if (c == 'e' || c == 'E') && s.pos+1 < len(s.src) && (s.src[s.pos+1] == '+' || s.src[s.pos+1] == '-') {
				s.advance(1)
			}
			s.advance(1)
			continue
		}
		break
	}
}

func isWordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c >= utf8.RuneSelf
}

// word scans an identifier or keyword, a string prefix, and the rewrites keyed on words.
func (s *scanner) word() *prepError {
	start, startCol := s.pos, s.col
	for s.pos < len(s.src) && isWordByte(s.src[s.pos]) {
		s.advanceRune()
	}
	w := s.src[start:s.pos]
	afterDot := s.prevDot
	s.prevDot = false
	if s.pos < len(s.src) && (s.src[s.pos] == '\'' || s.src[s.pos] == '"') && isStringPrefix(w) {
		if strings.ContainsAny(w, "fF") {
			return s.fstring(start, startCol, w)
		}
		s.stringLiteral()
		return nil
	}
	if afterDot {
		return nil // an attribute name
	}
	switch w {
	case "await":
		// `await x` → `x`. At the start of a line the word and the blanks after it go (the
		// expression must keep the statement's indentation); elsewhere it becomes blanks,
		// which keeps every column.
		if s.onlyBlanksBefore(start) {
			s.edits = append(s.edits, edit{start: start, end: s.skipBlanks(s.pos)})
		} else {
			s.edits = append(s.edits, edit{start: start, end: s.pos, with: " "})
		}
	case "async":
		// Before def (or before another async that may precede def, so that the rewrite
		// is idempotent).
		if end := s.skipBlanks(s.pos); end > s.pos && (s.wordAt(end) == "def" || s.wordAt(end) == "async") {
			s.edits = append(s.edits, edit{start: start, end: end})
		}
	case "import":
		if s.onlyBlanksBefore(start) {
			if end, ok := s.importable(s.pos); ok {
				// `pass`, so that a block whose only statement was the import stays valid.
				s.edits = append(s.edits, edit{start: start, end: end, with: "pass"})
			}
		}
	}
	return nil
}

// skipBlanks returns the offset of the first byte at or after i that is not a space or tab.
func (s *scanner) skipBlanks(i int) int {
	for i < len(s.src) && (s.src[i] == ' ' || s.src[i] == '\t') {
		i++
	}
	return i
}

// wordAt returns the identifier that starts at i, or "".
func (s *scanner) wordAt(i int) string {
	j := i
	for j < len(s.src) && isWordByte(s.src[j]) {
		j++
	}
	return s.src[i:j]
}

// importable reports whether the rest of an import statement, from i, names only
// predeclared modules (`import asyncio`, `import json, math`), and returns where the names
// end. Anything else (aliases, dotted names, continuations) is left for the parser.
func (s *scanner) importable(i int) (int, bool) {
	n := 0
	for {
		j := s.skipBlanks(i)
		if j == i && n == 0 {
			return 0, false // `import` must be followed by a blank
		}
		name := s.wordAt(j)
		if !isImportable(name) {
			return 0, false
		}
		n++
		i = s.skipBlanks(j + len(name))
		if i < len(s.src) && s.src[i] == ',' {
			i++
			continue
		}
		if i == len(s.src) || s.src[i] == '\n' || s.src[i] == '\r' || s.src[i] == '#' || s.src[i] == ';' {
			return j + len(name), true
		}
		return 0, false
	}
}

// isStringPrefix reports whether w is a Python string-literal prefix.
func isStringPrefix(w string) bool {
	if len(w) > 2 {
		return false
	}
	switch strings.ToLower(w) {
	case "r", "b", "u", "f", "rb", "br", "fr", "rf":
		return true
	}
	return false
}

// stringLiteral skips a string literal whose opening quote is at s.pos. A backslash always
// protects the next character, in raw strings too.
// An unterminated single-quoted string ends at the line break; the parser reports it.
func (s *scanner) stringLiteral() {
	q := s.src[s.pos]
	triple := s.tripleAt(s.pos, q)
	if triple {
		s.advance(3)
	} else {
		s.advance(1)
	}
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case c == '\\':
			s.advance(1)
			if s.pos < len(s.src) {
				if c := s.src[s.pos]; c == '\n' || c == '\r' {
					s.newline()
					s.startLine(true)
				} else {
					s.advanceRune()
				}
			}
		case c == '\n' || c == '\r':
			if !triple {
				return
			}
			s.newline()
			s.startLine(true)
		case c == q:
			if !triple {
				s.advance(1)
				return
			}
			if s.tripleAt(s.pos, q) {
				s.advance(3)
				return
			}
			s.advance(1)
		default:
			s.advanceRune()
		}
	}
}

// tripleAt reports whether three quote characters q start at offset i.
func (s *scanner) tripleAt(i int, q byte) bool {
	return i+2 < len(s.src) && s.src[i] == q && s.src[i+1] == q && s.src[i+2] == q
}
