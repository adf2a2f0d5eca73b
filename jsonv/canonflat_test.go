package jsonv

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestPropFlatCanonicalMatchesGeneral checks that AppendCanonical's shortcut for flat
// objects appends exactly what the general canonical encoder writes, errors included, for
// members in any order (array-index names, UTF-16 order, duplicates and invalid values
// among them), after whatever dst already holds, and leaves the object as it was.
func TestPropFlatCanonicalMatchesGeneral(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := genFlatObject().Draw(t, "object")
		if rapid.Bool().Draw(t, "index names") {
			names := rapid.SliceOfN(rapid.SampledFrom([]string{"0", "1", "2", "10", "9", "01", "4294967294", "4294967295", "a", "B", "é", "\ue000", "😀", ""}), len(o.members), len(o.members)).Draw(t, "names")
			for i := range o.members {
				o.members[i].Name = names[i]
			}
		}
		before := append([]Member(nil), o.members...)
		prefix := []byte(rapid.SampledFrom([]string{"", "x", "[1,"}).Draw(t, "prefix"))

		got, gotErr := AppendCanonical(append([]byte(nil), prefix...), o)
		e := encoder{canonical: true}
		want, wantErr := e.encode(append([]byte(nil), prefix...), o)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("AppendCanonical error %v, general encoder %v", gotErr, wantErr)
		}
		if string(got) != string(want) {
			t.Fatalf("AppendCanonical = %q, general encoder %q", got, want)
		}
		if !sameMembers(o.members, before) {
			t.Fatalf("the object changed: %#v, was %#v", o.members, before)
		}
	})
}

// TestFlatCanonicalDeclines: the shortcut leaves to the general encoder every object it
// does not write exactly, and writes an ordinary one in canonical order.
func TestFlatCanonicalDeclines(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    *Object
	}{
		{"empty", &Object{}},
		{"nested", NewObject(Member{"a", []any{1.0}})},
		{"duplicate", &Object{members: []Member{{"a", 1.0}, {"a", 2.0}}}},
		{"NaN", NewObject(Member{"a", math.NaN()})},
		{"invalid string", NewObject(Member{"a", "\xff"})},
		{"invalid name", NewObject(Member{"\xff", 1.0})},
		{"Go int", NewObject(Member{"a", 1})},
		{"too many", func() *Object {
			o := &Object{}
			for i := range maxFlat + 1 {
				o.members = append(o.members, Member{Name: string(rune('a' + i)), Value: 1.0})
			}
			return o
		}()},
	} {
		if _, ok := appendFlatCanonical(nil, tt.o); ok {
			t.Errorf("%s: appendFlatCanonical accepted it", tt.name)
		}
	}
	got, ok := appendFlatCanonical(nil, NewObject(Member{"text", "hello"}, Member{"10", true}, Member{"2", nil}, Member{"B", 1.5}))
	if want := `{"2":null,"10":true,"B":1.5,"text":"hello"}`; !ok || string(got) != want {
		t.Errorf("appendFlatCanonical = %q, %v; want %q", got, ok, want)
	}
}

func TestFlatCanonicalAllocs(t *testing.T) {
	o := NewObject(Member{"text", "hello"}, Member{"count", 3.0})
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := AppendCanonical(buf[:0], o); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("AppendCanonical of a flat object allocates %v times, want 0", n)
	}
}
