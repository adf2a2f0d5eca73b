package tool

import (
	"math"
	"reflect"
	"testing"
	"unsafe"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/schema"
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

// inferredOut is the schema inference makes of flatArgs, as a typed tool without an
// explicit output schema has it.
func inferredOut(t testing.TB) *jsonv.Object {
	t.Helper()
	s, err := schema.For[flatArgs]()
	if err != nil {
		t.Fatal(err)
	}
	return s.Raw().(*jsonv.Object)
}

// TestFlatSchemaHolds pins which output schemas the flat conversion's values are known to
// satisfy (their validation is skipped) and which are validated.
func TestFlatSchemaHolds(t *testing.T) {
	c := flatCodecFor(reflect.TypeFor[flatArgs]())
	edit := func(f func(o *jsonv.Object)) any {
		o := jsonv.Clone(inferredOut(t)).(*jsonv.Object)
		f(o)
		return o
	}
	prop := func(o *jsonv.Object, name string) *jsonv.Object {
		p, _ := o.Get("properties")
		v, _ := p.(*jsonv.Object).Get(name)
		return v.(*jsonv.Object)
	}
	tests := []struct {
		name string
		raw  any
		want bool
	}{
		{"inferred", inferredOut(t), true},
		{"with descriptions", edit(func(o *jsonv.Object) {
			o.Set("description", "d")
			prop(o, "text").Set("description", "d")
		}), true},
		{"open object", edit(func(o *jsonv.Object) { o.Set("additionalProperties", true) }), true},
		{"no required list", edit(func(o *jsonv.Object) { o.Delete("required") }), true},
		{"an enum", edit(func(o *jsonv.Object) { prop(o, "text").Set("enum", []any{"a"}) }), false},
		{"a const", edit(func(o *jsonv.Object) { prop(o, "count").Set("const", 0.0) }), false},
		{"a title", edit(func(o *jsonv.Object) { prop(o, "count").Set("title", "n") }), false},
		{"another type", edit(func(o *jsonv.Object) { prop(o, "count").Set("type", "string") }), false},
		{"a property missing", edit(func(o *jsonv.Object) {
			p, _ := o.Get("properties")
			p.(*jsonv.Object).Delete("text")
		}), false},
		{"an extra property", edit(func(o *jsonv.Object) {
			p, _ := o.Get("properties")
			p.(*jsonv.Object).Set("extra", jsonv.NewObject(jsonv.Member{Name: "type", Value: "string"}))
		}), false},
		{"an unknown required name", edit(func(o *jsonv.Object) { o.Set("required", []any{"text", "extra"}) }), false},
		{"a schema for additional properties", edit(func(o *jsonv.Object) {
			o.Set("additionalProperties", jsonv.NewObject(jsonv.Member{Name: "type", Value: "string"}))
		}), false},
		{"another keyword", edit(func(o *jsonv.Object) { o.Set("oneOf", []any{}) }), false},
		{"not an object type", edit(func(o *jsonv.Object) { o.Set("type", "array") }), false},
		{"no type", edit(func(o *jsonv.Object) { o.Delete("type") }), false},
		{"true", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.schemaHolds(tc.raw); got != tc.want {
				t.Fatalf("schemaHolds = %v, want %v", got, tc.want)
			}
		})
	}
	str := flatCodecFor(reflect.TypeFor[string]())
	for raw, want := range map[string]bool{`{"type":"string"}`: true, `{"type":"string","description":"d"}`: true,
		`{"type":"string","enum":["a"]}`: false, `{"type":"integer"}`: false, `{}`: false} {
		v, err := jsonv.ParseString(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := str.schemaHolds(v); got != want {
			t.Errorf("string codec: schemaHolds(%s) = %v, want %v", raw, got, want)
		}
	}
}

// TestPropFlatSchemaHolds checks the claim the skipped validation rests on: whenever
// schemaHolds accepts an output schema (drawn from the inferred one and edits of it), every
// value the flat conversion builds satisfies it.
func TestPropFlatSchemaHolds(t *testing.T) {
	c := flatCodecFor(reflect.TypeFor[flatArgs]())
	base := inferredOut(t)
	keywords := []jsonv.Member{
		{Name: "description", Value: "d"}, {Name: "title", Value: "t"}, {Name: "enum", Value: []any{"a", 1.0, true, false, 0.0, ""}},
		{Name: "const", Value: ""}, {Name: "const", Value: 0.0}, {Name: "const", Value: false},
		{Name: "type", Value: "number"}, {Name: "type", Value: "integer"}, {Name: "type", Value: "string"},
		{Name: "type", Value: "boolean"}, {Name: "type", Value: "null"},
	}
	names := []string{"text", "label", "on", "ratio", "count", "Big"}
	rapid.Check(t, func(rt *rapid.T) {
		raw := jsonv.Clone(base).(*jsonv.Object)
		props, _ := raw.Get("properties")
		for range rapid.IntRange(0, 3).Draw(rt, "edits") {
			p, _ := props.(*jsonv.Object).Get(rapid.SampledFrom(names).Draw(rt, "property"))
			k := rapid.SampledFrom(keywords).Draw(rt, "keyword")
			p.(*jsonv.Object).Set(k.Name, k.Value)
		}
		s, err := schema.Compile(raw)
		if err != nil {
			rt.Skip("not a supported schema")
		}
		in := flatArgs{
			Text:  rapid.String().Draw(rt, "text"),
			Label: label(rapid.String().Draw(rt, "label")),
			On:    rapid.Bool().Draw(rt, "on"),
			Ratio: rapid.Float64().Draw(rt, "ratio"),
			Count: rapid.IntRange(-1<<53, 1<<53).Draw(rt, "count"),
			Big:   rapid.Int64().Draw(rt, "big"),
		}
		v, ok := c.encode(reflect.ValueOf(&in).Elem())
		if !ok || !c.schemaHolds(s.Raw()) {
			return
		}
		if vs := s.Validate(v, schema.RootValue); len(vs) > 0 {
			rt.Fatalf("schemaHolds accepted %s, but %+v violates it: %v", mustMarshal(rt, s.Raw()), in, vs)
		}
	})
}

func mustMarshal(t *rapid.T, v any) string {
	b, err := jsonv.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
