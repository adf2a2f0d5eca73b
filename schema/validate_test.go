package schema

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-go/dsh/jsonv"
)

// compile compiles JSON schema text in a test.
func compile(t testing.TB, text string) *Schema {
	t.Helper()
	s, err := Compile(parse(t, text))
	if err != nil {
		t.Fatalf("Compile(%s): %v", text, err)
	}
	return s
}

// check validates value and compares the violations, and Valid, with want.
func check(t *testing.T, s *Schema, value any, root string, want []string) {
	t.Helper()
	got := s.Validate(value, root)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Validate(%v, %q) (-want +got):\n%s", value, root, diff)
	}
	if got != nil && len(got) == 0 {
		t.Errorf("Validate returned a non-nil empty slice")
	}
	if valid := s.Valid(value); valid != (len(want) == 0) {
		t.Errorf("Valid(%v) = %v, want %v", value, valid, len(want) == 0)
	}
}

var negZero = math.Copysign(0, -1)

func TestValidateTable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema string
		value  any // a jsonv value, or JSON text when it is a string starting with "json:"
		root   string
		want   []string
	}{
		// Unconstrained.
		{"any null", `{}`, nil, "value", nil},
		{"any object", `{"description":"x"}`, "json:{\"x\":[1,null,{\"y\":true}]}", "value", nil},
		{"any NaN", `{}`, math.NaN(), "value", []string{`"value" must be a lossless JSON value`}},
		{"any -0", `{}`, negZero, "value", []string{`"value" must be a lossless JSON value`}},
		{"any +Inf", `{}`, math.Inf(1), "value", []string{`"value" must be a lossless JSON value`}},
		{"any int", `{}`, 1, "value", []string{`"value" must be a lossless JSON value`}},
		{"any map", `{}`, map[string]any{}, "value", []string{`"value" must be a lossless JSON value`}},
		{"any func", `{}`, func() {}, "value", []string{`"value" must be a lossless JSON value`}},
		{"any bad UTF-8", `{}`, "\xff", "value", []string{`"value" must be a lossless JSON value`}},
		{"any nested NaN", `{}`, []any{1.0, []any{math.NaN()}}, "value", []string{`"value" must be a lossless JSON value`}},

		// oneOf.
		{"oneOf one", `{"oneOf":[{"type":"string"},{"type":"number"}]}`, "x", "value", nil},
		{"oneOf none", `{"oneOf":[{"type":"string"},{"type":"number"}]}`, nil, "value", []string{`"value" must match exactly one oneOf branch (matched 0)`}},
		{"oneOf two", `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, 1.0, "value", []string{`"value" must match exactly one oneOf branch (matched 2)`}},
		{"oneOf overlap one", `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, 1.5, "value", nil},
		{"oneOf three", `{"oneOf":[{},{},{}]}`, true, "value", []string{`"value" must match exactly one oneOf branch (matched 3)`}},
		{"oneOf branch messages hidden", `{"type":"object","properties":{"a":{"oneOf":[{"type":"object","required":["x"],"properties":{"x":{}}},{"type":"null"}]}}}`,
			"json:{\"a\":{}}", "value", []string{`"value.a" must match exactly one oneOf branch (matched 0)`}},

		// Strings.
		{"string", `{"type":"string"}`, "x", "value", nil},
		{"string wrong", `{"type":"string"}`, 1.0, "value", []string{`"value" must be a string`}},
		{"string enum", `{"type":"string","enum":["red","green"]}`, "blue", "value", []string{`"value" must be one of ["red","green"]`}},
		{"string enum ok", `{"type":"string","enum":["red","green"]}`, "green", "value", nil},
		{"string const", `{"type":"string","const":"a\"b"}`, "b", "value", []string{`"value" must be "a\"b"`}},
		{"enum then const", `{"type":"string","enum":["a","b"],"const":"a"}`, "c", "value", []string{`"value" must be one of ["a","b"]`}},
		{"const after enum", `{"type":"string","enum":["a","b"],"const":"a"}`, "b", "value", []string{`"value" must be "a"`}},

		// Numbers.
		{"number", `{"type":"number"}`, 1.5, "value", nil},
		{"number string", `{"type":"number"}`, "1", "value", []string{`"value" must be a number`}},
		{"number int", `{"type":"number"}`, 1, "value", []string{`"value" must be a number`}},
		{"number NaN", `{"type":"number"}`, math.NaN(), "value", []string{`"value" must be a finite JSON number`}},
		{"number -0", `{"type":"number"}`, negZero, "value", []string{`"value" must be a finite JSON number`}},
		{"number -Inf", `{"type":"number"}`, math.Inf(-1), "value", []string{`"value" must be a finite JSON number`}},
		{"number enum", `{"type":"number","enum":[1e21,0.1,-2]}`, 3.0, "value", []string{`"value" must be one of [1e+21,0.1,-2]`}},
		{"number const", `{"type":"number","const":1e-7}`, 3.0, "value", []string{`"value" must be 1e-7`}},
		{"number zero in enum", `{"type":"number","enum":[0]}`, 0.0, "value", nil},

		// Integers.
		{"integer", `{"type":"integer"}`, 2.0, "value", nil},
		{"integer big", `{"type":"integer"}`, 1e300, "value", nil},
		{"integer fraction", `{"type":"integer"}`, 1.5, "value", []string{`"value" must be an integer`}},
		{"integer -0", `{"type":"integer"}`, negZero, "value", []string{`"value" must be an integer`}},
		{"integer Inf", `{"type":"integer"}`, math.Inf(1), "value", []string{`"value" must be an integer`}},
		{"integer string", `{"type":"integer"}`, "1", "value", []string{`"value" must be an integer`}},
		{"integer Go int", `{"type":"integer"}`, 1, "value", []string{`"value" must be an integer`}},
		{"integer enum", `{"type":"integer","enum":[1,2]}`, 3.0, "value", []string{`"value" must be one of [1,2]`}},

		// Booleans and null.
		{"boolean", `{"type":"boolean"}`, true, "value", nil},
		{"boolean wrong", `{"type":"boolean"}`, "true", "value", []string{`"value" must be a boolean`}},
		{"boolean const", `{"type":"boolean","const":true}`, false, "value", []string{`"value" must be true`}},
		{"null", `{"type":"null"}`, nil, "value", nil},
		{"null wrong", `{"type":"null"}`, 0.0, "value", []string{`"value" must be null`}},
		{"null typed nil", `{"type":"null"}`, (*jsonv.Object)(nil), "value", []string{`"value" must be null`}},
		{"null enum", `{"type":"null","enum":[null],"const":null}`, nil, "value", nil},

		// Objects.
		{"object", `{"type":"object"}`, "json:{\"x\":1}", "value", nil},
		{"object wrong", `{"type":"object"}`, "x", "value", []string{`"value" must be an object`}},
		{"object array", `{"type":"object"}`, []any{}, "value", []string{`"value" must be an object`}},
		{"object map", `{"type":"object"}`, map[string]any{}, "value", []string{`"value" must be an object`}},
		{"object nil is empty", `{"type":"object"}`, (*jsonv.Object)(nil), "value", nil},
		{"object nil missing", `{"type":"object","properties":{"a":{}},"required":["a"]}`, (*jsonv.Object)(nil), "value", []string{`missing required property "value.a"`}},
		{"object lossy member", `{"type":"object"}`, obj("x", math.NaN()), "value", []string{`"value" must be a lossless JSON object`}},
		{"object lossy undeclared", `{"type":"object","properties":{"a":{"type":"string"}}}`, obj("a", "x", "b", 1), "value", []string{`"value" must be a lossless JSON object`}},
		{"object lossy declared string", `{"type":"object","properties":{"a":{"type":"string"}}}`, obj("a", "\xff"), "value", []string{`"value" must be a lossless JSON object`}},
		{"object bad name", `{"type":"object"}`, obj("\xff", 1.0), "value", []string{`"value" must be a lossless JSON object`}},
		{"object duplicate", `{"type":"object","properties":{"a":{}}}`, jsonv.NewObject(jsonv.Member{Name: "a", Value: 1.0}, jsonv.Member{Name: "a", Value: 2.0}), "value", []string{`"value" must be a lossless JSON object`}},
		{"object duplicate undeclared", `{"type":"object"}`, jsonv.NewObject(jsonv.Member{Name: "b", Value: 1.0}, jsonv.Member{Name: "b", Value: 2.0}), "value", []string{`"value" must be a lossless JSON object`}},
		{"object violation hides loss", `{"type":"object","properties":{"a":{"type":"string"}}}`, obj("a", 1.0, "b", math.NaN()), "value", []string{`"value.a" must be a string`}},
		{"object required", `{"type":"object","properties":{"file":{"type":"string"}},"required":["file"]}`, "json:{}", "value", []string{`missing required property "value.file"`}},
		{"object required twice", `{"type":"object","properties":{"file":{"type":"string"}},"required":["file","file"]}`, "json:{}", "value", []string{`missing required property "value.file"`, `missing required property "value.file"`}},
		{"object toString", `{"type":"object","properties":{"toString":{"type":"string"}},"required":["toString"]}`, "json:{}", "value", []string{`missing required property "value.toString"`}},
		{"object constructor", `{"type":"object","properties":{"constructor":{"type":"string"}}}`, "json:{}", "value", nil},
		{"object __proto__", `{"type":"object","properties":{"__proto__":{"type":"string"}},"required":["__proto__"]}`, "json:{\"__proto__\":1}", "value", []string{`"value.__proto__" must be a string`}},
		{"object null member present", `{"type":"object","properties":{"a":{}},"required":["a"]}`, "json:{\"a\":null}", "value", nil},
		{"object closed", `{"type":"object","additionalProperties":false}`, "json:{\"toString\":1}", "value", []string{`"value.toString" is not a declared property (additionalProperties: false)`}},
		{"object open by default", `{"type":"object","properties":{}}`, "json:{\"x\":1}", "value", nil},
		{"object open true", `{"type":"object","properties":{},"additionalProperties":true}`, "json:{\"x\":1}", "value", nil},
		{"object nested", `{"type":"object","properties":{"file":{"type":"string"},"nested":{"type":"object","properties":{"line":{"type":"integer"}},"required":["line"],"additionalProperties":false}},"required":["file"]}`,
			"json:{\"file\":1,\"nested\":{}}", "value", []string{`"value.file" must be a string`, `missing required property "value.nested.line"`}},
		{"object nested closed", `{"type":"object","properties":{"file":{"type":"string"},"nested":{"type":"object","properties":{"line":{"type":"integer"}},"required":["line"],"additionalProperties":false}},"required":["file"]}`,
			"json:{\"file\":\"a\",\"nested\":{\"line\":1,\"extra\":true}}", "value", []string{`"value.nested.extra" is not a declared property (additionalProperties: false)`}},
		{"object nested ok", `{"type":"object","properties":{"file":{"type":"string"},"nested":{"type":"object","properties":{"line":{"type":"integer"}},"required":["line"],"additionalProperties":false}},"required":["file"]}`,
			"json:{\"file\":\"a\",\"extra\":[1],\"nested\":{\"line\":2}}", "value", nil},

		// Arrays.
		{"array", `{"type":"array","items":{"type":"integer"}}`, "json:[1,2]", "value", nil},
		{"array item", `{"type":"array","items":{"type":"integer"}}`, "json:[1,1.5]", "value", []string{`"value[1]" must be an integer`}},
		{"array wrong", `{"type":"array","items":{"type":"integer"}}`, "x", "value", []string{`"value" must be an array`}},
		{"array typed slice", `{"type":"array"}`, []string{"x"}, "value", []string{`"value" must be an array`}},
		{"array nil is empty", `{"type":"array","items":{"type":"string"}}`, []any(nil), "value", nil},
		{"array lossy", `{"type":"array"}`, []any{math.NaN()}, "value", []string{`"value" must be a dense lossless JSON array`}},
		{"array lossy item string", `{"type":"array","items":{"type":"string"}}`, []any{"\xff"}, "value", []string{`"value" must be a dense lossless JSON array`}},
		{"array items every", `{"type":"array","items":{"type":"string"}}`, "json:[1,\"x\",null]", "value", []string{`"value[0]" must be a string`, `"value[2]" must be a string`}},

		// Paths at the argument root.
		{"arguments root", `{"type":"object"}`, "x", "", []string{`"arguments" must be an object`}},
		{"arguments child", `{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}`, "json:{\"file_path\":1}", "", []string{`"file_path" must be a string`}},
		{"arguments missing", `{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}`, "json:{}", "", []string{`missing required property "file_path"`}},
		{"arguments closed", `{"type":"object","additionalProperties":false}`, "json:{\"x\":1}", "", []string{`"x" is not a declared property (additionalProperties: false)`}},
		{"arguments deep", `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"array","items":{"type":"number"}}}}}}`, "json:{\"a\":{\"b\":[1,2,\"x\"]}}", "", []string{`"a.b[2]" must be a number`}},
		{"arguments lossy", `{"type":"object"}`, obj("x", math.NaN()), "", []string{`"arguments" must be a lossless JSON object`}},
		{"arguments oneOf", `{"oneOf":[{"type":"object"},{"type":"object"}]}`, "json:{}", "", []string{`"arguments" must match exactly one oneOf branch (matched 2)`}},
		{"empty root array index", `{"type":"array","items":{"type":"object","properties":{"k":{"type":"null"}}}}`, "json:[{\"k\":1}]", "", []string{`"[0].k" must be null`}},
		{"custom root", `{"type":"object","properties":{"k":{"type":"null"},"j":{}},"required":["j"],"additionalProperties":false}`, "json:{\"k\":1,\"z\":2}", "out", []string{`missing required property "out.j"`, `"out.k" must be null`, `"out.z" is not a declared property (additionalProperties: false)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := compile(t, tc.schema)
			v := tc.value
			if text, ok := v.(string); ok && len(text) > 5 && text[:5] == "json:" {
				v = parse(t, text[5:])
			}
			check(t, s, v, tc.root, tc.want)
		})
	}
}

// TestValidateOrder pins the order of violations inside an object: missing required
// first, then the declared properties in declaration order (not value order), then the
// undeclared properties of a closed object in value order.
func TestValidateOrder(t *testing.T) {
	s := compile(t, `{"type":"object","properties":{
		"b":{"type":"string"},
		"a":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false},
		"c":{"type":"string"},
		"d":{"type":"string"}},
		"required":["d","c"],
		"additionalProperties":false}`)
	v := parse(t, `{"z":1,"a":{"y":2},"b":3,"y":4}`)
	want := []string{
		`missing required property "d"`,
		`missing required property "c"`,
		`"b" must be a string`,
		`missing required property "a.x"`,
		`"a.y" is not a declared property (additionalProperties: false)`,
		`"z" is not a declared property (additionalProperties: false)`,
		`"y" is not a declared property (additionalProperties: false)`,
	}
	check(t, s, v, RootArguments, want)
}

// TestValidateNoDefaults checks that defaults are annotations: an absent optional property
// stays absent and the value is not modified.
func TestValidateNoDefaults(t *testing.T) {
	s := compile(t, `{"type":"object","properties":{"mode":{"type":"string","default":"fast"},"n":{"type":"integer","default":3}},"default":{"mode":"slow"}}`)
	v := parse(t, `{"n":1}`)
	before, _ := jsonv.Marshal(v)
	check(t, s, v, RootValue, nil)
	after, _ := jsonv.Marshal(v)
	if string(before) != string(after) {
		t.Errorf("value changed from %s to %s", before, after)
	}
	if v.(*jsonv.Object).Has("mode") {
		t.Error("the default was applied")
	}
	// A default does not satisfy required.
	r := compile(t, `{"type":"object","properties":{"mode":{"type":"string","default":"fast"}},"required":["mode"]}`)
	check(t, r, parse(t, `{}`), RootValue, []string{`missing required property "value.mode"`})
}

func TestValidateNilSchema(t *testing.T) {
	var zero Schema
	check(t, &zero, parse(t, `{"a":[1]}`), RootValue, nil)
	if zero.String() != "{}" {
		t.Errorf("zero Schema String = %s", zero.String())
	}
	var s *Schema
	check(t, s, parse(t, `{"a":[1]}`), RootValue, nil)
	check(t, s, math.NaN(), RootValue, []string{`"value" must be a lossless JSON value`})
	if b, err := s.MarshalJSON(); err != nil || string(b) != "{}" {
		t.Errorf("MarshalJSON = %s, %v", b, err)
	}
	if raw, ok := s.Raw().(*jsonv.Object); !ok || raw.Len() != 0 {
		t.Errorf("Raw = %v", s.Raw())
	}
}

// TestValidateCyclicValue checks that a value that contains itself is reported, not
// walked forever.
func TestValidateCyclicValue(t *testing.T) {
	self := obj()
	self.Set("a", self)
	for _, tc := range []struct {
		schema string
		want   []string
	}{
		{`{}`, []string{`"value" must be a lossless JSON value`}},
		{`{"type":"object"}`, []string{`"value" must be a lossless JSON object`}},
		{`{"type":"object","properties":{"a":{"type":"object","properties":{"a":{"type":"object"}}}}}`, []string{`"value.a.a" must be a lossless JSON object`}},
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, []string{`"value.a" must be a string`}},
	} {
		check(t, compile(t, tc.schema), self, RootValue, tc.want)
	}
	arr := []any{nil}
	arr[0] = arr
	check(t, compile(t, `{"type":"array"}`), arr, RootValue, []string{`"value" must be a dense lossless JSON array`})
	check(t, compile(t, `{"type":"array","items":{"type":"array","items":{}}}`), arr, RootValue, []string{`"value[0][0]" must be a lossless JSON value`})
}

// TestValidateLargeObject covers objects past the small-object thresholds: a property
// index on the schema side, a duplicate-name check with a map on the value side.
func TestValidateLargeObject(t *testing.T) {
	props := obj()
	var members []jsonv.Member
	for i := range 40 {
		name := string(rune('A' + i))
		if i%2 == 0 {
			props.Set(name, obj("type", "number"))
		}
		members = append(members, jsonv.Member{Name: name, Value: float64(i)})
	}
	s, err := Compile(obj("type", "object", "properties", props, "required", []any{"A", "C"}))
	if err != nil {
		t.Fatal(err)
	}
	check(t, s, jsonv.NewObject(members...), RootValue, nil)
	dup := append(append([]jsonv.Member(nil), members...), jsonv.Member{Name: "B", Value: 1.0})
	check(t, s, jsonv.NewObject(dup...), RootValue, []string{`"value" must be a lossless JSON object`})
	bad := append([]jsonv.Member(nil), members...)
	bad[4].Value = "x" // E is declared a number
	bad[5].Value = "y" // F is undeclared
	check(t, s, jsonv.NewObject(bad...), RootValue, []string{`"value.E" must be a number`})

	closed, err := Compile(obj("type", "object", "properties", props, "additionalProperties", false))
	if err != nil {
		t.Fatal(err)
	}
	got := closed.Validate(jsonv.NewObject(members...), RootValue)
	if len(got) != 20 || got[0] != `"value.B" is not a declared property (additionalProperties: false)` {
		t.Errorf("closed large object: %d violations, first %q", len(got), got[0])
	}
}
