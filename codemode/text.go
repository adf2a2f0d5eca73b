package codemode

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dsh-go/dsh/jsonv"
)

// Text helpers shared by the SDK renderers: JavaScript's notion of whitespace (the
// reference collapses descriptions with /\s+/ and String.prototype.trim), JSON string
// quoting as JSON.stringify writes it, and UTF-16 code-unit ordering (JavaScript's string
// comparison, which the reference sorts tool names by).

// isJSSpace reports whether r matches JavaScript's \s: the WhiteSpace and LineTerminator
// code points of ECMAScript.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// collapseSpace replaces every run of JavaScript whitespace with one space and trims the
// ends, like s.replace(/\s+/g, ' ').trim().
func collapseSpace(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if isJSSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// jsonString quotes s as JSON.stringify does. Invalid UTF-8 (which no jsonv string holds)
// is replaced by U+FFFD first.
func jsonString(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	b, err := jsonv.Marshal(s)
	if err != nil { // unreachable for valid UTF-8
		return `""`
	}
	return string(b)
}

// compareUTF16 orders strings by their UTF-16 code units, as JavaScript's < does. It differs
// from Go's byte order only between supplementary characters and U+E000–U+FFFF.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return cmpUnits(ra, rb)
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case a == "" && b == "":
		return 0
	case a == "":
		return -1
	}
	return 1
}

// cmpUnits compares the first UTF-16 code units of two different runes, then the second.
func cmpUnits(a, b rune) int {
	ua, ub := units(a), units(b)
	for i := range min(len(ua), len(ub)) {
		if ua[i] != ub[i] {
			if ua[i] < ub[i] {
				return -1
			}
			return 1
		}
	}
	return len(ua) - len(ub)
}

func units(r rune) []uint16 {
	if r >= 0x10000 && r <= unicode.MaxRune {
		r1, r2 := utf16.EncodeRune(r)
		return []uint16{uint16(r1), uint16(r2)}
	}
	return []uint16{uint16(r)}
}

// utf16Len returns the length of s in UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}
