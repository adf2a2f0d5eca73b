package starlark

import (
	"testing"

	star "go.starlark.net/starlark"
	"pgregory.net/rapid"
)

// starValue generates nested lists, tuples and dicts of strings and ints, reusing earlier
// containers so that values are shared.
func starValue(t *rapid.T, pool *[]star.Value, depth int) star.Value {
	if depth > 3 || rapid.IntRange(0, 3).Draw(t, "leaf") == 0 {
		if rapid.Bool().Draw(t, "str") {
			return star.String(rapid.StringN(0, 50, -1).Draw(t, "s"))
		}
		return star.MakeInt(rapid.Int().Draw(t, "i"))
	}
	if len(*pool) > 0 && rapid.IntRange(0, 4).Draw(t, "reuse") == 0 {
		return (*pool)[rapid.IntRange(0, len(*pool)-1).Draw(t, "which")]
	}
	n := rapid.IntRange(0, 5).Draw(t, "n")
	elems := make([]star.Value, n)
	for i := range elems {
		elems[i] = starValue(t, pool, depth+1)
	}
	var v star.Value
	switch rapid.IntRange(0, 2).Draw(t, "kind") {
	case 0:
		v = star.NewList(elems)
	case 1:
		v = star.Tuple(elems)
	default:
		d := star.NewDict(n)
		for i, e := range elems {
			d.SetKey(star.MakeInt(i), e)
		}
		v = d
	}
	*pool = append(*pool, v)
	return v
}

// stringBytes sums the lengths of the strings in v, each occurrence counted.
func stringBytes(v star.Value, seen map[any]bool) uint64 {
	if k := identity(v); k != nil {
		if seen[k] {
			return 0
		}
		seen[k] = true
	}
	switch x := v.(type) {
	case star.String:
		return uint64(len(x))
	case *star.List:
		var n uint64
		for i := 0; i < x.Len(); i++ {
			n += stringBytes(x.Index(i), seen)
		}
		return n
	case star.Tuple:
		var n uint64
		for _, e := range x {
			n += stringBytes(e, seen)
		}
		return n
	case *star.Dict:
		var n uint64
		for _, kv := range x.Items() {
			n += stringBytes(kv[1], seen)
		}
		return n
	}
	return 0
}

// TestPropertySizeValues: a container held twice is counted once, and the estimate never
// falls below the bytes of the strings the program holds.
func TestPropertySizeValues(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var pool []star.Value
		v := starValue(t, &pool, 0)
		once := sizeValues([]star.Value{v})
		if identity(v) != nil {
			if twice := sizeValues([]star.Value{v, v}); twice.bytes != once.bytes {
				t.Fatalf("held twice: %d bytes, once: %d", twice.bytes, once.bytes)
			}
		}
		if min := stringBytes(v, map[any]bool{}); once.bytes < min {
			t.Fatalf("estimate %d below the %d string bytes", once.bytes, min)
		}
	})
}

func BenchmarkSizeValues(b *testing.B) {
	elems := make([]star.Value, 10000)
	for i := range elems {
		elems[i] = star.NewList([]star.Value{star.String("item"), star.MakeInt(i)})
	}
	roots := []star.Value{star.NewList(elems)}
	b.ReportAllocs()
	for b.Loop() {
		sizeValues(roots)
	}
}
