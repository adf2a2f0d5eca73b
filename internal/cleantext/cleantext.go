// Package cleantext makes tool output safe to hand to a model: terminal escape sequences
// are removed, other control characters are escaped, carriage-return progress floods
// collapse to the text a terminal would finally show, and binary data is replaced by a
// summary naming its size and hash.
//
// Only "\n" and "\t" survive as control characters. Clean is idempotent, never panics and
// returns its input unchanged (without allocating) when there is nothing to clean, which
// is the common case it is optimized for.
package cleantext

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// Report says what Clean changed.
type Report struct {
	// Escapes counts the terminal escape sequences (CSI, OSC, DCS, …) removed.
	Escapes int
	// Controls counts the other control characters escaped (as \xNN or \uNNNN) or, for
	// backspace, applied.
	Controls int
	// Overwrites counts the lines whose carriage-return segments were collapsed to the last.
	Overwrites int
	// Binary is set when the text was binary data and was replaced by a summary.
	Binary bool
}

// Changed reports whether Clean changed anything.
func (r Report) Changed() bool {
	return r.Escapes > 0 || r.Controls > 0 || r.Overwrites > 0 || r.Binary
}

// Add returns the sum of two reports.
func (r Report) Add(o Report) Report {
	return Report{Escapes: r.Escapes + o.Escapes, Controls: r.Controls + o.Controls,
		Overwrites: r.Overwrites + o.Overwrites, Binary: r.Binary || o.Binary}
}

// BinaryPrefix starts every binary summary.
const BinaryPrefix = "[binary data omitted: "

// minBinaryRunes is the length below which a text is never taken for binary data.
const minBinaryRunes = 32

// binarySample is how much of a text the binary heuristic looks at.
const binarySample = 8192

// Clean returns s fit for a model, and what it changed.
func Clean(s string) (string, Report) {
	first := firstSuspect(s)
	if first < 0 {
		return s, Report{}
	}
	if IsBinary(s) {
		return Summary(s), Report{Binary: true}
	}
	out, rep := clean(s, first)
	if IsBinary(out) {
		// What was left once the escapes went is binary: the whole text is.
		return Summary(s), Report{Binary: true}
	}
	return out, rep
}

// PlainByte reports whether Clean leaves the byte c alone wherever it appears: printable
// ASCII, "\n" and "\t". A text made only of such bytes is returned unchanged, so a caller
// that scans a text for bytes of its own can settle both questions in the same pass.
func PlainByte(c byte) bool { return c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' }

// IsBinary reports whether s looks like binary data rather than text: it has at least 32
// characters and more than one in twenty of the characters in its first 8 KiB are NULs,
// other control characters that text does not use, or U+FFFD (bytes that were not UTF-8).
// Shorter texts are never binary: their few odd characters are escaped instead.
func IsBinary(s string) bool {
	sample := s
	if len(sample) > binarySample {
		sample = sample[:binarySample]
	}
	runes, bad := 0, 0
	for i := 0; i < len(sample); {
		c := sample[i]
		runes++
		if c < 0x80 {
			if c < 0x20 && c != '\n' && c != '\t' && c != '\r' && c != '\f' && c != '\b' && c != 0x1b || c == 0x7f {
				bad++
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(sample[i:])
		if r < 0xa0 || r == utf8.RuneError {
			bad++
		}
		i += n
	}
	return runes >= minBinaryRunes && bad*20 > runes
}

// Summary is the text that replaces binary data s: its size in bytes and the first 16 hex
// digits of its SHA-256.
func Summary(s string) string {
	sum := sha256.Sum256([]byte(s))
	return BinaryPrefix + strconv.Itoa(len(s)) + " bytes, sha256 " + hex.EncodeToString(sum[:8]) + "]"
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
	lows  = 0x7f7f7f7f7f7f7f7f
)

// zeroBytes returns 0x80 in each byte of x that is zero, and 0 elsewhere (exactly).
func zeroBytes(x uint64) uint64 { return ^((x & lows) + lows | x | lows) }

// firstSuspect returns the index of the first byte that may need cleaning (a control
// character other than "\n" and "\t", DEL, or any non-ASCII byte that starts a C1
// control, a bidirectional control or U+FFFD), or -1. It tests eight bytes at a time.
func firstSuspect(s string) int {
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		below := ^((x & lows) + ones*0x60 | x) & highs // bytes < 0x20
		ok := zeroBytes(x^ones*'\n') | zeroBytes(x^ones*'\t')
		flagged := below&^ok | zeroBytes(x^ones*0x7f) | x&highs
		for flagged != 0 {
			j := i + bits.TrailingZeros64(flagged)/8
			if suspectAt(s, j) {
				return j
			}
			flagged &= flagged - 1
		}
	}
	for ; i < len(b); i++ {
		if suspectAt(s, i) {
			return i
		}
	}
	return -1
}

// suspectAt reports whether the byte at i starts something Clean changes.
func suspectAt(s string, i int) bool {
	c := s[i]
	switch {
	case c == '\n' || c == '\t':
		return false
	case c < 0x20 || c == 0x7f:
		return true
	case c < 0x80:
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return escapedRune(r) || r == utf8.RuneError
}

// escapedRune reports whether r is shown escaped: C1 controls and the bidirectional
// embedding, override and isolate controls (which can make text read differently from
// what it is).
func escapedRune(r rune) bool {
	return (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// clean is the slow path, from the first suspect byte on.
func clean(s string, first int) (string, Report) {
	var rep Report
	b := make([]byte, 0, len(s))
	b = append(b, s[:first]...)
	hasCR := false
	for i := first; i < len(s); {
		c := s[i]
		switch {
		case c == '\n' || c == '\t':
			b = append(b, c)
			i++
		case c == '\r':
			hasCR = true
			b = append(b, c)
			i++
		case c == 0x1b:
			i = skipEscape(s, i+1)
			rep.Escapes++
		case c == '\b':
			b = backspace(b)
			rep.Controls++
			i++
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
			rep.Controls++
			i++
		case c < 0x80:
			// copy the run up to the next byte that needs a look, eight bytes at a time
			n := firstSuspect(s[i+1:])
			if n < 0 {
				n = len(s) - i - 1
			}
			b = append(b, s[i:i+1+n]...)
			i += 1 + n
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == 0x9b || r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f:
				// the 8-bit forms of CSI, OSC, DCS, SOS, PM and APC
				i = skipIntroduced(s, i+n, c1Kind(r))
				rep.Escapes++
			case escapedRune(r):
				b = append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
				rep.Controls++
				i += n
			default:
				b = append(b, s[i:i+n]...)
				i += n
			}
		}
	}
	if hasCR {
		var n int
		b, n = collapseCR(b)
		rep.Overwrites += n
	}
	return string(b), rep
}

const hexDigits = "0123456789abcdef"

// backspace removes the last rune written on the current line, as a terminal's cursor
// moves back over it: overstruck "N\bN" becomes "N" and underlined "_\bA" becomes "A".
func backspace(b []byte) []byte {
	if len(b) == 0 || b[len(b)-1] == '\n' {
		return b
	}
	_, n := utf8.DecodeLastRune(b)
	return b[:len(b)-n]
}

// Escape sequence kinds after the introducer.
const (
	kindCSI    = iota // parameters, intermediates, a final byte
	kindString        // a control string ended by ST (ESC \) or BEL
)

func c1Kind(r rune) int {
	if r == 0x9b {
		return kindCSI
	}
	return kindString
}

// skipEscape skips the escape sequence whose ESC was just before i and returns the index
// after it.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipIntroduced(s, i+1, kindCSI)
	case ']', 'P', 'X', '^', '_':
		return skipIntroduced(s, i+1, kindString)
	}
	// nF sequences: intermediates 0x20–0x2F, then a final 0x30–0x7E (ESC ( B, ESC 7, …)
	j := i
	for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
		j++
	}
	if j < len(s) && s[j] >= 0x30 && s[j] <= 0x7e {
		return j + 1
	}
	return i // a lone ESC: only it is dropped
}

// skipIntroduced skips the body of a CSI or control string starting at i.
func skipIntroduced(s string, i, kind int) int {
	if kind == kindCSI {
		for i < len(s) && s[i] >= 0x30 && s[i] <= 0x3f {
			i++
		}
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
			i++
		}
		if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
			i++
		}
		return i
	}
	// A control string ends at BEL, ST (ESC \ or U+009C), the ESC of another sequence, or —
	// unterminated — at the end of its line, so a stray introducer cannot hide the rest of
	// the output.
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case s[i] == 0x1b:
			return i // another escape sequence begins: this one ends here
		case s[i] == 0xc2 && i+1 < len(s) && s[i+1] == 0x9c:
			return i + 2
		case s[i] == '\n':
			return i
		}
		i++
	}
	return i
}

// collapseCR keeps, on each line, only the text after its last carriage return (the last
// non-empty segment, so "100%\r" keeps "100%"), and returns how many lines it changed. A
// line ending in "\r\n" just loses the "\r". It works in place.
func collapseCR(b []byte) ([]byte, int) {
	n := 0
	out := b[:0]
	for len(b) > 0 || len(out) == 0 {
		line := b
		rest := []byte(nil)
		if k := bytes.IndexByte(b, '\n'); k >= 0 {
			line, rest = b[:k], b[k+1:]
		}
		trimmed := bytes.TrimRight(line, "\r")
		if k := bytes.LastIndexByte(trimmed, '\r'); k >= 0 {
			seg := trimmed[k+1:]
			for len(seg) == 0 && k > 0 {
				trimmed = trimmed[:k]
				k = bytes.LastIndexByte(trimmed, '\r')
				seg = trimmed[k+1:]
			}
			trimmed = seg
		}
		if len(trimmed) != len(line) {
			n++
		}
		// trimmed lies within line, at or after where out ends: copy is safe.
		out = append(out, trimmed...)
		if rest == nil {
			break
		}
		out = append(out, '\n')
		b = rest
	}
	return out, n
}
