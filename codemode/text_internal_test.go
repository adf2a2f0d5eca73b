package codemode

import (
	"slices"
	"testing"
)

func TestCompareUTF16(t *testing.T) {
	// JavaScript compares UTF-16 code units: a supplementary character (a surrogate pair
	// starting at 0xD800) sorts before U+E000–U+FFFF, unlike in Go's byte order.
	names := []string{"\uFFFF", "\U00010000", "ab", "a", "", "\uE000", "\U0010FFFF", "z"}
	slices.SortStableFunc(names, compareUTF16)
	want := []string{"", "a", "ab", "z", "\U00010000", "\U0010FFFF", "\uE000", "\uFFFF"}
	if !slices.Equal(names, want) {
		t.Errorf("order %q, want %q", names, want)
	}
	for _, c := range []struct {
		a, b string
		want int
	}{{"a", "a", 0}, {"a", "b", -1}, {"b", "a", 1}, {"ab", "a", 1}, {"\U00010000", "\U00010001", -1}, {"\U00010001", "\U00010000", 1}} {
		if got := compareUTF16(c.a, c.b); (got > 0) != (c.want > 0) || (got < 0) != (c.want < 0) {
			t.Errorf("compareUTF16(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestTextHelpers(t *testing.T) {
	if got := jsonString("a\xffb\"\u2028"); got != "\"a\uFFFDb\\\"\u2028\"" {
		t.Errorf("jsonString = %q", got)
	}
	if got := collapseSpace("\u00a0 a\t\n b\u3000\ufeffc \u0085 "); got != "a b c \u0085" {
		t.Errorf("collapseSpace = %q", got)
	}
	if utf16Len("a\U00010330b") != 4 {
		t.Error("utf16Len")
	}
	if got := capClassName("ab"); got != "ab" {
		t.Errorf("capClassName = %q", got)
	}
}

func TestIdentifierProperties(t *testing.T) {
	cases := []struct {
		r                rune
		start, continue_ bool
	}{
		{'a', true, true}, {'_', false, true}, {'1', false, true}, {'-', false, false},
		{'路', true, true}, {0x0301, false, true}, {0x200C, false, true}, {0x200D, false, true},
		{0x037A, false, false}, // ID_Start, but not XID: its NFKC form is not an identifier
		{0x0E33, false, true},  // XID_Continue only
		{0xFC5E, false, false}, {0xFE72, false, false}, {0xFE71, true, true},
		{0xFF9E, false, true}, {0x2118, true, true}, {0x00B7, false, true},
		{' ', false, false}, {'$', false, false},
	}
	for _, c := range cases {
		if isXIDStart(c.r) != c.start || isXIDContinue(c.r) != c.continue_ {
			t.Errorf("%U: start %v continue %v, want %v %v", c.r, isXIDStart(c.r), isXIDContinue(c.r), c.start, c.continue_)
		}
	}
	for name, want := range map[string]bool{"": false, "a": true, "_a": true, "1a": false, "ﬁ": false, "a b": false, "路径": true, "a\u200cb": true, "\u200cb": false} {
		if isBareIdentifier(name) != want {
			t.Errorf("isBareIdentifier(%q) != %v", name, want)
		}
	}
}
