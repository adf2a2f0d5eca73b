package rules

import (
	"fmt"
	"path"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Limits of the command analysis. A command beyond them is treated as unresolvable, which
// only ever makes the rules stricter.
const (
	// maxShellDepth bounds how deeply shell strings run by shell strings are followed
	// (bash -c 'sh -c "eval …"').
	maxShellDepth = 8
	// maxParses bounds the shell strings parsed for one command, nested or not.
	maxParses = 64
	// maxUnwrap bounds the wrappers unwrapped from one simple command (nice nohup env …).
	maxUnwrap = 32
	// maxOpeners bounds the "(", "{" and "`" of one shell string: the parser's recursion
	// (and time) grows with how deeply they nest, and a command nesting deeper than a
	// person ever writes could otherwise exhaust the stack.
	maxOpeners = 2048
)

// piece is one form of one simple command the shell may run: the command as written, and
// each command found inside it by unwrapping a wrapper such as env or sudo.
type piece struct {
	text     string // the words as written (quotes kept) and the redirections, space-separated
	unquoted string // the same with quotes and backslash escapes removed
	base     string // unquoted with the program's directory removed ("/bin/rm x" is "rm x"); "" when the same
	redirect bool   // writes output to a file (not /dev/null), here or in an enclosing command
	open     bool   // more arguments are appended at run time (the command of xargs)
	inner    bool   // the innermost form: the program that actually runs, which allow judges
}

// analysis is what a command line runs, as far as it can be known without running it.
type analysis struct {
	pieces []piece
	// unresolved says why part of the command cannot be known statically ("" when all of
	// it can): a program name computed at run time, eval of a computed string, a script
	// file or standard input run by a shell, source, a parse error.
	unresolved string
	parses     int
	parsers    *sync.Pool // of *syntax.Parser; nil: a new parser for each string
}

// commandCache remembers the analyses of recent commands: the pre-execute hook and the
// guard judge every call, and agents repeat commands. It holds at most two generations of
// cacheSize commands of at most cacheMaxLen bytes; an analysis is never modified once made,
// so it is shared freely.
type commandCache struct {
	mu        sync.Mutex
	cur, prev map[string]*analysis
	parsers   sync.Pool // a parser is not safe for concurrent use; Rules is
}

const (
	cacheSize   = 256
	cacheMaxLen = 4096
)

func newCommandCache() *commandCache {
	cc := &commandCache{cur: map[string]*analysis{}}
	cc.parsers.New = func() any { return newParser() }
	return cc
}

func newParser() *syntax.Parser { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }

// analyse returns the analysis of cmd, from the cache when it is there.
func (cc *commandCache) analyse(cmd string) *analysis {
	if len(cmd) > cacheMaxLen {
		return analyseWith(cmd, &cc.parsers)
	}
	cc.mu.Lock()
	a, ok := cc.cur[cmd]
	if !ok {
		if a, ok = cc.prev[cmd]; ok {
			cc.put(cmd, a)
		}
	}
	cc.mu.Unlock()
	if ok {
		return a
	}
	a = analyseWith(cmd, &cc.parsers)
	cc.mu.Lock()
	cc.put(cmd, a)
	cc.mu.Unlock()
	return a
}

// put adds an analysis, starting a new generation when the current one is full.
func (cc *commandCache) put(cmd string, a *analysis) {
	if len(cc.cur) >= cacheSize {
		cc.prev, cc.cur = cc.cur, make(map[string]*analysis, cacheSize)
	}
	cc.cur[cmd] = a
}

// analyseCommand parses a shell command line and returns every simple command it may run
// (see the package documentation).
func analyseCommand(cmd string) *analysis { return analyseWith(cmd, nil) }

// analyseWith is analyseCommand taking its parsers from pool (nil: new ones).
func analyseWith(cmd string, pool *sync.Pool) *analysis {
	a := &analysis{parsers: pool}
	if stmts, ok := plainProgram(cmd); ok {
		for _, st := range stmts {
			a.command(st.words, st.redirs, st.redirect, 0)
		}
		return a
	}
	a.parse(cmd, 0)
	return a
}

// plainStmt is one simple command of a plain program.
type plainStmt struct {
	words    []word
	redirs   string
	redirect bool
}

// plainProgram reads the most common commands without the parser, exactly as the parser
// would: simple commands of plain words (letters, digits and - _ . / , : = @ % + ^),
// joined by ; & | && ||, with redirections > >> < >& <& to plain words (2>&1, >/dev/null).
// It returns false for anything else — another character, a reserved word first, a
// command without words, an operator out of place — and the parser reads that.
func plainProgram(cmd string) ([]plainStmt, bool) {
	var out []plainStmt
	var cur plainStmt
	var redirs []string
	expectWord := false // an operator ended the last command: a command must follow
	wordEnd := -1       // where the last word of the command ends in cmd
	end := func() bool {
		for len(cur.words) > 0 && isShellAssignment(cur.words[0].val) {
			cur.words = cur.words[1:]
		}
		if len(cur.words) == 0 || reserved[cur.words[0].val] {
			return false
		}
		cur.redirs = strings.Join(redirs, " ")
		out = append(out, cur)
		cur, redirs = plainStmt{}, nil
		return true
	}
	i := 0
	for i < len(cmd) {
		c := cmd[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c == ';' || c == '&' || c == '|':
			op := cmd[i : i+1]
			if i+1 < len(cmd) && (cmd[i+1] == c || c == '|' && cmd[i+1] == '&' || c == '&' && cmd[i+1] == '>') {
				op = cmd[i : i+2]
			}
			if op == ";;" || op == "|&" || op == "&>" || !end() {
				return nil, false
			}
			i += len(op)
			expectWord = op != ";" && op != "&"
		case c == '>' || c == '<':
			op := cmd[i : i+1]
			if i+1 < len(cmd) && (c == '>' && cmd[i+1] == '>' || cmd[i+1] == '&') {
				op = cmd[i : i+2]
			}
			if i+len(op) < len(cmd) && strings.IndexByte("<>|", cmd[i+len(op)]) >= 0 {
				return nil, false // <<, <<<, <>, >|, >>& and the like
			}
			// A word of digits right before the operator is the descriptor it redirects.
			n := ""
			if k := len(cur.words) - 1; k >= 0 && wordEnd == i && isDigits(cur.words[k].val) {
				n, cur.words = cur.words[k].val, cur.words[:k]
			}
			i += len(op)
			for i < len(cmd) && (cmd[i] == ' ' || cmd[i] == '\t') {
				i++
			}
			j := i
			for j < len(cmd) && isPlain(cmd[j]) {
				j++
			}
			if j == i {
				return nil, false
			}
			target := cmd[i:j]
			i = j
			r := n + op
			if op == ">&" || op == "<&" {
				r += target
				if op == ">&" && target != "-" && target != "/dev/null" && !isDigits(target) {
					cur.redirect = true
				}
			} else {
				r += " " + target
				if c == '>' && target != "/dev/null" {
					cur.redirect = true
				}
			}
			redirs = append(redirs, r)
		case isPlain(c):
			j := i
			for j < len(cmd) && isPlain(cmd[j]) {
				j++
			}
			cur.words = append(cur.words, word{raw: cmd[i:j], val: cmd[i:j], static: true})
			expectWord = false
			i, wordEnd = j, j
		default:
			return nil, false
		}
	}
	if expectWord {
		return nil, false // "a &&" asks for more input
	}
	if len(cur.words) > 0 || len(redirs) > 0 {
		if !end() {
			return nil, false
		}
	}
	return out, true
}

// isPlain reports whether c is a character with no meaning to the shell.
func isPlain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_./,:=@%+^", c) >= 0
}

// isShellAssignment reports whether a word is a shell assignment NAME=value or NAME+=value.
func isShellAssignment(w string) bool {
	return isAssignment(w) || isAssignment(strings.Replace(w, "+=", "=", 1))
}

// reserved are the words that, first in a command, make it something other than a simple
// command (or a syntax error): the shell's reserved words and its declaration builtins.
var reserved = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "case": true, "esac": true,
	"for": true, "select": true, "while": true, "until": true, "do": true, "done": true, "in": true,
	"function": true, "time": true, "coproc": true,
	"declare": true, "local": true, "export": true, "readonly": true, "typeset": true, "nameref": true, "let": true,
}

// unresolvable records why the command cannot be resolved statically (the first reason
// is kept).
func (a *analysis) unresolvable(format string, args ...any) {
	if a.unresolved == "" {
		a.unresolved = fmt.Sprintf(format, args...)
	}
}

// parse adds the simple commands of the shell program src, run at the given nesting depth.
func (a *analysis) parse(src string, depth int) {
	if depth > maxShellDepth {
		a.unresolvable("shell strings are nested more than %d deep", maxShellDepth)
		return
	}
	if a.parses >= maxParses {
		a.unresolvable("it runs more than %d shell strings", maxParses)
		return
	}
	a.parses++
	if n := strings.Count(src, "(") + strings.Count(src, "{") + strings.Count(src, "`"); n > maxOpeners {
		a.unresolvable("it has more than %d of the characters ( { ` that nest", maxOpeners)
		return
	}
	var p *syntax.Parser
	if a.parsers != nil {
		p = a.parsers.Get().(*syntax.Parser)
		defer a.parsers.Put(p)
	} else {
		p = newParser()
	}
	f, err := p.Parse(strings.NewReader(src), "")
	if err != nil {
		a.unresolvable("it does not parse as a shell command (%v)", err)
		return
	}
	// redirect[i] says whether the node at depth i of the walk, or one enclosing it in the
	// same command, writes its output to a file.
	redirect := []bool{false}
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			redirect = redirect[:len(redirect)-1]
			return true
		}
		r := redirect[len(redirect)-1]
		switch n := n.(type) {
		case *syntax.Stmt:
			r = r || writesFile(src, n.Redirs)
			a.stmt(src, n, r, depth)
		case *syntax.CmdSubst, *syntax.ProcSubst:
			r = false // their output is captured, not written where the command's goes
		}
		redirect = append(redirect, r)
		return true
	})
}

// stmt adds the pieces of one statement. The statements nested in it (bodies, command and
// process substitutions) are reached by the walk in parse.
func (a *analysis) stmt(src string, s *syntax.Stmt, redirect bool, depth int) {
	redirs := redirections(src, s.Redirs)
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		if len(c.Args) == 0 {
			if redirs != "" { // "> file" alone truncates the file
				a.pieces = append(a.pieces, piece{text: redirs, unquoted: redirs, redirect: redirect, inner: true})
			}
			return // assignments alone: their substitutions are walked
		}
		words := make([]word, len(c.Args))
		for i, w := range c.Args {
			words[i] = wordOf(src, w)
		}
		a.command(words, redirs, redirect, depth)
	case *syntax.DeclClause, *syntax.LetClause, *syntax.TestClause, *syntax.ArithmCmd:
		// export, declare, let, [[ ]] and (( )) run no program, but a rule may name them
		// and allow must see them.
		text := joinSpace(normalizeSpace(source(src, c)), redirs)
		a.pieces = append(a.pieces, piece{text: text, unquoted: text, redirect: redirect, inner: true})
	case nil:
		if redirs != "" {
			a.pieces = append(a.pieces, piece{text: redirs, unquoted: redirs, redirect: redirect, inner: true})
		}
	}
}

// word is one word of a simple command.
type word struct {
	raw    string // as written
	val    string // with quotes and escapes removed; expansions kept as written
	static bool   // val is exactly the word the shell passes: no expansion, glob or brace
}

// wordOf reads a word of src.
func wordOf(src string, w *syntax.Word) word {
	out := word{raw: source(src, w), static: true}
	if len(w.Parts) == 1 { // the common case: one literal, often with nothing to unescape
		if lit, ok := w.Parts[0].(*syntax.Lit); ok {
			out.val, out.static = unescape(lit.Value, false), !hasPattern(lit.Value)
			return out
		}
	}
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if hasPattern(p.Value) {
				out.static = false // a glob or brace expansion
			}
			b.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			if p.Dollar && strings.ContainsRune(p.Value, '\\') {
				out.static = false // $'\x72m' is "rm": escapes are decoded at run time
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, in := range p.Parts {
				if lit, ok := in.(*syntax.Lit); ok {
					b.WriteString(unescape(lit.Value, true))
					continue
				}
				out.static = false
				b.WriteString(source(src, in))
			}
		default: // parameter, command, arithmetic and process substitutions, extended globs
			out.static = false
			b.WriteString(source(src, part))
		}
	}
	out.val = b.String()
	return out
}

// hasPattern reports whether an unquoted literal may expand at run time: a glob ("*", "?",
// "[") or a brace expansion ("{a,b}", "{1..3}").
func hasPattern(lit string) bool {
	for i := 0; i < len(lit); i++ {
		switch lit[i] {
		case '\\':
			i++
		case '*', '?', '[':
			return true
		case '{':
			if strings.ContainsRune(lit[i:], '}') && (strings.ContainsRune(lit[i:], ',') || strings.Contains(lit[i:], "..")) {
				return true
			}
		}
	}
	return false
}

// unescape removes the backslash escapes of a literal: every one outside double quotes,
// those of $ ` " \ inside them.
func unescape(s string, quoted bool) string {
	if !strings.ContainsRune(s, '\\') {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (!quoted || strings.IndexByte("$`\"\\", s[i+1]) >= 0) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// source returns the text of node n in src, line continuations removed.
func source(src string, n syntax.Node) string {
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	if start < 0 || end > len(src) || start > end {
		return ""
	}
	s := src[start:end]
	if strings.Contains(s, "\\\n") {
		s = strings.ReplaceAll(s, "\\\n", "")
	}
	return s
}

// redirections renders a statement's redirections as written, space-separated (here-document
// bodies left out).
func redirections(src string, rs []*syntax.Redirect) string {
	if len(rs) == 0 {
		return ""
	}
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		s := r.Op.String()
		if r.N != nil {
			s = r.N.Value + s
		}
		if r.Word != nil {
			w := source(src, r.Word)
			if r.Op == syntax.DplIn || r.Op == syntax.DplOut {
				s += w // "2>&1"
			} else {
				s += " " + w
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// writesFile reports whether a redirection writes output to a file other than /dev/null.
func writesFile(src string, rs []*syntax.Redirect) bool {
	for _, r := range rs {
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.RdrAllClob,
			syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
		case syntax.DplOut: // ">&2" duplicates a descriptor; ">&file" writes a file
			if w := wordOf(src, r.Word); w.static && (w.val == "-" || isDigits(w.val)) {
				continue
			}
		default:
			continue
		}
		if w := wordOf(src, r.Word); !w.static || w.val != "/dev/null" {
			return true
		}
	}
	return false
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func joinSpace(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " " + b
}

// command adds the forms of one simple command: as written, then the command each wrapper
// runs, down to the program that actually runs.
func (a *analysis) command(words []word, redirs string, redirect bool, depth int) {
	open := false
	for range maxUnwrap {
		if len(words) == 0 {
			return
		}
		a.pieces = append(a.pieces, newPiece(words, redirs, redirect, open))
		last := len(a.pieces) - 1
		prog := words[0]
		if !prog.static {
			a.unresolvable("the program %s is computed at run time", prog.raw)
			return
		}
		name := prog.val
		if strings.ContainsRune(name, '/') {
			name = path.Base(name)
		}
		next, how, why := unwrap(name, words[1:])
		switch how {
		case runsNothing:
			a.pieces[last].inner = true
			return
		case runsCommand:
			words = next
			if name == "xargs" {
				open = true
			}
			if len(words) == 0 { // "nohup", "env" alone: the wrapper is the program
				a.pieces[last].inner = true
				return
			}
			if w := words[0]; w.static && strings.HasPrefix(w.val, "-") {
				a.unresolvable("%s is given an option the rules do not know (%s)", prog.raw, w.raw)
				return
			}
		case runsShell:
			src, ok := shellString(next)
			if !ok {
				a.unresolvable("%s runs a string computed at run time", prog.raw)
				return
			}
			a.parse(src, depth+1)
			return
		case runsBoth: // find -exec: find itself runs, and so does each command it executes
			a.pieces[last].inner = true
			for _, cmd := range findCommands(words[1:]) {
				a.command(cmd, "", redirect, depth)
			}
			return
		case runsUnknown:
			a.unresolvable("%s: %s", prog.raw, why)
			return
		}
	}
	a.unresolvable("more than %d wrapper commands", maxUnwrap)
}

// shellString returns the words of a shell string joined by spaces (eval joins its
// arguments so), or false when one of them is computed at run time.
func shellString(words []word) (string, bool) {
	vals := make([]string, len(words))
	for i, w := range words {
		if !w.static {
			return "", false
		}
		vals[i] = w.val
	}
	return strings.Join(vals, " "), true
}

// newPiece renders one form of a simple command.
func newPiece(words []word, redirs string, redirect, open bool) piece {
	p := piece{redirect: redirect, open: open}
	p.text = render(words, func(w word) string { return w.raw }, "", redirs)
	p.unquoted = render(words, func(w word) string { return w.val }, "", redirs)
	if p.unquoted == p.text {
		p.unquoted = p.text // share the string
	}
	if prog := words[0].val; words[0].static && strings.ContainsRune(prog, '/') {
		p.base = render(words[1:], func(w word) string { return w.val }, path.Base(prog), redirs)
	}
	return p
}

// render joins first (when not empty), one text of each word and redirs with single spaces.
func render(words []word, text func(word) string, first, redirs string) string {
	n := len(first) + len(redirs) + len(words) + 1
	for _, w := range words {
		n += len(text(w))
	}
	var b strings.Builder
	b.Grow(n)
	if first != "" {
		b.WriteString(first)
	}
	for _, w := range words {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(text(w))
	}
	if redirs != "" {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(redirs)
	}
	return b.String()
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
		case c == '\\' && !single && i+1 < len(s):
			b.WriteByte(c)
			i++
			c = s[i]
		case c == '\'' && !double:
			single = !single
		case c == '"' && !single:
			double = !double
		}
		b.WriteByte(c)
	}
	return b.String()
}

// isBlank reports whether c separates words (a newline separates commands instead).
func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

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
