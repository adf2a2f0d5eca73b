package coderuntime

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/go-json-experiment/json/jsontext"
)

// Ledger is the outer-output budget of one run (docs/behaviour.md §10.8 step 10). It counts the bytes of
// the JSON serialization of the logs array ("[]" is 2 bytes, entries are separated by
// commas and quoted and escaped as JSON.stringify does) plus the JSON of the completion
// value or of the failure message; binding traffic is never charged. A run whose total
// would pass the cap fails with FailureOutputLimit instead.
//
// A Ledger only counts; the caller keeps the admitted log entries. It is not safe for
// concurrent use.
type Ledger struct {
	max     int
	used    int
	entries int
}

// NewLedger returns an empty ledger for a cap of maxBytes, which must be at least 4 (an
// empty logs array plus an empty JSON string).
func NewLedger(maxBytes int) *Ledger {
	return &Ledger{max: maxBytes, used: 2}
}

// Max returns the cap.
func (l *Ledger) Max() int { return l.max }

// Remaining returns the bytes still available for the completion value or failure message.
func (l *Ledger) Remaining() int { return l.max - l.used }

// Admit charges one more log entry and reports whether it fit. An entry that does not fit
// is not charged.
func (l *Ledger) Admit(text string) bool {
	sep := l.separator()
	n, ok := JSONStringBytesUpTo(text, l.max-l.used-sep)
	if !ok {
		return false
	}
	l.used += n + sep
	l.entries++
	return true
}

// Fit returns the longest prefix of text, cut at a character boundary, that Admit would
// accept as the next entry; it is "" when not even an empty entry's quotes fit.
func (l *Ledger) Fit(text string) string {
	return TruncateJSONString(text, l.max-l.used-l.separator())
}

func (l *Ledger) separator() int {
	if l.entries > 0 {
		return 1
	}
	return 0
}

// Success finalizes a completed run. logs are the admitted entries; value is the
// completion when hasValue is set. A completion that does not fit the remaining budget
// turns the run into an output-limit failure, and one that is not lossless JSON into an
// invalid-output failure.
func (l *Ledger) Success(logs []string, value any, hasValue bool) Result {
	if !hasValue {
		return Result{Logs: logs}
	}
	_, fits, err := JSONValueBytesUpTo(value, l.Remaining())
	if err != nil {
		return l.Failure(logs, Failure{Kind: FailureInvalidOutput, Message: "program completion must be lossless JSON"})
	}
	if !fits {
		return l.Limit(logs)
	}
	return Result{Value: value, HasValue: true, Logs: logs}
}

// Failure finalizes a failed run. A failure whose message does not fit the remaining
// budget becomes an output-limit failure.
func (l *Ledger) Failure(logs []string, f Failure) Result {
	if _, ok := JSONStringBytesUpTo(f.Message, l.Remaining()); !ok {
		return l.Limit(logs)
	}
	return Result{Logs: logs, Error: &Failure{Kind: f.Kind, Message: f.Message}}
}

// Limit builds the output-limit failure "outer output exceeded <max> bytes". It keeps the
// longest prefix of logs that fits together with that message, truncating the last
// partially fitting entry, so the result as a whole stays within the cap.
func (l *Ledger) Limit(logs []string) Result {
	message := OutputLimitMessage(l.max)
	budget := l.max - (len(message) + 2) // the message is ASCII
	used := 2
	var kept []string
	for _, text := range logs {
		sep := 0
		if len(kept) > 0 {
			sep = 1
		}
		if n, ok := JSONStringBytesUpTo(text, budget-used-sep); ok {
			kept = append(kept, text)
			used += n + sep
			continue
		}
		if prefix := TruncateJSONString(text, budget-used-sep); prefix != "" {
			kept = append(kept, prefix)
			used += JSONStringBytes(prefix) + sep
		}
		break
	}
	if kept == nil {
		kept = []string{}
	}
	return Result{Logs: kept, Error: &Failure{Kind: FailureOutputLimit, Message: TruncateJSONString(message, l.max-used)}}
}

// OutputLimitMessage returns the output-limit failure message for a cap of maxBytes.
func OutputLimitMessage(maxBytes int) string {
	return "outer output exceeded " + strconv.Itoa(maxBytes) + " bytes"
}

// JSONStringBytes returns the length in bytes of s serialized as a JSON string the way
// JavaScript's JSON.stringify writes it: quotes, a two-byte escape for the quote, the
// backslash and \b \t \n \f \r, a six-byte \u00XX escape for the other control characters,
// and every other character as UTF-8. A byte that is not valid UTF-8 counts as U+FFFD.
func JSONStringBytes(s string) int {
	n, _ := JSONStringBytesUpTo(s, int(^uint(0)>>1))
	return n
}

// JSONStringBytesUpTo is JSONStringBytes with an early exit: it reports false as soon as
// the serialization would exceed maxBytes.
func JSONStringBytesUpTo(s string, maxBytes int) (int, bool) {
	if maxBytes < 2 {
		return 0, false
	}
	n := 2
	for i := 0; i < len(s); {
		cost, width := charBytes(s, i)
		n += cost
		if n > maxBytes {
			return 0, false
		}
		i += width
	}
	return n, true
}

// TruncateJSONString returns the longest prefix of s, cut at a character boundary, whose
// JSON serialization fits maxBytes. It returns "" when not even the quotes fit.
func TruncateJSONString(s string, maxBytes int) string {
	if maxBytes < 2 {
		return ""
	}
	n := 2
	for i := 0; i < len(s); {
		cost, width := charBytes(s, i)
		if n+cost > maxBytes {
			return s[:i]
		}
		n += cost
		i += width
	}
	return s
}

// charBytes returns the serialized cost and the UTF-8 width of the character at s[i].
func charBytes(s string, i int) (cost, width int) {
	c := s[i]
	if c < utf8.RuneSelf {
		switch {
		case c == '"' || c == '\\':
			return 2, 1
		case c == '\b' || c == '\t' || c == '\n' || c == '\f' || c == '\r':
			return 2, 1
		case c < 0x20:
			return 6, 1
		}
		return 1, 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && w == 1 {
		return 3, 1
	}
	return w, w
}

// quoteJS returns s as JSON.stringify writes it (invalid UTF-8 becomes U+FFFD).
func quoteJS(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, `\b`...)
			case '\t':
				b = append(b, `\t`...)
			case '\n':
				b = append(b, `\n`...)
			case '\f':
				b = append(b, `\f`...)
			case '\r':
				b = append(b, `\r`...)
			default:
				if c < 0x20 {
					b = fmt.Appendf(b, `\u%04x`, c)
				} else {
					b = append(b, c)
				}
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		b = utf8.AppendRune(b, r)
		i += w
	}
	return string(append(b, '"'))
}

// JSONValueBytesUpTo returns the length of the compact JSON serialization of the jsonv
// value v (as jsonv.Marshal and JSON.stringify write it), stopping early with fits == false
// once it would exceed maxBytes. It returns an error for a value that is not lossless JSON.
// The walk is iterative, so nesting depth costs heap, not stack.
func JSONValueBytesUpTo(v any, maxBytes int) (n int, fits bool, err error) {
	type frame struct {
		arr     []any
		members []jsonv.Member
		next    int
		object  bool
	}
	var stack []frame
	var scratch [32]byte
	add := func(k int) bool {
		n += k
		return n <= maxBytes
	}
	visit := func(v any) (bool, error) {
		switch v := v.(type) {
		case nil:
			return add(4), nil
		case bool:
			if v {
				return add(4), nil
			}
			return add(5), nil
		case float64:
			if v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308 || (v == 0 && 1/v < 0) {
				return false, fmt.Errorf("coderuntime: number %v is not lossless JSON", v)
			}
			return add(len(jsontext.AppendFloat(scratch[:0], v, 64))), nil
		case string:
			k, ok := JSONStringBytesUpTo(v, maxBytes-n)
			if !ok {
				return false, nil
			}
			return add(k), nil
		case []any:
			if !add(2) {
				return false, nil
			}
			if len(v) > 0 {
				stack = append(stack, frame{arr: v})
			}
			return true, nil
		case *jsonv.Object:
			if !add(2) {
				return false, nil
			}
			if v.Len() > 0 {
				stack = append(stack, frame{members: v.Members(), object: true})
			}
			return true, nil
		default:
			return false, fmt.Errorf("coderuntime: %T is not a jsonv value", v)
		}
	}
	ok, err := visit(v)
	for err == nil && ok && len(stack) > 0 {
		f := &stack[len(stack)-1]
		size := len(f.arr)
		if f.object {
			size = len(f.members)
		}
		if f.next == size {
			stack = stack[:len(stack)-1]
			continue
		}
		if f.next > 0 && !add(1) {
			return n, false, nil
		}
		i := f.next
		f.next++
		if !f.object {
			ok, err = visit(f.arr[i])
			continue
		}
		k, fit := JSONStringBytesUpTo(f.members[i].Name, maxBytes-n)
		if !fit || !add(k+1) {
			return n, false, nil
		}
		ok, err = visit(f.members[i].Value)
	}
	if err != nil {
		return 0, false, err
	}
	return n, ok && n <= maxBytes, nil
}
