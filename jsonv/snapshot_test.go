package jsonv

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

func TestSnapshotAccepts(t *testing.T) {
	type myString string // named types other than the listed ones are rejected; see below
	shared := []any{"s"}
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"nil", nil, nil},
		{"bool", true, true},
		{"string", "é", "é"},
		{"float64", 0.5, 0.5},
		{"positive zero", 0.0, 0.0},
		{"float32", float32(0.25), 0.25},
		{"int", 42, 42.0},
		{"int8", int8(-8), -8.0},
		{"int16", int16(-16), -16.0},
		{"int32", int32(-32), -32.0},
		{"int64 exact", int64(1 << 60), float64(1 << 60)},
		{"min int64", int64(math.MinInt64), float64(math.MinInt64)},
		{"uint", uint(7), 7.0},
		{"uint8", uint8(8), 8.0},
		{"uint16", uint16(16), 16.0},
		{"uint32", uint32(32), 32.0},
		{"uint64 exact", uint64(1 << 63), float64(1 << 63)},
		{"json.Number", json.Number("1.5e2"), 150.0},
		{"json.RawMessage", json.RawMessage(`{"b":1,"a":[true]}`), obj("b", 1.0, "a", []any{true})},
		{"jsontext.Value", jsontext.Value(` [null] `), []any{nil}},
		{"Value", Value{V: []any{1.0}}, []any{1.0}},
		{"nested Value", []any{Value{V: Value{V: "x"}}}, []any{"x"}},
		{"[]any", []any{1, "a", nil}, []any{1.0, "a", nil}},
		{"nil []any", []any(nil), []any{}},
		{"[]string", []string{"a", "b"}, []any{"a", "b"}},
		{"[]float64", []float64{1, 2.5}, []any{1.0, 2.5}},
		{"[]int", []int{1, -2}, []any{1.0, -2.0}},
		{"[]map[string]any", []map[string]any{{"k": 1}, nil}, []any{obj("k", 1.0), &Object{}}},
		{"[]*Object", []*Object{obj("a", 1), nil}, []any{obj("a", 1.0), &Object{}}},
		{"map sorted like Canonical", map[string]any{"b": 1, "a": 2, "10": 3, "9": 4}, obj("9", 4.0, "10", 3.0, "a", 2.0, "b", 1.0)},
		{"nil map", map[string]any(nil), &Object{}},
		{"map[string]string", map[string]string{"y": "1", "x": "2"}, obj("x", "2", "y", "1")},
		{"*Object keeps order", obj("z", 1, "a", []int{2}), obj("z", 1.0, "a", []any{2.0})},
		{"nil *Object", (*Object)(nil), &Object{}},
		{"Object value", *obj("k", uint8(1)), obj("k", 1.0)},
		{"shared references are copied", []any{shared, map[string]any{"s": shared}}, []any{[]any{"s"}, obj("s", []any{"s"})}},
		{"large object", bigObject(40), bigObject(40)},
	}
	_ = myString("")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Snapshot(tt.in)
			if err != nil {
				t.Fatalf("Snapshot: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpOpts); diff != "" {
				t.Errorf("Snapshot mismatch (-want +got):\n%s", diff)
			}
			if err := Check(got); err != nil {
				t.Errorf("Check(Snapshot(v)) = %v", err)
			}
		})
	}
}

// bigObject returns an object with n members, large enough to be indexed.
func bigObject(n int) *Object {
	o := &Object{}
	for i := range n {
		o.Set("k"+strings.Repeat("x", i), float64(i))
	}
	return o
}

func TestSnapshotRejects(t *testing.T) {
	type point struct{ X int }
	cyclicMap := map[string]any{}
	cyclicMap["x"] = []any{cyclicMap}
	cyclicObj := obj("a", 1)
	cyclicObj.Set("self", []any{cyclicObj})
	cyclicSlice := make([]any, 2)
	cyclicSlice[1] = cyclicSlice
	cyclicSub := make([]any, 2)
	cyclicSub[1] = cyclicSub[1:]
	cyclicValue := &Object{}
	cyclicValue.Set("v", nil)
	cyclicValue.Set("v", *cyclicValue)
	n := 1.0

	tests := []struct {
		name string
		in   any
		want string
	}{
		{"struct", point{1}, "jsonv: value of Go type jsonv.point at $ is not lossless JSON"},
		{"nested struct", map[string]any{"a": []any{0, 1, 2, obj("b", point{})}}, "jsonv: value of Go type jsonv.point at $.a[3].b is not lossless JSON"},
		{"func", []any{func() {}}, "jsonv: value of Go type func() at $[0] is not lossless JSON"},
		{"chan", obj("c", make(chan int)), "jsonv: value of Go type chan int at $.c is not lossless JSON"},
		{"pointer", &n, "jsonv: value of Go type *float64 at $ is not lossless JSON"},
		{"other slice", []bool{true}, "jsonv: value of Go type []bool at $ is not lossless JSON"},
		{"other map", map[string]int{"a": 1}, "jsonv: value of Go type map[string]int at $ is not lossless JSON"},
		{"odd name path", obj("a b", []any{point{}}), `jsonv: value of Go type jsonv.point at $["a b"][0] is not lossless JSON`},
		{"NaN", []any{math.NaN()}, "jsonv: number NaN at $[0] is not finite, which is not lossless JSON"},
		{"+Inf", obj("x", math.Inf(1)), "jsonv: number +Inf at $.x is not finite, which is not lossless JSON"},
		{"float32 -Inf", float32(math.Inf(-1)), "jsonv: number -Inf at $ is not finite, which is not lossless JSON"},
		{"negative zero", obj("z", math.Copysign(0, -1)), "jsonv: number -0 at $.z is negative zero, which is not lossless JSON"},
		{"[]float64 negative zero", []float64{1, math.Copysign(0, -1)}, "jsonv: number -0 at $[1] is negative zero, which is not lossless JSON"},
		{"inexact int64", int64(1<<60 + 1), "jsonv: integer 1152921504606846977 at $ cannot be represented exactly as a float64, which is not lossless JSON"},
		{"max int64", []any{int64(math.MaxInt64)}, "jsonv: integer 9223372036854775807 at $[0] cannot be represented exactly as a float64, which is not lossless JSON"},
		{"max uint64", uint64(math.MaxUint64), "jsonv: integer 18446744073709551615 at $ cannot be represented exactly as a float64, which is not lossless JSON"},
		{"inexact []int", []int{0, 1<<53 + 1}, "jsonv: integer 9007199254740993 at $[1] cannot be represented exactly as a float64, which is not lossless JSON"},
		{"invalid UTF-8 string", []any{"ok", "\xff"}, "jsonv: string at $[1] is not valid UTF-8, which is not lossless JSON"},
		{"invalid UTF-8 []string", []string{"\xfe"}, "jsonv: string at $[0] is not valid UTF-8, which is not lossless JSON"},
		{"invalid UTF-8 name", map[string]any{"\xff": 1}, `jsonv: member name "\xff" at $["\xff"] is not valid UTF-8, which is not lossless JSON`},
		{"invalid UTF-8 map[string]string value", map[string]string{"k": "\xff"}, "jsonv: string at $.k is not valid UTF-8, which is not lossless JSON"},
		{"duplicate names", NewObject(Member{"a", 1.0}, Member{"a", 2.0}), `jsonv: duplicate member name "a" in the object at $, which is not lossless JSON`},
		{"json.Number not a number", json.Number(`"x"`), `jsonv: json.Number "\"x\"" at $ is not a JSON number`},
		{"json.Number negative zero", []any{json.Number("-0")}, "jsonv: json.Number at $[0]: jsonv: number -0 at offset 0 is negative zero, which is not lossless JSON"},
		{"raw message", obj("r", json.RawMessage(`{"a":1,"a":1}`)), `jsonv: json.RawMessage at $.r: jsonv: invalid JSON: duplicate member name "a" in the object at $`},
		{"cyclic map", cyclicMap, "jsonv: value of Go type map[string]interface {} at $.x[0] is circular"},
		{"cyclic object", cyclicObj, "jsonv: value of Go type *jsonv.Object at $.self[0] is circular"},
		{"cyclic slice", cyclicSlice, "jsonv: value of Go type []interface {} at $[1] is circular"},
		{"cyclic sub-slice", cyclicSub, "jsonv: value of Go type []interface {} at $[1][0] is circular"},
		{"cyclic Object value", cyclicValue, "jsonv: value of Go type *jsonv.Object at $.v.v is circular"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Snapshot(tt.in)
			if err == nil {
				t.Fatalf("Snapshot = %v, want error %q", got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Snapshot error\n got %q\nwant %q", err, tt.want)
			}
		})
	}
}

func TestSnapshotIsIndependent(t *testing.T) {
	inner := []any{1.0, "x"}
	o := obj("list", inner, "m", map[string]any{"k": []any{true}})
	snap, err := Snapshot(o)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := Marshal(snap)
	inner[0] = 99.0
	o.Set("list", "replaced")
	o.Set("new", 1.0)
	if m, ok := o.Get("m"); ok {
		m.(map[string]any)["k"].([]any)[0] = false
	}
	after, _ := Marshal(snap)
	if string(before) != string(after) {
		t.Errorf("snapshot changed with its input: %s -> %s", before, after)
	}
}

func TestCheck(t *testing.T) {
	type point struct{}
	cyclic := obj()
	cyclic.Set("me", cyclic)
	tests := []struct {
		name string
		in   any
		want string // "" for accepted
	}{
		{"null", nil, ""},
		{"scalars", []any{true, 1.5, "s"}, ""},
		{"nested", obj("a", []any{obj("b", []any{})}), ""},
		{"nil slice", []any(nil), ""},
		{"nil object", (*Object)(nil), ""},
		{"shared", []any{cyclic.Members(), cyclic.Members()}, "jsonv: value of Go type []jsonv.Member at $[0] is not lossless JSON"},
		{"int", []any{1}, "jsonv: value of Go type int at $[0] is not lossless JSON"},
		{"map", obj("m", map[string]any{}), "jsonv: value of Go type map[string]interface {} at $.m is not lossless JSON"},
		{"Object value", *obj(), "jsonv: value of Go type jsonv.Object at $ is not lossless JSON"},
		{"struct", point{}, "jsonv: value of Go type jsonv.point at $ is not lossless JSON"},
		{"NaN", obj("n", math.NaN()), "jsonv: number NaN at $.n is not finite, which is not lossless JSON"},
		{"negative zero", []any{[]any{math.Copysign(0, -1)}}, "jsonv: number -0 at $[0][0] is negative zero, which is not lossless JSON"},
		{"invalid UTF-8", obj("s", "\xc3"), "jsonv: string at $.s is not valid UTF-8, which is not lossless JSON"},
		{"invalid name", obj("\xc3", 1.0), `jsonv: member name "\xc3" at $["\xc3"] is not valid UTF-8, which is not lossless JSON`},
		{"duplicate", []any{NewObject(Member{"k", 1.0}, Member{"k", 1.0})}, `jsonv: duplicate member name "k" in the object at $[0], which is not lossless JSON`},
		{"duplicate in indexed object", dupBig(), `jsonv: duplicate member name "k0" in the object at $, which is not lossless JSON`},
		{"cycle", cyclic, "jsonv: value of Go type *jsonv.Object at $.me is circular"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.in)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Errorf("Check error\n got %v\nwant %s", err, tt.want)
			}
			// Marshal validates exactly like Check.
			_, merr := Marshal(tt.in)
			if (merr == nil) != (err == nil) || err != nil && merr.Error() != err.Error() {
				t.Errorf("Marshal error %v, Check error %v", merr, err)
			}
		})
	}
}

// dupBig returns an indexed object with a repeated name.
func dupBig() *Object {
	ms := make([]Member, 0, 30)
	for i := range 30 {
		ms = append(ms, Member{Name: "k" + string(rune('0'+i%27)), Value: 1.0})
	}
	return NewObject(ms...)
}

func TestClone(t *testing.T) {
	in := obj("a", []any{1.0, obj("b", "x", "c", []any{})}, "d", &Object{}, "e", nil, "big", bigObject(20))
	out := Clone(in)
	if !Equal(in, out) {
		t.Fatalf("Clone is not Equal to its input")
	}
	if diff := cmp.Diff(in, out, cmpOpts); diff != "" {
		t.Fatalf("Clone changed member order (-in +out):\n%s", diff)
	}
	// The copy shares nothing mutable.
	out.(*Object).Set("a", "changed")
	inA, _ := in.Get("a")
	inA.([]any)[1].(*Object).Set("b", "changed")
	if got, _ := in.Get("a"); Equal(got, "changed") {
		t.Error("changing the clone changed the original")
	}
	if v, _ := out.(*Object).Get("big"); v.(*Object).index == nil {
		t.Error("clone of a large object has no index")
	}
	if got := Clone("s"); got != "s" {
		t.Errorf("Clone(scalar) = %v", got)
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b any
		want bool
	}{
		{nil, nil, true},
		{nil, false, false},
		{true, true, true},
		{true, false, false},
		{1.0, 1.0, true},
		{1.0, 2.0, false},
		{1.0, "1", false},
		{"a", "a", true},
		{[]any{}, []any(nil), true},
		{&Object{}, (*Object)(nil), true},
		{[]any{1.0, 2.0}, []any{2.0, 1.0}, false},
		{[]any{1.0}, []any{1.0, 1.0}, false},
		{obj("a", 1.0, "b", 2.0), obj("b", 2.0, "a", 1.0), true},
		{obj("a", 1.0), obj("a", 1.0, "b", 2.0), false},
		{obj("a", 1.0, "c", 2.0), obj("a", 1.0, "b", 2.0), false},
		{obj("a", []any{obj("x", nil)}), obj("a", []any{obj("x", nil)}), true},
		{obj("a", []any{obj("x", nil)}), obj("a", []any{obj("x", false)}), false},
		{bigObject(30), bigObject(30), true},
		{[]any{}, &Object{}, false},
		{1, 1, false}, // outside the model
	}
	for _, tt := range tests {
		if got := Equal(tt.a, tt.b); got != tt.want {
			t.Errorf("Equal(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := Equal(tt.b, tt.a); got != tt.want {
			t.Errorf("Equal(%v, %v) = %v, want %v (reversed)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestKindOf(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{nil, "null"},
		{false, "boolean"},
		{1.0, "number"},
		{"", "string"},
		{[]any{}, "array"},
		{&Object{}, "object"},
		{1, "int"},
		{map[string]any{}, "map[string]interface {}"},
	}
	for _, tt := range tests {
		if got := KindOf(tt.in); got != tt.want {
			t.Errorf("KindOf(%#v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
