package schema

import (
	"fmt"
	"sync"

	"github.com/dsh-go/dsh/jsonv"
)

// Schema is a compiled schema of the supported subset. It keeps a private snapshot of the
// raw schema (for the model-visible projection) and a precompiled tree for validation.
// A Schema is immutable and safe for concurrent use; it must not be copied. A nil *Schema
// (or a zero Schema) is the unconstrained schema {}: it accepts any lossless JSON value.
type Schema struct {
	raw  any       // the asserted snapshot; never handed out without a copy
	root *node     // the compiled tree
	pool sync.Pool // of *validator, so that validating a conforming value does not allocate
}

// kind is the validation behaviour of a compiled node.
type kind uint8

const (
	kindAny     kind = iota // no type and no oneOf: any lossless JSON value
	kindOneOf               // exactly one branch must match
	kindObject              // a JSON object
	kindArray               // a JSON array
	kindString              // a string
	kindNumber              // a finite number other than -0
	kindInteger             // an integral number
	kindBoolean             // true or false
	kindNull                // null
)

// node is one compiled schema node. Object properties keep declaration order; the
// messages quoting enum and const are rendered once, at compile time.
type node struct {
	kind kind

	branches []*node // oneOf

	props    []prop         // object: properties in declaration order
	index    map[string]int // object: property positions, for nodes with many properties
	required []int          // object: positions in props, in the order of "required"
	closed   bool           // object: additionalProperties is false

	items *node // array: the item schema, or nil for any items

	enum      []any // scalar: allowed values, nil when absent
	enumJSON  string
	hasConst  bool
	konst     any
	constJSON string
}

// prop is one declared object property.
type prop struct {
	name string
	node *node
}

// propIndexThreshold is the property count above which a node looks names up in a map.
const propIndexThreshold = 8

// lookup returns the position of the declared property name, or -1.
func (n *node) lookup(name string) int {
	if n.index != nil {
		if i, ok := n.index[name]; ok {
			return i
		}
		return -1
	}
	for i := range n.props {
		if n.props[i].name == name {
			return i
		}
	}
	return -1
}

// Compile checks raw against the supported subset (see Assert) and compiles it for fast
// validation. raw is copied, so later changes to it do not affect the Schema. The error,
// if any, is an *Error.
func Compile(raw any) (*Schema, error) {
	snap, err := assert(raw)
	if err != nil {
		return nil, err
	}
	root, err := build(snap)
	if err != nil {
		return nil, err
	}
	return &Schema{raw: snap, root: root}, nil
}

// MustCompile is like Compile but panics if raw is not a supported schema. It is meant
// for schemas fixed in the source code, such as those of built-in tools.
func MustCompile(raw any) *Schema {
	s, err := Compile(raw)
	if err != nil {
		panic(fmt.Sprintf("schema.MustCompile: %v", err))
	}
	return s
}

// Parse reads a schema from JSON text (strictly, with jsonv.Parse) and compiles it. A
// syntax error is returned as it comes from jsonv.Parse; a schema outside the subset as
// an *Error.
func Parse(data []byte) (*Schema, error) {
	raw, err := jsonv.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("schema: parse JSON schema: %w", err)
	}
	return Compile(raw)
}

// Raw returns a fresh deep copy of the raw schema as a jsonv value, for projection to the
// model (tool parameters) or to generated SDK declarations. A nil Schema yields an empty
// object.
func (s *Schema) Raw() any {
	if s == nil || s.root == nil {
		return &jsonv.Object{}
	}
	return jsonv.Clone(s.raw)
}

// MarshalJSON encodes the raw schema compactly, with the members in their original order,
// so that a Schema can sit in a struct that is sent to the model.
func (s *Schema) MarshalJSON() ([]byte, error) {
	if s == nil || s.root == nil {
		return []byte("{}"), nil
	}
	return jsonv.Marshal(s.raw)
}

// String returns the raw schema as compact JSON.
func (s *Schema) String() string {
	b, err := s.MarshalJSON()
	if err != nil {
		return fmt.Sprintf("<schema: %v>", err)
	}
	return string(b)
}

// buildTask links one raw node to the compiled node that receives it.
type buildTask struct {
	raw *jsonv.Object
	dst *node
}

// build compiles an asserted snapshot. It is iterative, so depth is bounded by memory.
func build(raw any) (*node, error) {
	root := new(node)
	tasks := []buildTask{{raw: raw.(*jsonv.Object), dst: root}}
	for len(tasks) > 0 {
		t := tasks[len(tasks)-1]
		tasks = tasks[:len(tasks)-1]
		o, n := t.raw, t.dst
		if branches, ok := o.Get("oneOf"); ok {
			n.kind = kindOneOf
			bs := branches.([]any)
			n.branches = make([]*node, len(bs))
			for i, b := range bs {
				n.branches[i] = new(node)
				tasks = append(tasks, buildTask{raw: b.(*jsonv.Object), dst: n.branches[i]})
			}
			continue
		}
		typ, ok := o.Get("type")
		if !ok {
			n.kind = kindAny
			continue
		}
		switch typ.(string) {
		case "object":
			n.kind = kindObject
			if props, ok := o.Get("properties"); ok {
				ms := props.(*jsonv.Object).Members()
				n.props = make([]prop, len(ms))
				for i, m := range ms {
					n.props[i] = prop{name: m.Name, node: new(node)}
					tasks = append(tasks, buildTask{raw: m.Value.(*jsonv.Object), dst: n.props[i].node})
				}
				if len(ms) > propIndexThreshold {
					n.index = make(map[string]int, len(ms))
					for i, m := range ms {
						n.index[m.Name] = i
					}
				}
			}
			if req, ok := o.Get("required"); ok {
				names := req.([]any)
				n.required = make([]int, len(names))
				for i, name := range names {
					n.required[i] = n.lookup(name.(string))
				}
			}
			if ap, ok := o.Get("additionalProperties"); ok {
				n.closed = ap == false
			}
		case "array":
			n.kind = kindArray
			if items, ok := o.Get("items"); ok {
				n.items = new(node)
				tasks = append(tasks, buildTask{raw: items.(*jsonv.Object), dst: n.items})
			}
		case "string":
			n.kind = kindString
		case "number":
			n.kind = kindNumber
		case "integer":
			n.kind = kindInteger
		case "boolean":
			n.kind = kindBoolean
		case "null":
			n.kind = kindNull
		}
		if err := n.literals(o); err != nil {
			return nil, err
		}
	}
	return root, nil
}

// literals compiles a scalar node's enum and const, with their message forms.
func (n *node) literals(o *jsonv.Object) error {
	if e, ok := o.Get("enum"); ok {
		n.enum = e.([]any)
		b, err := jsonv.Marshal(e)
		if err != nil {
			return fmt.Errorf("schema: encode enum %v: %w", e, err)
		}
		n.enumJSON = string(b)
	}
	if c, ok := o.Get("const"); ok {
		n.hasConst, n.konst = true, c
		b, err := jsonv.Marshal(c)
		if err != nil {
			return fmt.Errorf("schema: encode const %v: %w", c, err)
		}
		n.constJSON = string(b)
	}
	return nil
}
