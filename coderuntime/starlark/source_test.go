package starlark

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

func TestPrepare(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"nothing to do", "x = 1\nreturn x", "x = 1\nreturn x"},
		{"await at line start", "await tools.x({})", "tools.x({})"},
		{"await and blanks at line start", "if 1:\n    await \t tools.x({})", "if 1:\n    tools.x({})"},
		{"await in an expression keeps columns", "x = await tools.x({})", "x =       tools.x({})"},
		{"await twice", "x = await await f()", "x =             f()"},
		{"await inside brackets", "x = [\n    await f(),\n]", "x = [\n    f(),\n]"},
		{"await in strings", `s = "await x" + 'await' + """await""" + '''a
await''' + r"\"await" + b'await'`, `s = "await x" + 'await' + """await""" + '''a
await''' + r"\"await" + b'await'`},
		{"await in a comment", "x = 1  # await this", "x = 1  # await this"},
		{"escaped quote then await", `s = "a\"" + await f()`, `s = "a\"" +       f()`},
		{"attribute named await", "x = y.await", "x = y.await"},
		{"longer words", "awaited = await_x + my_await", "awaited = await_x + my_await"},
		{"async def", "async def f():\n    return await g()", "def f():\n    return       g()"},
		{"async def indented", "if 1:\n    async  def f(): pass", "if 1:\n    def f(): pass"},
		{"async alone is left", "async for x in y: pass", "async for x in y: pass"},
		{"imports of predeclared modules", "import asyncio\nimport json, math  # ok\nx = 1", "pass          \npass               # ok\nx = 1"},
		{"import in a block", "if x:\n    import json\n", "if x:\n    pass       \n"},
		{"other imports are left", "import os\nimport json as j\nimport json.x\nx = 1; import json", "import os\nimport json as j\nimport json.x\nx = 1; import json"},
		{"import asyncio with a semicolon", "import asyncio; x = 1", "pass          ; x = 1"},
		{"dedent", "    x = 1\n    if x:\n        y = 2\n", "x = 1\nif x:\n    y = 2\n"},
		{"dedent keeps string lines", "    s = '''a\n    b'''\n    t = 1", "s = '''a\n    b'''\nt = 1"},
		{"dedent skips continuation lines", "\tx = [1,\n2] + \\\n3\n\ty = 1", "x = [1,\n2] + \\\n3\ny = 1"},
		{"dedent strips what blank lines have", "    x = 1\n\n  # c\n        \n    y = 2", "x = 1\n\n# c\n    \ny = 2"},
		{"common prefix of unequal indentation", "  x = 1\n y = 2", " x = 1\ny = 2"},
		{"mixed tabs and spaces share no prefix", "\tx = 1\n    y = 2", "\tx = 1\n    y = 2"},
		{"CRLF", "    x = await f()\r\n    return x\r\n", "x =       f()\r\nreturn x\r\n"},
		{"numbers with exponents", "x = 1e-5 + .5 + 0x1f\nawait f()", "x = 1e-5 + .5 + 0x1f\nf()"},
		{"unterminated string", "x = 'abc\nawait f()", "x = 'abc\nf()"},
		{"unicode identifiers", "café = await f()", "café =       f()"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, perr := prepare(tt.in)
			if perr != nil {
				t.Fatalf("prepare: %+v", perr)
			}
			if diff := cmp.Diff(tt.want, p.src); diff != "" {
				t.Errorf("prepared (-want +got):\n%s", diff)
			}
			checkColumns(t, tt.in, p)
		})
	}
}

func TestPrepareRejectsFStrings(t *testing.T) {
	for _, in := range []string{`f"x"`, `x = F'{y}'`, "x = 1\ny = rf'''\n'''", `fr"a"`} {
		if _, perr := prepare(in); perr == nil || !strings.HasPrefix(perr.msg, "f-strings are not supported in Starlark") {
			t.Errorf("prepare(%q) = %+v", in, perr)
		}
	}
	// f inside a string, or an identifier ending in f before a string, is not an f-string.
	for _, in := range []string{`x = "f'"`, `x = elif_ + 'a'`, `x = if_("a")`} {
		if _, perr := prepare(in); perr != nil {
			t.Errorf("prepare(%q) = %+v", in, perr)
		}
	}
}

// TestPositionsMapToTheProgram compares error positions of rewritten programs with those
// of the same program written without the accepted Python syntax.
func TestPositionsMapToTheProgram(t *testing.T) {
	tests := []struct {
		program, plain string
		shift          int // columns the plain program's error is to the left
	}{
		{"x = await f(]", "x =       f(]", 0},
		{"await   f(]", "f(]", 8},
		{"    y = 1\n    await f(]", "y = 1\nf(]", 10},
		{"\tasync def f(]", "def f(]", 7},
		{"import json; x = (]", "pass       ; x = (]", 0},
		{"x = 1\n  await f(1)\n", "x = 1\n  f(1)\n", 6},
	}
	for _, tt := range tests {
		_, err := compileProgram(tt.program, func(string) bool { return true })
		_, plain := compileProgram(tt.plain, func(string) bool { return true })
		if err == nil || plain == nil {
			t.Fatalf("%q: want errors, got %v and %v", tt.program, err, plain)
		}
		line, col := errorPosition(t, plain.Error())
		want := programFile + ":" + line + ":" + itoa(int32(atoi(t, col)+tt.shift))
		if got := err.Error(); !strings.HasPrefix(got, want+":") {
			t.Errorf("%q: error %q, want position %s (plain program: %q)", tt.program, got, want, plain)
		}
	}
}

func errorPosition(t *testing.T, msg string) (line, col string) {
	t.Helper()
	rest, ok := strings.CutPrefix(msg, programFile+":")
	parts := strings.SplitN(rest, ":", 3)
	if !ok || len(parts) < 3 {
		t.Fatalf("no position in %q", msg)
	}
	return parts[0], parts[1]
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// checkColumns verifies the column map: every character of the prepared text that was
// copied from the program maps back to that same character, and the line count is kept.
func checkColumns(t interface {
	Helper()
	Fatalf(format string, args ...any)
}, in string, p prepared) {
	t.Helper()
	inLines, outLines := splitLines(in), splitLines(p.src)
	if len(inLines) != len(outLines) {
		t.Fatalf("prepare changed the line count from %d to %d:\n%q\n%q", len(inLines), len(outLines), in, p.src)
	}
	for i, out := range outLines {
		orig := inLines[i]
		for j, r := range out {
			col := p.cols.original(int32(i+1), int32(j+1))
			if col < 1 || int(col) > len(orig) {
				t.Fatalf("line %d column %d maps to column %d, outside %q", i+1, j+1, col, string(orig))
			}
			if o := orig[col-1]; o != r && !(strings.ContainsRune(" pas", r) && strings.ContainsRune("await asyncio json math import,\t", o)) {
				t.Fatalf("line %d column %d is %q but maps to column %d, %q, of %q", i+1, j+1, r, col, o, string(orig))
			}
		}
	}
}

// splitLines splits text into lines of runes the way the Starlark scanner counts them:
// \n, \r\n and \r end a line.
func splitLines(s string) [][]rune {
	var lines [][]rune
	var cur []rune
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		i += w
		switch r {
		case '\r':
			if i < len(s) && s[i] == '\n' {
				i++
			}
			fallthrough
		case '\n':
			lines = append(lines, cur)
			cur = nil
		default:
			cur = append(cur, r)
		}
	}
	return append(lines, cur)
}

// programFragments are pieces random programs are made of: the rewritten words, strings and
// comments that hide them, brackets, continuations, indentation and line ends.
var programFragments = []string{
	"await ", "await", "async def ", "async ", "import json", "import asyncio, math", "import os",
	"x", "f(1)", " = ", ".await", "'await'", `"a\"await"`, "'''\nawait\n'''", `"""x"""`, "# await\n",
	"(", ")", "[", "]", "\\\n", "\n", "\r\n", "\r", "    ", "\t", " ", ";", "é", "1e-5", "r'\\'", "b'x'",
}

func TestPrepareProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOf(rapid.SampledFrom(programFragments)).Draw(t, "parts")
		in := strings.Join(parts, "")
		p, perr := prepare(in)
		if perr != nil {
			t.Fatalf("prepare(%q): %+v", in, perr)
		}
		checkColumns(t, in, p)
	})
}
