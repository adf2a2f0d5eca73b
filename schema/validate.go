package schema

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/dsh-go/dsh/jsonv"
)

// Root labels for Validate.
const (
	// RootArguments labels tool arguments: the root is shown as "arguments" when it is
	// named itself ("arguments" must be an object) and child paths have no leading dot
	// ("file_path" must be a string).
	RootArguments = ""
	// RootValue labels canonical tool output values ("value.items[2]" must be a number).
	RootValue = "value"
)

// Validate checks v against the schema and returns the violations in walk order, or nil
// when v conforms (docs/behaviour.md §2.2). Each violation is a model-visible sentence whose path
// starts with root: RootValue for outputs, RootArguments for arguments.
//
// v is expected to be a jsonv value (nil, bool, float64, string, []any, *jsonv.Object),
// normally one produced by jsonv.Parse or jsonv.Snapshot. Any other Go value at a position
// (an int, a map, a NaN, a string that is not UTF-8, an object with a repeated name) is
// not lossless JSON and is reported as the table prescribes for that position. Validate
// is total: it never panics, whatever v holds, and it never applies defaults.
//
// Inside an object the missing required properties are reported first, then the
// violations of the declared properties in declaration order, then the undeclared
// properties of a closed object. A oneOf node reports only how many branches matched.
func (s *Schema) Validate(v any, root string) []string {
	vd := s.validator()
	vd.root = root
	vd.run(s.node(), v, false)
	out := vd.out
	s.release(vd)
	return out
}

// Valid reports whether v conforms to the schema, without building any message. It is
// the cheap form of len(s.Validate(v, root)) == 0, for soft checks.
func (s *Schema) Valid(v any) bool {
	vd := s.validator()
	ok := vd.run(s.node(), v, true) == 0
	s.release(vd)
	return ok
}

// validator returns a validator with an empty stack, reusing a released one if it can.
func (s *Schema) validator() *validator {
	if s != nil {
		if vd, ok := s.pool.Get().(*validator); ok {
			return vd
		}
	}
	return &validator{stack: make([]frame, 0, initialFrames)}
}

// release returns vd for reuse, dropping every reference to the validated value and to
// the returned violations.
func (s *Schema) release(vd *validator) {
	if s == nil {
		return
	}
	clear(vd.stack[:vd.high]) // the frames beyond were cleared by an earlier release
	vd.stack, vd.high = vd.stack[:0], 0
	vd.out = nil
	vd.root = ""
	s.pool.Put(vd)
}

// node returns the compiled root; a nil Schema is unconstrained.
func (s *Schema) node() *node {
	if s == nil || s.root == nil {
		return &node{kind: kindAny}
	}
	return s.root
}

// segKind says how a frame's path extends its parent's.
type segKind uint8

const (
	segSame  segKind = iota // the root, or a oneOf branch: same path as the parent
	segKey                  // .<key>
	segIndex                // [<index>]
)

// frame is one schema/value pair on the validator's explicit stack.
type frame struct {
	n     *node
	v     any
	obj   *jsonv.Object
	arr   []any
	key   string
	index int
	seg   segKind
	// quiet frames count violations without writing messages: they are inside a oneOf
	// branch (or a Valid call), where only "none" versus "some" matters.
	quiet   bool
	started bool
	next    int  // next property, item or branch to visit
	bad     int  // violations in this frame's subtree
	clean   bool // the value is known to be lossless JSON
	matches int  // oneOf: branches with no violation
}

// validator runs one validation. It walks the compiled schema with an explicit stack, so
// the depth of schema and value is bounded by memory, not by the goroutine stack.
type validator struct {
	root  string
	stack []frame
	high  int // the deepest the stack has been since the last release
	out   []string

	// Scratch space of the lossless check, kept across uses by the Schema's pool.
	names       map[string]struct{} // member names of a large object
	scan        []scanFrame         // containers being checked
	ancestors   []container         // the containers enclosing the value being checked
	ancestorSet map[container]struct{}
}

// initialFrames is the initial capacity of a validator's stack.
const initialFrames = 16

// run validates v against n and returns the number of violations.
func (vd *validator) run(n *node, v any, quiet bool) int {
	vd.stack = append(vd.stack[:0], frame{n: n, v: v, quiet: quiet})
	total := 0
	for len(vd.stack) > 0 {
		k := len(vd.stack) - 1
		vd.high = max(vd.high, k+1)
		f := &vd.stack[k]
		switch f.n.kind {
		case kindAny:
			if vd.lossless(f.v) {
				f.clean = true
			} else {
				vd.emit(k, `" must be a lossless JSON value`)
			}
		case kindOneOf:
			if f.next < len(f.n.branches) && !(f.quiet && f.matches > 1) {
				b := f.n.branches[f.next]
				f.next++
				vd.stack = append(vd.stack, frame{n: b, v: f.v, quiet: true})
				continue
			}
			if f.matches != 1 {
				vd.emit(k, `" must match exactly one oneOf branch (matched `+strconv.Itoa(f.matches)+")")
			}
		case kindObject:
			if vd.object(k) {
				continue
			}
		case kindArray:
			if vd.array(k) {
				continue
			}
		case kindString:
			if s, ok := f.v.(string); !ok {
				vd.emit(k, `" must be a string`)
			} else {
				f.clean = utf8.ValidString(s)
				vd.literal(k)
			}
		case kindNumber:
			if x, ok := f.v.(float64); !ok {
				vd.emit(k, `" must be a number`)
			} else if !isJSONNumber(x) {
				vd.emit(k, `" must be a finite JSON number`)
			} else {
				f.clean = true
				vd.literal(k)
			}
		case kindInteger:
			if x, ok := f.v.(float64); !ok || !isJSONNumber(x) || math.Trunc(x) != x {
				vd.emit(k, `" must be an integer`)
			} else {
				f.clean = true
				vd.literal(k)
			}
		case kindBoolean:
			if _, ok := f.v.(bool); !ok {
				vd.emit(k, `" must be a boolean`)
			} else {
				f.clean = true
				vd.literal(k)
			}
		case kindNull:
			if f.v != nil {
				vd.emit(k, `" must be null`)
			} else {
				f.clean = true
				vd.literal(k)
			}
		}
		total = vd.pop()
	}
	return total
}

// object advances the object frame at k. It returns true when it pushed a child frame.
func (vd *validator) object(k int) bool {
	f := &vd.stack[k]
	n := f.n
	if !f.started {
		f.started = true
		o, ok := f.v.(*jsonv.Object)
		if !ok {
			vd.emit(k, `" must be an object`)
			return false
		}
		if o == nil { // jsonv treats a nil *Object as an empty object
			o = &jsonv.Object{}
		}
		f.obj, f.clean = o, true
		for _, ri := range n.required {
			if !o.Has(n.props[ri].name) {
				vd.emitMissing(k, n.props[ri].name)
			}
		}
	}
	if f.obj == nil || f.quiet && f.bad > 0 {
		return false
	}
	for f.next < len(n.props) {
		p := &n.props[f.next]
		f.next++
		if cv, ok := f.obj.Get(p.name); ok {
			vd.stack = append(vd.stack, frame{n: p.node, v: cv, key: p.name, seg: segKey, quiet: f.quiet})
			return true
		}
	}
	if n.closed {
		for _, m := range f.obj.Members() {
			if n.lookup(m.Name) < 0 {
				vd.emitUndeclared(k, m.Name)
			}
		}
	}
	if f.bad == 0 && !(f.clean && vd.restLossless(n, f.obj)) {
		vd.emit(k, `" must be a lossless JSON object`)
	}
	return false
}

// restLossless reports whether the parts of o that no declared property validated are
// lossless: the undeclared members and the member names (valid UTF-8, no repeats).
func (vd *validator) restLossless(n *node, o *jsonv.Object) bool {
	ms := o.Members()
	for _, m := range ms {
		if n.lookup(m.Name) >= 0 {
			continue
		}
		if !utf8.ValidString(m.Name) || !vd.lossless(m.Value) {
			return false
		}
	}
	return !vd.duplicateNames(ms)
}

// array advances the array frame at k. It returns true when it pushed a child frame.
func (vd *validator) array(k int) bool {
	f := &vd.stack[k]
	n := f.n
	if !f.started {
		f.started = true
		a, ok := f.v.([]any)
		if !ok {
			vd.emit(k, `" must be an array`)
			return false
		}
		f.arr = a
		if n.items == nil {
			f.clean = vd.lossless(a)
			f.next = len(a)
		} else {
			f.clean = true
		}
	}
	if f.quiet && f.bad > 0 {
		return false
	}
	if f.next < len(f.arr) {
		i := f.next
		f.next++
		vd.stack = append(vd.stack, frame{n: n.items, v: f.arr[i], index: i, seg: segIndex, quiet: f.quiet})
		return true
	}
	if f.bad == 0 && !f.clean {
		vd.emit(k, `" must be a dense lossless JSON array`)
	}
	return false
}

// literal checks a scalar that has the right type against enum, then const.
func (vd *validator) literal(k int) {
	f := &vd.stack[k]
	n := f.n
	if n.enum != nil {
		found := false
		for _, e := range n.enum {
			if e == f.v {
				found = true
				break
			}
		}
		if !found {
			vd.emit(k, `" must be one of `+n.enumJSON)
			return
		}
	}
	if n.hasConst && n.konst != f.v {
		vd.emit(k, `" must be `+n.constJSON)
	}
}

// pop finishes the top frame, hands its outcome to its parent and returns the number of
// violations when the root finishes.
func (vd *validator) pop() int {
	k := len(vd.stack) - 1
	f := vd.stack[k]
	vd.stack = vd.stack[:k]
	if k == 0 {
		return f.bad
	}
	p := &vd.stack[k-1]
	if p.n.kind == kindOneOf {
		if f.bad == 0 {
			p.matches++
			if p.matches == 1 {
				p.clean = f.clean
			}
		}
		return 0
	}
	p.bad += f.bad
	if !f.clean {
		p.clean = false
	}
	return 0
}

// emit records a violation of the frame at k whose message is `"<path>` + rest.
func (vd *validator) emit(k int, rest string) {
	f := &vd.stack[k]
	f.bad++
	if f.quiet {
		return
	}
	b := make([]byte, 0, 64)
	b = append(b, '"')
	b = vd.appendDisplayPath(b, k)
	b = append(b, rest...)
	vd.out = append(vd.out, string(b))
}

// emitMissing records `missing required property "<path.key>"` for the object at k.
func (vd *validator) emitMissing(k int, key string) {
	f := &vd.stack[k]
	f.bad++
	if f.quiet {
		return
	}
	b := append(make([]byte, 0, 64), `missing required property "`...)
	b = vd.appendChildPath(b, k, key)
	vd.out = append(vd.out, string(append(b, '"')))
}

// emitUndeclared records the additionalProperties: false violation for key.
func (vd *validator) emitUndeclared(k int, key string) {
	f := &vd.stack[k]
	f.bad++
	if f.quiet {
		return
	}
	b := append(make([]byte, 0, 64), '"')
	b = vd.appendChildPath(b, k, key)
	vd.out = append(vd.out, string(append(b, `" is not a declared property (additionalProperties: false)`...)))
}

// appendPath appends the path of the frame at k: the root label, then .key and [index]
// steps, with no dot directly after an empty root label.
func (vd *validator) appendPath(b []byte, k int) []byte {
	start := len(b)
	b = append(b, vd.root...)
	for i := 1; i <= k; i++ {
		f := &vd.stack[i]
		switch f.seg {
		case segKey:
			if len(b) > start {
				b = append(b, '.')
			}
			b = append(b, f.key...)
		case segIndex:
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(f.index), 10)
			b = append(b, ']')
		}
	}
	return b
}

// appendDisplayPath is appendPath, with an empty path shown as "arguments".
func (vd *validator) appendDisplayPath(b []byte, k int) []byte {
	start := len(b)
	b = vd.appendPath(b, k)
	if len(b) == start {
		b = append(b, "arguments"...)
	}
	return b
}

// appendChildPath appends the path of property key of the frame at k.
func (vd *validator) appendChildPath(b []byte, k int, key string) []byte {
	start := len(b)
	b = vd.appendPath(b, k)
	if len(b) > start {
		b = append(b, '.')
	}
	return append(b, key...)
}

// lossless reports whether v is a jsonv value, exactly as jsonv.Check(v) == nil would, but
// without allocating once the validator's scratch space has grown: this runs for every
// unconstrained node and every undeclared member.
func (vd *validator) lossless(v any) bool {
	switch v := v.(type) {
	case nil, bool:
		return true
	case float64:
		return isJSONNumber(v)
	case string:
		return utf8.ValidString(v)
	case []any, *jsonv.Object:
	default:
		return false
	}
	ok := vd.walkLossless(v)
	clear(vd.scan[:cap(vd.scan)])
	vd.scan = vd.scan[:0]
	vd.ancestors = vd.ancestors[:0]
	clear(vd.ancestorSet)
	return ok
}

// scanFrame is a container whose elements walkLossless has still to visit.
type scanFrame struct {
	arr     []any
	members []jsonv.Member
	next    int
	id      container
}

// container identifies an array or object for cycle detection, as jsonv does: an object
// by its address, a non-empty slice by the address of its first element and its length.
type container struct {
	p unsafe.Pointer
	n int
}

// ancestorScan is the depth up to which cycle detection scans the ancestor list.
const ancestorScan = 32

func (vd *validator) walkLossless(v any) bool {
	for {
		if !vd.open(v) {
			return false
		}
		// Find the next value to check, leaving finished containers.
		for {
			if len(vd.scan) == 0 {
				return true
			}
			f := &vd.scan[len(vd.scan)-1]
			if f.next < len(f.arr) {
				v = f.arr[f.next]
				f.next++
				break
			}
			if f.next < len(f.members) {
				m := &f.members[f.next]
				f.next++
				if !utf8.ValidString(m.Name) {
					return false
				}
				v = m.Value
				break
			}
			id := f.id
			vd.scan = vd.scan[:len(vd.scan)-1]
			vd.ancestors = vd.ancestors[:len(vd.ancestors)-1]
			if vd.ancestorSet != nil {
				delete(vd.ancestorSet, id)
			}
		}
	}
}

// open checks a scalar, or pushes a non-empty container after checking it is not its own
// ancestor and, for an object, that its names are distinct.
func (vd *validator) open(v any) bool {
	var f scanFrame
	switch v := v.(type) {
	case nil, bool:
		return true
	case float64:
		return isJSONNumber(v)
	case string:
		return utf8.ValidString(v)
	case []any:
		if len(v) == 0 {
			return true
		}
		f = scanFrame{arr: v, id: container{unsafe.Pointer(unsafe.SliceData(v)), len(v)}}
	case *jsonv.Object:
		if v.Len() == 0 {
			return true
		}
		if vd.duplicateNames(v.Members()) {
			return false
		}
		f = scanFrame{members: v.Members(), id: container{unsafe.Pointer(v), -1}}
	default:
		return false
	}
	if !vd.enterAncestor(f.id) {
		return false
	}
	vd.scan = append(vd.scan, f)
	return true
}

// enterAncestor records id as an ancestor of what follows and reports false if it already
// is one: a cycle.
func (vd *validator) enterAncestor(id container) bool {
	if vd.ancestorSet == nil && len(vd.ancestors) < ancestorScan {
		if slices.Contains(vd.ancestors, id) {
			return false
		}
		vd.ancestors = append(vd.ancestors, id)
		return true
	}
	if vd.ancestorSet == nil {
		vd.ancestorSet = make(map[container]struct{}, 2*ancestorScan)
	}
	if len(vd.ancestorSet) == 0 {
		for _, a := range vd.ancestors {
			vd.ancestorSet[a] = struct{}{}
		}
	}
	if _, cyc := vd.ancestorSet[id]; cyc {
		return false
	}
	vd.ancestorSet[id] = struct{}{}
	vd.ancestors = append(vd.ancestors, id)
	return true
}

// duplicateNames reports whether a member name repeats.
func (vd *validator) duplicateNames(ms []jsonv.Member) bool {
	if len(ms) <= recordIndexThreshold {
		for i := 1; i < len(ms); i++ {
			for j := range i {
				if ms[i].Name == ms[j].Name {
					return true
				}
			}
		}
		return false
	}
	if vd.names == nil {
		vd.names = make(map[string]struct{}, len(ms))
	}
	defer clear(vd.names)
	for _, m := range ms {
		if _, dup := vd.names[m.Name]; dup {
			return true
		}
		vd.names[m.Name] = struct{}{}
	}
	return false
}
