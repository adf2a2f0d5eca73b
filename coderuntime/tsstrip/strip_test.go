package tsstrip

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestStrip(t *testing.T) {
	tests := []struct {
		name    string
		program string
		want    string // substring of the stripped body
		notWant string // substring that must be gone
	}{
		{"interface and annotations", "interface P { x: number }\nconst p: P = { x: 1 } as P;\nreturn p.x", "return p.x", "interface"},
		{"top-level await", "const v = await tools.read({});\nreturn v", "await tools.read({})", ""},
		{"generics and satisfies", "function id<T>(x: T): T { return x }\nconst o = { a: 1 } satisfies Record<string, number>;\nreturn id<number>(o.a)", "return id(o.a)", "satisfies"},
		{"type alias and declare", "type A = string | number;\ndeclare const g: A;\ndeclare enum E { A }\nreturn 1", "return 1", "declare"},
		{"angle assertion", "let x = <number>y;\nreturn x", "let x = y", "<number>"},
		{"abstract class and fields", "abstract class A { abstract f(): void; private x = 1; readonly y: string = 'a' }\nreturn 1", "class A", "abstract"},
		{"non-null and optional", "const a = b!.c?.d;\nreturn a", "b.c?.d", "!"},
		{"template with types in substitution", "const s = `a${(1 as number)}b`;\nreturn s", "`a${1}b`", " as "},
		{"empty", "", "", ""},
		{"comment only", "// nothing", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Strip(tt.program)
			if err != nil {
				t.Fatalf("Strip: %v", err)
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("Strip = %q, want it to contain %q", got, tt.want)
			}
			if tt.notWant != "" && strings.Contains(got, tt.notWant) {
				t.Errorf("Strip = %q, want no %q", got, tt.notWant)
			}
		})
	}
}

func TestStripRejectsNonErasable(t *testing.T) {
	tests := []struct {
		name      string
		program   string
		construct string
		line, col int
	}{
		{"enum", "const a = 1;\nenum E { A }\nreturn E.A", constructEnum, 2, 1},
		{"const enum", "  const enum E { A, B }", constructEnum, 1, 3},
		{"exported enum", "export enum E { A }", constructEnum, 1, 8},
		{"namespace", "namespace N { export const x = 1 }", constructNamespace, 1, 1},
		{"dotted namespace", "x;\n  namespace A.B.C {}", constructNamespace, 2, 3},
		{"module", "module M { }", constructNamespace, 1, 1},
		{"parameter property", "class A {\n  constructor(private x: number) {}\n}", constructParamProp, 2, 15},
		{"readonly parameter property", "class A { constructor(a: number, readonly b = 1) {} }", constructParamProp, 1, 34},
		{"override parameter property", "class A extends B { constructor(override x: number) { super() } }", constructParamProp, 1, 33},
		{"destructured parameter property", "class A { constructor(public {a}: any) {} }", constructParamProp, 1, 23},
		{"decorator", "@dec class A {}", constructDecorator, 1, 1},
		{"member decorator", "class A {\n  @log m() {}\n}", constructDecorator, 2, 3},
		{"import equals", "import fs = require('fs');", constructImportEq, 1, 1},
		{"import alias", "import x = N.y;", constructImportEq, 1, 1},
		{"unicode column", "const s = 'éé'; enum E { A }", constructEnum, 1, 17},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Strip(tt.program)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Strip error = %v, want *Error", err)
			}
			if e.Construct != tt.construct || e.Line != tt.line || e.Column != tt.col {
				t.Fatalf("Strip error = %+v, want %s at %d:%d", e, tt.construct, tt.line, tt.col)
			}
			if !strings.Contains(err.Error(), "TypeScript "+tt.construct+" are not supported") ||
				!strings.Contains(err.Error(), fmt.Sprintf("(line %d, column %d)", tt.line, tt.col)) {
				t.Fatalf("message %q does not name the construct and position", err)
			}
		})
	}
}

func TestCheckErasableIgnoresLookalikes(t *testing.T) {
	programs := []string{
		"// enum E { A }\nreturn 1",
		"/* namespace N { } */ return 1",
		"const s = 'enum E { A }'; return s",
		`const s = "@decorator"; return s`,
		"const s = `namespace N {\n ${'x'} enum E {}`; return s",
		"const s = `${ { a: `enum E {}` }.a }`; return s",
		"const re = /@x|enum E {/g; return re.source",
		"const r = a / 2 / b; enum; return r",
		"const o = { enum: 1, namespace: 2, module: 3 }; return o.enum + o.namespace",
		"const x = obj.enum\nconst y = obj?.namespace\nreturn x",
		"class A { constructor(x: number, y = 2) {} }\nreturn 1",
		"class A { constructor(readonly?: number) {} }\nreturn 1",
		"class A { m(private_: number) { } }\nreturn 1",
		"const c = this.constructor(public_);",
		"let namespace = 1; namespace\n{ }\nreturn namespace",
		"const module = { exports: {} }; module.exports = 1; return module",
		"declare\nconst x = 1; return x",
		"if (x) /enum E {/.test(s); return 1",
		"const x = a++ / 2; /* @ */ return x",
		"const p = #x in obj;",
		"return `a\\`enum E {}` + '\\'@'",
		"while (i--) /@/.test(s)",
		"for (;;) /enum E {/.exec(s)",
		"const r = (a) / 2 / (b) /* enum E { */",
	}
	for _, p := range programs {
		if err := CheckErasable(p); err != nil {
			t.Errorf("CheckErasable(%q) = %v, want nil", p, err)
		}
	}
}

func TestStripSyntaxErrors(t *testing.T) {
	tests := []struct {
		program string
		want    string
	}{
		{"return 1 +", "SyntaxError: Unexpected end of the program (line 1, column 11)"},
		{"const x = 1;\nconst = 2", "SyntaxError: Expected identifier but found \"=\" (line 2, column 7)"},
		{"export {}", "SyntaxError: Unexpected \"export\" (line 1, column 1)"},
		{"'use strict'; with (a) {}", "SyntaxError: With statements cannot be used in strict mode (line 1, column 15)"},
	}
	for _, tt := range tests {
		_, err := Strip(tt.program)
		var e *Error
		if !errors.As(err, &e) || e.Construct != "" {
			t.Fatalf("Strip(%q) error = %#v", tt.program, err)
		}
		if err.Error() != tt.want {
			t.Errorf("Strip(%q) = %q, want %q", tt.program, err.Error(), tt.want)
		}
	}
}

func FuzzCheckErasable(f *testing.F) {
	for _, s := range []string{
		"enum E { A }", "class A { constructor(private x) {} }", "`${`${a}`}`", "/[/]/.test(x)",
		"'unterminated", "/* unterminated", "`unterminated ${", "a\u2028b", "\\u0065num E {}",
		"@", "x = y / z / w", "namespace A.B {}", "import a = b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, program string) {
		err := CheckErasable(program)
		if err == nil {
			return
		}
		var e *Error
		if !errors.As(err, &e) || e.Construct == "" || e.Line < 1 || e.Column < 1 {
			t.Fatalf("CheckErasable(%q) = %#v", program, err)
		}
		if lines := strings.Count(program, "\n") + strings.Count(program, "\r") + strings.Count(program, "\u2028") + strings.Count(program, "\u2029") + 1; e.Line > lines {
			t.Fatalf("line %d beyond %d lines", e.Line, lines)
		}
	})
}

func FuzzStrip(f *testing.F) {
	for _, s := range []string{"return 1", "const x: number = 1; return x", "enum E {}", "}; foo(); {", "return 1 +"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, program string) {
		out, err := Strip(program)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Strip error %T is not *Error", err)
			}
			return
		}
		// The stripped body must itself strip to a body (idempotence on valid JavaScript).
		if _, err := Strip(out); err != nil {
			t.Fatalf("Strip(Strip(%q)) = %v", program, err)
		}
	})
}

func ExampleStrip() {
	body, err := Strip("const n: number = await Promise.resolve(41);\nreturn n + 1")
	fmt.Printf("%q %v\n", body, err)
	_, err = Strip("enum Color { Red }\nreturn Color.Red")
	fmt.Println(err)
	// Output:
	// "  const n = await Promise.resolve(41);\n  return n + 1;\n" <nil>
	// TypeScript enum declarations are not supported (line 1, column 1): only erasable type syntax is allowed; use a union of literal types or a plain object instead
}

func BenchmarkStrip(b *testing.B) {
	program := strings.Repeat("{\n  const x: number = await tools.read({ path: 'a' }) as number;\n  console.log(x);\n}\n", 20) + "return 1"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Strip(program); err != nil {
			b.Fatal(err)
		}
	}
}

func TestStripMapped(t *testing.T) {
	program := "// a comment\n\nconst x: number = 1;   const y = 2;\n\n\n  function boom(): never {\n    throw new Error('kaboom');\n  }\nboom();"
	code, m, err := StripMapped(program)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(code, "\n")
	find := func(needle string) (int, int) {
		for i, l := range lines {
			if c := strings.Index(l, needle); c >= 0 {
				return i + 1, c + 1
			}
		}
		t.Fatalf("%q not in %q", needle, code)
		return 0, 0
	}
	progLines := strings.Split(program, "\n")
	for _, needle := range []string{"const x", "const y", "function boom", "throw new Error", "new Error", "boom();"} {
		line, col := find(needle)
		ol, oc, ok := m.Original(line, col)
		if !ok {
			t.Errorf("%q at %d:%d is unmapped", needle, line, col)
			continue
		}
		if ol < 1 || ol > len(progLines) || !strings.HasPrefix(progLines[ol-1][oc-1:], strings.TrimSuffix(needle, "();")) {
			t.Errorf("%q at body %d:%d maps to program %d:%d", needle, line, col, ol, oc)
		}
	}
	if _, _, ok := m.Original(0, 1); ok {
		t.Error("line 0 is mapped")
	}
	if _, _, ok := m.Original(1000, 1); ok {
		t.Error("line 1000 is mapped")
	}
}

func TestDecodeVLQ(t *testing.T) {
	tests := map[string][]int{"AAAA": {0, 0, 0, 0}, "C": {1}, "D": {-1}, "gB": {16}, "2HwBe": {123, 24, 15}}
	for in, want := range tests {
		got, err := decodeVLQ(in)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("decodeVLQ(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"g", "!", "ggggggggA"} {
		if _, err := decodeVLQ(bad); err == nil {
			t.Errorf("decodeVLQ(%q) = nil error", bad)
		}
	}
}

// BenchmarkStripMappedTrivial is the strip every trivial run_code pays: `return 1` with
// its position map, as the QuickJS runtime asks for it.
func BenchmarkStripMappedTrivial(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := StripMapped("return 1"); err != nil {
			b.Fatal(err)
		}
	}
}
