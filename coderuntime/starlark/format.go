package starlark

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	star "go.starlark.net/starlark"
)

// fstringCall is the hidden built-in f-strings are rewritten into (see fstring.go). Its
// arguments are the first literal part, then for each replacement field the value, the
// conversion ("", "r", "s" or "a"), the format spec and the literal part that follows.
func fstringCall(thread *star.Thread, b *star.Builtin, args star.Tuple, kwargs []star.Tuple) (star.Value, error) {
	if len(kwargs) > 0 || len(args)%4 != 1 {
		return nil, fmt.Errorf("malformed f-string call")
	}
	var out strings.Builder
	for i := 0; ; i += 4 {
		lit, ok := args[i].(star.String)
		if !ok {
			return nil, fmt.Errorf("malformed f-string call")
		}
		out.WriteString(string(lit))
		if i+1 == len(args) {
			return star.String(out.String()), nil
		}
		conv, ok1 := args[i+2].(star.String)
		spec, ok2 := args[i+3].(star.String)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("malformed f-string call")
		}
		text, err := formatField(args[i+1], string(conv), string(spec))
		if err != nil {
			return nil, err
		}
		out.WriteString(text)
	}
}

// formatField formats one replacement field as Python's format(value, spec) does, after
// the conversion (!r and !a give repr, !s gives str). Values are shown as Starlark shows
// them: str(x) of a string is the string, repr uses Starlark's double quotes, and a float
// without a format spec reads as str(x) does.
func formatField(v star.Value, conv, spec string) (string, error) {
	switch conv {
	case "r", "a":
		v = star.String(v.String())
	case "s":
		v = star.String(str(v))
	}
	if spec == "" {
		return str(v), nil
	}
	fs, err := parseSpec(spec)
	if err != nil {
		return "", err
	}
	switch v := v.(type) {
	case star.String:
		return fs.formatString(string(v))
	case star.Bool: // bool is an int in Python
		if v {
			return fs.formatInt(big.NewInt(1), "bool")
		}
		return fs.formatInt(big.NewInt(0), "bool")
	case star.Int:
		return fs.formatInt(v.BigInt(), "int")
	case star.Float:
		return fs.formatFloat(float64(v), "float")
	}
	return "", fmt.Errorf("unsupported format string passed to %s.__format__", v.Type())
}

// str is Python's str(): a string as it is, anything else as Starlark shows it.
func str(v star.Value) string {
	if s, ok := v.(star.String); ok {
		return string(s)
	}
	return v.String()
}

// formatSpec is a parsed format spec: [[fill]align][sign][z][#][0][width][grouping][.precision][type].
type formatSpec struct {
	fill      rune
	align     byte // 0, '<', '>', '=' or '^'
	sign      byte // 0, '+', '-' or ' '
	z         bool
	alt       bool
	zero      bool // the 0 flag set the fill and alignment
	width     int
	grouping  byte // 0, ',' or '_'
	precision int  // -1 when absent
	typ       byte // 0 or one of "bcdeEfFgGnosxX%"
	spec      string
}

// maxFormatWidth bounds widths and precisions, so that a spec cannot ask for gigabytes.
const maxFormatWidth = 1 << 16

func parseSpec(spec string) (formatSpec, error) {
	fs := formatSpec{fill: ' ', precision: -1, spec: spec}
	rest := spec
	fillGiven := false
	if r, w := utf8.DecodeRuneInString(rest); w > 0 && w < len(rest) && strings.IndexByte("<>=^", rest[w]) >= 0 {
		fs.fill, fs.align, rest, fillGiven = r, rest[w], rest[w+1:], true
	} else if rest != "" && strings.IndexByte("<>=^", rest[0]) >= 0 {
		fs.align, rest = rest[0], rest[1:]
	}
	if rest != "" && strings.IndexByte("+- ", rest[0]) >= 0 {
		fs.sign, rest = rest[0], rest[1:]
	}
	if strings.HasPrefix(rest, "z") {
		fs.z, rest = true, rest[1:]
	}
	if strings.HasPrefix(rest, "#") {
		fs.alt, rest = true, rest[1:]
	}
	if strings.HasPrefix(rest, "0") {
		// Zero padding: '0' is the fill unless one was given, '=' the alignment unless one
		// was given.
		if !fillGiven {
			fs.fill = '0'
		}
		if fs.align == 0 {
			fs.align, fs.zero = '=', true
		}
		rest = rest[1:]
	}
	// digits reads a decimal number; ok is false when it is absent or too large.
	digits := func() (n int, present, ok bool) {
		i := 0
		for i < len(rest) && '0' <= rest[i] && rest[i] <= '9' {
			n = n*10 + int(rest[i]-'0')
			if n > maxFormatWidth {
				return 0, true, false
			}
			i++
		}
		rest = rest[i:]
		return n, i > 0, true
	}
	width, _, ok := digits()
	if !ok {
		return formatSpec{}, fmt.Errorf("too many decimal digits in format string %q", spec)
	}
	fs.width = width
	if rest != "" && (rest[0] == ',' || rest[0] == '_') {
		fs.grouping, rest = rest[0], rest[1:]
	}
	if strings.HasPrefix(rest, ".") {
		rest = rest[1:]
		precision, present, ok := digits()
		if !ok {
			return formatSpec{}, fmt.Errorf("too many decimal digits in format string %q", spec)
		}
		if !present {
			return formatSpec{}, fmt.Errorf("format specifier %q is missing a precision", spec)
		}
		fs.precision = precision
	}
	if len(rest) == 1 && strings.IndexByte("bcdeEfFgGnosxX%", rest[0]) >= 0 {
		fs.typ, rest = rest[0], ""
	}
	if rest != "" {
		return formatSpec{}, fmt.Errorf("invalid format specifier %q", spec)
	}
	return fs, nil
}

func (fs formatSpec) unknown(kind string) error {
	return fmt.Errorf("unknown format code '%c' for object of type '%s'", fs.typ, kind)
}

func (fs formatSpec) formatString(s string) (string, error) {
	if fs.zero {
		fs.align = '<' // zero padding of a string pads on the right
	}
	switch {
	case fs.typ != 0 && fs.typ != 's':
		return "", fs.unknown("str")
	case fs.sign != 0:
		return "", fmt.Errorf("sign not allowed in string format specifier")
	case fs.alt:
		return "", fmt.Errorf("alternate form (#) not allowed in string format specifier")
	case fs.z:
		return "", fmt.Errorf("negative zero coercion (z) not allowed in string format specifier")
	case fs.grouping != 0:
		return "", fmt.Errorf("cannot specify '%c' with 's'", fs.grouping)
	case fs.align == '=':
		return "", fmt.Errorf("'=' alignment not allowed in string format specifier")
	}
	if fs.precision >= 0 && utf8.RuneCountInString(s) > fs.precision {
		n := 0
		for i := range s {
			if n == fs.precision {
				s = s[:i]
				break
			}
			n++
		}
	}
	return fs.pad("", s, '<'), nil
}

func (fs formatSpec) formatInt(n *big.Int, kind string) (string, error) {
	if fs.z && strings.IndexByte("eEfFgG%", fs.typ) < 0 {
		return "", fmt.Errorf("negative zero coercion (z) not allowed in integer format specifier")
	}
	if fs.grouping != 0 && fs.typ == 'n' {
		return "", fmt.Errorf("cannot specify '%c' with 'n'", fs.grouping)
	}
	base, prefix := 10, ""
	switch fs.typ {
	case 0, 'd', 'n':
	case 'b':
		base, prefix = 2, "0b"
	case 'o':
		base, prefix = 8, "0o"
	case 'x':
		base, prefix = 16, "0x"
	case 'X':
		base, prefix = 16, "0X"
	case 'c':
		if fs.sign != 0 || fs.alt {
			return "", fmt.Errorf("sign and alternate form are not allowed with integer format specifier 'c'")
		}
		if !n.IsInt64() || n.Int64() < 0 || n.Int64() > utf8.MaxRune {
			return "", fmt.Errorf("%%c arg not in range(0x110000)")
		}
		return fs.pad("", string(rune(n.Int64())), '>'), nil
	case 'e', 'E', 'f', 'F', 'g', 'G', '%':
		f, _ := new(big.Float).SetInt(n).Float64()
		return fs.formatFloat(f, kind)
	default:
		return "", fs.unknown(kind)
	}
	if fs.precision >= 0 {
		return "", fmt.Errorf("precision not allowed in integer format specifier")
	}
	digits := new(big.Int).Abs(n).Text(base)
	if fs.typ == 'X' {
		digits = strings.ToUpper(digits)
	}
	every := 3
	if base != 10 {
		if fs.grouping == ',' {
			return "", fmt.Errorf("cannot specify ',' with '%c'", fs.typ)
		}
		every = 4
	}
	head := fs.signOf(n.Sign() < 0)
	if fs.alt {
		head += prefix
	}
	return fs.number(head, digits, "", every), nil
}

// number lays out a number: head (sign and prefix), the integer digits, grouped when
// asked, and tail (fraction, exponent, percent sign). Zero padding with '=' alignment pads
// the digits themselves, so that the padding is grouped too.
func (fs formatSpec) number(head, digits, tail string, every int) string {
	if fs.grouping == 0 {
		return fs.pad(head, digits+tail, '>')
	}
	grouped := group(digits, fs.grouping, every)
	if fs.fill == '0' && fs.align == '=' {
		room := fs.width - utf8.RuneCountInString(head) - len(tail)
		for len(grouped) < room {
			digits = "0" + digits
			grouped = group(digits, fs.grouping, every)
		}
	}
	return fs.pad(head, grouped+tail, '>')
}

func (fs formatSpec) formatFloat(f float64, kind string) (string, error) {
	if fs.grouping != 0 && fs.typ == 'n' {
		return "", fmt.Errorf("cannot specify '%c' with 'n'", fs.grouping)
	}
	prec := fs.precision
	x := math.Abs(f)
	var body string
	switch fs.typ {
	case 0:
		if prec < 0 {
			// Without a precision a float reads as str() shows it.
			body = strings.TrimPrefix(star.Float(x).String(), "+")
			break
		}
		body = formatG(x, prec, fs.alt, true)
	case 'e', 'E', 'f', 'F', '%':
		if prec < 0 {
			prec = 6
		}
		conv := fs.typ | 0x20 // lower case
		if fs.typ == '%' {
			x, conv = x*100, 'f'
		}
		body = strconv.FormatFloat(x, conv, prec, 64)
	case 'g', 'G', 'n':
		if prec < 0 {
			prec = 6
		}
		body = formatG(x, prec, fs.alt, false)
	default:
		return "", fs.unknown(kind)
	}
	switch {
	case math.IsInf(f, 0):
		body = "inf"
	case math.IsNaN(f):
		body = "nan"
	case fs.alt && !strings.Contains(body, "."):
		// The alternate form always has a decimal point.
		if i := strings.IndexByte(body, 'e'); i >= 0 {
			body = body[:i] + "." + body[i:]
		} else {
			body += "."
		}
	}
	if fs.typ == '%' {
		body += "%"
	}
	if fs.typ == 'E' || fs.typ == 'F' || fs.typ == 'G' {
		body = strings.ToUpper(body)
	}
	negative := math.Signbit(f) && !math.IsNaN(f)
	if negative && fs.z && strings.Trim(body, "0.%") == "" {
		negative = false
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return fs.pad(fs.signOf(negative), body, '>'), nil
	}
	end := strings.IndexAny(body, ".eE%")
	if end < 0 {
		end = len(body)
	}
	return fs.number(fs.signOf(negative), body[:end], body[end:], 3), nil
}

// formatG is Python's general format with precision prec: scientific notation when the
// exponent is below -4 or at least the precision (at least the precision minus one for
// addDot0, the presentation without a type, which also ends an integral fixed-point value
// in ".0"), fixed-point otherwise, without trailing zeros unless alt.
func formatG(x float64, prec int, alt, addDot0 bool) string {
	p := max(prec, 1)
	e := strconv.FormatFloat(x, 'e', p-1, 64)
	mark := strings.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[mark+1:])
	limit := p
	if addDot0 {
		limit = p - 1
	}
	if exp < -4 || exp >= limit {
		if alt {
			return e
		}
		mantissa := e[:mark]
		if strings.Contains(mantissa, ".") {
			mantissa = strings.TrimRight(strings.TrimRight(mantissa, "0"), ".")
		}
		return mantissa + e[mark:]
	}
	f := strconv.FormatFloat(x, 'f', p-1-exp, 64)
	if !alt && strings.Contains(f, ".") {
		f = strings.TrimRight(strings.TrimRight(f, "0"), ".")
	}
	if addDot0 && !strings.Contains(f, ".") {
		f += ".0"
	}
	return f
}

// signOf is the sign a number is written with.
func (fs formatSpec) signOf(negative bool) string {
	switch {
	case negative:
		return "-"
	case fs.sign == '+':
		return "+"
	case fs.sign == ' ':
		return " "
	}
	return ""
}

// pad aligns head (sign and prefix) and body in the field width.
func (fs formatSpec) pad(head, body string, defaultAlign byte) string {
	n := utf8.RuneCountInString(head) + utf8.RuneCountInString(body)
	if n >= fs.width {
		return head + body
	}
	fill := strings.Repeat(string(fs.fill), fs.width-n)
	align := fs.align
	if align == 0 {
		align = defaultAlign
	}
	switch align {
	case '<':
		return head + body + fill
	case '^':
		half := (fs.width - n) / 2
		left := strings.Repeat(string(fs.fill), half)
		right := strings.Repeat(string(fs.fill), fs.width-n-half)
		return left + head + body + right
	case '=':
		return head + fill + body
	}
	return fill + head + body
}

// group inserts sep between groups of every digits, counted from the right.
func group(digits string, sep byte, every int) string {
	if len(digits) <= every {
		return digits
	}
	var b strings.Builder
	first := len(digits) % every
	if first == 0 {
		first = every
	}
	b.WriteString(digits[:first])
	for i := first; i < len(digits); i += every {
		b.WriteByte(sep)
		b.WriteString(digits[i : i+every])
	}
	return b.String()
}
