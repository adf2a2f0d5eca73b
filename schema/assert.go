package schema

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/dsh-go/dsh/jsonv"
)

// rootPath is the label of the schema root in Assert's violations.
const rootPath = "schema"

// Assert reports whether raw is inside the supported JSON Schema subset (docs/behaviour.md §2.1). It
// returns nil, or an *Error listing every violation in walk order with paths rooted at
// "schema" (for example `schema.properties.a.type must be a single type string (type
// arrays are not supported)`).
//
// raw is normally a jsonv value: a *jsonv.Object tree from jsonv.Parse or built by hand.
// Other Go values (map[string]any, ints, json.RawMessage …) are converted with
// jsonv.Snapshot first, so a schema written as a Go literal is judged by its JSON meaning.
// A tree that cannot be converted (a cycle, a NaN annotation) is walked as it is, so
// that the violation still names its path (`schema.properties.self is circular`).
// Shared subtrees (the same node reachable twice, but not from itself) are fine.
func Assert(raw any) error {
	_, err := assert(raw)
	return err
}

// AssertObject is Assert plus the object-root rule used by consumers that need structured
// objects (subagent and workflow outputs): when raw is otherwise valid, a root whose type
// is not "object" is reported as `schema.type must be "object" (structured output is
// object-rooted)`. Tool outputs may have any root; tool parameters are objects by
// construction.
func AssertObject(raw any) error {
	snap, err := assert(raw)
	if err != nil {
		return err
	}
	if o, ok := snap.(*jsonv.Object); ok {
		if t, ok := o.Get("type"); ok && t == "object" {
			return nil
		}
	}
	return &Error{Violations: []string{rootPath + `.type must be "object" (structured output is object-rooted)`}}
}

// assert checks raw and returns its lossless snapshot when it is inside the subset.
func assert(raw any) (any, error) {
	snap, serr := jsonv.Snapshot(raw)
	if serr == nil {
		c := checker{trusted: true}
		if v := c.run(snap); len(v) > 0 {
			return nil, &Error{Violations: v}
		}
		return snap, nil
	}
	c := checker{}
	v := c.run(raw)
	if len(v) == 0 {
		// The walk found nothing wrong where it looks, yet the value is not JSON data.
		v = []string{rootPath + " must be lossless JSON data (" + serr.Error() + ")"}
	}
	return nil, &Error{Violations: v}
}

// taskKind distinguishes the steps of the iterative schema walk.
type taskKind uint8

const (
	taskEnter      taskKind = iota // check a node and schedule its children
	taskLeave                      // take a node off the ancestor set (untrusted walks)
	taskOneOfTail                  // report keywords beside oneOf, after the branches
	taskObjectTail                 // check required and additionalProperties, after the properties
)

// task is one deferred step of the walk. The tails run after the node's children, so
// the violations come out in the same order as the reference walk.
type task struct {
	kind  taskKind
	node  any    // the node (enter) or
	rec   record // the node's record (tails)
	id    unsafe.Pointer
	path  *pathNode
	props any // object tail: the properties value
	has   bool
}

// record is a schema object seen as an ordered list of own string keys.
type record struct {
	members []jsonv.Member
	index   map[string]int // for records with many members
}

// recordIndexThreshold is the member count above which a record gets a lookup map.
const recordIndexThreshold = 16

func newRecord(members []jsonv.Member) record {
	r := record{members: members}
	if len(members) > recordIndexThreshold {
		r.index = make(map[string]int, len(members))
		for i, m := range members {
			if _, dup := r.index[m.Name]; !dup {
				r.index[m.Name] = i
			}
		}
	}
	return r
}

func (r record) get(name string) (any, bool) {
	if r.index != nil {
		i, ok := r.index[name]
		if !ok {
			return nil, false
		}
		return r.members[i].Value, true
	}
	for i := range r.members {
		if r.members[i].Name == name {
			return r.members[i].Value, true
		}
	}
	return nil, false
}

func (r record) has(name string) bool {
	_, ok := r.get(name)
	return ok
}

// checker walks a raw schema without recursion, collecting violations.
type checker struct {
	// trusted is set for a jsonv.Snapshot result: a tree, with no duplicate names and only
	// lossless values, so cycles and annotation payloads need no checking.
	trusted bool
	seen    map[unsafe.Pointer]struct{}
	tasks   []task
	out     []string
}

// asRecord reports whether v is a schema record: a non-nil *jsonv.Object whose member
// names are distinct valid UTF-8 (the Go analogue of a plain object with own enumerable
// string keys), or, in an untrusted walk, a map[string]any (keys in sorted order, as
// jsonv.Snapshot orders them). id identifies the record for cycle detection.
func (c *checker) asRecord(v any) (record, unsafe.Pointer, bool) {
	switch v := v.(type) {
	case *jsonv.Object:
		if v == nil { // jsonv treats a nil *Object as an empty object
			return record{}, nil, true
		}
		ms := v.Members()
		if c.trusted {
			return newRecord(ms), nil, true
		}
		r := newRecord(ms)
		seen := make(map[string]struct{}, len(ms))
		for _, m := range ms {
			if _, dup := seen[m.Name]; dup || !utf8.ValidString(m.Name) {
				return record{}, nil, false
			}
			seen[m.Name] = struct{}{}
		}
		return r, unsafe.Pointer(v), true
	case map[string]any:
		if c.trusted {
			return record{}, nil, false
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			if !utf8.ValidString(k) {
				return record{}, nil, false
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		ms := make([]jsonv.Member, len(keys))
		for i, k := range keys {
			ms[i] = jsonv.Member{Name: k, Value: v[k]}
		}
		var id unsafe.Pointer
		if v != nil {
			id = reflect.ValueOf(v).UnsafePointer()
		}
		return newRecord(ms), id, true
	}
	return record{}, nil, false
}

// asArray reports whether v is a JSON array: a []any (Go slices are always dense), or in
// an untrusted walk a []string, which jsonv.Snapshot also accepts.
func asArray(v any) ([]any, bool) {
	switch v := v.(type) {
	case []any:
		return v, true
	case []string:
		a := make([]any, len(v))
		for i, s := range v {
			a[i] = s
		}
		return a, true
	}
	return nil, false
}

// isTypeArray reports whether v is an array given as a type, for the dedicated message.
func isTypeArray(v any) bool {
	switch v.(type) {
	case []any, []string:
		return true
	}
	return false
}

// lossless reports whether an annotation payload is lossless JSON data.
func (c *checker) lossless(v any) bool {
	if c.trusted {
		return true
	}
	_, err := jsonv.Snapshot(v)
	return err == nil
}

func isConstraintKeyword(k string) bool {
	switch k {
	case "type", "oneOf", "properties", "required", "additionalProperties", "items", "enum", "const":
		return true
	}
	return false
}

func isAnnotationKeyword(k string) bool {
	switch k {
	case "description", "title", "default", "examples":
		return true
	}
	return false
}

// siblingKeywords are the constraint keywords that need a type and are invalid beside
// oneOf, in the order their violations are reported.
func siblingKeywords() [6]string {
	return [6]string{"properties", "required", "additionalProperties", "items", "enum", "const"}
}

// typeList is the message fragment naming the supported types.
const typeList = "object/array/string/number/integer/boolean/null"

// isSchemaType reports whether t is one of the seven supported type names.
func isSchemaType(t string) bool {
	switch t {
	case "object", "array", "string", "number", "integer", "boolean", "null":
		return true
	}
	return false
}

func isScalarType(t string) bool {
	switch t {
	case "string", "number", "integer", "boolean", "null":
		return true
	}
	return false
}

// allowedOn reports whether a type-dependent keyword may appear on type t.
func allowedOn(keyword, t string) bool {
	switch keyword {
	case "properties", "required", "additionalProperties":
		return t == "object"
	case "items":
		return t == "array"
	default: // enum, const
		return isScalarType(t)
	}
}

// isJSONNumber reports whether f is a lossless JSON number: finite and not -0.
func isJSONNumber(f float64) bool {
	return !math.IsInf(f, 0) && !math.IsNaN(f) && !(f == 0 && math.Signbit(f))
}

// scalarMatches reports whether v is a valid value of the scalar type t.
func scalarMatches(t string, v any) bool {
	switch t {
	case "string":
		s, ok := v.(string)
		return ok && utf8.ValidString(s)
	case "number":
		f, ok := v.(float64)
		return ok && isJSONNumber(f)
	case "integer":
		f, ok := v.(float64)
		return ok && isJSONNumber(f) && math.Trunc(f) == f
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	}
	return false
}

func (c *checker) push(t task) { c.tasks = append(c.tasks, t) }

// report records the violation rest of the node at path.
func (c *checker) report(path *pathNode, rest string) { c.out = append(c.out, path.String()+rest) }

// pathKind says how a pathNode extends its parent.
type pathKind uint8

const (
	pathLiteral  pathKind = iota // seg as it is: the root label, or ".items"
	pathProperty                 // ".properties." + seg
	pathOneOf                    // ".oneOf[" + index + "]"
)

// pathNode is one step of a schema path. Paths are linked lists rendered only for a
// violation, so a deep schema costs linear, not quadratic, work.
type pathNode struct {
	parent *pathNode
	kind   pathKind
	seg    string
	index  int
}

// String renders the path from the root.
func (p *pathNode) String() string {
	var steps []*pathNode
	for q := p; q != nil; q = q.parent {
		steps = append(steps, q)
	}
	var b []byte
	for i := len(steps) - 1; i >= 0; i-- {
		q := steps[i]
		switch q.kind {
		case pathLiteral:
			b = append(b, q.seg...)
		case pathProperty:
			b = append(b, ".properties."...)
			b = append(b, q.seg...)
		case pathOneOf:
			b = append(b, ".oneOf["...)
			b = strconv.AppendInt(b, int64(q.index), 10)
			b = append(b, ']')
		}
	}
	return string(b)
}

// run walks the schema rooted at root and returns its violations.
func (c *checker) run(root any) []string {
	c.push(task{kind: taskEnter, node: root, path: &pathNode{seg: rootPath}})
	for len(c.tasks) > 0 {
		t := c.tasks[len(c.tasks)-1]
		c.tasks = c.tasks[:len(c.tasks)-1]
		switch t.kind {
		case taskLeave:
			delete(c.seen, t.id)
		case taskOneOfTail:
			for _, kw := range siblingKeywords() {
				if t.rec.has(kw) {
					c.report(t.path, "."+kw+" is not supported beside oneOf")
				}
			}
		case taskObjectTail:
			c.objectTail(t)
		case taskEnter:
			c.enter(t.node, t.path)
		}
	}
	return c.out
}

// enter checks one node and schedules its children (and its tail) on the task stack.
func (c *checker) enter(node any, path *pathNode) {
	rec, id, ok := c.asRecord(node)
	if !ok {
		c.report(path, " must be a schema object")
		return
	}
	if !c.trusted && id != nil {
		if _, cyc := c.seen[id]; cyc {
			c.report(path, " is circular")
			return
		}
		if c.seen == nil {
			c.seen = make(map[unsafe.Pointer]struct{})
		}
		c.seen[id] = struct{}{}
		c.push(task{kind: taskLeave, id: id})
	}

	for _, m := range rec.members {
		switch {
		case isConstraintKeyword(m.Name):
		case isAnnotationKeyword(m.Name):
			if !c.lossless(m.Value) {
				c.report(path, "."+m.Name+" annotation must be lossless JSON data")
			}
		default:
			c.report(path, "."+m.Name+" is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)")
		}
	}
	if d, ok := rec.get("description"); ok {
		if _, isStr := d.(string); !isStr {
			c.report(path, ".description must be a string")
		}
	}
	if d, ok := rec.get("title"); ok {
		if _, isStr := d.(string); !isStr {
			c.report(path, ".title must be a string")
		}
	}

	typ, hasType := rec.get("type")
	oneOf, hasOneOf := rec.get("oneOf")
	switch {
	case hasType && hasOneOf:
		c.report(path, " cannot declare both type and oneOf")
		return
	case !hasType && !hasOneOf:
		for _, kw := range siblingKeywords() {
			if rec.has(kw) {
				c.report(path, "."+kw+" requires type or oneOf")
			}
		}
		return
	case hasOneOf:
		c.push(task{kind: taskOneOfTail, rec: rec, path: path})
		branches, ok := asArray(oneOf)
		if !ok || len(branches) < 2 {
			c.report(path, ".oneOf must be an array of at least two schemas")
			return
		}
		for i := len(branches) - 1; i >= 0; i-- {
			c.push(task{kind: taskEnter, node: branches[i], path: &pathNode{parent: path, kind: pathOneOf, index: i}})
		}
		return
	}

	t, ok := typ.(string)
	if !ok || !isSchemaType(t) {
		if isTypeArray(typ) {
			c.report(path, ".type must be a single type string (type arrays are not supported)")
		} else {
			c.report(path, ".type must be one of "+typeList)
		}
		return
	}
	for _, kw := range siblingKeywords() {
		if rec.has(kw) && !allowedOn(kw, t) {
			c.report(path, "."+kw+` is not supported on type "`+t+`"`)
		}
	}

	switch t {
	case "object":
		props, hasProps := rec.get("properties")
		c.push(task{kind: taskObjectTail, rec: rec, path: path, props: props, has: hasProps})
		if !hasProps {
			return
		}
		pr, _, ok := c.asRecord(props)
		if !ok {
			c.report(path, ".properties must be an object of schemas")
			return
		}
		for i := len(pr.members) - 1; i >= 0; i-- {
			m := pr.members[i]
			c.push(task{kind: taskEnter, node: m.Value, path: &pathNode{parent: path, kind: pathProperty, seg: m.Name}})
		}
	case "array":
		if items, ok := rec.get("items"); ok {
			c.push(task{kind: taskEnter, node: items, path: &pathNode{parent: path, seg: ".items"}})
		}
	default:
		c.scalar(rec, path, t)
	}
}

// scalar checks enum and const on a scalar-typed node.
func (c *checker) scalar(rec record, path *pathNode, t string) {
	enum, hasEnum := rec.get("enum")
	allowed, enumValid := asArray(enum)
	enumValid = hasEnum && enumValid && len(allowed) > 0
	if enumValid {
		for _, e := range allowed {
			if !scalarMatches(t, e) {
				enumValid = false
				break
			}
		}
	}
	if hasEnum && !enumValid {
		c.report(path, ".enum must be a non-empty array of "+t+" values")
	}
	cv, hasConst := rec.get("const")
	if !hasConst {
		return
	}
	if !scalarMatches(t, cv) {
		c.report(path, ".const must be a "+t+" value")
		return
	}
	if enumValid && !slices.Contains(allowed, cv) {
		c.report(path, ".const must be one of "+path.String()+".enum when both are declared")
	}
}

// objectTail checks required and additionalProperties once the properties are walked.
func (c *checker) objectTail(t task) {
	if req, ok := t.rec.get("required"); ok {
		names, ok := asArray(req)
		if ok {
			for _, n := range names {
				if _, isStr := n.(string); !isStr {
					ok = false
					break
				}
			}
		}
		if !ok {
			c.report(t.path, ".required must be an array of strings")
		} else {
			var declared record
			if t.has {
				declared, _, _ = c.asRecord(t.props)
			}
			for _, n := range names {
				if k := n.(string); !declared.has(k) {
					c.report(t.path, `.required names "`+k+`" which is not in properties`)
				}
			}
		}
	}
	if ap, ok := t.rec.get("additionalProperties"); ok {
		if _, isBool := ap.(bool); !isBool {
			c.report(t.path, ".additionalProperties must be a boolean")
		}
	}
}
