package schema

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-go/dsh/jsonv"
)

// parse reads JSON text in a test, failing it on a syntax error.
func parse(t testing.TB, text string) any {
	t.Helper()
	v, err := jsonv.ParseString(text)
	if err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	return v
}

// violationsOf returns the violations of Assert (or AssertObject) on raw, failing the test
// when raw is accepted or the error is not an *Error.
func violationsOf(t *testing.T, raw any, objectRoot bool) []string {
	t.Helper()
	var err error
	if objectRoot {
		err = AssertObject(raw)
	} else {
		err = Assert(raw)
	}
	if err == nil {
		t.Fatalf("Assert(%v) = nil, want an error", raw)
	}
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("Assert(%v) error %T, want *Error", raw, err)
	}
	if want := "unsupported JSON schema: " + strings.Join(se.Violations, "; "); err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	return se.Violations
}

const subset = " is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)"

func TestAssertAccepts(t *testing.T) {
	for _, text := range []string{
		`{"type":"string"}`,
		`{"type":"number"}`,
		`{"type":"integer"}`,
		`{"type":"boolean"}`,
		`{"type":"null"}`,
		`{"type":"array","items":{"type":"string"}}`,
		`{"type":"array"}`,
		`{"type":"object","properties":{"nested":{"type":"object","properties":{},"additionalProperties":false},"free":{}},"required":["nested"],"additionalProperties":true}`,
		`{"oneOf":[{"type":"string"},{"type":"number"}]}`,
		`{"oneOf":[{"type":"string"},{"type":"number"}],"description":"either","title":"T","default":"x","examples":["x",1]}`,
		`{"description":"any JSON","title":"JSON","default":null,"examples":[1,"x"]}`,
		`{}`,
		`{"type":"string","enum":["a"],"const":"a"}`,
		`{"type":"number","enum":[1.5],"const":1.5}`,
		`{"type":"integer","enum":[1],"const":1}`,
		`{"type":"integer","enum":[1e300]}`,
		`{"type":"boolean","enum":[true],"const":true}`,
		`{"type":"null","enum":[null],"const":null}`,
		`{"type":"object","properties":{"__proto__":{"type":"string"}},"required":["__proto__"]}`,
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a","a"]}`,
		`{"type":"object","default":{"x":[1,{"y":null}]}}`,
	} {
		t.Run(text, func(t *testing.T) {
			if err := Assert(parse(t, text)); err != nil {
				t.Errorf("Assert(%s) = %v, want nil", text, err)
			}
			if _, err := Compile(parse(t, text)); err != nil {
				t.Errorf("Compile(%s) = %v, want nil", text, err)
			}
		})
	}
}

func TestAssertRejects(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   []string
	}{
		// Nodes must be schema objects.
		{`null`, []string{"schema must be a schema object"}},
		{`[]`, []string{"schema must be a schema object"}},
		{`"no"`, []string{"schema must be a schema object"}},
		{`true`, []string{"schema must be a schema object"}},
		{`{"type":"object","properties":{"a":"x"}}`, []string{"schema.properties.a must be a schema object"}},
		{`{"type":"array","items":[{"type":"string"}]}`, []string{"schema.items must be a schema object"}},
		{`{"oneOf":[{"type":"string"},false]}`, []string{"schema.oneOf[1] must be a schema object"}},

		// Unknown keywords.
		{`{"type":"object","anyOf":[]}`, []string{"schema.anyOf" + subset}},
		{`{"type":"object","allOf":[]}`, []string{"schema.allOf" + subset}},
		{`{"type":"object","not":{}}`, []string{"schema.not" + subset}},
		{`{"type":"string","pattern":"x"}`, []string{"schema.pattern" + subset}},
		{`{"type":"number","minimum":1}`, []string{"schema.minimum" + subset}},
		{`{"type":"string","maxLength":1}`, []string{"schema.maxLength" + subset}},
		{`{"$ref":"#/x"}`, []string{"schema.$ref" + subset}},
		{`{"$schema":"x","type":"string","format":"uri"}`, []string{"schema.$schema" + subset, "schema.format" + subset}},

		// Annotations.
		{`{"description":1}`, []string{"schema.description must be a string"}},
		{`{"title":1}`, []string{"schema.title must be a string"}},
		{`{"title":null,"description":[]}`, []string{"schema.description must be a string", "schema.title must be a string"}},

		// type and oneOf.
		{`{"type":"string","oneOf":[{},{}]}`, []string{"schema cannot declare both type and oneOf"}},
		{`{"properties":{},"required":[],"additionalProperties":true,"items":{},"enum":[],"const":null}`, []string{
			"schema.properties requires type or oneOf",
			"schema.required requires type or oneOf",
			"schema.additionalProperties requires type or oneOf",
			"schema.items requires type or oneOf",
			"schema.enum requires type or oneOf",
			"schema.const requires type or oneOf",
		}},
		{`{"oneOf":[]}`, []string{"schema.oneOf must be an array of at least two schemas"}},
		{`{"oneOf":[{}]}`, []string{"schema.oneOf must be an array of at least two schemas"}},
		{`{"oneOf":"x"}`, []string{"schema.oneOf must be an array of at least two schemas"}},
		{`{"oneOf":[{"type":"string"},{"type":"number"}],"items":{}}`, []string{"schema.items is not supported beside oneOf"}},
		{`{"oneOf":[{"type":"string"},{"type":"weird"}],"const":1,"enum":[1]}`, []string{
			"schema.oneOf[1].type must be one of object/array/string/number/integer/boolean/null",
			"schema.enum is not supported beside oneOf",
			"schema.const is not supported beside oneOf",
		}},
		{`{"type":"tuple"}`, []string{"schema.type must be one of object/array/string/number/integer/boolean/null"}},
		{`{"type":1}`, []string{"schema.type must be one of object/array/string/number/integer/boolean/null"}},
		{`{"type":null}`, []string{"schema.type must be one of object/array/string/number/integer/boolean/null"}},
		{`{"type":["string","null"]}`, []string{"schema.type must be a single type string (type arrays are not supported)"}},

		// Misplaced keywords.
		{`{"type":"object","items":{}}`, []string{`schema.items is not supported on type "object"`}},
		{`{"type":"array","properties":{}}`, []string{`schema.properties is not supported on type "array"`}},
		{`{"type":"object","enum":["x"]}`, []string{`schema.enum is not supported on type "object"`}},
		{`{"type":"array","const":null}`, []string{`schema.const is not supported on type "array"`}},
		{`{"type":"string","required":[],"additionalProperties":false}`, []string{
			`schema.required is not supported on type "string"`,
			`schema.additionalProperties is not supported on type "string"`,
		}},

		// Objects.
		{`{"type":"object","properties":[]}`, []string{"schema.properties must be an object of schemas"}},
		{`{"type":"object","properties":null,"required":["missing"]}`, []string{
			"schema.properties must be an object of schemas",
			`schema.required names "missing" which is not in properties`,
		}},
		{`{"type":"object","required":"a"}`, []string{"schema.required must be an array of strings"}},
		{`{"type":"object","required":[1]}`, []string{"schema.required must be an array of strings"}},
		{`{"type":"object","properties":{},"required":["missing"]}`, []string{`schema.required names "missing" which is not in properties`}},
		{`{"type":"object","required":["a"]}`, []string{`schema.required names "a" which is not in properties`}},
		{`{"type":"object","properties":{},"required":["toString"]}`, []string{`schema.required names "toString" which is not in properties`}},
		{`{"type":"object","additionalProperties":"yes"}`, []string{"schema.additionalProperties must be a boolean"}},
		{`{"type":"object","additionalProperties":{}}`, []string{"schema.additionalProperties must be a boolean"}},

		// Scalars.
		{`{"type":"string","enum":[]}`, []string{"schema.enum must be a non-empty array of string values"}},
		{`{"type":"string","enum":"a"}`, []string{"schema.enum must be a non-empty array of string values"}},
		{`{"type":"number","enum":["1"]}`, []string{"schema.enum must be a non-empty array of number values"}},
		{`{"type":"integer","enum":[1.5]}`, []string{"schema.enum must be a non-empty array of integer values"}},
		{`{"type":"null","enum":[0]}`, []string{"schema.enum must be a non-empty array of null values"}},
		{`{"type":"boolean","const":1}`, []string{"schema.const must be a boolean value"}},
		{`{"type":"integer","const":0.5}`, []string{"schema.const must be a integer value"}},
		{`{"type":"string","enum":["a"],"const":"b"}`, []string{"schema.const must be one of schema.enum when both are declared"}},
		{`{"type":"string","enum":[1],"const":"b"}`, []string{"schema.enum must be a non-empty array of string values"}},
		{`{"type":"string","enum":[1],"const":2}`, []string{
			"schema.enum must be a non-empty array of string values",
			"schema.const must be a string value",
		}},

		// Everything is collected, in walk order: a node's keywords, then its children,
		// then the checks that follow the children.
		{`{"type":"object","pattern":"x","properties":{"a":{"type":"weird"},"b":{"type":"string","minimum":1}},"required":["c"],"additionalProperties":1}`, []string{
			"schema.pattern" + subset,
			"schema.properties.a.type must be one of object/array/string/number/integer/boolean/null",
			"schema.properties.b.minimum" + subset,
			`schema.required names "c" which is not in properties`,
			"schema.additionalProperties must be a boolean",
		}},
		{`{"type":"array","items":{"type":"array","items":{"oneOf":[{"type":"x"},{"type":"object","properties":{"k":{"enum":[1]}}}]}}}`, []string{
			"schema.items.items.oneOf[0].type must be one of object/array/string/number/integer/boolean/null",
			"schema.items.items.oneOf[1].properties.k.enum requires type or oneOf",
		}},
	} {
		t.Run(tc.schema, func(t *testing.T) {
			got := violationsOf(t, parse(t, tc.schema), false)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			if _, err := Compile(parse(t, tc.schema)); err == nil {
				t.Errorf("Compile accepted %s", tc.schema)
			}
		})
	}
}

func TestAssertObject(t *testing.T) {
	if err := AssertObject(parse(t, `{"type":"object"}`)); err != nil {
		t.Errorf("AssertObject(object) = %v", err)
	}
	for _, text := range []string{`{}`, `{"type":"string"}`, `{"type":"array"}`, `{"oneOf":[{"type":"string"},{"type":"null"}]}`} {
		got := violationsOf(t, parse(t, text), true)
		want := []string{`schema.type must be "object" (structured output is object-rooted)`}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", text, diff)
		}
	}
	// Other violations take precedence over the root rule.
	got := violationsOf(t, parse(t, `{"type":"string","x":1}`), true)
	if diff := cmp.Diff([]string{"schema.x" + subset}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// obj builds a *jsonv.Object from alternating names and values.
func obj(kv ...any) *jsonv.Object {
	o := &jsonv.Object{}
	for i := 0; i < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1])
	}
	return o
}

func TestAssertGoValues(t *testing.T) {
	cyclic := obj("type", "object")
	cyclic.Set("properties", obj("self", cyclic))

	deepCycle := obj("type", "array")
	deepCycle.Set("items", obj("oneOf", []any{obj("type", "null"), deepCycle}))

	cyclicDefault := obj()
	cyclicDefault.Set("self", cyclicDefault)

	cyclicMap := map[string]any{"type": "object"}
	cyclicMap["properties"] = map[string]any{"me": cyclicMap}

	for _, tc := range []struct {
		name string
		raw  any
		want []string
	}{
		{"cycle", cyclic, []string{"schema.properties.self is circular"}},
		{"cycle through oneOf", deepCycle, []string{"schema.items.oneOf[1] is circular"}},
		{"cycle through maps", cyclicMap, []string{"schema.properties.me is circular"}},
		{"cyclic default", obj("default", cyclicDefault), []string{"schema.default annotation must be lossless JSON data"}},
		{"infinite default", obj("default", math.Inf(1)), []string{"schema.default annotation must be lossless JSON data"}},
		{"NaN example", obj("examples", []any{math.NaN()}), []string{"schema.examples annotation must be lossless JSON data"}},
		{"func example", obj("examples", func() {}), []string{"schema.examples annotation must be lossless JSON data"}},
		{"NaN description", obj("description", math.NaN()), []string{
			"schema.description annotation must be lossless JSON data",
			"schema.description must be a string",
		}},
		{"NaN enum", obj("type", "number", "enum", []any{math.NaN()}), []string{"schema.enum must be a non-empty array of number values"}},
		{"negative zero const", obj("type", "number", "const", math.Copysign(0, -1)), []string{"schema.const must be a number value"}},
		{"struct node", obj("type", "object", "properties", obj("at", struct{}{})), []string{"schema.properties.at must be a schema object"}},
		{"duplicate names", jsonv.NewObject(jsonv.Member{Name: "type", Value: "string"}, jsonv.Member{Name: "type", Value: "number"}), []string{"schema must be a schema object"}},
		{"invalid UTF-8 const", obj("type", "string", "const", "\xff"), []string{"schema.const must be a string value"}},
		{"Go slices in an unconvertible tree", map[string]any{"type": "string", "enum": []string{"a"}, "default": math.NaN()}, []string{"schema.default annotation must be lossless JSON data"}},
		{"invalid UTF-8 name", obj("type", "object", "properties", obj("\xff", obj())), []string{"schema.properties must be an object of schemas"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := violationsOf(t, tc.raw, false)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAssertGoValuesAccepted(t *testing.T) {
	leaf := obj("type", "string")
	for _, tc := range []struct {
		name string
		raw  any
	}{
		{"sibling reuse", obj("type", "object", "properties", obj("a", leaf, "b", leaf))},
		{"reuse across levels", obj("type", "array", "items", obj("oneOf", []any{leaf, obj("type", "array", "items", leaf)}))},
		{"nil object is {}", (*jsonv.Object)(nil)},
		{"nil property schema", obj("type", "object", "properties", obj("a", (*jsonv.Object)(nil)))},
		{"Go literal", map[string]any{
			"type":       "object",
			"properties": map[string]any{"n": map[string]any{"type": "integer", "enum": []int{1, 2}}},
			"required":   []string{"n"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Assert(tc.raw); err != nil {
				t.Errorf("Assert = %v, want nil", err)
			}
		})
	}
}

func TestErrorIdentity(t *testing.T) {
	err := Assert(parse(t, `{"type":"tuple"}`))
	var coded interface {
		ErrorName() string
		ErrorCode() string
	}
	if !errors.As(err, &coded) {
		t.Fatalf("%T does not carry a name and a code", err)
	}
	if coded.ErrorName() != "JsonSchemaError" || coded.ErrorCode() != "UNSUPPORTED_SCHEMA" {
		t.Errorf("identity = %s/%s", coded.ErrorName(), coded.ErrorCode())
	}
	if got, want := err.Error(), "unsupported JSON schema: schema.type must be one of object/array/string/number/integer/boolean/null"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
}
