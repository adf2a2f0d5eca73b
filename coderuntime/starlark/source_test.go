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

func TestPrepareFStrings(t *testing.T) {
	tests := []struct{ in, want string }{
		{`x = f"a{b}c"`, `x = __dsh_ƒstring__("a", (b), "", "", "c")`},
		{`f''`, `__dsh_ƒstring__('')`},
		{`F"{x!r:>10} {y=}"`, `__dsh_ƒstring__("", (x), "r", ">10", " " + "y=", (y), "r", "", "")`},
		{`rf'\d{n:03}'`, `__dsh_ƒstring__(r'\d', (n), "", "03", r'')`},
		{"f'''{{\n{x}\n'''", "__dsh_ƒstring__('''{\n''', (x), \"\", \"\", '''\n''')"},
		{`f"{await tools.x({'k': f'{y}'})}"`, `__dsh_ƒstring__("", (      tools.x({'k': __dsh_ƒstring__('', (y), "", "", '')})), "", "", "")`},
		{`f"{d["k"]}"`, `__dsh_ƒstring__("", (d["k"]), "", "", "")`},
		{`f"a\{x}\\{y}"`, `__dsh_ƒstring__("a" + "\\", (x), "", "", "\\", (y), "", "", "")`},
		{`f"{a != b}{c == d}{e=}"`, `__dsh_ƒstring__("", (a != b), "", "", "", (c == d), "", "", "" + "e=", (e), "r", "", "")`},
	}
	for _, tt := range tests {
		p, perr := prepare(tt.in)
		if perr != nil {
			t.Errorf("prepare(%q): %+v", tt.in, perr)
			continue
		}
		if p.src != tt.want {
			t.Errorf("prepare(%q) =\n%s\nwant\n%s", tt.in, p.src, tt.want)
		}
		checkColumns(t, tt.in, p)
	}
}

func TestPrepareFStringErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`x = f"{}"`, "1:7: f-string: empty expression not allowed"},
		{`x = f"{ }"`, "1:7: f-string: empty expression not allowed"},
		{`f"{x!z}"`, "1:3: f-string: invalid conversion character: expected 's', 'r', or 'a'"},
		{`f"{x!r=}"`, "1:3: f-string: expecting '}'"},
		{`f"a}"`, "1:4: f-string: single '}' is not allowed"},
		{`f"{x:{w}}"`, "1:3: f-string: nested replacement fields in a format spec are not supported"},
		{"x = 1\ny = f'abc", "2:5: f-string: unterminated string"},
		{"f'''abc", "1:1: f-string: unterminated string"},
		{`f"{x"`, "1:3: f-string: expecting '}'"},
		{`f"{x # c}"`, "1:3: f-string: the expression part cannot include '#'"},
		{"f'''{x=\n}'''", "1:5: f-string: a self-documenting expression must be on one line"},
		{"f'''{x:>\n}'''", "1:5: f-string: a format spec cannot contain a line break"},
	}
	for _, tt := range tests {
		_, perr := prepare(tt.in)
		if perr == nil {
			t.Errorf("prepare(%q) succeeded, want %s", tt.in, tt.want)
			continue
		}
		if got := itoa(perr.line) + ":" + itoa(perr.col) + ": " + perr.msg; got != tt.want {
			t.Errorf("prepare(%q) = %s, want %s", tt.in, got, tt.want)
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
	edited := editedRunes(in, p.edits)
	for i, out := range outLines {
		orig := inLines[i]
		for j, r := range out {
			col := p.cols.original(int32(i+1), int32(j+1))
			if col < 1 || int(col) > len(orig)+1 {
				t.Fatalf("line %d column %d maps to column %d, outside %q", i+1, j+1, col, string(orig))
			}
			if int(col) == len(orig)+1 {
				if !edited[i][col-1] {
					t.Fatalf("line %d column %d is %q but maps past the end of %q", i+1, j+1, r, string(orig))
				}
				continue
			}
			if o := orig[col-1]; o != r && !edited[i][col-1] {
				t.Fatalf("line %d column %d is %q but maps to column %d, %q, of %q", i+1, j+1, r, col, o, string(orig))
			}
		}
	}
}

// editedRunes marks, per line, the runes of in that edits removed or replaced; each line
// has one more mark, for the line break (or the end of the text).
func editedRunes(in string, edits []edit) [][]bool {
	var marks [][]bool
	var cur []bool
	k := 0
	for i := 0; i <= len(in); {
		for k < len(edits) && edits[k].end <= i && edits[k].end > edits[k].start && i > edits[k].start {
			k++
		}
		inEdit := k < len(edits) && edits[k].start <= i && i < edits[k].end
		if i == len(in) {
			cur = append(cur, inEdit)
			break
		}
		r, w := utf8.DecodeRuneInString(in[i:])
		switch r {
		case '\r', '\n':
			if r == '\r' && i+1 < len(in) && in[i+1] == '\n' {
				w = 2
			}
			marks = append(marks, append(cur, inEdit))
			cur = nil
		default:
			cur = append(cur, inEdit)
		}
		i += w
	}
	return append(marks, cur)
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
	"f'", `f"`, "rf'''", "{", "}", "{{", "!r", ":>4", "=", `\{`,
}

func TestPrepareProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOf(rapid.SampledFrom(programFragments)).Draw(t, "parts")
		in := strings.Join(parts, "")
		p, perr := prepare(in)
		if perr != nil {
			// Only a malformed f-string stops the preparation.
			if !strings.HasPrefix(perr.msg, "f-string: ") || perr.line < 1 || perr.col < 1 {
				t.Fatalf("prepare(%q): %+v", in, perr)
			}
			return
		}
		checkColumns(t, in, p)
	})
}
