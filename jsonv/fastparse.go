package jsonv

import (
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// Parse reads its input twice with a scanner of its own, without a tokenizer in between.
// The first pass checks the text completely (grammar, UTF-8, escapes and surrogate pairs,
// nesting depth) and counts: the children of every container, in the order their opening
// brackets appear, and the bytes of every string unquoted. The second pass builds the value
// straight into slabs and a string buffer allocated at those exact sizes, carving each
// container out of its slab when its opening bracket is read, which is the order a depth
// first walk visits them. The few rules that need a value (duplicate names, numbers that
// overflow or are negative zero) are checked by the second pass. Whenever either pass finds
// anything wrong it gives up, and parseChecked reads the text again to explain the error,
// so that the fast passes decide nothing about what is reported.

// scanCounts is what the checking pass learns about a valid text.
type scanCounts struct {
	objs, mems, elems int      // objects, members of all objects and elements of all arrays
	strBytes          int      // bytes of all strings and member names, unquoted
	sizes             []uint32 // the number of children of each container, in document order
}

// objectBit marks an object among the open containers of the checking pass.
const objectBit = 1 << 31

// scanText checks that data is exactly one JSON value Parse accepts, but for the rules that
// need a value, and counts its parts. It reports false for any text it does not accept.
func scanText(data []byte, sizes []uint32) (scanCounts, bool) {
	c := scanCounts{sizes: sizes}
	var (
		stackBuf [16]uint32
		stack    = stackBuf[:0] // the open containers: their index in sizes, objectBit for objects
		ok       bool
		n        = len(data)
	)
	i := skipSpaces(data, 0)
	for {
		// A value starts at i.
		if i >= n {
			return c, false
		}
		switch data[i] {
		case '{', '[':
			if len(stack) >= MaxDepth-1 {
				return c, false // the checked parser decides at the limit
			}
			isObject := data[i] == '{'
			k := uint32(len(c.sizes))
			c.sizes = append(c.sizes, 0)
			i = skipSpaces(data, i+1)
			if i >= n {
				return c, false
			}
			if isObject {
				c.objs++
				if data[i] == '}' {
					i++
					goto after
				}
				if i, ok = c.scanName(data, i); !ok {
					return c, false
				}
				c.mems++
				stack = append(stack, k|objectBit)
			} else {
				if data[i] == ']' {
					i++
					goto after
				}
				c.elems++
				stack = append(stack, k)
			}
			c.sizes[k] = 1
			continue
		case '"':
			var m int
			if i, m, ok = scanString(data, i); !ok {
				return c, false
			}
			c.strBytes += m
		case 't':
			if i, ok = scanLiteral(data, i, "true"); !ok {
				return c, false
			}
		case 'f':
			if i, ok = scanLiteral(data, i, "false"); !ok {
				return c, false
			}
		case 'n':
			if i, ok = scanLiteral(data, i, "null"); !ok {
				return c, false
			}
		default:
			if i, ok = scanNumber(data, i); !ok {
				return c, false
			}
		}
	after:
		// A value ends at i: what follows closes containers, or separates the next value.
		for {
			i = skipSpaces(data, i)
			if len(stack) == 0 {
				return c, i == n
			}
			if i >= n {
				return c, false
			}
			top := stack[len(stack)-1]
			isObject := top&objectBit != 0
			switch b := data[i]; {
			case b == ',':
				i = skipSpaces(data, i+1)
				if isObject {
					if i, ok = c.scanName(data, i); !ok {
						return c, false
					}
					c.mems++
				} else {
					c.elems++
				}
				c.sizes[top&^objectBit]++
			case isObject && b == '}' || !isObject && b == ']':
				i++
				stack = stack[:len(stack)-1]
				continue
			default:
				return c, false
			}
			break
		}
	}
}

// scanName checks a member name at i and the colon after it, returning where the value
// starts.
func (c *scanCounts) scanName(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return 0, false
	}
	i, m, ok := scanString(data, i)
	if !ok {
		return 0, false
	}
	c.strBytes += m
	i = skipSpaces(data, i)
	if i >= len(data) || data[i] != ':' {
		return 0, false
	}
	return skipSpaces(data, i+1), true
}

func skipSpaces(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

func scanLiteral(data []byte, i int, lit string) (int, bool) {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// scanNumber checks the number at i: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(data []byte, i int) (int, bool) {
	n := len(data)
	if i < n && data[i] == '-' {
		i++
	}
	switch {
	case i < n && data[i] == '0':
		i++
	case i < n && '1' <= data[i] && data[i] <= '9':
		i = skipDigits(data, i+1)
	default:
		return 0, false
	}
	if i < n && data[i] == '.' {
		j := skipDigits(data, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < n && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < n && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := skipDigits(data, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}

// scanString checks the string whose opening quote is at i, returning the offset after its
// closing quote and the length of its contents unquoted.
func scanString(data []byte, i int) (end, size int, ok bool) {
	n := len(data)
	i++
	for i < n {
		b := data[i]
		switch {
		case b == '"':
			return i + 1, size, true
		case b == '\\':
			if i+1 >= n {
				return 0, 0, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
				size++
			case 'u':
				r, ok := hex4(data, i+2)
				if !ok {
					return 0, 0, false
				}
				i += 6
				switch {
				case r < 0xD800 || r > 0xDFFF:
					size += utf8.RuneLen(r)
				case r >= 0xDC00:
					return 0, 0, false // a low surrogate without a high one
				default:
					if i+1 >= n || data[i] != '\\' || data[i+1] != 'u' {
						return 0, 0, false
					}
					lo, ok := hex4(data, i+2)
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return 0, 0, false
					}
					i += 6
					size += 4
				}
			default:
				return 0, 0, false
			}
		case b < 0x20:
			return 0, 0, false
		case b < utf8.RuneSelf:
			i++
			size++
		default:
			r, w := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && w == 1 {
				return 0, 0, false
			}
			i += w
			size += w
		}
	}
	return 0, 0, false
}

// hex4 reads the four hexadecimal digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if len(data)-i < 4 {
		return 0, false
	}
	var r rune
	for _, b := range data[i : i+4] {
		switch {
		case '0' <= b && b <= '9':
			b -= '0'
		case 'a' <= b && b <= 'f':
			b -= 'a' - 10
		case 'A' <= b && b <= 'F':
			b -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(b)
	}
	return r, true
}

// fastBuilder is the building pass: it reads a text scanText accepted.
type fastBuilder struct {
	data []byte
	buf  []byte // every string's contents, unquoted, each written once
	w    int    // how much of buf is written
}

// buildFrame is an open container of the building pass.
type buildFrame struct {
	obj  *Object // nil for an array
	mems []Member
	arr  []any
	i    int // the child being read
}

// parseFast parses data with the two passes, reporting false when data is not a value
// Parse accepts (or when it cannot tell, at the nesting limit).
func parseFast(data []byte, arena *slabs) (any, bool) {
	var sizesBuf [32]uint32
	c, ok := scanText(data, sizesBuf[:0])
	if !ok {
		return nil, false
	}
	b := fastBuilder{data: data}
	sizes, next := c.sizes, 0 // next is the index in sizes of the next container
	objs, mems := c.objs, c.mems
	i := skipSpaces(data, 0)
	var (
		top    *Object  // a small top-level object, allocated with its members
		topMs  []Member // its members
		topBuf []byte   // room for the strings, if the object's block has enough
	)
	if data[i] == '{' {
		objs, mems = objs-1, mems-int(sizes[0])
		top, topMs, topBuf = smallTop(int(sizes[0]), c.strBytes)
	}
	if topBuf != nil {
		b.buf = topBuf
	} else if c.strBytes > 0 {
		b.buf = make([]byte, c.strBytes)
	}
	if top != nil && len(sizes) == 1 { // no container but the object itself
		return b.flat(i, top, topMs)
	}
	var own slabs
	sl := arena
	if sl == nil {
		own = sized(objs, mems, c.elems)
		sl = &own
	} else {
		sl.reserve(objs, mems, c.elems)
	}
	var (
		stackBuf [8]buildFrame
		stack    = stackBuf[:0]
		v        any
	)
	for {
		// A value starts at i.
		switch data[i] {
		case '{':
			n := int(sizes[next])
			next++
			var (
				o  *Object
				ms []Member
			)
			if len(stack) == 0 { // the top-level object lives outside the slabs
				switch {
				case top != nil:
					o, ms = top, topMs
				case n > 0:
					o, ms = &Object{}, make([]Member, n)
				default:
					o = &Object{}
				}
			} else {
				o = sl.newObject()
				if n > 0 {
					ms = sl.members(n)
				}
			}
			i = skipSpaces(data, i+1)
			if n == 0 {
				v, i = o, i+1
				break
			}
			stack = append(stack, buildFrame{obj: o, mems: ms})
			i = b.name(i, &ms[0].Name)
			continue
		case '[':
			n := int(sizes[next])
			next++
			arr := sl.elements(n)
			i = skipSpaces(data, i+1)
			if n == 0 {
				v, i = arr, i+1
				break
			}
			stack = append(stack, buildFrame{arr: arr})
			continue
		case '"':
			v, i = b.str(i)
		case 't':
			v, i = true, i+4
		case 'f':
			v, i = false, i+5
		case 'n':
			v, i = nil, i+4
		default:
			var f float64
			if f, i, ok = parseNumber(data, i); !ok {
				return nil, false
			}
			v = f
		}
		// A value v ends at i: place it, closing the containers it completes.
		for {
			if len(stack) == 0 {
				return v, true
			}
			f := &stack[len(stack)-1]
			if f.obj != nil {
				f.mems[f.i].Value = v
			} else {
				f.arr[f.i] = v
			}
			f.i++
			i = skipSpaces(data, i)
			if data[i] == ',' {
				i = skipSpaces(data, i+1)
				if f.obj != nil {
					i = b.name(i, &f.mems[f.i].Name)
				}
				break
			}
			i++ // the closing bracket
			if f.obj != nil {
				if !f.obj.setParsed(f.mems) {
					return nil, false // a duplicate name: parseChecked explains it
				}
				v = f.obj
			} else {
				v = f.arr
			}
			stack = stack[:len(stack)-1]
		}
	}
}

// smallTop returns a top-level object of n members, 1 to 4, allocated in one block with its
// members and, when strBytes fit, with room for all the value's strings (returned as buf,
// nil otherwise): the common argument object of a tool call then costs one allocation for
// its containers and its text. Nil for any other n.
//
// The block's parts are fixed: a string kept after the rest of the value is dropped keeps
// the block (at most a few hundred bytes) alive, as it would keep the string buffer.
func smallTop(n, strBytes int) (o *Object, ms []Member, buf []byte) {
	switch {
	case n == 1:
		blk := new(struct {
			o Object
			m [1]Member
			b [32]byte
		})
		o, ms, buf = &blk.o, blk.m[:], blk.b[:]
	case n == 2:
		blk := new(struct {
			o Object
			m [2]Member
			b [48]byte
		})
		o, ms, buf = &blk.o, blk.m[:], blk.b[:]
	case n == 3:
		blk := new(struct {
			o Object
			m [3]Member
			b [48]byte
		})
		o, ms, buf = &blk.o, blk.m[:], blk.b[:]
	case n == 4:
		blk := new(struct {
			o Object
			m [4]Member
			b [64]byte
		})
		o, ms, buf = &blk.o, blk.m[:], blk.b[:]
	default:
		return nil, nil, nil
	}
	if strBytes == 0 || strBytes > len(buf) {
		return o, ms, nil
	}
	return o, ms, buf[:strBytes:strBytes]
}

// flat builds the small top-level object o at i, whose members ms (as many as it has) all
// hold scalars: the building pass without its stack of open containers, for the usual
// tool-call arguments.
func (b *fastBuilder) flat(i int, o *Object, ms []Member) (any, bool) {
	data := b.data
	i = skipSpaces(data, i+1) // past the opening brace
	for k := range ms {
		i = b.name(i, &ms[k].Name)
		switch data[i] {
		case '"':
			ms[k].Value, i = b.str(i)
		case 't':
			ms[k].Value, i = true, i+4
		case 'f':
			ms[k].Value, i = false, i+5
		case 'n':
			i += 4 // the member's value is already nil
		default:
			f, j, ok := parseNumber(data, i)
			if !ok {
				return nil, false
			}
			ms[k].Value, i = f, j
		}
		i = skipSpaces(data, skipSpaces(data, i)+1) // past the comma or the closing brace
	}
	if !o.setParsed(ms) {
		return nil, false // a duplicate name: parseChecked explains it
	}
	return o, true
}

// name reads the member name at i into dst and returns where its value starts.
func (b *fastBuilder) name(i int, dst *string) int {
	i = skipSpaces(b.data, b.strInto(i, dst))
	return skipSpaces(b.data, i+1) // past the colon
}

// str reads the string at i.
func (b *fastBuilder) str(i int) (any, int) {
	var s string
	i = b.strInto(i, &s)
	return s, i
}

// strInto reads the string at i into dst, a substring of the builder's buffer, and
// returns the offset after it.
func (b *fastBuilder) strInto(i int, dst *string) int {
	data := b.data
	i++
	start := i
	for data[i] != '"' && data[i] != '\\' {
		i++
	}
	w0 := b.w
	b.w += copy(b.buf[b.w:], data[start:i])
	for data[i] != '"' {
		if data[i] != '\\' {
			b.buf[b.w] = data[i]
			b.w++
			i++
			continue
		}
		var r rune
		switch e := data[i+1]; e {
		case 'u':
			r, _ = hex4(data, i+2)
			i += 6
			if r >= 0xD800 && r < 0xDC00 {
				lo, _ := hex4(data, i+2)
				r = (r-0xD800)<<10 | (lo - 0xDC00) + 0x10000
				i += 6
			}
		default:
			r = rune(unescapeByte(e))
			i += 2
		}
		b.w += utf8.EncodeRune(b.buf[b.w:], r)
	}
	if b.w > w0 {
		// These bytes of buf are never written again, so the substring stays immutable.
		*dst = unsafe.String(&b.buf[w0], b.w-w0)
	} else {
		*dst = ""
	}
	return i + 1
}

// setParsed gives o the members the building pass read, indexing them when there are
// many, and reports false if two of them have the same name.
func (o *Object) setParsed(ms []Member) bool {
	o.members = ms
	if len(ms) > indexThreshold {
		o.index = make(map[string]int, len(ms))
		for i, m := range ms {
			o.index[m.Name] = i
		}
		return len(o.index) == len(ms)
	}
	for i := 1; i < len(ms); i++ {
		for j := range i {
			if ms[i].Name == ms[j].Name {
				return false
			}
		}
	}
	return true
}

// unescapeByte is the byte a one-character escape stands for.
func unescapeByte(e byte) byte {
	switch e {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return e // '"', '\\' and '/'
}

// parseNumber reads the number scanText accepted at i, reporting false when it overflows a
// float64 or is negative zero. Integers of up to 15 digits are exact in a float64 and are
// converted without strconv.
func parseNumber(data []byte, i int) (float64, int, bool) {
	start := i
	neg := data[i] == '-'
	if neg {
		i++
	}
	var u uint64
	digits := i
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		u = u*10 + uint64(data[i]-'0')
		i++
	}
	simple := i-digits <= 15 && (i == len(data) || data[i] != '.' && data[i] != 'e' && data[i] != 'E')
	if simple {
		if neg {
			if u == 0 {
				return 0, 0, false
			}
			return -float64(u), i, true
		}
		return float64(u), i, true
	}
	for i < len(data) && isNumberByte(data[i]) {
		i++
	}
	f, err := strconv.ParseFloat(unsafe.String(&data[start], i-start), 64)
	if err != nil || math.IsInf(f, 0) || f == 0 && math.Signbit(f) {
		return 0, 0, false
	}
	return f, i, true
}

func isNumberByte(b byte) bool {
	return '0' <= b && b <= '9' || b == '.' || b == 'e' || b == 'E' || b == '+' || b == '-'
}
