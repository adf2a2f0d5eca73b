package jsonv

import (
	"math"
	"reflect"
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
