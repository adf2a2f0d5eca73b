package tool

import (
	"math"
	"reflect"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/dsh-go/dsh/jsonv"
)

// flatCodec converts between the jsonv model and a "flat" Go type directly, without
// encoding to JSON text and decoding it again: a bool, string, float64 or int, or a struct
// whose exported fields are all of those kinds and carry at most a plain `json:"name"` tag.
// It handles only the cases where the result is certainly what json v2 would produce;
// anything else (a wrong member type, a null, a fractional or huge number, invalid UTF-8,
// duplicate members) reports false and the caller takes the general encode/decode path,
// which then gives exactly the result or error it always gave.
type flatCodec struct {
	kind   reflect.Kind // the type's kind; reflect.Struct for a struct of flat fields
	fields []flatField  // a struct's fields in declaration order
}

// flatField is one exported field of a flat struct.
type flatField struct {
	name   string
	index  int
	offset uintptr // the field's offset in the struct, for decode
	kind   reflect.Kind
}

// maxExactInt is the largest integer every float64 up to which is exact (2^53).
const maxExactInt = 1 << 53

// flatCodecFor returns the codec of t, or nil when t is not flat. A type with methods
// (its own or its pointer's) is never flat: it may marshal itself.
func flatCodecFor(t reflect.Type) *flatCodec {
	if !plainType(t) {
		return nil
	}
	if flatKind(t.Kind()) {
		return &flatCodec{kind: t.Kind()}
	}
	if t.Kind() != reflect.Struct || t.NumField() > 64 {
		return nil
	}
	c := &flatCodec{kind: reflect.Struct}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil
		}
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			if tag == "-" {
				continue
			}
			if tag != "" {
				name = tag
			}
		}
		if !plainName(name) || !plainType(f.Type) || !flatKind(f.Type.Kind()) {
			return nil
		}
		for _, g := range c.fields {
			if g.name == name {
				return nil
			}
		}
		c.fields = append(c.fields, flatField{name: name, index: i, offset: f.Offset, kind: f.Type.Kind()})
	}
	return c
}

// plainType reports that neither t nor *t has methods, so json v2 treats t by its kind.
func plainType(t reflect.Type) bool {
	return t.NumMethod() == 0 && reflect.PointerTo(t).NumMethod() == 0
}

func flatKind(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool, reflect.Float64, reflect.Int, reflect.Int64:
		return true
	}
	return false
}

// plainName reports that a tag name has no options and none of the characters json v2
// gives a meaning (quotes, commas) or that would need escaping.
func plainName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-.$@", c) >= 0) {
			return false
		}
	}
	return true
}

// decode stores the jsonv value v into the value of the codec's type at dst. It reports
// false, leaving that value possibly partly written, when the general decoder must decide.
// dst is a pointer rather than a reflect.Value so that the caller's variable can stay on
// its stack: a reflect.Value of its address would move it to the heap on every call.
func (c *flatCodec) decode(v any, dst unsafe.Pointer) bool {
	if c.kind != reflect.Struct {
		return setFlat(dst, c.kind, v)
	}
	o, ok := v.(*jsonv.Object)
	if !ok {
		return false
	}
	var seen uint64
	for _, m := range o.Members() {
		for _, f := range c.fields {
			if f.name != m.Name {
				continue
			}
			bit := uint64(1) << uint(f.index)
			if seen&bit != 0 || !setFlat(unsafe.Add(dst, f.offset), f.kind, m.Value) {
				return false
			}
			seen |= bit
			break
		}
	}
	return true
}

// setFlat stores the jsonv scalar v into the value of kind k at dst, reporting false where
// the general decoder must decide. A flat type has no methods, so its representation is
// its kind's: a named string type is stored as a string.
func setFlat(dst unsafe.Pointer, k reflect.Kind, v any) bool {
	switch k {
	case reflect.String:
		s, ok := v.(string)
		if ok {
			*(*string)(dst) = s
		}
		return ok
	case reflect.Bool:
		b, ok := v.(bool)
		if ok {
			*(*bool)(dst) = b
		}
		return ok
	case reflect.Float64:
		f, ok := v.(float64)
		if ok {
			*(*float64)(dst) = f
		}
		return ok
	case reflect.Int, reflect.Int64:
		f, ok := v.(float64)
		if !ok || f != math.Trunc(f) || math.Abs(f) > maxExactInt {
			return false
		}
		if k == reflect.Int {
			if int64(int(f)) != int64(f) {
				return false // beyond a 32-bit int: json v2 reports the overflow
			}
			*(*int)(dst) = int(f)
		} else {
			*(*int64)(dst) = int64(f)
		}
		return true
	}
	return false
}

// encode returns the jsonv value of src (of the codec's type), or false where the general
// encoder must decide.
func (c *flatCodec) encode(src reflect.Value) (any, bool) {
	if c.kind != reflect.Struct {
		return getFlat(src, c.kind)
	}
	// The members are built on the stack and copied into the object, which a small object
	// holds in the same allocation.
	var buf [4]jsonv.Member
	members := buf[:0]
	if len(c.fields) > len(buf) {
		members = make([]jsonv.Member, 0, len(c.fields))
	}
	for _, f := range c.fields {
		v, ok := getFlat(src.Field(f.index), f.kind)
		if !ok {
			return nil, false
		}
		members = append(members, jsonv.Member{Name: f.name, Value: v})
	}
	return jsonv.NewObjectCopy(members), true
}

// lossless reports that f belongs to the jsonv model: finite and not negative zero.
func lossless(f float64) bool {
	return !math.IsNaN(f) && !math.IsInf(f, 0) && !(f == 0 && math.Signbit(f))
}

// getFlat returns the jsonv scalar of src of kind k, or false where the general encoder
// must decide (invalid UTF-8, a non-finite float or negative zero, an integer a float64 cannot hold).
func getFlat(src reflect.Value, k reflect.Kind) (any, bool) {
	switch k {
	case reflect.String:
		s := src.String()
		return s, utf8.ValidString(s)
	case reflect.Bool:
		return src.Bool(), true
	case reflect.Float64:
		f := src.Float()
		return f, lossless(f)
	case reflect.Int, reflect.Int64:
		n := src.Int()
		return float64(n), n >= -maxExactInt && n <= maxExactInt
	}
	return nil, false
}

// schemaHolds reports whether every value encode builds satisfies the output schema raw (a
// compiled schema's raw form): raw may say no more than the Go type does. For a scalar
// that is {"type": T} with T the kind's JSON type; for a struct, an object type whose
// properties are exactly the fields, each {"type": T}, with any "required" list of field
// names and "additionalProperties" a boolean (encode writes every field and no other
// member); "description" is allowed anywhere. It is what schema inference makes of a flat
// type, so a typed tool without an explicit output schema skips the output validation of
// values encode built; any other keyword, or any other shape, reports false and the value
// is validated.
func (c *flatCodec) schemaHolds(raw any) bool {
	o, ok := raw.(*jsonv.Object)
	if !ok {
		return false
	}
	if c.kind != reflect.Struct {
		return typeOnly(o, c.kind)
	}
	var props *jsonv.Object
	for _, m := range o.Members() {
		switch m.Name {
		case "type":
			if m.Value != "object" {
				return false
			}
		case "properties":
			if props, ok = m.Value.(*jsonv.Object); !ok {
				return false
			}
		case "required":
			names, ok := m.Value.([]any)
			if !ok {
				return false
			}
			for _, n := range names {
				if s, ok := n.(string); !ok || c.field(s) == nil {
					return false
				}
			}
		case "additionalProperties":
			if _, ok := m.Value.(bool); !ok {
				return false
			}
		case "description":
		default:
			return false
		}
	}
	if t, _ := o.Get("type"); t != "object" || props.Len() != len(c.fields) {
		return false
	}
	for _, p := range props.Members() {
		f := c.field(p.Name)
		ps, ok := p.Value.(*jsonv.Object)
		if f == nil || !ok || !typeOnly(ps, f.kind) {
			return false
		}
	}
	return true
}

// field returns the field named name, or nil.
func (c *flatCodec) field(name string) *flatField {
	for i := range c.fields {
		if c.fields[i].name == name {
			return &c.fields[i]
		}
	}
	return nil
}

// typeOnly reports whether the schema o says only that a value has the JSON type of kind k
// (and perhaps describes it).
func typeOnly(o *jsonv.Object, k reflect.Kind) bool {
	want := ""
	switch k {
	case reflect.String:
		want = "string"
	case reflect.Bool:
		want = "boolean"
	case reflect.Float64:
		want = "number"
	case reflect.Int, reflect.Int64:
		want = "integer"
	}
	for _, m := range o.Members() {
		switch m.Name {
		case "type":
			if m.Value != want {
				return false
			}
		case "description":
		default:
			return false
		}
	}
	t, _ := o.Get("type")
	return want != "" && t == want
}
