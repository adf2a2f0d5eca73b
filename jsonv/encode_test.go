package jsonv

import (
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

func TestMarshalStrings(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", `""`},
		{"plain", `"plain"`},
		{`"\`, `"\"\\"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x0b\x1f", `"\u0000\u0001\u000b\u001f"`},
		{"\x7f", "\"\x7f\""},
		{"\u2028\u2029", "\"\u2028\u2029\""},
		{"<script>&'", `"<script>&'"`},
		{"é😀\ufffd", `"é😀` + "\ufffd" + `"`},
		{"/", `"/"`},
	}
	for _, tt := range tests {
		got, err := Marshal(tt.in)
		if err != nil {
			t.Errorf("Marshal(%q): %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("Marshal(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestMarshalNumbers(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{1, "1"},
		{-1, "-1"},
		{100, "100"},
		{0.1, "0.1"},
		{1e21, "1e+21"},
		{1e20, "100000000000000000000"},
		{1e-7, "1e-7"},
		{1e-6, "0.000001"},
		{5e-324, "5e-324"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{-1.25e-10, "-1.25e-10"},
		{math.Nextafter(0.3, 1), "0.30000000000000004"},
		{1 << 53, "9007199254740992"},
	}
	for _, tt := range tests {
		got, err := Marshal(tt.in)
		if err != nil {
			t.Errorf("Marshal(%v): %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("Marshal(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestMarshalIndent(t *testing.T) {
	v := obj("a", []any{1.0, []any{}, &Object{}}, "b", obj("c", nil), "d", []any(nil), "e", (*Object)(nil))
	got, err := MarshalIndent(v, "  ")
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "a": [
    1,
    [],
    {}
  ],
  "b": {
    "c": null
  },
  "d": [],
  "e": {}
}`
	if string(got) != want {
		t.Errorf("MarshalIndent =\n%s\nwant\n%s", got, want)
	}
	compact, _ := Marshal(v)
	if got, _ := MarshalIndent(v, ""); string(got) != string(compact) {
		t.Errorf("MarshalIndent(v, \"\") = %s, want the compact form %s", got, compact)
	}
	if got, _ := MarshalIndent("s", "\t"); string(got) != `"s"` {
		t.Errorf("MarshalIndent(scalar) = %s", got)
	}
}

func TestTruncateIndent(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"  ", "  "},
		{"0123456789", "0123456789"},
		{"0123456789abc", "0123456789"},
		{"éééééééééééé", "éééééééééé"},
		{"012345678😀", "012345678"}, // the pair would be split at 10 units: JavaScript would emit a lone surrogate
		{"01234567😀x", "01234567😀"},
	}
	for _, tt := range tests {
		if got := truncateIndent(tt.in); got != tt.want {
			t.Errorf("truncateIndent(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCanonicalOrder(t *testing.T) {
	v := obj("b", 1.0, "a", obj("z", []any{obj("y", 1.0, "x", 2.0)}, "y", 0.0), "10", 1.0, "9", 1.0, "01", 1.0,
		"\ue000", 1.0, "😀", 1.0, "B", 1.0, "", 1.0, "4294967295", 1.0, "4294967294", 1.0)
	got, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"9":1,"10":1,"4294967294":1,"":1,"01":1,"4294967295":1,"B":1,"a":{"y":0,"z":[{"x":2,"y":1}]},"b":1,"😀":1,"` + "\ue000" + `":1}`
	if string(got) != want {
		t.Errorf("Canonical =\n%s\nwant\n%s", got, want)
	}
	// Canonical does not reorder the value itself.
	if keys := v.Keys(); keys[0] != "b" {
		t.Errorf("Canonical reordered its input: %q", keys)
	}
}

func TestCompareUTF16(t *testing.T) {
	words := []string{"", "a", "ab", "b", "B", "é", "\u00ff", "\u0100", "\ud7ff", "\ue000", "\uffff", "😀", "\U00010000",
		"\U0010ffff", "a😀", "a\ue000", "😀a", "😁", "\U0001f600\U0001f600", "z\x00", "z"}
	for _, a := range words {
		for _, b := range words {
			want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
			if got := sign(compareUTF16(a, b)); got != want {
				t.Errorf("compareUTF16(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func TestArrayIndex(t *testing.T) {
	tests := []struct {
		in   string
		want uint32
		ok   bool
	}{
		{"0", 0, true},
		{"7", 7, true},
		{"42", 42, true},
		{"4294967294", 4294967294, true},
		{"4294967295", 0, false}, // 2³²−1 is not an array index
		{"9999999999", 0, false},
		{"99999999999", 0, false},
		{"", 0, false},
		{"01", 0, false},
		{"-1", 0, false},
		{"1.0", 0, false},
		{"1e3", 0, false},
		{" 1", 0, false},
		{"a", 0, false},
	}
	for _, tt := range tests {
		got, ok := arrayIndex(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("arrayIndex(%q) = %d, %v, want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestMarshalRejects(t *testing.T) {
	cycle := []any{nil}
	cycle[0] = cycle
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"int", obj("n", 1), "jsonv: value of Go type int at $.n is not lossless JSON"},
		{"map", []any{map[string]any{}}, "jsonv: value of Go type map[string]interface {} at $[0] is not lossless JSON"},
		{"negative zero", []any{1.0, math.Copysign(0, -1)}, "jsonv: number -0 at $[1] is negative zero, which is not lossless JSON"},
		{"infinity", math.Inf(1), "jsonv: number +Inf at $ is not finite, which is not lossless JSON"},
		{"invalid string", obj("a", obj("b", "\xff")), "jsonv: string at $.a.b is not valid UTF-8, which is not lossless JSON"},
		{"invalid name", obj("ok", obj("\xff", 1.0)), `jsonv: member name "\xff" at $.ok["\xff"] is not valid UTF-8, which is not lossless JSON`},
		{"duplicate", NewObject(Member{"x", 1.0}, Member{"x", 2.0}), `jsonv: duplicate member name "x" in the object at $, which is not lossless JSON`},
		{"cycle", cycle, "jsonv: value of Go type []interface {} at $[0] is circular"},
	}
	for _, tt := range tests {
		for _, enc := range []struct {
			name string
			f    func(any) ([]byte, error)
		}{
			{"Marshal", Marshal},
			{"MarshalIndent", func(v any) ([]byte, error) { return MarshalIndent(v, " ") }},
			{"Canonical", Canonical},
		} {
			got, err := enc.f(tt.in)
			if err == nil || err.Error() != tt.want {
				t.Errorf("%s(%s) = %q, %v; want error %q", enc.name, tt.name, got, err, tt.want)
			}
			if got != nil {
				t.Errorf("%s(%s) returned output with an error", enc.name, tt.name)
			}
		}
	}
}

func TestMarshalSharedIsNotCycle(t *testing.T) {
	shared := obj("k", []any{"v"})
	v := []any{shared, shared, obj("again", shared)}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"k":["v"]},{"k":["v"]},{"again":{"k":["v"]}}]`; string(got) != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
}

func TestMarshalLongNames(t *testing.T) {
	name := strings.Repeat("n", 1000)
	_, err := Marshal(obj(name, math.NaN()))
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("error for a long name is %d bytes: %v", len(err.Error()), err)
	}
}
