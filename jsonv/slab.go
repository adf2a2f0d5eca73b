package jsonv

// slabs hands out the containers of the values one Parse or Snapshot call builds: the
// objects from one []Object, every object's members from one []Member and every array's
// elements from one []any, each a sub-slice whose capacity is its length. A value's nodes
// therefore sit next to each other in memory, in the order they are built, and a walk over
// the value (or over a log of values built one after the other) reads memory sequentially
// instead of chasing a pointer to a different page for nearly every node.
//
// Because capacity equals length, appending to an array or Object.Set growing an object
// copies out of the slab; nothing ever writes into a neighbour's storage. A node kept after
// the rest of its value is dropped keeps its slab alive: the price of not allocating per node.
//
// When the caller knows the sizes in advance (sized), each slab is allocated once, at its
// exact size; otherwise a slab that runs out is replaced by a new chunk twice its size.
type slabs struct {
	objs  []Object
	mems  []Member
	elems []any
}

// Arena lays out the values of many Parse and Snapshot calls one after the other: each
// value's containers are carved out of chunks the arena shares between calls, so that a
// walk over all of them (a session log's payloads, in order) reads memory sequentially
// rather than one scattered block per value. The values are exactly what Parse and Snapshot
// return, with the same guarantees; the difference is only where they live. A value kept
// after the others are dropped keeps its chunks alive, so an arena suits values that live
// and die together, such as the events of one log. The zero value is ready to use; an
// Arena is not safe for concurrent use.
type Arena struct {
	slabs slabs
}

// arenaChunk is the size of an arena's chunks, in objects; the member and element chunks
// hold four times as many (an object has a few members, an array a few elements).
const arenaChunk = 256

// reserve makes room for objs objects, mems members and elems elements, starting new chunks
// for those that lack it, so that one value is carved out of one chunk of each kind.
func (s *slabs) reserve(objs, mems, elems int) {
	if objs > cap(s.objs)-len(s.objs) {
		s.objs = make([]Object, 0, max(objs, arenaChunk))
	}
	if mems > cap(s.mems)-len(s.mems) {
		s.mems = make([]Member, 0, max(mems, 4*arenaChunk))
	}
	if elems > cap(s.elems)-len(s.elems) {
		s.elems = make([]any, 0, max(elems, 4*arenaChunk))
	}
}

// minSlabChunk is the smallest chunk allocated when a slab runs out, so that a value
// whose sizes were not known in advance does not allocate tiny chunks.
const minSlabChunk = 8

// sized returns slabs holding exactly objs objects, mems members and elems elements.
func sized(objs, mems, elems int) slabs {
	var s slabs
	if objs > 0 {
		s.objs = make([]Object, 0, objs)
	}
	if mems > 0 {
		s.mems = make([]Member, 0, mems)
	}
	if elems > 0 {
		s.elems = make([]any, 0, elems)
	}
	return s
}

// object returns a new object holding ms, which the caller has taken from s.members (or
// owns otherwise); like NewObject, it indexes a large object.
func (s *slabs) object(ms []Member) *Object {
	if len(s.objs) == cap(s.objs) {
		s.objs = make([]Object, 0, max(2*cap(s.objs), minSlabChunk))
	}
	s.objs = s.objs[:len(s.objs)+1]
	o := &s.objs[len(s.objs)-1]
	o.members = ms
	if len(ms) > indexThreshold {
		o.reindex()
	}
	return o
}

// members returns n zeroed members whose capacity is n.
func (s *slabs) members(n int) []Member {
	if n > cap(s.mems)-len(s.mems) {
		s.mems = make([]Member, 0, max(n, 2*cap(s.mems), minSlabChunk))
	}
	start := len(s.mems)
	s.mems = s.mems[:start+n]
	return s.mems[start : start+n : start+n]
}

// elements returns n zeroed elements whose capacity is n. It never returns nil, so that an
// empty array stays a non-nil []any.
func (s *slabs) elements(n int) []any {
	if n == 0 {
		return []any{}
	}
	if n > cap(s.elems)-len(s.elems) {
		s.elems = make([]any, 0, max(n, 2*cap(s.elems), minSlabChunk))
	}
	start := len(s.elems)
	s.elems = s.elems[:start+n]
	return s.elems[start : start+n : start+n]
}

// newObject returns a new empty object carved out of s, for a caller that fills in its
// members later (the building pass of Parse, which carves containers as it opens them).
func (s *slabs) newObject() *Object {
	if len(s.objs) == cap(s.objs) {
		s.objs = make([]Object, 0, max(2*cap(s.objs), minSlabChunk))
	}
	s.objs = s.objs[:len(s.objs)+1]
	return &s.objs[len(s.objs)-1]
}
