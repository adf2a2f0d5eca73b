package jsonv

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Marshal encodes a jsonv value compactly, byte-for-byte like JavaScript's
// JSON.stringify(v): members in their order, numbers in ECMAScript form (1e+21, 1e-7,
// 0.1, 100), strings escaped only where JSON requires it (no HTML escaping; U+2028 and
// U+2029 stay raw). It returns an error, and no output, for anything Check rejects.
//
// One difference remains by design: a JavaScript object always lists array-index names
// ("0", "42") first, in numeric order, so JSON.parse followed by JSON.stringify moves
// them to the front, while a jsonv object keeps the order it was given.
func Marshal(v any) ([]byte, error) {
	e := encoder{}
	return e.encode(make([]byte, 0, 128), v)
}

// AppendMarshal appends what Marshal returns for v to dst, so that a caller framing the
// value (a protocol line, say) builds it in one buffer. On error dst is returned as it was.
func AppendMarshal(dst []byte, v any) ([]byte, error) {
	e := encoder{}
	out, err := e.encode(dst, v)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// MarshalIndent is like Marshal but lays the value out like JSON.stringify(v, null, indent):
// one member or element per line, each level indented by one more indent, ": " between a
// name and its value, and empty containers written as {} and []. As in JavaScript, only the
// first 10 UTF-16 code units of indent are used, and an empty indent means compact output.
func MarshalIndent(v any, indent string) ([]byte, error) {
	indent = truncateIndent(indent)
	if o, ok := v.(*Object); ok && o != nil && indent != "" {
		if b, ok := appendFlatIndent(make([]byte, 0, flatIndentSize(o, indent)), o, indent); ok {
			return b, nil
		}
	}
	e := encoder{indent: indent}
	return e.encode(make([]byte, 0, 256), v)
}

// maxFlat is the most members appendFlatIndent writes; larger objects take the general
// encoder, whose duplicate check is not quadratic.
const maxFlat = 16

// flatIndentSize is the length of the indented form of a flat object o when none of its
// strings needs escaping (numbers counted at their longest), so that MarshalIndent's buffer
// fits a typed tool's small output instead of a fixed 256 bytes; a string that needs
// escaping makes the buffer grow as it would have. For any other object it is 256.
func flatIndentSize(o *Object, indent string) int {
	ms := o.members
	if len(ms) == 0 || len(ms) > maxFlat {
		return 256
	}
	n := 2 // the closing "\n}"
	for i := range ms {
		n += 1 + 1 + len(indent) + len(ms[i].Name) + 2 + 2 // "{" or ",", "\n", indent, quotes, ": "
		switch v := ms[i].Value.(type) {
		case nil, bool:
			n += 5
		case float64:
			n += 24
		case string:
			n += len(v) + 2
		default:
			return 256
		}
	}
	return n
}

// appendFlatIndent appends the indented form of a non-empty object of at most maxFlat
// members whose values are all scalars (what a typed tool's flat output is) exactly as the
// general encoder writes it, but without its container stack and ancestry. It reports
// false, having appended nothing meaningful, for anything else or anything invalid: the
// general encoder then decides, and reports the error.
func appendFlatIndent(b []byte, o *Object, indent string) ([]byte, bool) {
	ms := o.members
	if len(ms) == 0 || len(ms) > maxFlat {
		return b, false
	}
	if _, dup := duplicateName(o); dup {
		return b, false
	}
	start := len(b)
	b = append(b, '{')
	for i := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		b = append(b, indent...)
		var ok bool
		if b, ok = appendQuote(b, ms[i].Name); !ok {
			return b[:start], false
		}
		b = append(b, ':', ' ')
		if b, ok = appendScalar(b, ms[i].Value); !ok {
			return b[:start], false
		}
	}
	return append(b, '\n', '}'), true
}

// Canonical encodes a jsonv value compactly with the members of every object sorted, arrays
// keeping their order. Two values that are Equal have the same canonical form, whatever
// their member order.
//
// The order is the one JavaScript produces for JSON.stringify of an object rebuilt from
// its sorted keys (the reference's deep key sort): names that are array indexes ("0",
// "7", "42" — canonical decimal integers below 2³²−1) come first in numeric order, because
// JavaScript objects always enumerate such keys first; all other names follow, sorted by
// UTF-16 code units like Array.prototype.sort.
func Canonical(v any) ([]byte, error) {
	e := encoder{canonical: true}
	return e.encode(nil, v)
}

// AppendCanonical appends the canonical form of v (see Canonical) to dst, so that a caller
// comparing or hashing canonical forms can reuse one buffer.
func AppendCanonical(dst []byte, v any) ([]byte, error) {
	if o, ok := v.(*Object); ok {
		if out, ok := appendFlatCanonical(dst, o); ok {
			return out, nil
		}
	}
	e := encoder{canonical: true}
	return e.encode(dst, v)
}

// truncateIndent keeps at most the first 10 UTF-16 code units of indent, without splitting
// a surrogate pair.
func truncateIndent(indent string) string {
	units := 0
	for i, r := range indent {
		n := utf16Len(r)
		if units+n > 10 {
			return indent[:i]
		}
		units += n
	}
	return indent
}

func utf16Len(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// encoder writes jsonv values iteratively, validating them as it goes.
type encoder struct {
	indent    string
	canonical bool
	stack     []encFrame
	anc       ancestry
	pad       []byte // indent repeated for the deepest level written so far
}

// encFrame is an array or object being written.
type encFrame struct {
	arr      []any
	members  []Member
	next     int // index of the next element or member to write
	isObject bool
}

func (e *encoder) encode(b []byte, v any) ([]byte, error) {
	b, err := e.writeValue(b, v)
	for err == nil && len(e.stack) > 0 {
		f := &e.stack[len(e.stack)-1]
		n := len(f.arr)
		if f.isObject {
			n = len(f.members)
		}
		if f.next == n {
			closing := byte(']')
			if f.isObject {
				closing = '}'
			}
			e.stack = e.stack[:len(e.stack)-1]
			e.anc.leave()
			b = e.newline(b, len(e.stack))
			b = append(b, closing)
			continue
		}
		if f.next > 0 {
			b = append(b, ',')
		}
		b = e.newline(b, len(e.stack))
		i := f.next
		f.next++
		if !f.isObject {
			b, err = e.writeValue(b, f.arr[i])
			continue
		}
		m := &f.members[i]
		var ok bool
		if b, ok = appendQuote(b, m.Name); !ok {
			err = fmt.Errorf("jsonv: member name %s at %s is not valid UTF-8, which is not lossless JSON",
				quoteForMessage(m.Name), e.path())
			break
		}
		b = append(b, ':')
		if e.indent != "" {
			b = append(b, ' ')
		}
		b, err = e.writeValue(b, m.Value)
	}
	if err != nil {
		e.stack = e.stack[:0]
		e.anc = ancestry{}
		return nil, err
	}
	return b, nil
}

// newline starts a new line at the given depth in indent mode.
func (e *encoder) newline(b []byte, depth int) []byte {
	if e.indent == "" {
		return b
	}
	need := depth * len(e.indent)
	for len(e.pad) < need {
		e.pad = append(e.pad, e.indent...)
	}
	b = append(b, '\n')
	return append(b, e.pad[:need]...)
}

// writeValue writes a scalar, or opens a container and pushes its frame.
func (e *encoder) writeValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		if v {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case float64:
		if err := checkFloat(v, e.path); err != nil {
			return nil, err
		}
		return jsontext.AppendFloat(b, v, 64), nil
	case string:
		b, ok := appendQuote(b, v)
		if !ok {
			return nil, fmt.Errorf("jsonv: string at %s is not valid UTF-8, which is not lossless JSON", e.path())
		}
		return b, nil
	case []any:
		if len(v) == 0 {
			return append(b, "[]"...), nil
		}
		if !e.anc.enter(sliceIdent(v)) {
			return nil, cycleError(v, e.path())
		}
		e.stack = append(e.stack, encFrame{arr: v})
		return append(b, '['), nil
	case *Object:
		if v.Len() == 0 {
			return append(b, "{}"...), nil
		}
		if name, dup := duplicateName(v); dup {
			return nil, duplicateError(name, e.path())
		}
		if !e.anc.enter(objectIdent(v)) {
			return nil, cycleError(v, e.path())
		}
		members := v.members
		if e.canonical {
			members = sortedMembers(members)
		}
		e.stack = append(e.stack, encFrame{members: members, isObject: true})
		return append(b, '{'), nil
	default:
		return nil, typeError(v, e.path())
	}
}

// path renders the location of the value being written.
func (e *encoder) path() string {
	segs := make([]pathSeg, 0, len(e.stack))
	for i := range e.stack {
		f := &e.stack[i]
		if f.isObject {
			segs = append(segs, nameSeg(f.members[f.next-1].Name))
		} else {
			segs = append(segs, indexSeg(f.next-1))
		}
	}
	return formatPath(segs)
}

// sortedMembers returns members in canonical order (see Canonical): members itself when it
// is already in that order (the encoder only reads it), else a sorted copy.
func sortedMembers(members []Member) []Member {
	if slices.IsSortedFunc(members, func(a, b Member) int { return compareCanonical(a.Name, b.Name) }) {
		return members
	}
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b Member) int { return compareCanonical(a.Name, b.Name) })
	return sorted
}

// compareCanonical orders member names as JavaScript enumerates the keys of an object
// built from sorted keys: array indexes first, numerically, then the rest by UTF-16 code
// units.
func compareCanonical(a, b string) int {
	ia, aIsIndex := arrayIndex(a)
	ib, bIsIndex := arrayIndex(b)
	switch {
	case aIsIndex && bIsIndex:
		return cmp.Compare(ia, ib)
	case aIsIndex:
		return -1
	case bIsIndex:
		return 1
	}
	return compareUTF16(a, b)
}

// arrayIndex reports whether name is a JavaScript array index — the canonical decimal
// form of an integer in [0, 2³²−2] — and its value.
func arrayIndex(name string) (uint32, bool) {
	if name == "" || len(name) > 10 || len(name) > 1 && name[0] == '0' {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > math.MaxUint32-1 {
		return 0, false
	}
	return uint32(n), true
}

// compareUTF16 orders two strings by their UTF-16 code units, as JavaScript's default sort
// does. It differs from byte order only where a character above U+FFFF (a surrogate pair,
// D800–DFFF) meets one in U+E000–U+FFFF.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	// Back up to the start of the differing characters (same offset in both strings, since
	// everything before i is identical).
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	ua, ub := firstUTF16Unit(ra), firstUTF16Unit(rb)
	if ua != ub {
		if ua < ub {
			return -1
		}
		return 1
	}
	// Same high surrogate: the low surrogates order like the code points.
	if ra < rb {
		return -1
	}
	return 1
}

// firstUTF16Unit returns the first UTF-16 code unit of r.
func firstUTF16Unit(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}

// appendQuote appends s as a JSON string escaped like JSON.stringify: only '"', '\\' and
// control characters, with \b \f \n \r \t short forms and \u00xx (lowercase hex) for other
// controls. It reports false if s is not valid UTF-8; invalid bytes are then written as
// U+FFFD.
func appendQuote(b []byte, s string) ([]byte, bool) {
	const hex = "0123456789abcdef"
	valid := true
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, "\ufffd"...)
				valid = false
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"'), valid
}

// appendQuoted is appendQuote for messages, where invalid UTF-8 is already reported.
func appendQuoted(b []byte, s string) []byte {
	b, _ = appendQuote(b, s)
	return b
}

// checkFloat reports why f is not lossless JSON, computing the path only on failure.
func checkFloat(f float64, path func() string) error {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("jsonv: number %v at %s is not finite, which is not lossless JSON", f, path())
	}
	if f == 0 && math.Signbit(f) {
		return fmt.Errorf("jsonv: number -0 at %s is negative zero, which is not lossless JSON", path())
	}
	return nil
}

// duplicateName reports a member name that occurs more than once in o, if any.
func duplicateName(o *Object) (string, bool) {
	ms := o.members
	if o.index != nil {
		if len(o.index) == len(ms) {
			return "", false
		}
		seen := make(map[string]struct{}, len(ms))
		for _, m := range ms {
			if _, ok := seen[m.Name]; ok {
				return m.Name, true
			}
			seen[m.Name] = struct{}{}
		}
	}
	for i := 1; i < len(ms); i++ {
		for j := range i {
			if ms[i].Name == ms[j].Name {
				return ms[i].Name, true
			}
		}
	}
	return "", false
}

func typeError(v any, path string) error {
	return fmt.Errorf("jsonv: value of Go type %T at %s is not lossless JSON", v, path)
}

func cycleError(v any, path string) error {
	return fmt.Errorf("jsonv: value of Go type %T at %s is circular", v, path)
}

func duplicateError(name, path string) error {
	return fmt.Errorf("jsonv: duplicate member name %s in the object at %s, which is not lossless JSON",
		quoteForMessage(name), path)
}

// appendScalar appends the JSON text of a scalar member value (null, a boolean, a finite
// number other than -0, or a string of valid UTF-8); it reports false for anything else,
// which the caller's general encoder handles (or refuses) instead.
func appendScalar(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		if v {
			return append(b, "true"...), true
		}
		return append(b, "false"...), true
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) || v == 0 && math.Signbit(v) {
			return b, false
		}
		return jsontext.AppendFloat(b, v, 64), true
	case string:
		return appendQuote(b, v)
	}
	return b, false
}
