package schema

import (
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/jsonv"
)

// Generators for property tests. Schemas are raw jsonv trees inside the subset; values
// are jsonv values mixed with Go values that are not lossless JSON.

var names = []string{"a", "b", "c", "toString", "__proto__", "", "é"}

func genName(t *rapid.T, label string) string {
	return rapid.SampledFrom(names).Draw(t, label)
}

func genString(t *rapid.T, label string) string {
	return rapid.StringN(0, 4, -1).Draw(t, label)
}

func genNumber(t *rapid.T, label string, integer bool) float64 {
	if integer {
		return float64(rapid.IntRange(-1000, 1000).Draw(t, label))
	}
	f := rapid.Float64().Filter(isJSONNumber).Draw(t, label)
	return f
}

// genScalarOf draws a valid value of a scalar type.
func genScalarOf(t *rapid.T, typ, label string) any {
	switch typ {
	case "string":
		return genString(t, label)
	case "number":
		return genNumber(t, label, rapid.Bool().Draw(t, label+"-int"))
	case "integer":
		return genNumber(t, label, true)
	case "boolean":
		return rapid.Bool().Draw(t, label)
	}
	return nil
}

// genLossless draws an arbitrary lossless JSON value.
func genLossless(t *rapid.T, depth int) any {
	n := 4
	if depth <= 0 {
		n = 2
	}
	switch rapid.IntRange(0, n).Draw(t, "lossless-kind") {
	case 0:
		return nil
	case 1:
		return genScalarOf(t, rapid.SampledFrom([]string{"string", "number", "boolean"}).Draw(t, "scalar"), "scalar-value")
	case 2:
		return genScalarOf(t, "integer", "int")
	case 3:
		arr := make([]any, rapid.IntRange(0, 3).Draw(t, "len"))
		for i := range arr {
			arr[i] = genLossless(t, depth-1)
		}
		return arr
	default:
		o := &jsonv.Object{}
		for range rapid.IntRange(0, 3).Draw(t, "members") {
			o.Set(genName(t, "member"), genLossless(t, depth-1))
		}
		return o
	}
}

// genAnyValue draws a value that may or may not be lossless JSON.
func genAnyValue(t *rapid.T, depth int) any {
	switch rapid.IntRange(0, 12).Draw(t, "any-kind") {
	case 0:
		return math.NaN()
	case 1:
		return math.Copysign(0, -1)
	case 2:
		return rapid.Int().Draw(t, "go-int")
	case 3:
		return map[string]any{"a": 1.0}
	case 4:
		return "\xff"
	case 5:
		return jsonv.NewObject(jsonv.Member{Name: "a", Value: 1.0}, jsonv.Member{Name: "a", Value: 2.0})
	case 6:
		return (*jsonv.Object)(nil)
	case 7:
		if depth > 0 {
			o := &jsonv.Object{}
			for range rapid.IntRange(0, 3).Draw(t, "hostile-members") {
				o.Set(genName(t, "hostile-member"), genAnyValue(t, depth-1))
			}
			return o
		}
		return []string{"x"}
	case 8:
		if depth > 0 {
			arr := make([]any, rapid.IntRange(0, 3).Draw(t, "hostile-len"))
			for i := range arr {
				arr[i] = genAnyValue(t, depth-1)
			}
			return arr
		}
		return math.Inf(1)
	default:
		return genLossless(t, depth)
	}
}

// schemaGen draws schemas inside the subset. With disjoint set, the branches of every
// oneOf have pairwise different base types and no unconstrained branch, so that a value
// generated for one branch matches no other.
type schemaGen struct {
	disjoint bool
}

func (g schemaGen) annotate(t *rapid.T, o *jsonv.Object) {
	if rapid.Bool().Draw(t, "has-description") {
		o.Set("description", genString(t, "description"))
	}
	if rapid.IntRange(0, 4).Draw(t, "has-default") == 0 {
		o.Set("default", genLossless(t, 1))
	}
}

func (g schemaGen) draw(t *rapid.T, depth int) *jsonv.Object {
	// rapid favours the first entries, so containers come first while depth remains.
	kinds := []string{"any", "string", "number", "integer", "boolean", "null"}
	if depth > 0 {
		kinds = append([]string{"object", "array", "oneOf"}, kinds...)
	}
	return g.drawKind(t, depth, rapid.SampledFrom(kinds).Draw(t, "kind"))
}

func (g schemaGen) drawKind(t *rapid.T, depth int, kind string) *jsonv.Object {
	o := &jsonv.Object{}
	switch kind {
	case "any":
	case "oneOf":
		types := []string{"object", "array", "string", "boolean", "null", "number"}
		if !g.disjoint {
			types = append(types, "integer", "any", "oneOf")
		}
		n := rapid.IntRange(2, 3).Draw(t, "branches")
		picked := rapid.SliceOfNDistinct(rapid.SampledFrom(types), n, n, rapid.ID).Draw(t, "branch-kinds")
		var branches []any
		for _, k := range picked {
			branches = append(branches, g.drawKind(t, depth-1, k))
		}
		o.Set("oneOf", branches)
	case "array":
		o.Set("type", "array")
		if rapid.Bool().Draw(t, "has-items") {
			o.Set("items", g.draw(t, depth-1))
		}
	case "object":
		o.Set("type", "object")
		if rapid.IntRange(0, 3).Draw(t, "has-properties") > 0 {
			props := &jsonv.Object{}
			for range rapid.IntRange(0, 3).Draw(t, "properties") {
				props.Set(genName(t, "property"), g.draw(t, depth-1))
			}
			o.Set("properties", props)
			var req []any
			for _, k := range props.Keys() {
				if rapid.Bool().Draw(t, "required") {
					req = append(req, k)
				}
			}
			if len(req) > 0 {
				o.Set("required", req)
			}
		}
		if rapid.Bool().Draw(t, "has-additional") {
			o.Set("additionalProperties", rapid.Bool().Draw(t, "additional"))
		}
	default: // a scalar type
		o.Set("type", kind)
		if kind == "null" {
			if rapid.Bool().Draw(t, "null-enum") {
				o.Set("enum", []any{nil})
			}
			break
		}
		var enum []any
		if rapid.IntRange(0, 2).Draw(t, "has-enum") == 0 {
			for range rapid.IntRange(1, 3).Draw(t, "enum-len") {
				enum = append(enum, genScalarOf(t, kind, "enum-value"))
			}
			o.Set("enum", enum)
		}
		if rapid.IntRange(0, 3).Draw(t, "has-const") == 0 {
			if enum != nil {
				o.Set("const", rapid.SampledFrom(enum).Draw(t, "const"))
			} else {
				o.Set("const", genScalarOf(t, kind, "const"))
			}
		}
	}
	g.annotate(t, o)
	return o
}

// conforming draws a value that matches the raw schema o, assuming disjoint oneOfs.
func conforming(t *rapid.T, o *jsonv.Object) any {
	if branches, ok := o.Get("oneOf"); ok {
		bs := branches.([]any)
		return conforming(t, rapid.SampledFrom(bs).Draw(t, "branch").(*jsonv.Object))
	}
	typ, ok := o.Get("type")
	if !ok {
		return genLossless(t, 2)
	}
	if c, ok := o.Get("const"); ok {
		return c
	}
	if e, ok := o.Get("enum"); ok {
		return rapid.SampledFrom(e.([]any)).Draw(t, "enum-pick")
	}
	switch typ {
	case "array":
		items, hasItems := o.Get("items")
		arr := make([]any, rapid.IntRange(0, 3).Draw(t, "array-len"))
		for i := range arr {
			if hasItems {
				arr[i] = conforming(t, items.(*jsonv.Object))
			} else {
				arr[i] = genLossless(t, 1)
			}
		}
		return arr
	case "object":
		out := &jsonv.Object{}
		var req []any
		if r, ok := o.Get("required"); ok {
			req = r.([]any)
		}
		props, _ := o.Get("properties")
		po, _ := props.(*jsonv.Object)
		for name, child := range po.All() {
			if slices.Contains(req, any(name)) || rapid.Bool().Draw(t, "optional-present") {
				out.Set(name, conforming(t, child.(*jsonv.Object)))
			}
		}
		if ap, _ := o.Get("additionalProperties"); ap != false && rapid.Bool().Draw(t, "extra") {
			name := "extra-" + genString(t, "extra-name")
			if !po.Has(name) {
				out.Set(name, genLossless(t, 1))
			}
		}
		return out
	}
	return genScalarOf(t, typ.(string), "scalar-pick")
}

// TestPropertyValidateTotal: on any supported schema and any Go value, Validate returns
// (never panics), agrees with Valid, is deterministic and writes well-formed messages;
// and a conforming verdict on a container root implies a lossless value.
func TestPropertyValidateTotal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		raw := schemaGen{}.draw(t, 3)
		s, err := Compile(raw)
		if err != nil {
			t.Fatalf("Compile(generated %s): %v", mustMarshal(raw), err)
		}
		v := genAnyValue(t, 3)
		root := rapid.SampledFrom([]string{RootValue, RootArguments}).Draw(t, "root")
		got := s.Validate(v, root)
		if again := s.Validate(v, root); !slices.Equal(got, again) {
			t.Fatalf("Validate is not deterministic: %q then %q", got, again)
		}
		if s.Valid(v) != (len(got) == 0) {
			t.Fatalf("Valid = %v but Validate = %q", s.Valid(v), got)
		}
		for _, msg := range got {
			if !strings.HasPrefix(msg, `"`) && !strings.HasPrefix(msg, `missing required property "`) {
				t.Fatalf("malformed violation %q", msg)
			}
			if root == RootValue && !strings.Contains(msg, `"value`) {
				t.Fatalf("violation %q does not start at the root label", msg)
			}
		}
		typ, _ := raw.Get("type")
		_, isOneOf := raw.Get("oneOf")
		if len(got) == 0 && !isOneOf && (typ == nil || typ == "object" || typ == "array") {
			if err := jsonv.Check(v); err != nil {
				t.Fatalf("a value that is not lossless (%v) passed %s", err, s)
			}
		}
	})
}

// TestPropertyConformingValues: a value generated to conform to a schema validates with
// no violation, and survives a round trip through JSON text.
func TestPropertyConformingValues(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		raw := schemaGen{disjoint: true}.draw(t, 3)
		s, err := Compile(raw)
		if err != nil {
			t.Fatalf("Compile: %v", err)
		}
		v := conforming(t, raw)
		if vs := s.Validate(v, RootValue); vs != nil {
			t.Fatalf("schema %s, value %s: %q", s, mustMarshal(v), vs)
		}
		back, err := jsonv.Parse(mustMarshal(v))
		if err != nil {
			t.Fatal(err)
		}
		if vs := s.Validate(back, RootArguments); vs != nil {
			t.Fatalf("after a round trip: %q", vs)
		}
	})
}

// TestPropertyRawRoundTrip: the projection of a compiled schema compiles to the same
// schema, and Raw hands out copies that do not affect the Schema.
func TestPropertyRawRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		raw := schemaGen{}.draw(t, 3)
		s, err := Compile(raw)
		if err != nil {
			t.Fatal(err)
		}
		text := s.String()
		if text != string(mustMarshal(raw)) {
			t.Fatalf("String = %s, want %s", text, mustMarshal(raw))
		}
		r := s.Raw().(*jsonv.Object)
		r.Set("type", "mutated")
		raw.Set("type", "mutated too")
		if s.String() != text {
			t.Fatal("mutating a copy changed the Schema")
		}
		s2, err := Parse([]byte(text))
		if err != nil || s2.String() != text {
			t.Fatalf("Parse(String) = %v, %v", s2, err)
		}
	})
}

// TestPropertyAssertTotal: Assert never panics on arbitrary trees built from schema
// keywords, every violation is rooted at "schema", and an accepted tree compiles.
func TestPropertyAssertTotal(t *testing.T) {
	keys := []string{"type", "oneOf", "properties", "required", "additionalProperties", "items",
		"enum", "const", "description", "title", "default", "examples", "minimum", "$ref"}
	var gen func(t *rapid.T, depth int) any
	gen = func(t *rapid.T, depth int) any {
		if depth <= 0 || rapid.IntRange(0, 3).Draw(t, "leaf") == 0 {
			switch rapid.IntRange(0, 4).Draw(t, "leaf-kind") {
			case 0:
				return rapid.SampledFrom([]any{"object", "array", "string", "number", "integer", "boolean", "null", "tuple"}).Draw(t, "type-name")
			case 1:
				return genAnyValue(t, 1)
			default:
				return genLossless(t, 1)
			}
		}
		if rapid.IntRange(0, 3).Draw(t, "array") == 0 {
			arr := make([]any, rapid.IntRange(0, 3).Draw(t, "len"))
			for i := range arr {
				arr[i] = gen(t, depth-1)
			}
			return arr
		}
		o := &jsonv.Object{}
		for range rapid.IntRange(0, 4).Draw(t, "keys") {
			o.Set(rapid.SampledFrom(keys).Draw(t, "key"), gen(t, depth-1))
		}
		return o
	}
	rapid.Check(t, func(t *rapid.T) {
		raw := gen(t, 4)
		err := Assert(raw)
		if err == nil {
			s, cerr := Compile(raw)
			if cerr != nil {
				t.Fatalf("Assert accepted what Compile rejects: %v", cerr)
			}
			s.Validate(genAnyValue(t, 3), RootValue)
			return
		}
		se, ok := err.(*Error)
		if !ok || len(se.Violations) == 0 {
			t.Fatalf("Assert error %#v", err)
		}
		for _, v := range se.Violations {
			if !strings.HasPrefix(v, "schema") {
				t.Fatalf("violation %q is not rooted at schema", v)
			}
		}
	})
}

func mustMarshal(v any) []byte {
	b, err := jsonv.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestPropertyLosslessMatchesCheck: the validator's own lossless check agrees with
// jsonv.Check on arbitrary values, shared subtrees and cycles included, and stays
// correct when its scratch space is reused.
func TestPropertyLosslessMatchesCheck(t *testing.T) {
	vd := &validator{}
	rapid.Check(t, func(t *rapid.T) {
		v := genAnyValue(t, 4)
		var containers []any
		var collect func(any)
		collect = func(x any) {
			switch x := x.(type) {
			case []any:
				if len(x) > 0 {
					containers = append(containers, x)
				}
				for _, e := range x {
					collect(e)
				}
			case *jsonv.Object:
				if x != nil && !slices.ContainsFunc(containers, func(c any) bool { return c == any(x) }) {
					containers = append(containers, x)
					for _, m := range x.Members() {
						collect(m.Value)
					}
				}
			}
		}
		collect(v)
		if len(containers) > 0 && rapid.Bool().Draw(t, "link") {
			// Make one container refer to another: a cycle when the target encloses it,
			// a shared subtree otherwise.
			from := rapid.SampledFrom(containers).Draw(t, "from")
			to := rapid.SampledFrom(containers).Draw(t, "to")
			switch from := from.(type) {
			case []any:
				from[rapid.IntRange(0, len(from)-1).Draw(t, "slot")] = to
			case *jsonv.Object:
				from.Set("link", to)
			}
		}
		want := jsonv.Check(v) == nil
		if got := vd.lossless(v); got != want {
			t.Fatalf("lossless = %v, jsonv.Check = %v", got, jsonv.Check(v))
		}
	})
}

func TestLosslessDeepCycle(t *testing.T) {
	root := []any{nil}
	cur := root
	for range 100 {
		next := []any{nil, 1.0}
		cur[0] = next
		cur = next
	}
	vd := &validator{}
	if !vd.lossless(root) {
		t.Fatal("a deep acyclic value is not lossless")
	}
	cur[0] = root
	if vd.lossless(root) {
		t.Fatal("a deep cycle is lossless")
	}
	cur[0] = nil
	if !vd.lossless(root) {
		t.Fatal("the reused validator remembers the old cycle")
	}
}
