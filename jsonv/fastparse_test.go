package jsonv

import (
	"bytes"
	"strings"
	"testing"
)

// fastSeeds are texts near the rules the fast passes check on their own: escapes and
// surrogate pairs, UTF-8, number grammar and the short integers converted without strconv.
var fastSeeds = []string{
	`"\ud83d\ude00"`, `"\ud83dx"`, `"\ude00"`, `"\ud83d\u0041"`, `"\u00e9\u20ac\/\b\f\n\r\t"`,
	`"a\"b\\c"`, "\"\x1f\"", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"", "\"\xc3\"", "\"\xf4\x90\x80\x80\"",
	`123456789012345`, `1234567890123456`, `-123456789012345`, `9007199254740993`, `-0e0`,
	`0.0`, `-0.5`, `1e-400`, `1e308`, `1e309`, `00`, `-01`, `1e`, `1e+`, `1.e3`, `[-]`,
	`{"a" :1 , "b":[ ] ,"c":{ } }`, `{"":""}`, `{"a":1 "b":2}`, `{"a",1}`, `{1:2}`, `[1,]`,
	`tru`, `nul`, `falsey`, `[true,false,null]`, `{"a":{"a":{"a":1}},"b":{"a":1,"a":2}}`,
	`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17}`,
	`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"a":17}`,
	"", " ", "[", "]", "{", `"`, `"\`, `"\u12`, `"\u12g4"`,
}

// FuzzParseFastMatchesChecked is the differential test of the fast passes against the
// tokenizer-based parser: for every input both accept it with the same value (Equal and
// Marshal-identical, with the same slab layout guarantees), or both reject it.
func FuzzParseFastMatchesChecked(f *testing.F) {
	for _, s := range append(append([]string{}, parseSeeds...), fastSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checked, err := parseChecked(data, nil)
		fast, ok := parseFast(data, nil)
		if len(data) == 0 {
			ok = false // parse does not call parseFast for an empty input
			fast = nil
		}
		if ok != (err == nil) {
			t.Fatalf("parseFast(%q) ok = %v, parseChecked error = %v", data, ok, err)
		}
		if !ok {
			return
		}
		if !Equal(fast, checked) {
			t.Fatalf("parseFast(%q) = %#v, parseChecked = %#v", data, fast, checked)
		}
		a, err1 := Marshal(fast)
		b, err2 := Marshal(checked)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Fatalf("Marshal differs for %q: %s (%v) vs %s (%v)", data, a, err1, b, err2)
		}
		if err := Check(fast); err != nil {
			t.Fatalf("Check(parseFast(%q)): %v", data, err)
		}
		checkCapacities(t, fast)
	})
}

// checkCapacities checks that every array and member list of v has a capacity equal to its
// length, so that growing one never writes into a neighbour's slab storage.
func checkCapacities(t *testing.T, v any) {
	t.Helper()
	switch v := v.(type) {
	case []any:
		if v == nil || cap(v) != len(v) {
			t.Fatalf("array of length %d has capacity %d (nil %v)", len(v), cap(v), v == nil)
		}
		for _, e := range v {
			checkCapacities(t, e)
		}
	case *Object:
		if cap(v.members) != len(v.members) {
			t.Fatalf("object of %d members has capacity %d", len(v.members), cap(v.members))
		}
		if len(v.members) > indexThreshold && len(v.index) != len(v.members) {
			t.Fatalf("object of %d members has an index of %d", len(v.members), len(v.index))
		}
		for _, m := range v.members {
			checkCapacities(t, m.Value)
		}
	}
}

// TestParseFastGivesUpAtTheDepthLimit checks that the fast passes leave the nesting limit to
// the checked parser, which accepts MaxDepth levels and rejects one more with its error.
func TestParseFastGivesUpAtTheDepthLimit(t *testing.T) {
	for _, tc := range []struct {
		depth   int
		wantErr bool
	}{
		{MaxDepth - 2, false},
		{MaxDepth, false},
		{MaxDepth + 1, true},
	} {
		data := []byte(strings.Repeat("[", tc.depth) + strings.Repeat("]", tc.depth))
		_, fastOK := parseFast(data, nil)
		if want := tc.depth < MaxDepth; fastOK != want {
			t.Errorf("depth %d: parseFast ok = %v, want %v", tc.depth, fastOK, want)
		}
		_, err := Parse(data)
		if (err != nil) != tc.wantErr {
			t.Errorf("depth %d: Parse error %v, want an error: %v", tc.depth, err, tc.wantErr)
		}
	}
}

// TestParseFastUnescapes checks the building pass's unescaping: one-character escapes,
// \u escapes of one to three UTF-8 bytes, surrogate pairs and empty strings.
func TestParseFastUnescapes(t *testing.T) {
	v, err := ParseString(`{"ab":["c\u00e9","\ud83d\ude00",""],"d":"e\\f"}`)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ab":["cé","😀",""],"d":"e\\f"}`
	if got := string(mustMarshalT(t, v)); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func mustMarshalT(t *testing.T, v any) []byte {
	t.Helper()
	out, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
