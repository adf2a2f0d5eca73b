package jsonv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
)

// MaxDepth is the deepest nesting of arrays and objects that Parse accepts. It is the
// limit of the underlying tokenizer; the other functions of this package have no limit
// of their own beyond memory.
const MaxDepth = 10000

// Parse reads one JSON value from data strictly and returns it as a jsonv value.
//
// Parse is meant for untrusted text such as a model's raw tool arguments. It rejects what
// JavaScript's JSON.parse would accept but could not hand back losslessly: duplicate member
// names, invalid UTF-8, numbers that overflow a float64 (1e400) and negative zero (-0,
// -0.0, -1e-400). Member order is kept. Whitespace around the value is allowed; any other
// trailing data is an error. Nesting deeper than MaxDepth is an error, never a crash, and
// so is an input larger than 4 GiB. Parse does not retain data.
func Parse(data []byte) (any, error) { return parse(data, nil) }

// Parse is the package's Parse, with the value's containers (but for a top-level object)
// carved out of the arena's chunks right after those of the values the arena built before.
func (a *Arena) Parse(data []byte) (any, error) { return parse(data, &a.slabs) }

// parse is Parse, carving the containers out of arena's slabs, or out of slabs of its own
// when arena is nil. The two fast passes read every text Parse accepts; a text they give
// up on is read again by parseChecked, whose errors say what is wrong and where.
func parse(data []byte, arena *slabs) (any, error) {
	if len(data) > 0 && uint64(len(data)) <= maxParseInput {
		if v, ok := parseFast(data, arena); ok {
			return v, nil
		}
	}
	return parseChecked(data, arena)
}

// parseChecked is Parse through the jsontext tokenizer, which explains every error.
func parseChecked(data []byte, arena *slabs) (any, error) {
	// Duplicate names are detected here when an object closes, which is cheaper than the
	// tokenizer's per-name bookkeeping.
	dec := jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true))
	v, err := parseValue(dec, len(data), arena)
	if err != nil {
		return nil, err
	}
	end := int(dec.InputOffset())
	for end < len(data) && isSpace(data[end]) {
		end++
	}
	if end < len(data) {
		return nil, fmt.Errorf("jsonv: invalid JSON at offset %d: unexpected data after the top-level value", end)
	}
	return v, nil
}

// ParseString is Parse for a string. The fast passes read the string's bytes in place, so
// only a text they give up on (an invalid one, or one at the nesting limit) is copied.
func ParseString(s string) (any, error) {
	if len(s) > 0 && uint64(len(s)) <= maxParseInput {
		// parseFast only reads data and retains none of it: the strings of the value are
		// copied into a buffer of its own.
		if v, ok := parseFast(unsafe.Slice(unsafe.StringData(s), len(s)), nil); ok {
			return v, nil
		}
	}
	return parseChecked([]byte(s), nil)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// parseChecked reads the tokens once, recording every value as a slot: scalars in place,
// strings as a span of one shared byte buffer, containers as the span of their children
// among the slots of containers already closed. Once the whole value has been read, its
// sizes are known: the strings become one string, and the containers are carved out of
// slabs allocated at their exact sizes (see slabs), in the order a walk visits them. Apart
// from the slabs and that string, a parsed value allocates only the boxes of its strings,
// numbers and arrays.

// slotKind is what a slot holds.
type slotKind uint8

const (
	slotNull slotKind = iota
	slotFalse
	slotTrue
	slotNumber // x: the number's bits
	slotString // x: the string's span of the parser's byte buffer
	slotArray  // x: the elements' span of the closed containers' children
	slotObject // x: the members' span of the closed containers' children
)

// slot is one value read, with its member name when it is an object member. Spans are
// packed into x (start<<32 | end), which bounds the input Parse accepts to 4 GiB.
type slot struct {
	kind slotKind
	name span // the member name's span of the byte buffer
	x    uint64
}

// span is a start and end offset.
type span struct{ a, b uint32 }

func packSpan(a, b int) uint64       { return uint64(a)<<32 | uint64(uint32(b)) }
func (v *slot) span() (int, int)     { return int(v.x >> 32), int(uint32(v.x)) }
func (s span) of(strs []byte) []byte { return strs[s.a:s.b] }

// maxParseInput is the largest input Parse accepts: every offset it records fits in 32 bits.
const maxParseInput = math.MaxUint32

// parseFrame is an open array or object. Its children so far are pending[start:], up to
// the next open frame's start.
type parseFrame struct {
	start    int
	name     span // the name of the member whose value comes next
	isObject bool
	haveName bool
}

// parseValue reads exactly one value from dec, whose input is size bytes long. It builds
// the tree with an explicit stack so that nesting depth costs heap, not call stack.
func parseValue(dec *jsontext.Decoder, size int, arena *slabs) (any, error) {
	if uint64(size) > maxParseInput {
		return nil, fmt.Errorf("jsonv: input of %d bytes is larger than the 4 GiB Parse accepts", size)
	}
	var (
		stackBuf [8]parseFrame
		pendBuf  [16]slot
		doneBuf  [32]slot
		strsBuf  [256]byte
		stack    = stackBuf[:0]
		pending  = pendBuf[:0] // the children read so far of all open containers
		done     = doneBuf[:0] // the children of closed containers, each container's contiguous
		strs     = strsBuf[:0] // the contents of every string and member name, unquoted
		objs     int           // objects read
		mems     int           // members of all objects
	)
	if size > len(strsBuf) {
		strs = make([]byte, 0, size) // unquoted contents are never longer than the input
	}
	for {
		var v slot
		if dec.PeekKind() == '"' {
			raw, err := dec.ReadValue()
			if err != nil {
				return nil, parseError(err, stack, len(pending), strs)
			}
			a := len(strs)
			if strs, err = appendContents(strs, raw); err != nil {
				return nil, err
			}
			if top := len(stack) - 1; top >= 0 && stack[top].isObject && !stack[top].haveName {
				stack[top].name, stack[top].haveName = span{uint32(a), uint32(len(strs))}, true
				continue
			}
			v = slot{kind: slotString, x: packSpan(a, len(strs))}
		} else {
			tok, err := dec.ReadToken()
			if err != nil {
				return nil, parseError(err, stack, len(pending), strs)
			}
			switch tok.Kind() {
			case 'n':
				v = slot{kind: slotNull}
			case 't':
				v = slot{kind: slotTrue}
			case 'f':
				v = slot{kind: slotFalse}
			case '0':
				f, err := tok.Float()
				if err != nil || f == 0 && math.Signbit(f) {
					return nil, numberError(dec, tok.String(), f)
				}
				v = slot{kind: slotNumber, x: math.Float64bits(f)}
			case '[':
				stack = append(stack, parseFrame{start: len(pending)})
				continue
			case '{':
				stack = append(stack, parseFrame{start: len(pending), isObject: true})
				continue
			case ']', '}':
				f := stack[len(stack)-1]
				children := pending[f.start:]
				v = slot{kind: slotArray, x: packSpan(len(done), len(done)+len(children))}
				if f.isObject {
					if name, dup := duplicate(children, strs); dup {
						return nil, &wrappedError{
							msg: fmt.Sprintf("jsonv: invalid JSON: duplicate member name %s in the object at %s",
								quoteForMessage(string(name.of(strs))),
								formatPath(openPath(stack[:len(stack)-1], f.start, strs))),
							err: jsontext.ErrDuplicateName,
						}
					}
					v.kind = slotObject
					objs++
					mems += len(children)
				}
				done = append(growSlots(done, len(children)), children...)
				pending = pending[:f.start]
				stack = stack[:len(stack)-1]
			default:
				return nil, fmt.Errorf("jsonv: invalid JSON at offset %d: unexpected token %v", dec.InputOffset(), tok)
			}
		}
		if len(stack) == 0 {
			return build(v, done, strs, objs, mems, arena), nil
		}
		if f := &stack[len(stack)-1]; f.isObject {
			v.name = f.name
			f.haveName = false
		}
		pending = append(growSlots(pending, 1), v)
	}
}

// growSlots returns s with room for n more slots, doubling its capacity when it lacks it:
// append grows large slices by only a quarter, and a large document's slots would be
// copied many times over.
func growSlots(s []slot, n int) []slot {
	if len(s)+n <= cap(s) {
		return s
	}
	grown := make([]slot, len(s), max(2*cap(s), len(s)+n))
	copy(grown, s)
	return grown
}

// appendContents appends the contents of the string raw, which the decoder has read and
// checked (UTF-8 included), to strs.
func appendContents(strs, raw []byte) ([]byte, error) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return append(strs, raw[1:len(raw)-1]...), nil
	}
	strs, err := jsontext.AppendUnquote(strs, raw)
	if err != nil { // unreachable: the decoder has checked raw
		return nil, fmt.Errorf("jsonv: invalid JSON: %w", err)
	}
	return strs, nil
}

// duplicate reports a name that occurs twice among an object's members.
func duplicate(ms []slot, strs []byte) (span, bool) {
	if len(ms) > indexThreshold {
		seen := make(map[string]struct{}, len(ms))
		for _, m := range ms {
			name := m.name.of(strs)
			if _, ok := seen[string(name)]; ok {
				return m.name, true
			}
			seen[string(name)] = struct{}{}
		}
		return span{}, false
	}
	for i := 1; i < len(ms); i++ {
		name := ms[i].name.of(strs)
		for j := range i {
			if bytes.Equal(name, ms[j].name.of(strs)) {
				return ms[i].name, true
			}
		}
	}
	return span{}, false
}

// build turns the slots read into the value: every string a substring of one string, the
// containers carved out of exactly sized slabs (or the arena's) in the order a depth-first
// walk visits them.
// A top-level object and its members are allocated on their own, outside the slabs, so that
// a caller who keeps only the value of one member (a session log keeps an event line's
// payload, not its envelope) does not keep them alive.
func build(root slot, done []slot, buf []byte, objs, mems int, arena *slabs) any {
	strs := string(buf)
	elems := len(done) - mems
	var rootMems []Member
	if root.kind == slotObject {
		a, b := root.span()
		objs, mems = objs-1, mems-(b-a)
		if b > a {
			rootMems = make([]Member, b-a)
		}
	}
	var own slabs
	sl := arena
	if sl == nil {
		own = sized(objs, mems, elems)
		sl = &own
	} else {
		sl.reserve(objs, mems, elems)
	}
	type frame struct {
		a, b int // the children's span of done
		mems []Member
		arr  []any
		next int
	}
	var (
		stackBuf [8]frame
		stack    = stackBuf[:0]
	)
	// open returns the value of a slot, pushing a frame that fills in a container.
	open := func(v *slot) any {
		switch v.kind {
		case slotFalse:
			return false
		case slotTrue:
			return true
		case slotNumber:
			return math.Float64frombits(v.x)
		case slotString:
			a, b := v.span()
			return strs[a:b]
		case slotArray:
			a, b := v.span()
			arr := sl.elements(b - a)
			if len(arr) > 0 {
				stack = append(stack, frame{a: a, b: b, arr: arr})
			}
			return arr
		case slotObject:
			a, b := v.span()
			if a == b {
				if v == &root {
					return &Object{}
				}
				return sl.object(nil)
			}
			src := done[a:b]
			ms := rootMems
			if v != &root {
				ms = sl.members(len(src))
			}
			for i := range src {
				ms[i].Name = strs[src[i].name.a:src[i].name.b]
			}
			stack = append(stack, frame{a: a, b: b, mems: ms})
			if v == &root {
				return NewObject(ms...)
			}
			return sl.object(ms)
		}
		return nil
	}
	out := open(&root)
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if f.a+f.next == f.b {
			stack = stack[:len(stack)-1]
			continue
		}
		i := f.next
		f.next++
		mems, arr, src := f.mems, f.arr, &done[f.a+i] // open may grow the stack and move f
		if mems != nil {
			mems[i].Value = open(src)
		} else {
			arr[i] = open(src)
		}
	}
	return out
}

// openPath renders the path of the value being read inside the open containers in stack,
// given how many children are pending in all: each open array contributes the index of its
// next element (its children end where the next open container's begin), each open
// object the member name just read, if any.
func openPath(stack []parseFrame, pending int, strs []byte) []pathSeg {
	segs := make([]pathSeg, 0, len(stack))
	for i := range stack {
		f := &stack[i]
		switch {
		case !f.isObject:
			end := pending
			if i+1 < len(stack) {
				end = stack[i+1].start
			}
			segs = append(segs, indexSeg(end-f.start))
		case f.haveName:
			segs = append(segs, nameSeg(string(f.name.of(strs))))
		}
	}
	return segs
}

// numberError explains why the number just read is not lossless JSON.
func numberError(dec *jsontext.Decoder, text string, f float64) error {
	offset := dec.InputOffset() - int64(len(text))
	if len(text) > 40 {
		text = text[:37] + "..."
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("jsonv: number %s at offset %d overflows float64, which is not lossless JSON", text, offset)
	}
	return fmt.Errorf("jsonv: number %s at offset %d is negative zero, which is not lossless JSON", text, offset)
}

// parseError turns a tokenizer error into one that names the offset and the path.
func parseError(err error, stack []parseFrame, pending int, strs []byte) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("jsonv: invalid JSON: unexpected end of input: %w", io.ErrUnexpectedEOF)
	}
	var serr *jsontext.SyntacticError
	if !errors.As(err, &serr) {
		return fmt.Errorf("jsonv: invalid JSON: %w", err)
	}
	what := "syntax error"
	if serr.Err != nil {
		what = serr.Err.Error()
	}
	return &wrappedError{
		msg: fmt.Sprintf("jsonv: invalid JSON at offset %d (%s): %s",
			serr.ByteOffset, formatPath(openPath(stack, pending, strs)), what),
		err: serr,
	}
}

// wrappedError carries its own message and keeps the underlying error reachable through
// errors.Is and errors.As without repeating that error's text.
type wrappedError struct {
	msg string
	err error
}

func (e *wrappedError) Error() string { return e.msg }
func (e *wrappedError) Unwrap() error { return e.err }

// quoteForMessage quotes s for an error message, shortening long text. Valid text is
// quoted as JSON would quote it; text with invalid UTF-8 is quoted by strconv.Quote, so
// that the offending bytes show as \xNN.
func quoteForMessage(s string) string {
	if len(s) > 64 {
		s = s[:61] + "..."
	}
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	return string(appendQuoted(nil, s))
}
