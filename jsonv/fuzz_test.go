package jsonv

import (
	"bytes"
	jsonv1 "encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// parseSeeds are inputs near every accept/reject rule of Parse.
var parseSeeds = []string{
	`null`, `true`, `0`, `-0`, `-0.0`, `-0e3`, `-1e-400`, `1e-400`, `1e400`, `-1e309`,
	`1.7976931348623157e308`, `5e-324`, `123456789012345678901234567890`, `0.1`, `1E+2`,
	`""`, `"\u2028\u0000\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", "\"\xed\xa0\x80\"",
	`[]`, `{}`, `[1,[2,[3]]]`, `{"a":{"b":[{"c":null}]}}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`,
	`{"10":1,"9":2,"b":3,"a":4}`, `[1,]`, `{"a":1,}`, `[1 2]`, `[1] [2]`, "  [1]\n", `{"a"}`,
	`NaN`, `Infinity`, `'a'`, `01`, `.5`, `1.`, `+1`, `-`, `"\x"`, "[" + strings.Repeat("[", 50),
	strings.Repeat("[", 200) + strings.Repeat("]", 200),
}

// FuzzParse checks that Parse never panics, that everything it accepts is a valid jsonv
// value that encoding/json also accepts, and that Marshal, MarshalIndent and Canonical of
// it parse back to an Equal value, Marshal byte-identically on a second round.
func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		checkArenaParse(t, data, v, err)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "jsonv: ") {
				t.Fatalf("error without package prefix: %v", err)
			}
			return
		}
		if !jsonv1.Valid(data) {
			t.Fatalf("Parse accepted %q, which encoding/json rejects", data)
		}
		if err := Check(v); err != nil {
			t.Fatalf("Check(Parse(%q)): %v", data, err)
		}
		out, err := Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(Parse(%q)): %v", data, err)
		}
		back, err := Parse(out)
		if err != nil || !Equal(back, v) {
			t.Fatalf("Parse(Marshal(v)) = %v, %v for %q", back, err, data)
		}
		if again, _ := Marshal(back); !bytes.Equal(again, out) {
			t.Fatalf("second Marshal differs: %s vs %s", out, again)
		}
		for name, enc := range map[string]func(any) ([]byte, error){
			"Canonical":     Canonical,
			"MarshalIndent": func(v any) ([]byte, error) { return MarshalIndent(v, "\t") },
		} {
			text, err := enc(v)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if back, err := Parse(text); err != nil || !Equal(back, v) {
				t.Fatalf("Parse(%s(v)) = %v, %v for %q", name, back, err, data)
			}
		}
	})
}

// checkArenaParse parses data in an arena after a neighbour and checks that it gets what
// Parse got (the same value, or the same error) and leaves the neighbour alone.
func checkArenaParse(t *testing.T, data []byte, want any, wantErr error) {
	const neighbour = `{"a":[1,{"b":"c"}],"d":"e"}`
	var a Arena
	n, err := a.Parse([]byte(neighbour))
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Parse(data)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("Arena.Parse(%q): error %v, Parse: %v", data, err, wantErr)
	case err != nil && err.Error() != wantErr.Error():
		t.Fatalf("Arena.Parse(%q): error %q, Parse: %q", data, err, wantErr)
	case err == nil && !Equal(got, want):
		t.Fatalf("Arena.Parse(%q) is not Equal to Parse's value", data)
	}
	if out, _ := Marshal(n); string(out) != neighbour {
		t.Fatalf("the neighbour in the arena changed to %s", out)
	}
}

// FuzzSnapshotMatchesParse decodes the same text with encoding/json into map[string]any
// trees and checks that Snapshot of that tree equals what Parse builds, whenever Parse
// accepts the text.
func FuzzSnapshotMatchesParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, err := Parse(data)
		if err != nil {
			return
		}
		var tree any
		if err := jsonv1.Unmarshal(data, &tree); err != nil {
			t.Fatalf("encoding/json rejects %q, which Parse accepts: %v", data, err)
		}
		got, err := Snapshot(tree)
		if err != nil {
			t.Fatalf("Snapshot of the encoding/json tree of %q: %v", data, err)
		}
		if !Equal(got, want) {
			t.Fatalf("Snapshot differs from Parse for %q", data)
		}
		if a, _ := Canonical(got); !bytes.Equal(a, mustCanonical(t, want)) {
			t.Fatalf("Canonical differs for %q", data)
		}
	})
}

func mustCanonical(t *testing.T, v any) []byte {
	t.Helper()
	b, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzCompareUTF16 checks the canonical name order against an explicit UTF-16 encoding.
func FuzzCompareUTF16(f *testing.F) {
	for _, p := range [][2]string{{"a", "b"}, {"\ue000", "😀"}, {"a😀", "a\uffff"}, {"", "x"}, {"10", "9"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return
		}
		want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if got := sign(compareUTF16(a, b)); got != want {
			t.Fatalf("compareUTF16(%q, %q) = %d, want %d", a, b, got, want)
		}
		if x, y := sign(compareCanonical(a, b)), sign(compareCanonical(b, a)); x != -y || (x == 0) != (a == b) {
			t.Fatalf("compareCanonical(%q, %q) = %d but reversed %d", a, b, x, y)
		}
	})
}
