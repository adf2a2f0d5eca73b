package jsonv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

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
// trailing data is an error. Nesting deeper than MaxDepth is an error, never a crash.
// Parse does not retain data.
func Parse(data []byte) (any, error) {
	// Duplicate names are detected here when an object closes, which is cheaper than the
	// tokenizer's per-name bookkeeping.
	dec := jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true))
	v, err := parseValue(dec)
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

// ParseString is Parse for a string.
func ParseString(s string) (any, error) { return Parse([]byte(s)) }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// parseFrame is an array or object under construction. Its elements or members so far
// sit at the end of the parser's shared scratch stacks, from start on, so that each
// container is allocated once, at its final size, when it closes.
type parseFrame struct {
	start    int
	name     string // name of the member whose value comes next
	isObject bool
	haveName bool
}

// parseValue reads exactly one value from dec. It builds the tree with an explicit stack so
// that nesting depth costs heap, not call stack.
func parseValue(dec *jsontext.Decoder) (any, error) {
	var (
		stackBuf [8]parseFrame
		elemsBuf [16]any
		memsBuf  [16]Member
		stack    = stackBuf[:0]
		elems    = elemsBuf[:0] // pending elements of all open arrays
		mems     = memsBuf[:0]  // pending members of all open objects
	)
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, parseError(err, stack, len(elems))
		}
		var v any
		switch tok.Kind() {
		case 'n':
			v = nil
		case 't', 'f':
			v = tok.Bool()
		case '"':
			s := tok.String()
			if top := len(stack) - 1; top >= 0 && stack[top].isObject && !stack[top].haveName {
				stack[top].name, stack[top].haveName = s, true
				continue
			}
			v = s
		case '0':
			f, err := tok.Float()
			if err != nil || f == 0 && math.Signbit(f) {
				return nil, numberError(dec, tok.String(), f)
			}
			v = f
		case '[':
			stack = append(stack, parseFrame{start: len(elems)})
			continue
		case '{':
			stack = append(stack, parseFrame{start: len(mems), isObject: true})
			continue
		case ']':
			start := stack[len(stack)-1].start
			stack = stack[:len(stack)-1]
			arr := make([]any, len(elems)-start)
			copy(arr, elems[start:])
			clear(elems[start:])
			elems = elems[:start]
			v = arr
		case '}':
			start := stack[len(stack)-1].start
			var o *Object
			if len(mems) > start {
				o = NewObject(slices.Clone(mems[start:])...)
			} else {
				o = &Object{}
			}
			if name, dup := duplicateName(o); dup {
				return nil, &wrappedError{
					msg: fmt.Sprintf("jsonv: invalid JSON: duplicate member name %s in the object at %s",
						quoteForMessage(name), formatPath(openPath(stack[:len(stack)-1], len(elems)))),
					err: jsontext.ErrDuplicateName,
				}
			}
			stack = stack[:len(stack)-1]
			clear(mems[start:])
			mems = mems[:start]
			v = o
		default:
			return nil, fmt.Errorf("jsonv: invalid JSON at offset %d: unexpected token %v", dec.InputOffset(), tok)
		}
		if len(stack) == 0 {
			return v, nil
		}
		f := &stack[len(stack)-1]
		if f.isObject {
			mems = append(mems, Member{Name: f.name, Value: v})
			f.name, f.haveName = "", false
		} else {
			elems = append(elems, v)
		}
	}
}

// openPath renders the path of the value being read inside the open containers in stack,
// given how many array elements are pending in all: each open array contributes the index
// of its next element (its pending elements end where the next open array's begin), each
// open object the member name just read, if any.
func openPath(stack []parseFrame, pendingElems int) []pathSeg {
	segs := make([]pathSeg, 0, len(stack))
	for i := range stack {
		f := &stack[i]
		switch {
		case !f.isObject:
			end := pendingElems
			for _, g := range stack[i+1:] {
				if !g.isObject {
					end = g.start
					break
				}
			}
			segs = append(segs, indexSeg(end-f.start))
		case f.haveName:
			segs = append(segs, nameSeg(f.name))
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
func parseError(err error, stack []parseFrame, pendingElems int) error {
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
			serr.ByteOffset, formatPath(openPath(stack, pendingElems)), what),
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
