package starlark

import (
	"errors"
	"strconv"
	"strings"

	"go.starlark.net/resolve"
	star "go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// programFile is the file name positions in messages use.
const programFile = "program.star"

// mainName is the function the program body becomes. It is a reserved binding global
// (coderuntime.IsReservedGlobal), so no binding can collide with it.
const mainName = "__dsh_main__"

// programName is how tracebacks name the program body.
const programName = "<program>"

// dialect returns the Starlark dialect programs are written in: while loops, recursion
// and the set type are enabled, as a Python-flavoured program expects them.
func dialect() *syntax.FileOptions {
	return &syntax.FileOptions{
		Set:             true,
		While:           true,
		TopLevelControl: true,
		GlobalReassign:  true,
		Recursion:       true,
	}
}

// compiled is a program ready to run, with the column map of its source.
type compiled struct {
	prog *star.Program
	cols columnMap
}

// compileProgram prepares, parses, wraps and resolves a program body. The body is parsed as
// a file, so that indentation, continuation lines and multi-line strings are the parser's
// business and keep their meaning; its statements then become the body of a function
// (def __dsh_main__(): <statements>), which is what makes a top-level return legal and
// makes the program's variables locals of one call. isPredeclared reports the names the
// run binds. The error, if any, is the message the run fails with.
func compileProgram(program string, isPredeclared func(string) bool) (compiled, error) {
	p, perr := prepare(program)
	if perr != nil {
		return compiled{}, errors.New(programFile + ":" + itoa(perr.line) + ":" + itoa(perr.col) + ": " + perr.msg)
	}
	f, err := dialect().Parse(programFile, p.src, 0)
	if err != nil {
		return compiled{}, p.cols.syntaxError(err)
	}
	start := syntax.MakePosition(&f.Path, 1, 1)
	if len(f.Stmts) == 0 {
		f.Stmts = []syntax.Stmt{&syntax.BranchStmt{Token: syntax.PASS, TokenPos: start}}
	}
	f.Stmts = []syntax.Stmt{&syntax.DefStmt{
		Def:    start,
		Name:   &syntax.Ident{NamePos: start, Name: mainName},
		Lparen: start,
		Rparen: start,
		Body:   f.Stmts,
	}}
	prog, err := star.FileProgram(f, isPredeclared)
	if err != nil {
		return compiled{}, p.cols.syntaxError(err)
	}
	return compiled{prog: prog, cols: p.cols}, nil
}

// syntaxError renders a parse or resolve error at program positions, with a hint when the
// failure is Python syntax that Starlark lacks.
func (m columnMap) syntaxError(err error) error {
	var list resolve.ErrorList
	var one syntax.Error
	var lines []string
	var hint string
	add := func(pos syntax.Position, msg string) {
		lines = append(lines, m.position(pos)+": "+msg)
		if hint == "" {
			hint = syntaxHint(msg)
		}
	}
	switch {
	case errors.As(err, &list):
		for _, e := range list {
			add(e.Pos, e.Msg)
		}
	case errors.As(err, &one):
		add(one.Pos, one.Msg)
	default:
		lines = append(lines, err.Error())
	}
	if hint != "" {
		lines = append(lines, hint)
	}
	return errors.New(strings.Join(lines, "\n"))
}

// position renders a position of the prepared text as "program.star:line:col" of the
// program.
func (m columnMap) position(pos syntax.Position) string {
	if !pos.IsValid() {
		return programFile
	}
	s := programFile + ":" + itoa(pos.Line)
	if pos.Col > 0 {
		s += ":" + itoa(m.original(pos.Line, pos.Col))
	}
	return s
}

// syntaxHint explains a parser message caused by Python syntax that Starlark does not have.
func syntaxHint(msg string) string {
	if name, ok := strings.CutPrefix(msg, "undefined: "); ok {
		return undefinedHint(name)
	}
	rest, ok := strings.CutPrefix(msg, "got ")
	if !ok {
		return ""
	}
	token, _, ok := strings.Cut(rest, ",")
	if !ok {
		return ""
	}
	switch token {
	case "try", "except", "finally":
		return "Starlark has no try/except: a failed tool call stops the program."
	case "raise":
		return "Starlark has no raise: call fail(\"message\") to stop the program with an error."
	case "class":
		return "Starlark has no classes: use dicts, lists and functions."
	case "import", "from":
		return "Starlark has no import: asyncio, json and math are predeclared (`import asyncio`, " +
			"`import json` and `import math` are accepted and do nothing); nothing else can be imported."
	case "with":
		return "Starlark has no with statement."
	case "yield":
		return "Starlark has no generators: build and return a list."
	case "del":
		return "Starlark has no del statement: use dict.pop(key) or list.pop(index)."
	case "global", "nonlocal":
		return "Starlark has no global or nonlocal statement: return values instead."
	case "is":
		return "Starlark has no `is` operator: compare with == (x == None)."
	case "async":
		return "Only `async def` and `await <expr>` are accepted (calls complete before they return); " +
			"there is no async for or async with."
	case "await":
		return "`await` is accepted before an expression only."
	case "'**'":
		return "Starlark has no ** operator and no {**d} unpacking: use math.pow(x, y) and dict(a, **b)."
	case "'@'":
		return "Starlark has no decorators."
	case "':'":
		return "Starlark has no type annotations: write `x = 1` and `def f(x):`."
	}
	return ""
}

// undefinedHint explains an undefined name that is a Python built-in or module Starlark
// does not have.
func undefinedHint(name string) string {
	var advice string
	switch name {
	case "round":
		advice = "use math.round(x), math.floor(x) or int(x)"
	case "isinstance", "issubclass":
		advice = `compare type(x) == "int" (or "float", "string", "list", "dict", "tuple", "bool", "NoneType")`
	case "map", "filter":
		advice = "use a list comprehension"
	case "pow", "divmod":
		advice = "use math.pow(x, y), // and %"
	case "hex", "bin", "oct", "format":
		advice = `use an f-string such as f"{x:x}", or "%x" % x`
	case "iter", "next":
		advice = "loop with for, or index the list"
	case "frozenset":
		advice = "use set(...)"
	case "Exception", "BaseException", "ValueError", "TypeError", "KeyError", "IndexError", "RuntimeError":
		advice = "Starlark has no exceptions; fail(\"message\") stops the program"
	case "open", "input":
		advice = "reach files and the outside world through the tools"
	case "object", "super", "property", "staticmethod", "classmethod":
		advice = "Starlark has no classes"
	case "eval", "exec", "compile", "globals", "locals", "vars", "id", "callable", "__import__":
	case "re", "os", "sys", "time", "datetime", "random", "itertools", "functools", "collections", "typing", "pathlib", "subprocess":
		return "Starlark has no import: only asyncio, json and math are predeclared."
	default:
		return ""
	}
	hint := "Python's " + name + " is not available in Starlark"
	if advice != "" {
		hint += ": " + advice
	}
	return hint + "."
}

// itoa formats a line or column number.
func itoa(n int32) string { return strconv.Itoa(int(n)) }
