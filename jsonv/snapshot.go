package jsonv

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
)

// Snapshot validates a Go value and deep-copies it into the jsonv model in one pass, so
// that the result shares no mutable memory with v: later changes to v do not show in the
// snapshot. It is how values cross pipeline boundaries.
//
// Accepted, at any depth:
//
//   - nil, bool, and strings that are valid UTF-8;
//   - float64 and float32 that are finite and not negative zero;
//   - every int and uint kind, converted to float64 when the conversion is exact
//     (1<<60+1 is rejected because it would not round-trip);
//   - json.Number (encoding/json), parsed strictly;
//   - []any, []string, []float64, []int, []map[string]any and []*Object (a nil slice is
//     an empty array);
//   - map[string]any and map[string]string, whose members are put in Canonical order for
//     determinism (a nil map is an empty object);
//   - *Object and Object, whose members keep their order (a nil *Object is an empty
//     object); names must be valid UTF-8 and distinct;
//   - json.RawMessage (encoding/json) and jsontext.Value, parsed strictly as by Parse;
//   - Value, whose V is snapshotted.
//
// Everything else (structs, pointers to other types, funcs, channels, other slices and maps)
// is rejected with an error naming the Go type and the path, such as
// "jsonv: value of Go type chan int at $.a[3].b is not lossless JSON". A container that is
// its own ancestor is rejected as circular; a container referenced from several places
// (a DAG) is accepted and copied once per reference. The walk is iterative, so nesting is
// bounded by memory rather than by the call stack.
func Snapshot(v any) (any, error) {
	if o, ok := v.(*Object); ok && o != nil {
		if c, ok := copyFlat(o); ok {
			return c, nil
		}
	}
	var s snapshotter
	s.slabs = sized(countNodes(v))
	return s.run(v)
}

// Snapshot is the package's Snapshot, with the copy's containers carved out of the arena's
// chunks right after those of the values the arena built before.
func (a *Arena) Snapshot(v any) (any, error) {
	if o, ok := v.(*Object); ok && o != nil {
		if c, ok := copyFlat(o); ok {
			return c, nil
		}
	}
	var s snapshotter
	s.slabs = a.slabs
	s.slabs.reserve(countNodes(v))
	out, err := s.run(v)
	a.slabs = s.slabs
	return out, err
}

// maxCounted bounds the nodes countNodes visits, so that a circular value (which Snapshot
// rejects) or a huge one costs a bounded pre-pass; past it the slabs grow in chunks.
const maxCounted = 1 << 16

// countNodes counts the objects, members and array elements Snapshot will allocate for v,
// so that its slabs are allocated once, at their exact sizes. It stops early, with a lower
// count, past maxCounted nodes; it validates nothing.
func countNodes(v any) (objs, mems, elems int) {
	var (
		buf   [16]any
		stack = append(buf[:0], v)
	)
	for visited := 0; len(stack) > 0 && visited < maxCounted; visited++ {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for {
			w, ok := v.(Value)
			if !ok {
				break
			}
			v = w.V
		}
		switch v := v.(type) {
		case []any:
			elems += len(v)
			for _, e := range v {
				if isContainer(e) {
					stack = append(stack, e)
				}
			}
		case []string:
			elems += len(v)
		case []float64:
			elems += len(v)
		case []int:
			elems += len(v)
		case []map[string]any:
			elems += len(v)
			for _, e := range v {
				stack = append(stack, e)
			}
		case []*Object:
			elems += len(v)
			for _, e := range v {
				stack = append(stack, e)
			}
		case map[string]any:
			objs++
			mems += len(v)
			for _, e := range v {
				if isContainer(e) {
					stack = append(stack, e)
				}
			}
		case map[string]string:
			objs++
			mems += len(v)
		case *Object:
			objs++
			mems += v.Len()
			for _, m := range v.Members() {
				if isContainer(m.Value) {
					stack = append(stack, m.Value)
				}
			}
		case Object:
			objs++
			mems += len(v.members)
			for _, m := range v.members {
				if isContainer(m.Value) {
					stack = append(stack, m.Value)
				}
			}
		}
	}
	return objs, mems, elems
}

// isContainer reports whether countNodes has to look into v: anything but a scalar.
func isContainer(v any) bool {
	switch v.(type) {
	case nil, bool, float64, string:
		return false
	}
	return true
}

// copyFlat is Snapshot's shortcut for a small object whose members are all canonical
// scalars, the common shape of a tool call's arguments: the copy the general walk would
// make, without its frame stack and ancestry. It reports false for anything else or
// anything invalid, and the general walk decides.
func copyFlat(o *Object) (*Object, bool) {
	if len(o.members) == 0 || !validFlat(o) {
		return nil, false
	}
	return NewObjectCopy(o.members), true
}

// validFlat reports whether o is a small object (at most maxFlat members) whose members
// are all valid scalars under distinct valid names: a valid jsonv value that Snapshot and
// Check can take without their frame stack and ancestry. False says nothing about o's
// validity; the general walk decides.
func validFlat(o *Object) bool {
	ms := o.members
	if len(ms) > maxFlat {
		return false
	}
	if _, dup := duplicateName(o); dup {
		return false
	}
	for i := range ms {
		if !utf8.ValidString(ms[i].Name) {
			return false
		}
		switch v := ms[i].Value.(type) {
		case nil, bool:
		case float64:
			if math.IsInf(v, 0) || math.IsNaN(v) || v == 0 && math.Signbit(v) {
				return false
			}
		case string:
			if !utf8.ValidString(v) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// snapKind says what a snapshot frame walks over.
type snapKind uint8

const (
	snapArray  snapKind = iota // src is a []any view
	snapObject                 // src is a member list
	snapMap                    // src is a map[string]any walked in keys order
)

// snapFrame is a source container being copied into its destination.
type snapFrame struct {
	src     []any
	members []Member
	m       map[string]any
	keys    []string
	dstArr  []any
	dstObj  []Member
	next    int
	kind    snapKind
	tracked bool // whether the container was entered in the ancestry
}

func (f *snapFrame) len() int {
	switch f.kind {
	case snapArray:
		return len(f.src)
	case snapObject:
		return len(f.members)
	default:
		return len(f.keys)
	}
}

// seg returns the path step of the child being copied.
func (f *snapFrame) seg() pathSeg {
	i := f.next - 1
	switch f.kind {
	case snapArray:
		return indexSeg(i)
	case snapObject:
		return nameSeg(f.members[i].Name)
	default:
		return nameSeg(f.keys[i])
	}
}

type snapshotter struct {
	slabs slabs // the copy's containers
	stack []snapFrame
	anc   ancestry
	small [4]snapFrame // backs stack for shallow values, so most walks allocate no frames
}

func (s *snapshotter) run(v any) (any, error) {
	root, err := s.convert(v)
	if err != nil {
		return nil, err
	}
	for len(s.stack) > 0 {
		f := &s.stack[len(s.stack)-1]
		if f.next == f.len() {
			if f.tracked {
				s.anc.leave()
			}
			*f = snapFrame{}
			s.stack = s.stack[:len(s.stack)-1]
			continue
		}
		i := f.next
		f.next++
		switch f.kind {
		case snapArray:
			dst := f.dstArr // convert may grow the stack and move f
			out, err := s.convert(f.src[i])
			if err != nil {
				return nil, err
			}
			dst[i] = out
		case snapObject:
			name := f.members[i].Name
			if !utf8.ValidString(name) {
				return nil, fmt.Errorf("jsonv: member name %s at %s is not valid UTF-8, which is not lossless JSON",
					quoteForMessage(name), s.path())
			}
			dst := f.dstObj
			out, err := s.convert(f.members[i].Value)
			if err != nil {
				return nil, err
			}
			dst[i] = Member{Name: name, Value: out}
		default:
			name := f.keys[i]
			if !utf8.ValidString(name) {
				return nil, fmt.Errorf("jsonv: member name %s at %s is not valid UTF-8, which is not lossless JSON",
					quoteForMessage(name), s.path())
			}
			dst := f.dstObj
			out, err := s.convert(f.m[name])
			if err != nil {
				return nil, err
			}
			dst[i] = Member{Name: name, Value: out}
		}
	}
	return root, nil
}

func (s *snapshotter) path() string {
	segs := make([]pathSeg, len(s.stack))
	for i := range s.stack {
		segs[i] = s.stack[i].seg()
	}
	return formatPath(segs)
}

// push starts copying a non-empty container; the caller has already allocated dst.
func (s *snapshotter) push(f snapFrame, id ident, v any) error {
	if !s.anc.enter(id) {
		return cycleError(v, s.path())
	}
	f.tracked = true
	if s.stack == nil {
		s.stack = s.small[:0]
	}
	s.stack = append(s.stack, f)
	return nil
}

// convert copies a scalar, or allocates the copy of a container and pushes a frame that
// fills it in.
func (s *snapshotter) convert(v any) (any, error) {
	for {
		w, ok := v.(Value)
		if !ok {
			break
		}
		v = w.V
	}
	orig := v // returned as is for immutable scalars, which saves boxing them again
	switch v := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return v, nil
	case string:
		if !utf8.ValidString(v) {
			return nil, fmt.Errorf("jsonv: string at %s is not valid UTF-8, which is not lossless JSON", s.path())
		}
		return orig, nil
	case float64:
		if err := checkFloat(v, s.path); err != nil {
			return nil, err
		}
		return orig, nil
	case float32:
		f := float64(v)
		return f, checkFloat(f, s.path)
	case int:
		return s.fromInt(int64(v))
	case int8:
		return float64(v), nil
	case int16:
		return float64(v), nil
	case int32:
		return float64(v), nil
	case int64:
		return s.fromInt(v)
	case uint:
		return s.fromUint(uint64(v))
	case uint8:
		return float64(v), nil
	case uint16:
		return float64(v), nil
	case uint32:
		return float64(v), nil
	case uint64:
		return s.fromUint(v)
	case uintptr:
		return s.fromUint(uint64(v))
	case json.Number:
		return s.parseNumber(string(v))
	case json.RawMessage:
		return s.parseRaw(v, "json.RawMessage")
	case jsontext.Value:
		return s.parseRaw(v, "jsontext.Value")
	case []any:
		if len(v) == 0 {
			return []any{}, nil
		}
		dst := s.slabs.elements(len(v))
		return dst, s.push(snapFrame{src: v, dstArr: dst, kind: snapArray}, sliceIdent(v), v)
	case []string:
		dst := s.slabs.elements(len(v))
		for i, e := range v {
			if !utf8.ValidString(e) {
				return nil, fmt.Errorf("jsonv: string at %s is not valid UTF-8, which is not lossless JSON",
					s.childPath(indexSeg(i)))
			}
			dst[i] = e
		}
		return dst, nil
	case []float64:
		dst := s.slabs.elements(len(v))
		for i, e := range v {
			if err := checkFloat(e, func() string { return s.childPath(indexSeg(i)) }); err != nil {
				return nil, err
			}
			dst[i] = e
		}
		return dst, nil
	case []int:
		dst := s.slabs.elements(len(v))
		for i, e := range v {
			f, ok := intToFloat(int64(e))
			if !ok {
				return nil, intError(e, s.childPath(indexSeg(i)))
			}
			dst[i] = f
		}
		return dst, nil
	case []map[string]any:
		return s.boxed(len(v), func(i int) any { return v[i] })
	case []*Object:
		return s.boxed(len(v), func(i int) any { return v[i] })
	case map[string]any:
		if len(v) == 0 {
			return s.slabs.object(nil), nil
		}
		keys := slices.SortedFunc(maps.Keys(v), compareCanonical)
		dst := s.slabs.members(len(keys))
		for i, k := range keys {
			dst[i].Name = k // the values are filled in by the frame
		}
		err := s.push(snapFrame{m: v, keys: keys, dstObj: dst, kind: snapMap}, mapIdent(v), v)
		if err != nil {
			return nil, err
		}
		return s.slabs.object(dst), nil
	case map[string]string:
		keys := slices.SortedFunc(maps.Keys(v), compareCanonical)
		dst := s.slabs.members(len(keys))
		for i, k := range keys {
			e := v[k]
			if !utf8.ValidString(k) {
				return nil, fmt.Errorf("jsonv: member name %s at %s is not valid UTF-8, which is not lossless JSON",
					quoteForMessage(k), s.path())
			}
			if !utf8.ValidString(e) {
				return nil, fmt.Errorf("jsonv: string at %s is not valid UTF-8, which is not lossless JSON",
					s.childPath(nameSeg(k)))
			}
			dst[i] = Member{Name: k, Value: e}
		}
		return s.slabs.object(dst), nil
	case *Object:
		if v.Len() == 0 {
			return s.slabs.object(nil), nil
		}
		return s.object(v, objectIdent(v))
	case Object:
		if v.Len() == 0 {
			return s.slabs.object(nil), nil
		}
		return s.object(&v, membersIdent(v.members))
	default:
		return nil, typeError(v, s.path())
	}
}

// object starts copying a non-empty member list.
func (s *snapshotter) object(src *Object, id ident) (any, error) {
	if name, dup := duplicateName(src); dup {
		return nil, duplicateError(name, s.path())
	}
	members := src.members
	dst := s.slabs.members(len(members))
	for i := range members {
		dst[i].Name = members[i].Name // the values are filled in by the frame
	}
	if err := s.push(snapFrame{members: members, dstObj: dst, kind: snapObject}, id, src); err != nil {
		return nil, err
	}
	return s.slabs.object(dst), nil
}

// boxed starts copying a typed slice whose elements are containers, through a []any view.
func (s *snapshotter) boxed(n int, at func(int) any) (any, error) {
	if n == 0 {
		return []any{}, nil
	}
	view := make([]any, n)
	for i := range view {
		view[i] = at(i)
	}
	dst := s.slabs.elements(n)
	s.stack = append(s.stack, snapFrame{src: view, dstArr: dst, kind: snapArray})
	return dst, nil
}

// childPath renders the path of a child of the value being converted.
func (s *snapshotter) childPath(seg pathSeg) string {
	segs := make([]pathSeg, 0, len(s.stack)+1)
	for i := range s.stack {
		segs = append(segs, s.stack[i].seg())
	}
	return formatPath(append(segs, seg))
}

func (s *snapshotter) fromInt(i int64) (any, error) {
	f, ok := intToFloat(i)
	if !ok {
		return nil, intError(i, s.path())
	}
	return f, nil
}

func (s *snapshotter) fromUint(u uint64) (any, error) {
	f := float64(u)
	if f >= 0x1p64 || uint64(f) != u {
		return nil, intError(u, s.path())
	}
	return f, nil
}

func (s *snapshotter) parseNumber(text string) (any, error) {
	v, err := ParseString(text)
	if err != nil {
		return nil, fmt.Errorf("jsonv: json.Number at %s: %w", s.path(), err)
	}
	if _, ok := v.(float64); !ok {
		return nil, fmt.Errorf("jsonv: json.Number %s at %s is not a JSON number", quoteForMessage(text), s.path())
	}
	return v, nil
}

func (s *snapshotter) parseRaw(data []byte, typ string) (any, error) {
	v, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("jsonv: %s at %s: %w", typ, s.path(), err)
	}
	return v, nil
}

// intToFloat converts i to float64 and reports whether the conversion is exact.
func intToFloat(i int64) (float64, bool) {
	f := float64(i)
	if f >= 0x1p63 { // only reachable by rounding up near MaxInt64; int64(f) would overflow
		return 0, false
	}
	return f, int64(f) == i
}

func intError[T int | int64 | uint64](i T, path string) error {
	return fmt.Errorf("jsonv: integer %d at %s cannot be represented exactly as a float64, which is not lossless JSON", i, path)
}

// membersIdent identifies an Object value by its member storage, so that a cycle through
// Object copies (which share that storage) is caught like one through *Object.
func membersIdent(ms []Member) ident {
	return ident{p: unsafe.Pointer(unsafe.SliceData(ms)), n: -3 - len(ms)}
}

// Check reports whether v is a jsonv value: nil, bool, a finite float64 that is not
// negative zero, a valid UTF-8 string, []any or *Object (a nil []any or *Object counts as
// empty), at every depth, with valid distinct member names and no container that is its
// own ancestor. Unlike Snapshot it accepts only these canonical types and copies nothing.
// The error names the offending Go type or value and its path.
func Check(v any) error {
	if o, ok := v.(*Object); ok && o != nil && validFlat(o) {
		return nil // the common shape of a tool's arguments, checked without allocating
	}
	var (
		stack []encFrame
		anc   ancestry
	)
	path := func() string { return framesPath(stack) }
	for {
		switch v := v.(type) {
		case nil, bool:
		case float64:
			if err := checkFloat(v, path); err != nil {
				return err
			}
		case string:
			if !utf8.ValidString(v) {
				return fmt.Errorf("jsonv: string at %s is not valid UTF-8, which is not lossless JSON", path())
			}
		case []any:
			if len(v) > 0 {
				if !anc.enter(sliceIdent(v)) {
					return cycleError(v, path())
				}
				stack = append(stack, encFrame{arr: v})
			}
		case *Object:
			if v.Len() > 0 {
				if name, dup := duplicateName(v); dup {
					return duplicateError(name, path())
				}
				if !anc.enter(objectIdent(v)) {
					return cycleError(v, path())
				}
				stack = append(stack, encFrame{members: v.members, isObject: true})
			}
		default:
			return typeError(v, path())
		}
		// Find the next value to check, leaving finished containers.
		for {
			if len(stack) == 0 {
				return nil
			}
			f := &stack[len(stack)-1]
			if f.isObject && f.next < len(f.members) {
				m := &f.members[f.next]
				f.next++
				if !utf8.ValidString(m.Name) {
					return fmt.Errorf("jsonv: member name %s at %s is not valid UTF-8, which is not lossless JSON",
						quoteForMessage(m.Name), path())
				}
				v = m.Value
				break
			}
			if !f.isObject && f.next < len(f.arr) {
				v = f.arr[f.next]
				f.next++
				break
			}
			stack = stack[:len(stack)-1]
			anc.leave()
		}
	}
}

// framesPath renders the path of the child being visited by the innermost frame.
func framesPath(stack []encFrame) string {
	segs := make([]pathSeg, 0, len(stack))
	for i := range stack {
		f := &stack[i]
		if f.isObject {
			segs = append(segs, nameSeg(f.members[f.next-1].Name))
		} else {
			segs = append(segs, indexSeg(f.next-1))
		}
	}
	return formatPath(segs)
}

// Clone returns a deep copy of a jsonv value that is already known to be valid (a result
// of Parse or Snapshot, or a value that passed Check). It does not validate: values of
// other types are copied as they are, and a circular value makes it run out of memory.
// Use Snapshot for values of unknown provenance.
func Clone(v any) any {
	if o, ok := v.(*Object); ok {
		if c := cloneFlat(o); c != nil {
			return c
		}
	}
	type frame struct {
		src    []any
		srcObj []Member
		dst    []any
		dstObj []Member
		next   int
	}
	var stack []frame
	// open copies a scalar or allocates a container copy and pushes its frame.
	open := func(v any) any {
		switch v := v.(type) {
		case []any:
			if len(v) == 0 {
				return []any{}
			}
			dst := make([]any, len(v))
			stack = append(stack, frame{src: v, dst: dst})
			return dst
		case *Object:
			if v.Len() == 0 {
				return &Object{}
			}
			dst := slices.Clone(v.members)
			stack = append(stack, frame{srcObj: v.members, dstObj: dst})
			return NewObject(dst...)
		default:
			return v
		}
	}
	root := open(v)
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		i := f.next
		switch {
		case f.dst != nil && i < len(f.src):
			f.next++
			dst := f.dst
			dst[i] = open(f.src[i])
		case f.dstObj != nil && i < len(f.srcObj):
			f.next++
			dst := f.dstObj
			dst[i].Value = open(f.srcObj[i].Value)
		default:
			stack = stack[:len(stack)-1]
		}
	}
	return root
}

// maxFlatClone is the most members cloneFlat copies in one allocation.
const maxFlatClone = 4

// cloneFlat returns a copy of o when o is a non-empty object of at most maxFlatClone
// members whose values are all scalars (nothing to copy deeply), made in one allocation
// (smallObject); nil otherwise, for the general walk. The copy is what the walk makes: the
// same members in the same order, no index (the walk's NewObject indexes only larger
// objects).
func cloneFlat(o *Object) *Object {
	if o == nil || len(o.members) == 0 || len(o.members) > maxFlatClone {
		return nil
	}
	for _, m := range o.members {
		switch m.Value.(type) {
		case []any, *Object:
			return nil
		}
	}
	return smallObject(o.members)
}

// Equal reports whether a and b are the same jsonv value: numbers compare with ==, arrays
// element by element, and objects by their sets of members regardless of member order. A
// nil []any equals an empty one, and a nil *Object an empty one. Values of types outside
// the model are never equal. Both values must be valid (Check); a circular value makes
// Equal run out of memory.
func Equal(a, b any) bool {
	type pair struct{ a, b any }
	work := []pair{{a, b}}
	for len(work) > 0 {
		p := work[len(work)-1]
		work = work[:len(work)-1]
		switch x := p.a.(type) {
		case nil:
			if p.b != nil {
				return false
			}
		case bool:
			if y, ok := p.b.(bool); !ok || x != y {
				return false
			}
		case float64:
			if y, ok := p.b.(float64); !ok || x != y {
				return false
			}
		case string:
			if y, ok := p.b.(string); !ok || x != y {
				return false
			}
		case []any:
			y, ok := p.b.([]any)
			if !ok || len(x) != len(y) {
				return false
			}
			for i := range x {
				work = append(work, pair{x[i], y[i]})
			}
		case *Object:
			y, ok := p.b.(*Object)
			if !ok || x.Len() != y.Len() {
				return false
			}
			for _, m := range x.Members() {
				yv, ok := y.Get(m.Name)
				if !ok {
					return false
				}
				work = append(work, pair{m.Value, yv})
			}
		default:
			return false
		}
	}
	return true
}

// KindOf names the JSON kind of a jsonv value: "null", "boolean", "number", "string",
// "array" or "object". For a value outside the model it returns its Go type, as %T prints
// it, which makes it suitable for error messages either way.
func KindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case *Object:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
