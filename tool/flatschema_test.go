package tool

import (
	"math"
	"reflect"
	"testing"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/schema"
	"pgregory.net/rapid"
)

// TestFlatSchemaOf pins which argument schemas take the flat check.
func TestFlatSchemaOf(t *testing.T) {
	inferred, err := schema.ForTypeWith(reflect.TypeFor[flatArgs](), schema.Inference{Open: true})
	if err != nil {
		t.Fatal(err)
	}
	strict, err := schema.ForTypeWith(reflect.TypeFor[flatArgs](), schema.Inference{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		raw    any
		flat   bool
		closed bool
	}{
		{"inferred, open", inferred.Raw(), true, false},
		{"inferred, strict", strict.Raw(), true, true},
		{"annotations", `{"type":"object","title":"t","description":"d","properties":{"a":{"type":"string","description":"d","title":"t"}}}`, true, false},
		{"no properties", `{"type":"object"}`, true, false},
		{"an enum", `{"type":"object","properties":{"a":{"type":"string","enum":["x"]}}}`, false, false},
		{"a const", `{"type":"object","properties":{"a":{"type":"integer","const":1}}}`, false, false},
		{"a nested object", `{"type":"object","properties":{"a":{"type":"object"}}}`, false, false},
		{"an array", `{"type":"object","properties":{"a":{"type":"array"}}}`, false, false},
		{"a null type", `{"type":"object","properties":{"a":{"type":"null"}}}`, false, false},
		{"a oneOf", `{"type":"object","properties":{"a":{"oneOf":[{"type":"string"}]}}}`, false, false},
		{"a schema for additional properties", `{"type":"object","additionalProperties":{"type":"string"}}`, false, false},
		{"required undeclared", `{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`, false, false},
		{"not an object", `{"type":"string"}`, false, false},
		{"no type", `{"properties":{"a":{"type":"string"}}}`, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := tc.raw
			if s, ok := raw.(string); ok {
				v, err := jsonv.ParseString(s)
				if err != nil {
					t.Fatal(err)
				}
				raw = v
			}
			fs := flatSchemaOf(raw)
			if (fs != nil) != tc.flat {
				t.Fatalf("flatSchemaOf flat = %v, want %v", fs != nil, tc.flat)
			}
			if fs != nil && fs.closed != tc.closed {
				t.Fatalf("closed = %v, want %v", fs.closed, tc.closed)
			}
		})
	}
}

// TestPropFlatSchemaValid checks the claim the skipped validation rests on: on random
// flat-shaped schemas and random arguments (conforming, of the wrong type, missing,
// undeclared, repeated, not lossless), whatever the flat check accepts the validator
// accepts too; and the check does accept the arguments that conform, so it is used.
func TestPropFlatSchemaValid(t *testing.T) {
	types := []string{"string", "number", "integer", "boolean"}
	names := []string{"a", "b", "c", "d", "\xff"}
	tricky := rapid.SampledFrom([]any{math.NaN(), math.Inf(-1), math.Copysign(0, -1), 1.5, -0.25, "\xfe", []any{}, jsonv.NewObject(), 3})
	scalar := rapid.OneOf(
		rapid.Just[any](nil),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(rapid.Float64(), func(f float64) any { return f }),
		rapid.Map(rapid.IntRange(-5, 5), func(n int) any { return float64(n) }),
		rapid.Map(rapid.String(), func(s string) any { return s }),
		tricky, tricky, tricky,
	)
	accepted := 0
	rapid.Check(t, func(rt *rapid.T) {
		props := jsonv.NewObject()
		var required []any
		typeOf := map[string]string{}
		for _, n := range names[:4] {
			if rapid.Bool().Draw(rt, "declared "+n) {
				typ := rapid.SampledFrom(types).Draw(rt, "type "+n)
				typeOf[n] = typ
				props.Set(n, jsonv.NewObject(jsonv.Member{Name: "type", Value: typ}))
				if rapid.Bool().Draw(rt, "required "+n) {
					required = append(required, n)
				}
			}
		}
		raw := jsonv.NewObject(jsonv.Member{Name: "type", Value: "object"}, jsonv.Member{Name: "properties", Value: props})
		if len(required) > 0 {
			raw.Set("required", required)
		}
		if rapid.Bool().Draw(rt, "closed") {
			raw.Set("additionalProperties", false)
		}
		s, err := schema.Compile(raw)
		if err != nil {
			rt.Fatalf("compile %v: %v", raw, err)
		}
		fs := flatSchemaOf(s.Raw())
		if fs == nil {
			rt.Fatalf("flatSchemaOf(%s) = nil", mustMarshal(rt, s.Raw()))
		}
		// Several arguments a schema: members mostly with conforming values of declared
		// properties, sometimes anything.
		for range 16 {
			var ms []jsonv.Member
			for range rapid.IntRange(0, 5).Draw(rt, "members") {
				n := rapid.SampledFrom(names).Draw(rt, "name")
				var v any
				typ, declared := typeOf[n]
				switch k := rapid.IntRange(0, 5).Draw(rt, "kind"); {
				case declared && k < 4:
					v = conforming(rt, typ)
				case declared && k == 4:
					v = almost(rt, typ)
				default:
					v = scalar.Draw(rt, "value")
				}
				ms = append(ms, jsonv.Member{Name: n, Value: v})
			}
			var args any = jsonv.NewObject(ms...)
			if rapid.IntRange(0, 20).Draw(rt, "not an object") == 0 {
				args = scalar.Draw(rt, "args")
			}
			if fs.valid(args) {
				accepted++
				if vs := s.Validate(args, ""); len(vs) > 0 {
					rt.Fatalf("the flat check accepted %#v against %s; the validator reports %v", args, mustMarshal(rt, s.Raw()), vs)
				}
			}
		}
	})
	if accepted == 0 {
		t.Fatal("the flat check accepted no arguments at all")
	}
}

// almost draws a value that is not a lossless JSON value of the JSON type typ but comes
// close: a string that is not UTF-8, a non-finite number or -0, a fraction for an integer.
func almost(t *rapid.T, typ string) any {
	switch typ {
	case "string":
		return rapid.SampledFrom([]any{"\xfe", "a\xff", 1.0}).Draw(t, "not a string")
	case "boolean":
		return rapid.SampledFrom([]any{"true", 0.0, nil}).Draw(t, "not a boolean")
	case "integer":
		return rapid.SampledFrom([]any{1.5, -0.25, math.Copysign(0, -1), math.Inf(1)}).Draw(t, "not an integer")
	}
	return rapid.SampledFrom([]any{math.NaN(), math.Inf(-1), math.Copysign(0, -1), "1"}).Draw(t, "not a number")
}

// conforming draws a value of the JSON type typ.
func conforming(t *rapid.T, typ string) any {
	switch typ {
	case "string":
		return rapid.StringMatching(`[a-z]{0,4}`).Draw(t, "string")
	case "boolean":
		return rapid.Bool().Draw(t, "bool")
	case "integer":
		return float64(rapid.IntRange(-100, 100).Draw(t, "integer"))
	}
	return float64(rapid.IntRange(-100, 100).Draw(t, "number")) / 4
}

// FuzzFlatSchemaValid: on any argument text a model may send, parsed as the scheduler
// parses it, the flat check of a typed tool's inferred argument schema (open and strict)
// never panics and never accepts what the validator rejects.
func FuzzFlatSchemaValid(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"text":"a","label":"b","on":true,"ratio":1.5,"count":2,"Big":3}`, `{"text":1}`,
		`{"text":"a","text":"b"}`, "{\"text\":\"\xff\"}", `{"count":1.5}`, `{"count":-0}`, `{"ratio":1e400}`,
		`{"extra":[1]}`, `{"extra":null}`, `[]`, `null`, `"s"`, `{"on":"true"}`,
	} {
		f.Add(s)
	}
	var checks []*flatSchema
	var schemas []*schema.Schema
	for _, inf := range []schema.Inference{{Open: true}, {}} {
		s, err := schema.ForTypeWith(reflect.TypeFor[flatArgs](), inf)
		if err != nil {
			f.Fatal(err)
		}
		fs := flatSchemaOf(s.Raw())
		if fs == nil {
			f.Fatalf("the schema inferred from flatArgs (%+v) is not flat", inf)
		}
		checks, schemas = append(checks, fs), append(schemas, s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		args, err := jsonv.ParseString(raw)
		if err != nil {
			return
		}
		for i, fs := range checks {
			if fs.valid(args) {
				if vs := schemas[i].Validate(args, ""); len(vs) > 0 {
					t.Fatalf("the flat check accepted %s; the validator reports %v", raw, vs)
				}
			}
		}
	})
}
