package jsonv

import (
	"bytes"
	"strings"
	"testing"

	"pgregory.net/rapid"
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
	for _, s := range append(append(append([]string{}, parseSeeds...), fastSeeds...), smallTopSeeds...) {
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
		// ParseString reads the same bytes in place, through the same passes.
		str, errS := ParseString(string(data))
		if errS != nil || !Equal(str, checked) {
			t.Fatalf("ParseString(%q) = %#v, %v; parseChecked = %#v", data, str, errS, checked)
		}
		checkCapacities(t, str)
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

// smallTopSeeds are top-level objects at the edges of the one-block layout: one to four
// members and a fifth, strings that fill the block's room exactly, one byte more, escapes
// and nested containers.
var smallTopSeeds = []string{
	`{}`, `{"text":"hello"}`, `{"a":""}`, `{"":""}`,
	`{"abcdefghijklmnop":"abcdefghijklmnop"}`, `{"abcdefghijklmnop":"abcdefghijklmnopq"}`,
	`{"a":1,"b":"0123456789012345678901234567890123456789012345"}`,
	`{"a":1,"b":"01234567890123456789012345678901234567890123456"}`,
	`{"a":1,"b":2,"c":"0123456789012345678901234567890123456789012345"}`,
	`{"a":1,"b":2,"c":"01234567890123456789012345678901234567890123456"}`,
	`{"a":1,"b":2,"c":3,"d":"012345678901234567890123456789012345678901234567890123456789"}`,
	`{"a":1,"b":2,"c":3,"d":"0123456789012345678901234567890123456789012345678901234567890"}`,
	`{"a":"x","b":true,"c":null}`, `{"a":"x","b":true,"c":null,"d":[1,"y",{"e":"z"}]}`,
	`{"a":"x","b":true,"c":null,"d":1,"e":"five"}`, `{"a":"\u00e9\n","b":"\ud83d\ude00"}`,
	`{"a":{"b":"c"},"d":"e"}`, `{"a":[]}`, `{"a":{}}`, `{"a":1,"b":[],"c":"x"}`, `{"a" : -1.5e3 , "b" : false }`,
	`{"a":1,"a":2}`, `{"a":1,"b":2,"a":3,"c":4}`, `{"a":"x"`,
}

// TestParseStringMatchesParse checks ParseString against Parse and the checked parser on
// valid and invalid texts: the same value or the same error, and the text untouched.
func TestParseStringMatchesParse(t *testing.T) {
	for _, text := range append(append(append([]string{}, parseSeeds...), fastSeeds...), smallTopSeeds...) {
		want, wantErr := parseChecked([]byte(text), nil)
		got, err := ParseString(text)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("ParseString(%q) error %v, parseChecked error %v", text, err, wantErr)
		}
		if err != nil {
			if got != nil {
				t.Fatalf("ParseString(%q) = %#v with error %v", text, got, err)
			}
			continue
		}
		if !Equal(got, want) || string(mustMarshalT(t, got)) != string(mustMarshalT(t, want)) {
			t.Fatalf("ParseString(%q) = %#v, parseChecked = %#v", text, got, want)
		}
		if err := Check(got); err != nil {
			t.Fatalf("Check(ParseString(%q)): %v", text, err)
		}
		checkCapacities(t, got)
	}
}

// TestParseStringErrors checks that ParseString reports what is wrong and where, as Parse
// does, for texts the fast passes give up on.
func TestParseStringErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{``, "unexpected EOF"},
		{`{"a":1,"a":2}`, `duplicate`},
		{`{"a":-0}`, "negative zero"},
		{`{"text":"hello"`, "unexpected EOF"},
		{`{"text":"hello"} x`, "offset 17: unexpected data after the top-level value"},
		{"{\"a\":\"\xff\"}", "UTF-8"},
	} {
		v, err := ParseString(tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseString(%q) = %#v, %v; want an error containing %q", tc.text, v, err, tc.want)
		}
	}
}

// TestParseStringSmallObjectAllocations pins what a small argument object costs: one
// block for the object, its members and its strings' bytes, plus one per string or number
// value (held in an interface; true, false and null cost nothing).
func TestParseStringSmallObjectAllocations(t *testing.T) {
	for _, tc := range []struct {
		text string
		want float64
	}{
		{`{"text":"hello"}`, 2},
		{`{"n":1,"ok":true}`, 2},
		{`{"path":"src/main.go","offset":10,"limit":20}`, 4},
		{`{"a":"x","b":"y","c":"z","d":null}`, 4},
		// Strings beyond the block's room get a buffer of their own.
		{`{"text":"0123456789012345678901234567890123456789"}`, 3},
	} {
		got := testing.AllocsPerRun(100, func() {
			if _, err := ParseString(tc.text); err != nil {
				t.Fatal(err)
			}
		})
		if got != tc.want {
			t.Errorf("ParseString(%s): %v allocations, want %v", tc.text, got, tc.want)
		}
	}
}

// TestPropParseStringSmallObjects checks the one-block layout of small top-level objects
// against the checked parser: any object of scalar and nested values parses to the same
// value, every member list has a capacity equal to its length, and setting a member of the
// parsed object changes nothing else that was parsed.
func TestPropParseStringSmallObjects(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOfNDistinct(genName(), 0, 6, rapid.ID[string]).Draw(t, "names")
		o := &Object{}
		for _, n := range names {
			o.Set(n, genValue(1).Draw(t, "v"))
		}
		text := string(mustMarshalR(t, o))
		want, err := parseChecked([]byte(text), nil)
		if err != nil {
			t.Fatalf("parseChecked(%s): %v", text, err)
		}
		got, err := ParseString(text)
		if err != nil {
			t.Fatalf("ParseString(%s): %v", text, err)
		}
		if !Equal(got, want) {
			t.Fatalf("ParseString(%s) = %#v, want %#v", text, got, want)
		}
		other, _ := ParseString(text)
		obj := got.(*Object)
		obj.Set("added", "new")
		for _, n := range names {
			obj.Set(n, "changed")
		}
		if !Equal(other, want) {
			t.Fatalf("setting members of one parse changed another: %#v", other)
		}
	})
}

func mustMarshalR(t *rapid.T, v any) []byte {
	out, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
