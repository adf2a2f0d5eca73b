// Package tsstrip turns a TypeScript program body into JavaScript by erasing its types.
//
// A Code Mode program is the body of an async function, so top-level await and return are
// allowed. Strip wraps the body in such a function, lets esbuild (github.com/evanw/esbuild,
// loader "ts", no bundling, no lowering) remove the type syntax, and returns the body
// again. Only erasable syntax is accepted: constructs that TypeScript compiles into runtime
// code — enum declarations, namespace and module declarations with bodies, constructor
// parameter properties, decorators and `import x =` aliases — are rejected with an Error
// naming the construct and its position, as TypeScript's erasableSyntaxOnly and Node's
// strip-only mode do.
package tsstrip

import (
	"fmt"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// The function the body is wrapped in for the transform. The prefix ends with a newline so
// that line n of the program is line n+1 of the wrapped source.
const (
	wrapPrefix = "async function __dsh_program__() {\n"
	wrapSuffix = "\n}"
)

// Error reports a program that cannot be type-stripped: a syntax error or a non-erasable
// construct. Line and Column are 1-based positions in the program (0 when unknown).
type Error struct {
	Line      int
	Column    int
	Construct string // the non-erasable construct, "" for a syntax error
	Message   string // what is wrong, without the position
}

// Error renders the error for a model to read, e.g.
// "TypeScript enum declarations are not supported (line 2, column 1): only erasable type
// syntax is allowed; use a union of literal types or a plain object instead".
func (e *Error) Error() string {
	pos := ""
	if e.Line > 0 {
		pos = fmt.Sprintf(" (line %d, column %d)", e.Line, e.Column)
	}
	if e.Construct == "" {
		return "SyntaxError: " + e.Message + pos
	}
	return "TypeScript " + e.Construct + " are not supported" + pos + ": " + e.Message
}

// Strip returns program, the body of an async TypeScript function, with its types erased.
// The result is the body of an equivalent JavaScript async function. It returns an *Error
// for a syntax error or a non-erasable construct.
func Strip(program string) (string, error) {
	code, _, err := strip(program, false)
	return code, err
}

// strip is Strip, optionally with esbuild's source map of the wrapped program.
func strip(program string, sourceMap bool) (string, []byte, error) {
	if err := CheckErasable(program); err != nil {
		return "", nil, err
	}
	opts := api.TransformOptions{
		Loader:     api.LoaderTS,
		Target:     api.ESNext,
		Sourcefile: "program.ts",
		LogLevel:   api.LogLevelSilent,
		Charset:    api.CharsetUTF8,
		// Keep the program's class-field semantics as written (ES2022 [[Define]]).
		TsconfigRaw: `{"compilerOptions":{"useDefineForClassFields":true}}`,
	}
	if sourceMap {
		opts.Sourcemap = api.SourceMapExternal
	}
	res := api.Transform(wrapPrefix+program+wrapSuffix, opts)
	if len(res.Errors) > 0 {
		return "", nil, transformError(res.Errors[0], program)
	}
	code := string(res.Code)
	const outPrefix = "async function __dsh_program__() {\n"
	if code == "async function __dsh_program__() {\n}\n" {
		return "", res.Map, nil
	}
	if !strings.HasPrefix(code, outPrefix) || !strings.HasSuffix(code, "\n}\n") {
		return "", nil, &Error{Message: "the program is not a valid async function body"}
	}
	return code[len(outPrefix) : len(code)-len("}\n")], res.Map, nil
}

// transformError converts an esbuild message into an *Error positioned in the program.
func transformError(m api.Message, program string) *Error {
	e := &Error{Message: m.Text}
	if m.Location == nil {
		return e
	}
	line := m.Location.Line - 1 // the wrapper's first line
	lines := strings.Count(program, "\n") + 1
	switch {
	case line < 1:
		line, e.Column = 1, 1
	case line > lines:
		// The error is in the wrapper's closing brace: the program ended too early.
		line = lines
		last := program[strings.LastIndexByte(program, '\n')+1:]
		e.Column = len([]rune(last)) + 1
		e.Message = strings.ReplaceAll(e.Message, `"}"`, "end of the program")
	default:
		e.Column = len([]rune(truncateBytes(m.Location.LineText, m.Location.Column))) + 1
	}
	e.Line = line
	return e
}

func truncateBytes(s string, n int) string {
	if n > len(s) {
		return s
	}
	if n < 0 {
		return ""
	}
	return s[:n]
}
