package tool

import (
	"math"
	"unicode/utf8"

	"github.com/dsh-go/dsh/jsonv"
)

// flatSchema is an argument schema of the shape schema inference gives a flat argument
// type: an object whose properties say only their JSON type (a string, number, integer or
// boolean), with a list of required properties and perhaps closed. For such a schema,
// valid decides the common case — arguments that conform — without the general
// validator; it never accepts what the validator would reject, and whatever it does not
// accept goes to the validator, which gives the violations.
type flatSchema struct {
	props    []flatProp
	required uint64 // a bit for each required property, by position in props
	closed   bool   // additionalProperties is false
}

// flatProp is one property of a flatSchema and its JSON type.
type flatProp struct{ name, typ string }

// maxFlatProps is the most properties a flatSchema has (a bit each in a uint64), and
// maxFlatMembers the most members of arguments valid checks (the duplicate check is
// quadratic); larger ones go to the validator.
const (
	maxFlatProps   = 64
	maxFlatMembers = 16
)

// flatSchemaOf returns the flatSchema of raw (a compiled schema's raw form), or nil when
// raw is not of that shape: any keyword besides type, properties, required,
// additionalProperties (a boolean) and the description and title annotations, or a
// property schema that says more than its type.
func flatSchemaOf(raw any) *flatSchema {
	o, ok := raw.(*jsonv.Object)
	if !ok {
		return nil
	}
	if t, _ := o.Get("type"); t != "object" {
		return nil
	}
	fs := &flatSchema{}
	var required []any
	for _, m := range o.Members() {
		switch m.Name {
		case "type", "description", "title":
		case "properties":
			props, ok := m.Value.(*jsonv.Object)
			if !ok || props.Len() > maxFlatProps {
				return nil
			}
			for _, p := range props.Members() {
				ps, ok := p.Value.(*jsonv.Object)
				if !ok {
					return nil
				}
				t := onlyType(ps)
				if t == "" {
					return nil
				}
				fs.props = append(fs.props, flatProp{name: p.Name, typ: t})
			}
		case "required":
			if required, ok = m.Value.([]any); !ok {
				return nil
			}
		case "additionalProperties":
			b, ok := m.Value.(bool)
			if !ok {
				return nil
			}
			fs.closed = !b
		default:
			return nil
		}
	}
	for _, r := range required {
		name, ok := r.(string)
		i := fs.index(name)
		if !ok || i < 0 {
			return nil
		}
		fs.required |= 1 << uint(i)
	}
	return fs
}

// onlyType returns the JSON type a property schema s says its value has, when that (and
// the description and title annotations) is all it says; "" otherwise.
func onlyType(s *jsonv.Object) string {
	t, _ := s.Get("type")
	typ, _ := t.(string)
	switch typ {
	case "string", "number", "integer", "boolean":
	default:
		return ""
	}
	for _, m := range s.Members() {
		switch m.Name {
		case "type", "description", "title":
		default:
			return ""
		}
	}
	return typ
}

// index returns the position of the property named name, or -1.
func (fs *flatSchema) index(name string) int {
	for i := range fs.props {
		if fs.props[i].name == name {
			return i
		}
	}
	return -1
}

// valid reports that v certainly conforms: an object without repeated member names whose
// declared members have their property's type, with every required property, and whose
// other members (allowed when the object is not closed) are lossless scalars. false means
// only that the validator must decide.
func (fs *flatSchema) valid(v any) bool {
	o, ok := v.(*jsonv.Object)
	if !ok || o == nil {
		return false
	}
	ms := o.Members()
	if len(ms) > maxFlatMembers {
		return false
	}
	var seen uint64
	for i := range ms {
		for j := range i {
			if ms[i].Name == ms[j].Name {
				return false
			}
		}
		p := fs.index(ms[i].Name)
		if p < 0 {
			if fs.closed || !utf8.ValidString(ms[i].Name) || !losslessScalar(ms[i].Value) {
				return false
			}
			continue
		}
		if !hasType(fs.props[p].typ, ms[i].Value) {
			return false
		}
		seen |= 1 << uint(p)
	}
	return seen&fs.required == fs.required
}

// hasType reports whether v is a lossless JSON value of the JSON type typ.
func hasType(typ string, v any) bool {
	switch typ {
	case "string":
		s, ok := v.(string)
		return ok && utf8.ValidString(s)
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		f, ok := v.(float64)
		return ok && lossless(f)
	case "integer":
		f, ok := v.(float64)
		return ok && lossless(f) && math.Trunc(f) == f
	}
	return false
}

// losslessScalar reports whether v is a lossless JSON null, boolean, number or string.
func losslessScalar(v any) bool {
	switch x := v.(type) {
	case nil, bool:
		return true
	case float64:
		return lossless(x)
	case string:
		return utf8.ValidString(x)
	}
	return false
}
