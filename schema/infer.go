package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-go/dsh/jsonv"
)

// For infers the schema of the Go type T from its json and jsonschema struct tags,
// normalizes it to the supported subset and compiles it. The mapping is described in the
// package documentation. A type that cannot be expressed in the subset yields an *Error
// naming the offending path, rather than a schema that silently drops a constraint.
func For[T any]() (*Schema, error) {
	return ForType(reflect.TypeFor[T]())
}

// ForType is For for a reflect.Type.
func ForType(t reflect.Type) (*Schema, error) {
	return ForTypeWith(t, Inference{})
}

// Inference tunes how ForTypeWith maps Go types onto the subset.
type Inference struct {
	// Open leaves the objects inferred from structs open (no additionalProperties: false):
	// an undeclared member validates, and the Go decoder ignores it. This is how a tool's
	// arguments are inferred, so that a model adding an argument the tool does not know is
	// not failed for it. By default a struct is a closed object.
	Open bool
}

// ForTypeWith is ForType tuned by inf.
func ForTypeWith(t reflect.Type, inf Inference) (*Schema, error) {
	if t == nil {
		return nil, &Error{Violations: []string{"schema cannot be inferred from a nil Go type"}}
	}
	js, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: knownTypes()})
	if err != nil {
		return nil, &Error{Violations: []string{fmt.Sprintf("schema cannot be inferred from Go type %v: %v", t, err)}}
	}
	data, err := json.Marshal(js)
	if err != nil {
		return nil, fmt.Errorf("schema: encode the schema inferred from Go type %v: %w", t, err)
	}
	raw, err := jsonv.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("schema: read the schema inferred from Go type %v: %w", t, err)
	}
	tree := normalize(raw, false)
	if inf.Open {
		openStructs(tree)
	}
	return Compile(tree)
}

// openStructs removes every additionalProperties: false from a normalized inferred tree.
// Only structs are closed there (a map is an open object without the keyword), so this
// opens exactly the struct objects.
func openStructs(v any) {
	o, ok := v.(*jsonv.Object)
	if !ok {
		return
	}
	if ap, ok := o.Get("additionalProperties"); ok && ap == false {
		o.Delete("additionalProperties")
	}
	if props, ok := o.Get("properties"); ok {
		if po, ok := props.(*jsonv.Object); ok {
			for _, child := range po.All() {
				openStructs(child)
			}
		}
	}
	if items, ok := o.Get("items"); ok {
		openStructs(items)
	}
	if branches, ok := o.Get("oneOf"); ok {
		if bs, ok := branches.([]any); ok {
			for _, b := range bs {
				openStructs(b)
			}
		}
	}
}

// knownTypes maps the Go types that carry arbitrary JSON to their schemas: inferring
// them from their Go structure would describe their representation, not their JSON.
func knownTypes() map[reflect.Type]*jsonschema.Schema {
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[jsonv.Value]():       {},
		reflect.TypeFor[jsonv.Object]():      {Type: "object"},
		reflect.TypeFor[json.RawMessage]():   {},
		reflect.TypeFor[jsontext.Value]():    {},
		reflect.TypeFor[jsonschema.Schema](): {Type: "object"},
		reflect.TypeFor[Schema]():            {Type: "object"},
	}
}

// normalize maps one node of a schema produced by github.com/google/jsonschema-go onto
// the subset. optional says the node is the schema of a struct field that may be omitted
// (omitempty or omitzero). Keywords it does not know are kept, so that Compile reports
// them with their path. Inferred schemas are as deep as the Go type, so recursion is fine.
func normalize(v any, optional bool) any {
	switch v := v.(type) {
	case bool:
		if v {
			return &jsonv.Object{} // "true" is jsonschema-go's form of the empty schema
		}
		return v
	case *jsonv.Object:
		return normalizeObject(v, optional)
	}
	return v
}

func normalizeObject(o *jsonv.Object, optional bool) any {
	typ, _ := o.Get("type")
	base, nullable := typ, false
	if ts, ok := typ.([]any); ok && len(ts) == 1 && ts[0] == "null" {
		// A pointer to a type mapped to {} by knownTypes: any JSON value, null included.
		base = nil
	}
	if ts, ok := typ.([]any); ok && len(ts) == 2 {
		// A pointer (or a slice) is ["null", T].
		switch {
		case ts[0] == "null" && ts[1] != "null":
			base, nullable = ts[1], true
		case ts[1] == "null" && ts[0] != "null":
			base, nullable = ts[0], true
		}
	}

	inner := &jsonv.Object{}
	if base != nil {
		inner.Set("type", base)
	}
	annotations := &jsonv.Object{}
	for _, kw := range [...]string{"description", "title", "default", "examples"} {
		if a, ok := o.Get(kw); ok {
			annotations.Set(kw, a)
		}
	}

	if base == "array" && isByteItems(o) {
		// []byte and [N]byte encode as base64 strings, not as arrays of numbers.
		inner.Set("type", "string")
		nullable = false
	} else {
		copyConstraints(o, inner, base)
	}
	for name, val := range o.All() {
		switch name {
		case "type", "description", "title", "default", "examples", "$schema", "$id",
			"properties", "required", "additionalProperties", "items", "enum", "const",
			"minimum", "maximum", "minItems", "maxItems":
		default:
			inner.Set(name, val) // unsupported: left for Compile to report
		}
	}

	// A nil slice is treated as an empty array (json v2 encodes it as []), and an omittable
	// pointer field is simply optional; a pointer that can be encoded as null becomes
	// oneOf null-or-T.
	if !nullable || base == "array" || optional {
		out := &jsonv.Object{}
		if t, ok := inner.Get("type"); ok {
			out.Set("type", t)
		}
		appendMembers(out, annotations)
		for name, val := range inner.All() {
			if name != "type" {
				out.Set(name, val)
			}
		}
		return out
	}
	out := &jsonv.Object{}
	out.Set("oneOf", []any{jsonv.NewObject(jsonv.Member{Name: "type", Value: "null"}), inner})
	appendMembers(out, annotations)
	return out
}

// copyConstraints copies the constraint keywords of o to dst, normalizing children and
// dropping what the Go type enforces by itself.
func copyConstraints(o, dst *jsonv.Object, base any) {
	var required []any
	if r, ok := o.Get("required"); ok {
		required, _ = r.([]any)
	}
	if props, ok := o.Get("properties"); ok {
		if po, ok := props.(*jsonv.Object); ok {
			np := &jsonv.Object{}
			for name, child := range po.All() {
				np.Set(name, normalize(child, !containsString(required, name)))
			}
			dst.Set("properties", np)
		} else {
			dst.Set("properties", props)
		}
	}
	if r, ok := o.Get("required"); ok {
		dst.Set("required", r)
	}
	if ap, ok := o.Get("additionalProperties"); ok {
		// A struct is closed (false). A map's value schema (true for map[string]any) cannot
		// be expressed: a map is an open object whose values the Go decoder checks.
		if ap == false {
			dst.Set("additionalProperties", false)
		}
	}
	if items, ok := o.Get("items"); ok {
		dst.Set("items", normalize(items, false))
	}
	for _, kw := range [...]string{"enum", "const"} {
		if x, ok := o.Get(kw); ok {
			dst.Set(kw, x)
		}
	}
	minimum, hasMin := o.Get("minimum")
	maximum, hasMax := o.Get("maximum")
	if (hasMin || hasMax) && !(base == "integer" && isIntegerKindRange(minimum, hasMin, maximum, hasMax)) {
		if hasMin {
			dst.Set("minimum", minimum)
		}
		if hasMax {
			dst.Set("maximum", maximum)
		}
	}
	for _, kw := range [...]string{"minItems", "maxItems"} {
		if x, ok := o.Get(kw); ok {
			dst.Set(kw, x)
		}
	}
}

// isIntegerKindRange reports whether minimum and maximum are exactly the range
// jsonschema-go attaches to a sized or unsigned Go integer kind. The Go decoder rejects
// out-of-range numbers itself, so these bounds are dropped rather than reported.
func isIntegerKindRange(minimum any, hasMin bool, maximum any, hasMax bool) bool {
	lo, _ := minimum.(float64)
	hi, _ := maximum.(float64)
	switch {
	case hasMin && !hasMax:
		return lo == 0 // uint, uint64, uintptr
	case hasMin && hasMax:
		for _, r := range [...][2]float64{
			{math.MinInt8, math.MaxInt8}, {0, math.MaxUint8},
			{math.MinInt16, math.MaxInt16}, {0, math.MaxUint16},
			{math.MinInt32, math.MaxInt32}, {0, math.MaxUint32},
		} {
			if lo == r[0] && hi == r[1] {
				return true
			}
		}
	}
	return false
}

// isByteItems reports whether an array schema's items are those of a Go byte.
func isByteItems(o *jsonv.Object) bool {
	items, ok := o.Get("items")
	if !ok {
		return false
	}
	io, ok := items.(*jsonv.Object)
	if !ok || io.Len() != 3 {
		return false
	}
	t, _ := io.Get("type")
	lo, _ := io.Get("minimum")
	hi, _ := io.Get("maximum")
	return t == "integer" && lo == 0.0 && hi == float64(math.MaxUint8)
}

func containsString(list []any, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func appendMembers(dst, src *jsonv.Object) {
	for name, val := range src.All() {
		dst.Set(name, val)
	}
}
