package jsonv

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

func TestMain(m *testing.M) { verifyNoLeaks(m) }

// obj builds an object from alternating names and values.
func obj(kv ...any) *Object {
	o := &Object{}
	for i := 0; i < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1])
	}
	return o
}

// cmpOpts compares jsonv values with go-cmp, objects by their members in order.
var cmpOpts = cmp.Options{cmp.Transformer("members", func(o *Object) []Member { return o.Members() })}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		in   string
		want any
	}{
		{`null`, nil},
		{`true`, true},
		{`false`, false},
		{`0`, 0.0},
		{`-1.5e3`, -1500.0},
		{`1e-400`, 0.0}, // underflows to +0, which is what JavaScript yields too
		{`1.7976931348623157e308`, 1.7976931348623157e308},
		{`"a\u00e9\ud83d\ude00"`, "aé😀"},
		{`[]`, []any{}},
		{`{}`, &Object{}},
		{" \t\r\n[1, \"x\", null] \n", []any{1.0, "x", nil}},
		{`{"b":1,"a":{"d":[true],"c":null}}`, obj("b", 1.0, "a", obj("d", []any{true}, "c", nil))},
		{`{"":1,"\u0000":2}`, obj("", 1.0, "\x00", 2.0)},
		{`["\u2028"]`, []any{"\u2028"}},
	}
	for _, tt := range tests {
		got, err := ParseString(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got, cmpOpts); diff != "" {
			t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestParseKeepsMemberOrder(t *testing.T) {
	v, err := ParseString(`{"z":1,"a":2,"m":3,"10":4,"9":5}`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := v.(*Object).Keys(), []string{"z", "a", "m", "10", "9"}; !cmp.Equal(got, want) {
		t.Errorf("keys = %q, want %q", got, want)
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // the exact message, or a substring when prefixed by "~"
	}{
		{"negative zero", `{"a":-0}`, "jsonv: number -0 at offset 5 is negative zero, which is not lossless JSON"},
		{"negative zero fraction", `-0.0`, "jsonv: number -0.0 at offset 0 is negative zero, which is not lossless JSON"},
		{"negative zero exponent", `[1, -0e3]`, "jsonv: number -0e3 at offset 4 is negative zero, which is not lossless JSON"},
		{"negative underflow", `[-1e-400]`, "jsonv: number -1e-400 at offset 1 is negative zero, which is not lossless JSON"},
		{"overflow", `{"n":1e400}`, "jsonv: number 1e400 at offset 5 overflows float64, which is not lossless JSON"},
		{"negative overflow", `-1e309`, "jsonv: number -1e309 at offset 0 overflows float64, which is not lossless JSON"},
		{"long overflow", "1" + strings.Repeat("0", 400), "~overflows float64"},
		{"duplicate name", `{"a":1,"a":2}`, `jsonv: invalid JSON: duplicate member name "a" in the object at $`},
		{"duplicate in a large object", `{"x":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"h":18}}`,
			`jsonv: invalid JSON: duplicate member name "h" in the object at $.x`},
		{"escaped duplicate", `{"\u00e9":1,"é":2}`, `jsonv: invalid JSON: duplicate member name "é" in the object at $`},
		{"nested duplicate", `{"x":[{"k":1,"k":1}]}`, `jsonv: invalid JSON: duplicate member name "k" in the object at $.x[0]`},
		{"duplicate after elements", `[0,{"y":[1,2,{"k":1,"k":1}]}]`, `jsonv: invalid JSON: duplicate member name "k" in the object at $[1].y[2]`},
		{"duplicate in big object", `{"a":0,"b":0,"c":0,"d":0,"e":0,"f":0,"g":0,"h":0,"i":0,"j":0,"k":0,"l":0,"m":0,"n":0,"o":0,"p":0,"q":0,"r":0,"h":1}`, `jsonv: invalid JSON: duplicate member name "h" in the object at $`},
		{"error path after elements", `{"a":[0,{"b":[1,2,{"c":x}]}]}`, "jsonv: invalid JSON at offset 23 ($.a[1].b[2].c): invalid character 'x' at start of value"},
		{"duplicate by escape", `{"a":1,"\u0061":2}`, `~duplicate member name "a"`},
		{"invalid UTF-8", "\"\xff\"", "~invalid UTF-8"},
		{"invalid UTF-8 in name", "{\"\xc3\":1}", "~invalid UTF-8"},
		{"lone surrogate escape", `"\ud800"`, "~invalid"},
		{"trailing data", `[1,2] x`, "jsonv: invalid JSON at offset 6: unexpected data after the top-level value"},
		{"second value", `1 2`, "jsonv: invalid JSON at offset 2: unexpected data after the top-level value"},
		{"empty", ``, "~unexpected end of input"},
		{"only space", "  \n", "~unexpected end of input"},
		{"truncated", `{"a":[1,`, "~unexpected end of input"},
		{"bad literal", `{"a":[1,tru]}`, "~($.a[1])"},
		{"NaN", `NaN`, "~invalid character"},
		{"Infinity", `[Infinity]`, "~invalid character"},
		{"leading zero", `01`, "~invalid"},
		{"trailing comma", `[1,]`, "~invalid character"},
		{"single quotes", `{'a':1}`, "~invalid character"},
		{"comment", `/* x */ 1`, "~invalid character"},
		{"control char in string", "\"a\tb\"", "~invalid character"},
		{"too deep", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "~exceeded max depth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := ParseString(tt.in)
			if err == nil {
				t.Fatalf("Parse(%.40q) = %v, want an error", tt.in, v)
			}
			if sub, ok := strings.CutPrefix(tt.want, "~"); ok {
				if !strings.Contains(err.Error(), sub) {
					t.Errorf("Parse(%.40q) error %q, want it to contain %q", tt.in, err, sub)
				}
			} else if err.Error() != tt.want {
				t.Errorf("Parse(%.40q) error\n got %q\nwant %q", tt.in, err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "jsonv: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestParseErrorUnwraps(t *testing.T) {
	_, err := ParseString(`{"a":1,"a":2}`)
	if !errors.Is(err, jsontext.ErrDuplicateName) {
		t.Errorf("errors.Is(%v, jsontext.ErrDuplicateName) = false", err)
	}
	var serr *jsontext.SyntacticError
	if _, err := ParseString(`[1,x]`); !errors.As(err, &serr) || serr.ByteOffset != 3 {
		t.Errorf("errors.As(%v, *jsontext.SyntacticError) = %v (offset %v), want offset 3", err, serr != nil, serr)
	}
	if _, err := ParseString(`[`); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("errors.Is(%v, io.ErrUnexpectedEOF) = false", err)
	}
}

func TestParseDoesNotAliasInput(t *testing.T) {
	data := []byte(`{"name":"value","list":["x"]}`)
	v, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		data[i] = ' '
	}
	want := obj("name", "value", "list", []any{"x"})
	if diff := cmp.Diff(want, v, cmpOpts); diff != "" {
		t.Errorf("value changed with its input (-want +got):\n%s", diff)
	}
}

func TestParseMaxDepth(t *testing.T) {
	for _, open := range []string{"[", `{"a":`} {
		closeTok := "]"
		if open != "[" {
			closeTok = "}"
		}
		text := strings.Repeat(open, MaxDepth) + "1" + strings.Repeat(closeTok, MaxDepth)
		v, err := ParseString(text)
		if err != nil {
			t.Fatalf("Parse(%d levels of %s): %v", MaxDepth, open, err)
		}
		if d := depth(v); d != MaxDepth {
			t.Errorf("depth = %d, want %d", d, MaxDepth)
		}
	}
}

// depth counts the nesting of a chain of single-child containers.
func depth(v any) int {
	d := 0
	for {
		switch x := v.(type) {
		case []any:
			v = x[0]
		case *Object:
			v = x.Members()[0].Value
		default:
			return d
		}
		d++
	}
}

func TestParseLargeDocument(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 10 MB document")
	}
	data := largeDocument(10 << 20)
	v, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(data) {
		t.Errorf("Marshal(Parse(10 MB document)) differs from the compact input")
	}
}

// largeDocument returns a compact JSON array of records of about size bytes.
func largeDocument(size int) []byte {
	var b strings.Builder
	b.WriteString(`[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":`)
		b.WriteString(strings.Repeat("7", 1+i%9))
		b.WriteString(`,"name":"record \"quoted\" é😀\n","score":0.125,"tags":["a","b",null,true],"nested":{"x":[1,2,3],"y":{}}}`)
	}
	b.WriteString(`]`)
	return []byte(b.String())
}
