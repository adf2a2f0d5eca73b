// Package jsonv is dsh's lossless JSON value model.
//
// Every value that crosses a pipeline boundary (tool arguments, canonical output values,
// content, meta, session event data, Code Mode binding traffic) is a jsonv value: a value that
// survives encoding and decoding byte-identically. A jsonv value is one of the Go types
//
//	nil        JSON null
//	bool       JSON true / false
//	float64    a finite JSON number that is not negative zero
//	string     a valid UTF-8 JSON string
//	[]any      a JSON array whose elements are jsonv values
//	*Object    a JSON object whose members keep their order
//
// A nil []any is an empty array and a nil *Object an empty object.
//
// Parse reads untrusted text strictly (duplicate names, invalid UTF-8, overflowing numbers
// and -0 are rejected); Snapshot validates and deep-copies a Go value into this model so that
// no stage can mutate another stage's view; Check validates without copying; Clone and Equal
// copy and compare values already known to be valid.
//
// Marshal and MarshalIndent write exactly what JavaScript's JSON.stringify writes for the
// same value, and Canonical writes the deep-key-sorted form the repeat-call reminder
// compares. FromGo and Decode bridge to ordinary Go types through json v2; *Object and
// Value can sit in struct fields encoded by json v2 or encoding/json.
//
// Every walk in this package is iterative: nesting depth costs heap, not call stack. Values are not
// safe for concurrent mutation, but any number of goroutines may read one at once.
//
// Parse and Snapshot lay each value out for reading: its objects, their member lists and
// its arrays' elements are carved out of three blocks allocated once per call at their
// exact sizes, in the order a depth-first walk visits them, and Parse keeps all the value's
// strings in one string. Walking a value, or a log of values built one after the other,
// then reads memory sequentially instead of chasing pointers across the heap. Every member
// list and array has a capacity equal to its length, so Object.Set and append copy out
// instead of writing into a neighbour; the price is that any part of such a value kept
// after the rest is dropped keeps the whole value's blocks alive (a top-level object that
// Parse returns is allocated apart, so that keeping one member's value does not keep it).
// A top-level object of one to four members, the usual tool-call arguments, is allocated in
// one block with its member list and, when they fit (a few dozen bytes), its strings' bytes:
// one allocation instead of three, and a string kept from it keeps that small block.
// An Arena extends the layout across calls, for values that live and die together, such as
// the payloads of one session log.
package jsonv

import (
	"iter"
	"slices"
)

// Member is one name/value pair of an Object.
type Member struct {
	Name  string
	Value any
}

// Object is a JSON object that keeps its members in insertion order, because rendered
// output (pretty printing, canonical forms, generated SDKs) depends on that order.
// The zero value is an empty object ready to use. An Object is not safe for concurrent
// mutation; values handed across pipeline boundaries are snapshots and are never mutated.
type Object struct {
	members []Member
	// index maps names to positions once the object has more than indexThreshold members.
	// It is maintained by the mutating methods only, so that lookups never write and a
	// snapshot can be read by many goroutines at once.
	index map[string]int
}

// indexThreshold is the member count above which Get uses a map instead of a linear scan.
const indexThreshold = 16

// NewObject returns an object holding members in the given order. It does not copy the
// values and does not check for duplicate names (Check and Snapshot reject duplicates); use
// Set to build objects incrementally. The object takes ownership of the members slice.
func NewObject(members ...Member) *Object {
	o := &Object{members: members}
	o.reindex()
	return o
}

// NewObjectCopy returns an object holding a copy of members in the given order. Unlike
// NewObject it does not take the slice, so a caller can build the members in a buffer of
// its own; a small object (up to four members) is allocated together with its members, in
// one allocation. Like NewObject it copies no values and checks no names.
func NewObjectCopy(members []Member) *Object {
	if o := smallObject(members); o != nil {
		return o
	}
	return NewObject(slices.Clone(members)...)
}

// smallObject returns an object holding a copy of ms, allocated together with its members,
// when ms has one to four members; nil otherwise. Such an object needs no index.
func smallObject(ms []Member) *Object {
	switch n := len(ms); {
	case n == 1:
		c := &struct {
			o Object
			m [1]Member
		}{}
		copy(c.m[:], ms)
		c.o.members = c.m[:]
		return &c.o
	case n == 2:
		c := &struct {
			o Object
			m [2]Member
		}{}
		copy(c.m[:], ms)
		c.o.members = c.m[:]
		return &c.o
	case n > 2 && n <= 4:
		c := &struct {
			o Object
			m [4]Member
		}{}
		copy(c.m[:], ms)
		c.o.members = c.m[:n:n]
		return &c.o
	}
	return nil
}

// Len reports the number of members.
func (o *Object) Len() int {
	if o == nil {
		return 0
	}
	return len(o.members)
}

// Get returns the value of the member named name and whether it exists.
func (o *Object) Get(name string) (any, bool) {
	i := o.find(name)
	if i < 0 {
		return nil, false
	}
	return o.members[i].Value, true
}

// Has reports whether the object has a member named name.
func (o *Object) Has(name string) bool { return o.find(name) >= 0 }

// Set replaces the value of the member named name, keeping its position, or appends a new
// member at the end.
func (o *Object) Set(name string, v any) {
	if i := o.find(name); i >= 0 {
		o.members[i].Value = v
		return
	}
	o.members = append(o.members, Member{Name: name, Value: v})
	switch {
	case o.index != nil:
		o.index[name] = len(o.members) - 1
	case len(o.members) > indexThreshold:
		o.reindex()
	}
}

// Delete removes the member named name, keeping the order of the others, and reports
// whether it existed.
func (o *Object) Delete(name string) bool {
	i := o.find(name)
	if i < 0 {
		return false
	}
	o.members = slices.Delete(o.members, i, i+1) // also clears the vacated slot
	o.reindex()
	return true
}

// Members returns the members in order. The slice is the object's own storage: callers
// must not modify it.
func (o *Object) Members() []Member {
	if o == nil {
		return nil
	}
	return o.members
}

// All iterates over the members in order.
func (o *Object) All() iter.Seq2[string, any] {
	return func(yield func(string, any) bool) {
		if o == nil {
			return
		}
		for _, m := range o.members {
			if !yield(m.Name, m.Value) {
				return
			}
		}
	}
}

// Keys returns the member names in order.
func (o *Object) Keys() []string {
	keys := make([]string, 0, o.Len())
	for name := range o.All() {
		keys = append(keys, name)
	}
	return keys
}

func (o *Object) find(name string) int {
	if o == nil {
		return -1
	}
	if o.index == nil {
		for i := range o.members {
			if o.members[i].Name == name {
				return i
			}
		}
		return -1
	}
	if i, ok := o.index[name]; ok {
		return i
	}
	return -1
}

// reindex rebuilds the name index after a change that moved members, or drops it when the
// object is small enough for a linear scan. When names repeat (possible only through
// NewObject), the first occurrence wins, as it does for the linear scan.
func (o *Object) reindex() {
	if len(o.members) <= indexThreshold {
		o.index = nil
		return
	}
	o.index = make(map[string]int, len(o.members))
	for i, m := range o.members {
		if _, dup := o.index[m.Name]; !dup {
			o.index[m.Name] = i
		}
	}
}
