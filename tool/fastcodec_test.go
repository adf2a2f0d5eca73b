package tool

import (
	"math"
	"reflect"
	"testing"
	"unsafe"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// label is a named string type without methods, flat like a string.
type label string

type flatArgs struct {
	Text  string  `json:"text"`
	Label label   `json:"label"`
	On    bool    `json:"on"`
	Ratio float64 `json:"ratio"`
	Count int     `json:"count"`
	Big   int64
	skip  string //nolint:unused // an unexported field json ignores
	Gone  string `json:"-"`
}

type withMethod struct{ A string }

func (withMethod) String() string { return "x" }

type embedded struct{ flatArgs }

// TestFlatCodecFor pins which types convert directly and which go through json v2.
func TestFlatCodecFor(t *testing.T) {
	tests := []struct {
		name string
		t    reflect.Type
		flat bool
	}{
		{"string", reflect.TypeFor[string](), true},
		{"int", reflect.TypeFor[int](), true},
		{"flat struct", reflect.TypeFor[flatArgs](), true},
		{"type with a method", reflect.TypeFor[withMethod](), false},
		{"embedded struct", reflect.TypeFor[embedded](), false},
		{"tag with options", reflect.TypeFor[struct {
			A string `json:"a,omitempty"`
		}](), false},
		{"quoted tag name", reflect.TypeFor[struct {
			A string `json:"'a'"`
		}](), false},
		{"slice field", reflect.TypeFor[struct{ A []string }](), false},
		{"int32 field", reflect.TypeFor[struct{ A int32 }](), false},
		{"duplicate names", reflect.StructOf([]reflect.StructField{
			{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
			{Name: "B", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
		}), false},
		{"map", reflect.TypeFor[map[string]any](), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := flatCodecFor(tc.t) != nil; got != tc.flat {
				t.Fatalf("flatCodecFor(%v) flat = %v, want %v", tc.t, got, tc.flat)
			}
		})
	}
}

// TestFlatCodecDeclines checks that every value the direct conversion cannot vouch for is
// left to json v2 (decode or encode reports false).
func TestFlatCodecDeclines(t *testing.T) {
	c := flatCodecFor(reflect.TypeFor[flatArgs]())
	decodeCases := map[string]string{
		"wrong member type": `{"text":1}`,
		"null member":       `{"text":null}`,
		"fractional int":    `{"count":1.5}`,
		"huge int":          `{"count":1e300}`,
		"not an object":     `[1]`,
	}
	for name, src := range decodeCases {
		t.Run("decode "+name, func(t *testing.T) {
			v, err := jsonv.ParseString(src)
			if err != nil {
				t.Fatal(err)
			}
			var dst flatArgs
			if c.decode(v, unsafe.Pointer(&dst)) {
				t.Fatalf("decode(%s) accepted", src)
			}
		})
	}
	dup := jsonv.NewObject(jsonv.Member{Name: "text", Value: "a"}, jsonv.Member{Name: "text", Value: "b"})
	var dst flatArgs
	if c.decode(dup, unsafe.Pointer(&dst)) {
		t.Fatal("decode accepted duplicate members")
	}
	encodeCases := map[string]flatArgs{
		"invalid UTF-8": {Text: "\xff"},
		"NaN":           {Ratio: math.NaN()},
		"infinity":      {Ratio: math.Inf(1)},
		"negative zero": {Ratio: math.Copysign(0, -1)},
		"huge int":      {Big: 1 << 60},
	}
	for name, v := range encodeCases {
		t.Run("encode "+name, func(t *testing.T) {
			if _, ok := c.encode(reflect.ValueOf(&v).Elem()); ok {
				t.Fatalf("encode(%+v) accepted", v)
			}
		})
	}
}

// TestFlatCodecMatchesJSON checks, on random values, that whenever the direct conversion
// accepts, it gives exactly what the json v2 round trip gives.
func TestFlatCodecMatchesJSON(t *testing.T) {
	c := flatCodecFor(reflect.TypeFor[flatArgs]())
	rapid.Check(t, func(rt *rapid.T) {
		in := flatArgs{
			Text:  rapid.String().Draw(rt, "text"),
			Label: label(rapid.String().Draw(rt, "label")),
			On:    rapid.Bool().Draw(rt, "on"),
			Ratio: rapid.Float64().Draw(rt, "ratio"),
			Count: rapid.IntRange(-1<<53, 1<<53).Draw(rt, "count"),
			Big:   rapid.Int64().Draw(rt, "big"),
			Gone:  "never encoded",
		}
		want, wantErr := jsonv.FromGo(in)
		got, ok := c.encode(reflect.ValueOf(&in).Elem())
		if ok {
			if wantErr != nil {
				rt.Fatalf("direct encode accepted %+v, json v2 fails: %v", in, wantErr)
			}
			wb, _ := jsonv.Marshal(want)
			gb, _ := jsonv.Marshal(got)
			if string(wb) != string(gb) {
				rt.Fatalf("encode %+v:\n json v2 %s\n direct  %s", in, wb, gb)
			}
		}
		if wantErr != nil {
			return
		}
		// Decode the canonical value both ways, with a random extra member json ignores.
		o := want.(*jsonv.Object)
		o.Set(rapid.StringMatching(`[a-z]{1,6}`).Draw(rt, "extra"), float64(rapid.IntRange(-1000, 1000).Draw(rt, "extraValue")))
		var viaJSON, direct flatArgs
		errJSON := jsonv.Decode(o, &viaJSON)
		if c.decode(o, unsafe.Pointer(&direct)) {
			if errJSON != nil {
				rt.Fatalf("direct decode accepted %v, json v2 fails: %v", o, errJSON)
			}
			if diff := cmp.Diff(viaJSON, direct, cmp.AllowUnexported(flatArgs{})); diff != "" {
				rt.Fatalf("decode differs (-json v2 +direct):\n%s", diff)
			}
		}
	})
}
