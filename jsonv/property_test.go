package jsonv

import (
	"math"
	"slices"
	"testing"
	"unicode/utf16"

	"pgregory.net/rapid"
)

// genNumber draws finite float64 values that are not negative zero, favouring the kinds
// whose formatting differs (integers, tiny and huge magnitudes, short decimals).
func genNumber() *rapid.Generator[float64] {
	return rapid.OneOf(
		rapid.Float64().Filter(func(f float64) bool {
			return !math.IsNaN(f) && !math.IsInf(f, 0) && !(f == 0 && math.Signbit(f))
		}),
		rapid.Map(rapid.Int64Range(-1<<53, 1<<53), func(i int64) float64 { return float64(i) }),
		rapid.Map(rapid.IntRange(-999999, 999999), func(i int) float64 { return float64(i) / 1000 }),
		rapid.SampledFrom([]float64{0, 1e21, 1e-7, 1e-6, 5e-324, math.MaxFloat64, 0.1}),
	)
}

// genName draws member names: a small pool (so that orders collide and array-index names
// appear) or any valid UTF-8 string.
func genName() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.SampledFrom([]string{"a", "b", "B", "0", "1", "10", "9", "01", "", "é", "\ue000", "😀", "a b"}),
		rapid.String(),
	)
}

// genValue draws jsonv values up to the given depth.
func genValue(depth int) *rapid.Generator[any] {
	scalars := []*rapid.Generator[any]{
		rapid.Just[any](nil),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(genNumber(), func(f float64) any { return f }),
		rapid.Map(rapid.String(), func(s string) any { return s }),
	}
	if depth == 0 {
		return rapid.OneOf(scalars...)
	}
	child := genValue(depth - 1)
	array := rapid.Map(rapid.SliceOfN(child, 0, 5), func(xs []any) any {
		if xs == nil {
			xs = []any{}
		}
		return xs
	})
	object := rapid.Custom(func(t *rapid.T) any {
		names := rapid.SliceOfNDistinct(genName(), 0, 6, rapid.ID[string]).Draw(t, "names")
		o := &Object{}
		for _, n := range names {
			o.Set(n, child.Draw(t, "value"))
		}
		return o
	})
	// Containers first and twice: rapid favours early alternatives, and values need shape.
	return rapid.OneOf(append([]*rapid.Generator[any]{object, array, object, array}, scalars...)...)
}

func TestPropMarshalRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(4).Draw(t, "v")
		if err := Check(v); err != nil {
			t.Fatalf("Check: %v", err)
		}
		out, err := Marshal(v)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(%s): %v", out, err)
		}
		if !Equal(back, v) {
			t.Fatalf("Parse(Marshal(v)) is not Equal to v: %s", out)
		}
		again, _ := Marshal(back)
		if string(again) != string(out) {
			t.Fatalf("re-marshal differs:\n%s\n%s", out, again)
		}
		for _, indent := range []string{"  ", "\t"} {
			pretty, err := MarshalIndent(v, indent)
			if err != nil {
				t.Fatalf("MarshalIndent: %v", err)
			}
			if back, err := Parse(pretty); err != nil || !Equal(back, v) {
				t.Fatalf("Parse(MarshalIndent(v)) = %v, %v", back, err)
			}
		}
		canon, err := Canonical(v)
		if err != nil {
			t.Fatalf("Canonical: %v", err)
		}
		if back, err := Parse(canon); err != nil || !Equal(back, v) {
			t.Fatalf("Parse(Canonical(v)) = %v, %v", back, err)
		}
	})
}

func TestPropSnapshotAndCloneAreIndependent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(4).Draw(t, "v")
		before, _ := Marshal(v)
		snap, err := Snapshot(v)
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		clone := Clone(v)
		if !Equal(snap, v) || !Equal(clone, v) {
			t.Fatal("Snapshot or Clone is not Equal to its input")
		}
		scribble(v)
		for name, c := range map[string]any{"Snapshot": snap, "Clone": clone} {
			if after, _ := Marshal(c); string(after) != string(before) {
				t.Fatalf("%s changed when its input was mutated:\n%s\n%s", name, before, after)
			}
		}
	})
}

// scribble overwrites every scalar inside v and adds a member to every object.
func scribble(v any) {
	work := []any{v}
	for len(work) > 0 {
		x := work[len(work)-1]
		work = work[:len(work)-1]
		switch x := x.(type) {
		case []any:
			for i, e := range x {
				switch e.(type) {
				case []any, *Object:
					work = append(work, e)
				default:
					x[i] = "scribbled"
				}
			}
		case *Object:
			for _, m := range x.Members() {
				switch m.Value.(type) {
				case []any, *Object:
					work = append(work, m.Value)
				default:
					x.Set(m.Name, "scribbled")
				}
			}
			x.Set("scribbled member", true)
		}
	}
}

func TestPropCanonicalIgnoresMemberOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(4).Draw(t, "v")
		shuffled := shuffleMembers(t, Clone(v))
		if !Equal(v, shuffled) {
			t.Fatal("reordering members changed Equal")
		}
		a, err := Canonical(v)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Canonical(shuffled)
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Fatalf("Canonical depends on member order:\n%s\n%s", a, b)
		}
	})
}

// shuffleMembers permutes the members of every object in v, in place.
func shuffleMembers(t *rapid.T, v any) any {
	work := []any{v}
	for len(work) > 0 {
		x := work[len(work)-1]
		work = work[:len(work)-1]
		switch x := x.(type) {
		case []any:
			work = append(work, x...)
		case *Object:
			perm := rapid.Permutation(x.members).Draw(t, "perm")
			*x = *NewObject(perm...)
			for _, m := range perm {
				work = append(work, m.Value)
			}
		}
	}
	return v
}

func TestPropSnapshotOfGoMaps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.MapOf(genName(), rapid.OneOf(
			rapid.Map(rapid.Int64Range(-1<<53, 1<<53), func(i int64) any { return i }),
			rapid.Map(rapid.String(), func(s string) any { return s }),
			rapid.Map(rapid.SliceOf(rapid.IntRange(-100, 100)), func(xs []int) any { return xs }),
		)).Draw(t, "m")
		snap, err := Snapshot(m)
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		o := snap.(*Object)
		if o.Len() != len(m) {
			t.Fatalf("Snapshot has %d members, map has %d", o.Len(), len(m))
		}
		keys := o.Keys()
		if !slices.IsSortedFunc(keys, compareCanonical) {
			t.Fatalf("members not in canonical order: %q", keys)
		}
		out, _ := Marshal(snap)
		canon, _ := Canonical(snap)
		if string(out) != string(canon) {
			t.Fatalf("a snapshotted map does not marshal in canonical order:\n%s\n%s", out, canon)
		}
	})
}

func TestPropCompareUTF16(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.String().Draw(t, "a")
		b := rapid.String().Draw(t, "b")
		want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if got := sign(compareUTF16(a, b)); got != want {
			t.Fatalf("compareUTF16(%q, %q) = %d, want %d", a, b, got, want)
		}
	})
}
