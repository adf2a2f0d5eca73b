package jsonv

import (
	"reflect"
	"strconv"
	"unsafe"
)

// pathSeg is one step of a value path: an array index or an object member name.
type pathSeg struct {
	name  string
	index int
	isKey bool
}

func indexSeg(i int) pathSeg   { return pathSeg{index: i} }
func nameSeg(n string) pathSeg { return pathSeg{name: n, isKey: true} }

// formatPath renders a path the way JavaScript would address the value: $ for the root,
// .name for identifier-like member names, ["name"] for any other name, [i] for indexes.
// Long names are shortened so that a message stays readable.
func formatPath(segs []pathSeg) string {
	b := []byte{'$'}
	for _, s := range segs {
		switch {
		case !s.isKey:
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(s.index), 10)
			b = append(b, ']')
		case len(s.name) <= 64 && isIdentifier(s.name):
			b = append(b, '.')
			b = append(b, s.name...)
		default:
			b = append(b, '[')
			b = append(b, quoteForMessage(s.name)...)
			b = append(b, ']')
		}
	}
	return string(b)
}

// isIdentifier reports whether name is an ASCII JavaScript identifier, so that a path can
// use the short .name form for it.
func isIdentifier(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_' || c == '$' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// ident identifies a container for cycle detection. For *Object it is the object's address
// (n = -1); for a slice it is the address of its first element and its length, which
// together determine its elements; for a map it is the map's address (n = -2).
type ident struct {
	p unsafe.Pointer
	n int
}

func objectIdent(o *Object) ident { return ident{p: unsafe.Pointer(o), n: -1} }
func sliceIdent(s []any) ident    { return ident{p: unsafe.Pointer(unsafe.SliceData(s)), n: len(s)} }
func mapIdent(m any) ident        { return ident{p: reflect.ValueOf(m).UnsafePointer(), n: -2} }

// linearAncestry is the depth up to which ancestry scans its list instead of keeping a set:
// real documents are shallow, and a scan of a few entries is cheaper than map upkeep.
const linearAncestry = 32

// ancestry is the chain of containers from the root to the value being walked. An
// iterative walk enters a container before walking its children and leaves it afterwards,
// so a container met again while it is still on the chain is its own ancestor: a cycle.
// Shared (DAG) references are not cycles and pass.
type ancestry struct {
	list  []ident
	set   map[ident]struct{}
	small [4]ident // backs list for shallow values, so most walks allocate nothing here
}

// enter pushes id on the chain and reports false, leaving the chain unchanged, if id is
// already on it.
func (a *ancestry) enter(id ident) bool {
	if a.list == nil {
		a.list = a.small[:0]
	}
	if a.set == nil && len(a.list) >= linearAncestry {
		a.set = make(map[ident]struct{}, 2*len(a.list))
		for _, x := range a.list {
			a.set[x] = struct{}{}
		}
	}
	if a.set != nil {
		if _, ok := a.set[id]; ok {
			return false
		}
		a.set[id] = struct{}{}
	} else {
		for _, x := range a.list {
			if x == id {
				return false
			}
		}
	}
	a.list = append(a.list, id)
	return true
}

// leave pops the innermost container off the chain.
func (a *ancestry) leave() {
	id := a.list[len(a.list)-1]
	a.list = a.list[:len(a.list)-1]
	if a.set != nil {
		delete(a.set, id)
	}
}
