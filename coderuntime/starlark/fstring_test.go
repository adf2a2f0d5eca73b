package starlark

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/coderuntime"
)

func TestFStrings(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	bindings := tools(map[string]coderuntime.Func{"echo": func(_ context.Context, args any) (any, error) { return args, nil }})
	tests := []struct{ expr, want string }{
		{`f"{1 + 1}"`, "2"},
		{`f"{n} file{'s' if n != 1 else ''}"`, "3 files"},
		{`f"{{literal}} {s!r} {s!s} {s!a} {s}"`, `{literal} "a" a "a" a`},
		{`f"{n=}"`, "n=3"},
		{`f"{n = }"`, "n = 3"},
		{`f"{s=}"`, `s="a"`},
		{`f"{n=:>4}|"`, "n=   3|"},
		{`f"{s=!s}"`, "s=a"},
		{`f"{d['k']} {d["k"]}"`, "v v"},
		{`f"{f'{n}'}"`, "3"},
		{`f"{await tools.echo(n)}"`, "3"},
		{`f"""a
{n}
b"""`, "a\n3\nb"},
		{`f"""{
  n +
  1
}"""`, "4"},
		{`rf"\d{n}\b"`, `\d3\b`},
		{`f"tab\t{n}\n"`, "tab\t3\n"},
		{`f"\{n}"`, `\3`},
		{`f"\\{n}"`, `\3`},
		{`f"{n}\\"`, `3\`},
		{`f""`, ""},
		{`f"plain"`, "plain"},
		{`f"{None} {True} {[1, 'a']} {(1,)} {2.5}"`, `None True [1, "a"] (1,) 2.5`},
		{`f"{a, n}"`, `(1, 3)`},
		{`f"{n!r:>3}"`, "  3"},
		// Format specs.
		{`f"{3.14159:.2f}"`, "3.14"},
		{`f"{1234567:,}"`, "1,234,567"},
		{`f"{1234567.891:,.2f}"`, "1,234,567.89"},
		{`f"{1234.5:_.2f}"`, "1_234.50"},
		{`f"{255:#x} {255:X} {255:o} {255:#b}"`, "0xff FF 377 0b11111111"},
		{`f"{12345678:_x}"`, "bc_614e"},
		{`f"{255:08b}"`, "11111111"},
		{`f"{5:03d} {-5:03d} {5:+} {5: } {-5:+}"`, "005 -05 +5  5 -5"},
		{`f"{'ab':>5}|{'ab':<5}|{'ab':^6}|{'ab':*^7}|"`, "   ab|ab   |  ab  |**ab***|"},
		{`f"{'x':05}"`, "x0000"},
		{`f"{'abcdef':.3}"`, "abc"},
		{`f"{'é':é>3}"`, "ééé"},
		{`f"{0.5:%} {0.25:.1%}"`, "50.000000% 25.0%"},
		{`f"{1e6:g} {0.0001:g} {123456789.0:g} {1.5:g}"`, "1e+06 0.0001 1.23457e+08 1.5"},
		{`f"{1234.5:.3} {2.0:.3} {100.0:.3}"`, "1.23e+03 2.0 1e+02"},
		{`f"{12:e} {12.0:E}"`, "1.200000e+01 1.200000E+01"},
		{`f"{1.5:10.2f}|{-1.5:<8.1f}|{1.5:=+8.1f}"`, "      1.50|-1.5    |+    1.5"},
		{`f"{-0.0:z.1f} {-0.0:.1f}"`, "0.0 -0.0"},
		{`f"{float('inf'):f} {float('-inf'):F} {float('nan'):.2f}"`, "inf -INF nan"},
		{`f"{True:d} {False:>3} {True}"`, "1   0 True"},
		{`f"{65:c}"`, "A"},
		{`f"{7:.2f} {7:%}"`, "7.00 700.000000%"},
		{`f"{1 << 70:,}"`, "1,180,591,620,717,411,303,424"},
		{`f"{3:}"`, "3"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			program := "n = 3\na = 1\ns = 'a'\nd = {'k': 'v'}\nreturn " + tt.expr
			wantValue(t, run(t, rt, program, bindings), jsonOf(t, tt.want))
		})
	}
}

func TestFStringFormatErrors(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	tests := []struct{ program, want string }{
		{`x = f"{1:q}"`, "Error in f-string: invalid format specifier \"q\""},
		{`x = f"{'a':d}"`, "Error in f-string: unknown format code 'd' for object of type 'str'"},
		{`x = f"{2.5:d}"`, "Error in f-string: unknown format code 'd' for object of type 'float'"},
		{`x = f"{[1]:>3}"`, "Error in f-string: unsupported format string passed to list.__format__"},
		{`x = f"{'a':+}"`, "Error in f-string: sign not allowed in string format specifier"},
		{`x = f"{'a':=5}"`, "Error in f-string: '=' alignment not allowed in string format specifier"},
		{`x = f"{3:.2}"`, "Error in f-string: precision not allowed in integer format specifier"},
		{`x = f"{3:,x}"`, "Error in f-string: cannot specify ',' with 'x'"},
		{`x = f"{-1:c}"`, "Error in f-string: %c arg not in range(0x110000)"},
		{`x = f"{3:99999999}"`, "Error in f-string: too many decimal digits in format string \"99999999\""},
		{`x = f"{3:.}"`, "Error in f-string: format specifier \".\" is missing a precision"},
	}
	for _, tt := range tests {
		t.Run(tt.program, func(t *testing.T) {
			want := "Traceback (most recent call last):\n  program.star:1:5: in <program>\n" + tt.want
			wantFailure(t, run(t, rt, tt.program, nil), coderuntime.FailureException, want)
		})
	}
	// An error inside a field's expression is reported where it was written.
	wantFailure(t, run(t, rt, "x = 1\ny = f'a{x} {len(x)}'", nil), coderuntime.FailureException,
		"Traceback (most recent call last):\n  program.star:2:16: in <program>\nError in len: len: value of type int has no len")
}
