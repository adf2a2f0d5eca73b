package tsstrip

import (
	"unicode"
	"unicode/utf8"
)

// tokKind classifies a token of the lexical scan.
type tokKind uint8

const (
	tokIdent    tokKind = iota // identifier or keyword
	tokPunct                   // punctuator, text is the punctuator
	tokString                  // string literal
	tokNumber                  // numeric literal
	tokTemplate                // a template literal chunk (`...`, `...${, }...${, }...`)
	tokRegexp                  // regular expression literal
	tokPrivate                 // #name
)

// token is one significant token: comments and whitespace are skipped.
type token struct {
	kind tokKind
	text string // identifier name or punctuator; empty for literals
	line int    // 1-based
	off  int    // byte offset of the token
	bol  int    // byte offset of the start of the token's line
	nl   bool   // a line terminator precedes the token
}

// column returns the token's 1-based column in characters.
func (t token) column(src string) int {
	return utf8.RuneCountInString(src[t.bol:t.off]) + 1
}

// lexer is a small ECMAScript/TypeScript tokenizer. It only needs to be exact about
// comments, strings, template literals and regular expressions so that what looks like
// code inside them is never mistaken for code; everything else is coarse.
type lexer struct {
	src       string
	pos       int
	line      int
	lineStart int // byte offset of the current line's start
	toks      []token
	// templates holds, for each template literal whose ${ substitution is open, the brace
	// depth at which the substitution's closing brace resumes the template.
	templates []int
	braces    int
	// parens records, for each open parenthesis, whether it follows if, while, for or with,
	// after whose closing parenthesis a slash starts a regular expression.
	parens []bool
	// lastParenControl is set while the last token is the ")" of such a parenthesis.
	lastParenControl bool
}

// scan tokenizes src. It never fails: malformed input (an unterminated string or
// comment) ends the token where the input ends or the line breaks, which is enough for the
// erasability check, because esbuild reports the syntax error afterwards anyway.
func scan(src string) []token {
	lx := &lexer{src: src, line: 1}
	lx.run()
	return lx.toks
}

func (lx *lexer) newline(at int) {
	lx.line++
	lx.lineStart = at
}

func (lx *lexer) emit(kind tokKind, text string, start, line, bol int, nl bool) {
	lx.toks = append(lx.toks, token{kind: kind, text: text, line: line, off: start, bol: bol, nl: nl})
}

// isLineTerminator reports whether r ends a line in ECMAScript.
func isLineTerminator(r rune) bool {
	return r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029'
}

func isIdentStart(r rune) bool {
	return r == '$' || r == '_' || r == '\\' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') ||
		(r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_ID_Start, r)))
}

func isIdentPart(r rune) bool {
	return isIdentStart(r) || ('0' <= r && r <= '9') || r == '\u200c' || r == '\u200d' ||
		(r >= utf8.RuneSelf && (unicode.In(r, unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc) || unicode.Is(unicode.Other_ID_Continue, r)))
}

func (lx *lexer) peek(off int) rune {
	if lx.pos+off >= len(lx.src) {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(lx.src[lx.pos+off:])
	return r
}

func (lx *lexer) run() {
	nl := false
	for lx.pos < len(lx.src) {
		r, w := utf8.DecodeRuneInString(lx.src[lx.pos:])
		switch {
		case isLineTerminator(r):
			lx.pos += w
			if r == '\r' && lx.peek(0) == '\n' {
				lx.pos++
			}
			lx.newline(lx.pos)
			nl = true
			continue
		case r == ' ' || r == '\t' || r == '\v' || r == '\f' || r == '\u00a0' || r == '\ufeff' || (r >= utf8.RuneSelf && unicode.Is(unicode.Zs, r)):
			lx.pos += w
			continue
		case r == '/' && lx.peek(1) == '/':
			lx.skipLineComment()
			continue
		case r == '/' && lx.peek(1) == '*':
			if lx.skipBlockComment() {
				nl = true
			}
			continue
		}
		start, line, bol := lx.pos, lx.line, lx.lineStart
		switch {
		case r == '\'' || r == '"':
			lx.skipString(byte(r))
			lx.emit(tokString, "", start, line, bol, nl)
		case r == '`':
			lx.pos++
			lx.templateChunk()
			lx.emit(tokTemplate, "", start, line, bol, nl)
		case r == '}' && len(lx.templates) > 0 && lx.templates[len(lx.templates)-1] == lx.braces:
			lx.templates = lx.templates[:len(lx.templates)-1]
			lx.braces--
			lx.pos++
			lx.templateChunk()
			lx.emit(tokTemplate, "", start, line, bol, nl)
		case '0' <= r && r <= '9' || (r == '.' && '0' <= lx.peek(1) && lx.peek(1) <= '9'):
			lx.skipNumber()
			lx.emit(tokNumber, "", start, line, bol, nl)
		case r == '#' && isIdentStart(lx.peek(1)):
			lx.pos++
			lx.skipIdent()
			lx.emit(tokPrivate, lx.src[start:lx.pos], start, line, bol, nl)
		case isIdentStart(r):
			lx.skipIdent()
			lx.emit(tokIdent, lx.src[start:lx.pos], start, line, bol, nl)
		case r == '/' && lx.regexAllowed():
			lx.skipRegexp()
			lx.emit(tokRegexp, "", start, line, bol, nl)
		default:
			text := lx.punct()
			switch text {
			case "{":
				lx.braces++
			case "}":
				lx.braces--
			case "(":
				control := false
				if n := len(lx.toks); n > 0 && lx.toks[n-1].kind == tokIdent {
					switch lx.toks[n-1].text {
					case "if", "while", "for", "with":
						control = true
					}
				}
				lx.parens = append(lx.parens, control)
			case ")":
				lx.lastParenControl = false
				if n := len(lx.parens); n > 0 {
					lx.lastParenControl = lx.parens[n-1]
					lx.parens = lx.parens[:n-1]
				}
			}
			lx.emit(tokPunct, text, start, line, bol, nl)
		}
		nl = false
	}
}

func (lx *lexer) skipLineComment() {
	for lx.pos < len(lx.src) {
		r, w := utf8.DecodeRuneInString(lx.src[lx.pos:])
		if isLineTerminator(r) {
			return
		}
		lx.pos += w
	}
}

// skipBlockComment skips /* ... */ and reports whether it spanned a line break.
func (lx *lexer) skipBlockComment() bool {
	lx.pos += 2
	nl := false
	for lx.pos < len(lx.src) {
		if lx.src[lx.pos] == '*' && lx.pos+1 < len(lx.src) && lx.src[lx.pos+1] == '/' {
			lx.pos += 2
			return nl
		}
		r, w := utf8.DecodeRuneInString(lx.src[lx.pos:])
		lx.pos += w
		if isLineTerminator(r) {
			if r == '\r' && lx.peek(0) == '\n' {
				lx.pos++
			}
			lx.newline(lx.pos)
			nl = true
		}
	}
	return nl
}

func (lx *lexer) skipString(quote byte) {
	lx.pos++
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch {
		case c == quote:
			lx.pos++
			return
		case c == '\\':
			lx.pos++
			if lx.pos < len(lx.src) {
				r, w := utf8.DecodeRuneInString(lx.src[lx.pos:])
				lx.pos += w
				if isLineTerminator(r) { // a line continuation
					if r == '\r' && lx.peek(0) == '\n' {
						lx.pos++
					}
					lx.newline(lx.pos)
				}
			}
		default:
			r, w := utf8.DecodeRuneInString(lx.src[lx.pos:])
			if r == '\n' || r == '\r' { // unterminated; U+2028/9 are allowed in strings
				return
			}
			lx.pos += w
		}
	}
}

// templateChunk scans template text after ` or } up to the closing ` or an opening ${.
func (lx *lexer) templateChunk() {
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch {
		case c == '`':
			lx.pos++
			return
		case c == '\\':
			lx.pos += 2
			if lx.pos > len(lx.src) {
				lx.pos = len(lx.src)
			} else if lx.src[lx.pos-1] == '\n' {
				lx.newline(lx.pos)
			}
		case c == '$' && lx.pos+1 < len(lx.src) && lx.src[lx.pos+1] == '{':
			lx.pos += 2
			lx.braces++
			lx.templates = append(lx.templates, lx.braces)
			return
		default:
			r, w := utf8.DecodeRuneInString(lx.src[lx.pos:])
			lx.pos += w
			if isLineTerminator(r) {
				if r == '\r' && lx.peek(0) == '\n' {
					lx.pos++
				}
				lx.newline(lx.pos)
			}
		}
	}
}

func (lx *lexer) skipNumber() {
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch {
		case c == '.' || c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z'):
			if (c == 'e' || c == 'E') && lx.pos+1 < len(lx.src) && (lx.src[lx.pos+1] == '+' || lx.src[lx.pos+1] == '-') {
				lx.pos++
			}
			lx.pos++
		default:
			return
		}
	}
}

func (lx *lexer) skipIdent() {
	for lx.pos < len(lx.src) {
		r, w := utf8.DecodeRuneInString(lx.src[lx.pos:])
		if r == '\\' { // \uXXXX or \u{...} escape inside an identifier
			lx.pos++
			if lx.peek(0) == 'u' {
				lx.pos++
				if lx.peek(0) == '{' {
					for lx.pos < len(lx.src) && lx.src[lx.pos] != '}' {
						lx.pos++
					}
					if lx.pos < len(lx.src) {
						lx.pos++
					}
				} else {
					for i := 0; i < 4 && lx.pos < len(lx.src); i++ {
						lx.pos++
					}
				}
			}
			continue
		}
		if !isIdentPart(r) {
			return
		}
		lx.pos += w
	}
}

// regexAllowed decides whether a slash starts a regular expression, from the previous
// significant token. After an expression-ending token (identifier, literal, ")" or "]") it
// is a division; after a keyword that expects an expression, or any other punctuator, it
// starts a regular expression. "}" is ambiguous; a block end is the more common case.
func (lx *lexer) regexAllowed() bool {
	if len(lx.toks) == 0 {
		return true
	}
	prev := lx.toks[len(lx.toks)-1]
	switch prev.kind {
	case tokNumber, tokString, tokRegexp, tokPrivate:
		return false
	case tokTemplate:
		return false
	case tokIdent:
		switch prev.text {
		case "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw",
			"case", "do", "else", "yield", "await", "extends":
			return true
		}
		return false
	}
	switch prev.text {
	case ")":
		return lx.lastParenControl
	case "]", "++", "--":
		return false
	case "}":
		return true
	}
	return true
}

func (lx *lexer) skipRegexp() {
	lx.pos++ // the opening slash
	inClass := false
	for lx.pos < len(lx.src) {
		r, w := utf8.DecodeRuneInString(lx.src[lx.pos:])
		if isLineTerminator(r) { // unterminated
			return
		}
		lx.pos += w
		switch r {
		case '\\':
			if lx.pos < len(lx.src) {
				r2, w2 := utf8.DecodeRuneInString(lx.src[lx.pos:])
				if isLineTerminator(r2) {
					return
				}
				lx.pos += w2
			}
		case '[':
			inClass = true
		case ']':
			inClass = false
		case '/':
			if !inClass {
				lx.skipIdent() // flags
				return
			}
		}
	}
}

func (lx *lexer) punct() string {
	rest := lx.src[lx.pos:]
	for _, p := range [...]string{
		">>>=", "...", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "??=",
		"=>", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=",
		"/=", "%=", "&=", "|=", "^=", "<<", ">>", "**",
	} {
		if len(rest) >= len(p) && rest[:len(p)] == p {
			if p == "?." && len(rest) > 2 && '0' <= rest[2] && rest[2] <= '9' {
				continue // a ? .5 : b
			}
			lx.pos += len(p)
			return p
		}
	}
	_, w := utf8.DecodeRuneInString(rest)
	lx.pos += w
	return rest[:w]
}
