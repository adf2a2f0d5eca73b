package jsonv

import (
	"math"
	"reflect"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// genFlatObject generates objects of the shape the flat shortcuts take, and values just
// outside it: scalar members with invalid UTF-8, non-finite numbers, -0, duplicate names,
// a nested container, or more members than maxFlat.
func genFlatObject() *rapid.Generator[*Object] {
	scalar := rapid.OneOf(
		rapid.Just[any](nil),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(genNumber(), func(f float64) any { return f }),
		rapid.Map(rapid.String(), func(s string) any { return s }),
		rapid.SampledFrom([]any{math.NaN(), math.Inf(1), math.Copysign(0, -1), "\xff", []any{1.0}, &Object{}, NewObject(Member{"a", 1.0}), int(3)}),
	)
	name := rapid.OneOf(genName(), rapid.SampledFrom([]string{"a", "a", "b", "\xfe"}))
	return rapid.Custom(func(t *rapid.T) *Object {
		n := rapid.IntRange(0, maxFlat+2).Draw(t, "n")
		ms := make([]Member, n)
		for i := range ms {
			ms[i] = Member{Name: name.Draw(t, "name"), Value: scalar.Draw(t, "value")}
		}
		return &Object{members: ms} // as built, duplicates included
	})
}

// TestPropFlatShortcutsMatchGeneral checks that MarshalIndent's and Snapshot's shortcuts
// for flat objects give exactly what the general encoder and walk give, errors included.
func TestPropFlatShortcutsMatchGeneral(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := genFlatObject().Draw(t, "object")
		indent := rapid.SampledFrom([]string{"  ", "\t", "abcdefghijklm"}).Draw(t, "indent")

		got, gotErr := MarshalIndent(o, indent)
		e := encoder{indent: truncateIndent(indent)}
		want, wantErr := e.encode(nil, o)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("MarshalIndent error %v, general encoder %v", gotErr, wantErr)
		}
		if string(got) != string(want) {
			t.Fatalf("MarshalIndent = %q, general encoder %q", got, want)
		}

		snap, snapErr := Snapshot(o)
		var s snapshotter
		ref, refErr := s.run(o)
		if (snapErr == nil) != (refErr == nil) || snapErr != nil && snapErr.Error() != refErr.Error() {
			t.Fatalf("Snapshot error %v, general walk %v", snapErr, refErr)
		}
		if snapErr != nil {
			return
		}
		if !reflect.DeepEqual(snap, ref) {
			t.Fatalf("Snapshot = %#v, general walk %#v", snap, ref)
		}
		if c := snap.(*Object); len(o.members) > 0 && &c.members[0] == &o.members[0] {
			t.Fatal("Snapshot shares the member storage of its input")
		}
	})
}

func TestFlatShortcutsDecline(t *testing.T) {
	tests := []struct {
		name string
		o    *Object
	}{
		{"empty", &Object{}},
		{"nested", NewObject(Member{"a", []any{1.0}})},
		{"duplicate", &Object{members: []Member{{"a", 1.0}, {"a", 2.0}}}},
		{"NaN", NewObject(Member{"a", math.NaN()})},
		{"negative zero", NewObject(Member{"a", math.Copysign(0, -1)})},
		{"invalid string", NewObject(Member{"a", "\xff"})},
		{"invalid name", NewObject(Member{"\xff", 1.0})},
		{"Go int", NewObject(Member{"a", 1})},
	}
	for _, tt := range tests {
		if _, ok := copyFlat(tt.o); ok {
			t.Errorf("%s: copyFlat accepted it", tt.name)
		}
		if _, ok := appendFlatIndent(nil, tt.o, "  "); ok {
			t.Errorf("%s: appendFlatIndent accepted it", tt.name)
		}
	}
}

// TestPropCloneFlatMatchesGeneral checks that Clone's one-allocation copy of a small flat
// object is what the general walk makes, and is independent of its input.
func TestPropCloneFlatMatchesGeneral(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := genFlatObject().Draw(t, "object")
		got := Clone(o).(*Object)
		want := cloneWalk(o)
		if !sameMembers(got.members, want.members) {
			t.Fatalf("Clone = %#v, general walk %#v", got.members, want.members)
		}
		if len(o.members) > 0 {
			if &got.members[0] == &o.members[0] {
				t.Fatal("Clone shares the member storage of its input")
			}
			had := o.Has("added")
			before := o.members[0].Value
			got.members[0].Value = "changed"
			got.Set("added", "x")
			if !sameMembers([]Member{o.members[0]}, []Member{{o.members[0].Name, before}}) || o.Has("added") != had {
				t.Fatal("a change to the clone reached its input")
			}
		}
	})
}

// sameMembers reports whether a and b hold the same names and identical values (a NaN is
// identical to a NaN with the same bits).
func sameMembers(a, b []Member) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			return false
		}
		fa, aok := a[i].Value.(float64)
		fb, bok := b[i].Value.(float64)
		switch {
		case aok && bok:
			if math.Float64bits(fa) != math.Float64bits(fb) {
				return false
			}
		case !reflect.DeepEqual(a[i].Value, b[i].Value):
			return false
		}
	}
	return true
}

// cloneWalk is Clone without the flat shortcut: the general walk.
func cloneWalk(o *Object) *Object {
	if len(o.members) == 0 {
		return &Object{}
	}
	members := make([]Member, len(o.members))
	for i, m := range o.members {
		members[i] = Member{Name: m.Name, Value: Clone(m.Value)}
	}
	return NewObject(members...)
}

func TestCloneFlatDeclines(t *testing.T) {
	tests := []struct {
		name string
		o    *Object
	}{
		{"nil", nil},
		{"empty", &Object{}},
		{"nested array", NewObject(Member{"a", []any{1.0}})},
		{"nested object", NewObject(Member{"a", &Object{}})},
		{"too many members", NewObject(Member{"a", 1.0}, Member{"b", 1.0}, Member{"c", 1.0}, Member{"d", 1.0}, Member{"e", 1.0})},
	}
	for _, tt := range tests {
		if c := cloneFlat(tt.o); c != nil {
			t.Errorf("%s: cloneFlat accepted it", tt.name)
		}
	}
	if c := cloneFlat(NewObject(Member{"a", "x"}, Member{"b", 2.0})); c == nil || c.Len() != 2 {
		t.Errorf("cloneFlat of a flat object = %v", c)
	}
}

// TestCloneFlatAllocations pins the single allocation of a small flat object's copy.
func TestCloneFlatAllocations(t *testing.T) {
	o := NewObject(Member{"text", "hello"}, Member{"n", 1.0})
	if n := testing.AllocsPerRun(100, func() { _ = Clone(o) }); n != 1 {
		t.Errorf("Clone of a flat object: %v allocations, want 1", n)
	}
}

// TestPropNewObjectCopy checks that NewObjectCopy makes what NewObject of a copy of the
// members makes (the same members in the same order, the index of a large object), and that
// the object shares no storage with the slice it was given.
func TestPropNewObjectCopy(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, indexThreshold+3).Draw(t, "n")
		ms := make([]Member, n)
		for i := range ms {
			ms[i] = Member{Name: genName().Draw(t, "name"), Value: rapid.String().Draw(t, "value")}
		}
		got := NewObjectCopy(ms)
		want := NewObject(append([]Member(nil), ms...)...)
		if !sameMembers(got.members, want.members) {
			t.Fatalf("NewObjectCopy = %#v, NewObject of a copy %#v", got.members, want.members)
		}
		if (got.index == nil) != (want.index == nil) {
			t.Fatalf("NewObjectCopy indexed = %v, NewObject indexed = %v", got.index != nil, want.index != nil)
		}
		for _, m := range ms {
			if v, ok := got.Get(m.Name); !ok || v != want.getOrNil(m.Name) {
				t.Fatalf("Get(%q) = %v, %v; want %v", m.Name, v, ok, want.getOrNil(m.Name))
			}
		}
		if n > 0 {
			ms[0].Value = "changed by the caller"
			if got.members[0].Value == "changed by the caller" {
				t.Fatal("NewObjectCopy shares the caller's member storage")
			}
			got.Set("added", "x")
			if len(ms) != n {
				t.Fatal("a change to the object reached the caller's slice")
			}
		}
	})
}

// getOrNil is Get without the presence flag.
func (o *Object) getOrNil(name string) any {
	v, _ := o.Get(name)
	return v
}

// TestPropFlatIndentSize checks that MarshalIndent's buffer for a flat object whose strings
// need no escaping is never too small (it is written in one allocation) and not far too
// large: at most what the longest numbers could add over the text written.
func TestPropFlatIndentSize(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, maxFlat).Draw(t, "n")
		ms := make([]Member, n)
		for i := range ms {
			name := rapid.StringMatching(`[a-z]{1,8}`).Draw(t, "name") + strconv.Itoa(i)
			var v any
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0:
				v = rapid.StringMatching(`[a-zA-Z0-9 .,:;!?_-]{0,40}`).Draw(t, "string")
			case 1:
				v = genNumber().Draw(t, "number")
			case 2:
				v = rapid.Bool().Draw(t, "bool")
			}
			ms[i] = Member{Name: name, Value: v}
		}
		o := NewObject(ms...)
		indent := rapid.SampledFrom([]string{"  ", "\t", "    "}).Draw(t, "indent")
		b, err := MarshalIndent(o, indent)
		if err != nil {
			t.Fatal(err)
		}
		size := flatIndentSize(o, indent)
		if len(b) > size || size-len(b) > 24*n {
			t.Fatalf("flatIndentSize = %d for %d bytes of %s", size, len(b), b)
		}
	})
}
