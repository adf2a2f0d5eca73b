package codemode

import (
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Python identifiers (docs/behaviour.md §10.3) are xid_start xid_continue* (with _ allowed first), and
// CPython NFKC-normalizes them when it compiles. Go's unicode package has no XID
// properties, so they are derived from the ID properties as UAX #31 defines them, minus
// the few code points whose NFKC form leaves the identifier set.

// isBareIdentifier reports whether name can be written bare in Python source and denotes
// exactly that spelling: an identifier whose NFKC form is itself.
func isBareIdentifier(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		if i == 0 {
			if r != '_' && !isXIDStart(r) {
				return false
			}
		} else if !isXIDContinue(r) {
			return false
		}
	}
	return norm.NFKC.IsNormalString(name)
}

// isXIDStart reports whether r has the Unicode property XID_Start.
func isXIDStart(r rune) bool {
	return isIDStart(r) && !notXIDStart(r)
}

// isXIDContinue reports whether r has the Unicode property XID_Continue.
func isXIDContinue(r rune) bool {
	return isIDContinue(r) && !notXIDContinue(r)
}

func isIDStart(r rune) bool {
	if unicode.Is(unicode.Pattern_Syntax, r) || unicode.Is(unicode.Pattern_White_Space, r) {
		return false
	}
	return unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_ID_Start, r)
}

func isIDContinue(r rune) bool {
	if isIDStart(r) {
		return true
	}
	if unicode.Is(unicode.Pattern_Syntax, r) || unicode.Is(unicode.Pattern_White_Space, r) {
		return false
	}
	switch r {
	// Added to Other_ID_Continue in Unicode 15.1, newer than Go's tables: ZERO WIDTH
	// NON-JOINER, ZERO WIDTH JOINER, KATAKANA MIDDLE DOT and its halfwidth form.
	case 0x200C, 0x200D, 0x30FB, 0xFF65:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc, unicode.Other_ID_Continue)
}

// notXIDStart lists ID_Start code points that are not XID_Start.
func notXIDStart(r rune) bool {
	switch r {
	case 0x037A, 0x0E33, 0x0EB3, 0x309B, 0x309C, 0xFDFA, 0xFDFB, 0xFF9E, 0xFF9F:
		return true
	}
	return (r >= 0xFC5E && r <= 0xFC63) || (r >= 0xFE70 && r <= 0xFE7E && r%2 == 0)
}

// notXIDContinue lists ID_Continue code points that are not XID_Continue.
func notXIDContinue(r rune) bool {
	switch r {
	case 0x037A, 0x309B, 0x309C, 0xFDFA, 0xFDFB:
		return true
	}
	return (r >= 0xFC5E && r <= 0xFC63) || (r >= 0xFE70 && r <= 0xFE7E && r%2 == 0)
}
