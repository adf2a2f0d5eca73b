package starlark

import (
	"runtime/metrics"
	"unsafe"

	star "go.starlark.net/starlark"
)

// The heap budget of a Starlark run is counted per program: at its step checkpoints the
// run sizes what the program holds — every value reachable from its module globals and
// from the locals and captured variables of every active frame — and fails once that
// passes MaxHeapMB. Nothing else in the process (another run, the host) is counted, so
// concurrent runs do not share the budget.
//
// Sizing walks the program's values, so its cost grows with them; the next measurement
// is due after as many steps as the last one visited values (at least heapCheckInterval),
// which keeps the walking to a constant share of the run's work. Because one step can
// allocate a lot ("x" * n), the process's allocation counter is read every
// allocCheckInterval steps, and a measurement comes early once half of the remaining budget
// has been allocated since the last one; that counter only decides when to measure, never
// what the program is charged. A value the program holds only on the interpreter's operand
// stack (a list comprehension still being built) is counted once it is bound to a name.

const (
	// heapCheckInterval is the fewest steps between two heap measurements.
	heapCheckInterval = 1024
	// allocCheckInterval is how many steps pass between reads of the allocation counter.
	allocCheckInterval = 256
)

// allocated returns the bytes the process has allocated since it started.
func allocated() uint64 {
	sample := [1]metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample[:])
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

// Estimated sizes, in bytes, of the values the walk meets: a value's header plus, for
// containers, a slot per element (the elements are sized on their own).
const (
	sizeScalar   = 16  // an int, float, bool or None in an interface slot
	sizeString   = 16  // a string header; its bytes are added
	sizeList     = 40  // a list header
	sizeSlot     = 16  // an element slot of a list or tuple
	sizeDict     = 64  // a dict or set header
	sizeEntry    = 48  // a dict or set entry (hash, key, value, links)
	sizeFunction = 128 // a function value
	sizeOther    = 32  // any other value (built-ins, the runtime's own objects)
)

// heapMeasure is the result of one walk: the estimated bytes and the values visited.
type heapMeasure struct {
	bytes   uint64
	visited uint64
}

// measureHeap sizes what the program running on thread holds. It runs on the program's
// goroutine between steps, so no value changes under it.
func measureHeap(thread *star.Thread) heapMeasure {
	var roots []star.Value
	seenFn := map[*star.Function]bool{}
	addFunction := func(fn *star.Function) {
		if seenFn[fn] {
			return
		}
		seenFn[fn] = true
		for i := 0; i < fn.NumFreeVars(); i++ {
			if _, v := fn.FreeVar(i); v != nil {
				roots = append(roots, v)
			}
		}
	}
	for depth := thread.CallStackDepth() - 1; depth >= 0; depth-- {
		fr := thread.DebugFrame(depth)
		fn, ok := fr.Callable().(*star.Function)
		if !ok {
			continue
		}
		if depth == thread.CallStackDepth()-1 {
			for _, v := range fn.Globals() {
				if v != nil {
					roots = append(roots, v)
				}
			}
		}
		addFunction(fn)
		for i := 0; i < fr.NumLocals(); i++ {
			if _, v := fr.Local(i); v != nil {
				roots = append(roots, v)
			}
		}
	}
	return sizeValues(roots)
}

// sizeValues estimates the bytes of the values reachable from roots, each counted once.
// The walk is iterative, so deep nesting costs no Go stack.
func sizeValues(roots []star.Value) heapMeasure {
	var m heapMeasure
	seen := map[any]bool{}
	stack := roots
	push := func(v star.Value) {
		if v != nil {
			stack = append(stack, v)
		}
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		m.visited++
		switch x := v.(type) {
		case star.String:
			m.bytes += sizeString + uint64(len(x))
			continue
		case star.Bytes:
			m.bytes += sizeString + uint64(len(x))
			continue
		case star.Int:
			if _, small := x.Int64(); small {
				m.bytes += sizeScalar
			} else {
				m.bytes += sizeScalar + uint64(x.BigInt().BitLen()/8)
			}
			continue
		case star.Float, star.Bool, star.NoneType:
			m.bytes += sizeScalar
			continue
		}
		if key := identity(v); key != nil {
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		switch x := v.(type) {
		case *star.List:
			m.bytes += sizeList + sizeSlot*uint64(x.Len())
			for i := 0; i < x.Len(); i++ {
				push(x.Index(i))
			}
		case star.Tuple:
			m.bytes += sizeList + sizeSlot*uint64(len(x))
			for _, e := range x {
				push(e)
			}
		case *star.Dict:
			m.bytes += sizeDict + sizeEntry*uint64(x.Len())
			for _, kv := range x.Items() {
				push(kv[0])
				push(kv[1])
			}
		case *star.Set:
			m.bytes += sizeDict + sizeEntry*uint64(x.Len())
			it := x.Iterate()
			var e star.Value
			for it.Next(&e) {
				push(e)
			}
			it.Done()
		case *star.Function:
			m.bytes += sizeFunction
			for i := 0; i < x.NumFreeVars(); i++ {
				_, fv := x.FreeVar(i)
				push(fv)
			}
			for i := 0; i < x.NumParams()+x.NumKwonlyParams(); i++ {
				push(x.ParamDefault(i))
			}
		default:
			m.bytes += sizeOther
		}
	}
	return m
}

// tupleKey identifies a tuple by its elements' storage, so a tuple shared many times
// (t = (t, t) in a loop) is walked once.
type tupleKey struct {
	first *star.Value
	n     int
}

// identity returns what identifies a container for the walk's seen set (nil for values
// that hold no other values).
func identity(v star.Value) any {
	switch x := v.(type) {
	case *star.List, *star.Dict, *star.Set, *star.Function:
		return x
	case star.Tuple:
		if len(x) > 0 {
			return tupleKey{unsafe.SliceData(x), len(x)}
		}
	}
	return nil
}
