package schema

import (
	"strings"
	"testing"

	"github.com/dsh-go/dsh/jsonv"
)

// deepDepth exceeds the 5,000 levels the reference pins, to show that depth is bounded by
// memory rather than by a call stack.
const deepDepth = 10_000

func TestDeepOneOf(t *testing.T) {
	var schema any = obj("type", "string")
	for range deepDepth {
		schema = obj("oneOf", []any{schema, obj("type", "null")})
	}
	s, err := Compile(schema)
	if err != nil {
		t.Fatal(err)
	}
	check(t, s, "leaf", RootValue, nil)
	check(t, s, 42.0, RootValue, []string{`"value" must match exactly one oneOf branch (matched 0)`})
}

func TestDeepObjects(t *testing.T) {
	var schema any = obj("type", "integer")
	var value any = "not an integer"
	for range deepDepth {
		schema = obj("type", "object", "properties", obj("a", schema), "required", []any{"a"}, "additionalProperties", false)
		value = obj("a", value)
	}
	s, err := Compile(schema)
	if err != nil {
		t.Fatal(err)
	}
	path := "value" + strings.Repeat(".a", deepDepth)
	check(t, s, value, RootValue, []string{`"` + path + `" must be an integer`})

	// The same through JSON text: parse, compile, project. jsonv.Parse stops at
	// jsonv.MaxDepth levels of nesting, two per schema level here.
	schema = obj("type", "null")
	for range jsonv.MaxDepth/2 - 1 {
		schema = obj("type", "object", "properties", obj("a", schema))
	}
	text, err := jsonv.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if got := s2.String(); got != string(text) {
		t.Error("the compiled schema does not project back to its text")
	}
	if !jsonv.Equal(s2.Raw(), schema) {
		t.Error("Raw differs from the source schema")
	}
}

func TestDeepArrays(t *testing.T) {
	var schema any = obj("type", "null")
	var value any = []any{nil, 1.0}
	for range deepDepth {
		schema = obj("type", "array", "items", schema)
		value = []any{value}
	}
	schema = obj("type", "array", "items", schema)
	s, err := Compile(schema)
	if err != nil {
		t.Fatal(err)
	}
	path := "value" + strings.Repeat("[0]", deepDepth) + "[1]"
	check(t, s, value, RootValue, []string{`"` + path + `" must be null`})
}

func TestDeepAssertViolations(t *testing.T) {
	var schema any = obj("type", "tuple")
	for range deepDepth {
		schema = obj("type", "array", "items", schema)
	}
	err := Assert(schema)
	want := "schema" + strings.Repeat(".items", deepDepth) + ".type must be one of " + typeList
	if se, ok := err.(*Error); !ok || len(se.Violations) != 1 || se.Violations[0] != want {
		t.Errorf("Assert(deep) = %v", err)
	}

	// A deep cycle goes through the untrusted walk.
	root := obj("type", "array")
	cur := root
	for range deepDepth {
		next := obj("type", "array")
		cur.Set("items", next)
		cur = next
	}
	cur.Set("items", root)
	err = Assert(root)
	want = "schema" + strings.Repeat(".items", deepDepth+1) + " is circular"
	if se, ok := err.(*Error); !ok || len(se.Violations) != 1 || se.Violations[0] != want {
		t.Errorf("Assert(deep cycle) = %.200v", err)
	}
}

func TestDeepValueUnconstrained(t *testing.T) {
	var value any = 1.0
	for i := range deepDepth {
		if i%2 == 0 {
			value = []any{value}
		} else {
			value = obj("k", value)
		}
	}
	for _, text := range []string{`{}`, `{"type":"object"}`, `{"type":"object","properties":{"k":{"type":"array","items":{"type":"object"}}}}`} {
		check(t, compile(t, text), value, RootValue, nil)
	}
}
