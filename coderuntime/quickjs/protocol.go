package quickjs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The wire protocol between host and worker: one JSON object per line, both ways.
//
// host → worker
//
//	{"type":"start","program":…,"namespaces":[{"global":…,"names":[…],"errorClass":{…}}],"limits":{…}}
//	{"type":"reply","id":N,"ok":true,"value":<json>}
//	{"type":"reply","id":N,"ok":false,"message":"…"}
//
// worker → host
//
//	{"type":"ready"}                         prepared, about to read the start frame (a pool
//	                                         waits for it; a run drops it)
//	{"type":"log","text":"…"}
//	{"type":"call","id":N,"global":"…","name":"…","args":<json>}
//	{"type":"idle","id":N}                   the worker sends nothing more until call N's
//	                                         reply (the host's reader may carry call N
//	                                         itself; anywhere but right after call N the
//	                                         frame is ignored)
//	{"type":"output-limit"}                  the worker's own ledger overflowed
//	{"type":"budget"}                        the worker's busy time reached computeMs
//	{"type":"oom"}                           the JavaScript heap limit was reached
//	{"type":"exit","code":N}                 the program called process.exit(N)
//	{"type":"done"}                          completed with undefined
//	{"type":"done","value":<json>}           completed with a value
//	{"type":"done","error":{"kind":…,"message":…}}   exception, invalid-output or output-limit
//
// The host treats every worker frame as hostile: it is size-bounded, decoded strictly,
// rebuilt field by field, and dropped when malformed.

// startFrame is the first host frame: everything the worker needs for one run.
type startFrame struct {
	Type       string      `json:"type"`
	Program    string      `json:"program"`
	Namespaces []wireNS    `json:"namespaces"`
	Limits     startLimits `json:"limits"`
	// Positions maps the program's lines back to the source the model wrote: for each
	// line of Program, a flat list of [generated column, line, column] triples.
	Positions jsontext.Value `json:"positions,omitempty"`
}

// wireNS is a binding namespace as the worker sees it: names only.
type wireNS struct {
	Global     string      `json:"global"`
	Names      []string    `json:"names"`
	ErrorClass *wireErrCls `json:"errorClass,omitempty"`
}

type wireErrCls struct {
	Name               string `json:"name"`
	MemberNameProperty string `json:"memberNameProperty"`
}

// startLimits are the budgets the worker enforces itself.
type startLimits struct {
	ComputeMs      float64 `json:"computeMs"`
	MaxOutputBytes int64   `json:"maxOutputBytes"`
	MaxHeapBytes   int64   `json:"maxHeapBytes"`
	MaxFrameBytes  int64   `json:"maxFrameBytes"`
	// DataLimitBytes is the RLIMIT_DATA the worker process sets on itself (0: none).
	DataLimitBytes int64 `json:"dataLimitBytes"`
}

// hostFrame is a host → worker frame after the start frame (a reply).
type hostFrame struct {
	Type    string         `json:"type"`
	ID      int64          `json:"id"`
	OK      bool           `json:"ok"`
	Value   jsontext.Value `json:"value,omitempty"`
	Message string         `json:"message,omitempty"`
}

// workerFrame is a worker → host frame as decoded, before validation.
type workerFrame struct {
	Type   string         `json:"type"`
	ID     jsontext.Value `json:"id"`
	Global *string        `json:"global"`
	Name   *string        `json:"name"`
	Args   jsontext.Value `json:"args"`
	Text   *string        `json:"text"`
	Value  jsontext.Value `json:"value"`
	Error  jsontext.Value `json:"error"`
	Code   jsontext.Value `json:"code"`
}

// frameKind is the validated kind of a worker frame.
type frameKind uint8

const (
	frameLog frameKind = iota + 1
	frameCall
	frameOutputLimit
	frameBudget
	frameDone
	frameOOM
	frameExit
	frameIdle
	frameTooLarge // not a frame: the worker sent a line over the frame bound
)

// inbound is a validated worker frame.
type inbound struct {
	kind    frameKind
	text    string         // log
	id      int64          // call
	global  string         // call
	name    string         // call
	args    jsontext.Value // call: raw JSON, validated later
	value   jsontext.Value // done: raw JSON completion, nil when absent
	errKind string         // done: failure kind, "" when none
	errMsg  string         // done: failure message
	code    int64          // exit: the exit code
}

// maxCallID bounds call ids to integers JavaScript represents exactly.
const maxCallID = 1<<53 - 1

// decodeWorkerFrame validates one worker line. It reports false for junk: anything that
// is not a well-formed frame of a known type with correctly typed fields.
func decodeWorkerFrame(line []byte) (inbound, bool) {
	if f, ok := scanCall(line); ok {
		return f, true
	}
	if f, ok := scanIdle(line); ok {
		return f, true
	}
	return decodeGeneric(line)
}

// decodeGeneric is decodeWorkerFrame with the generic JSON decoder, for every frame.
func decodeGeneric(line []byte) (inbound, bool) {
	var f workerFrame
	if err := json.Unmarshal(line, &f); err != nil {
		// A lone surrogate escape inside a completion or arguments value does not make a
		// done or call frame junk: that value is checked strictly afterwards and fails
		// there as not lossless. Any other frame must be valid UTF-8 throughout.
		f = workerFrame{}
		if json.Unmarshal(line, &f, jsontext.AllowInvalidUTF8(true)) != nil || (f.Type != "done" && f.Type != "call") {
			return inbound{}, false
		}
	}
	switch f.Type {
	case "log":
		if f.Text == nil {
			return inbound{}, false
		}
		return inbound{kind: frameLog, text: *f.Text}, true
	case "call":
		id, ok := callID(f.ID)
		if !ok || f.Global == nil || f.Name == nil {
			return inbound{}, false
		}
		return inbound{kind: frameCall, id: id, global: *f.Global, name: *f.Name, args: f.Args}, true
	case "idle":
		id, ok := callID(f.ID)
		if !ok {
			return inbound{}, false
		}
		return inbound{kind: frameIdle, id: id}, true
	case "output-limit":
		return inbound{kind: frameOutputLimit}, true
	case "budget":
		return inbound{kind: frameBudget}, true
	case "oom":
		return inbound{kind: frameOOM}, true
	case "exit":
		code, ok := exitCode(f.Code)
		if !ok {
			return inbound{}, false
		}
		return inbound{kind: frameExit, code: code}, true
	case "done":
		if len(f.Error) == 0 {
			return inbound{kind: frameDone, value: f.Value}, true
		}
		var e struct {
			Kind    *string `json:"kind"`
			Message *string `json:"message"`
		}
		if err := json.Unmarshal(f.Error, &e); err != nil || e.Kind == nil || e.Message == nil {
			return inbound{}, false
		}
		switch *e.Kind {
		case "exception", "invalid-output", "output-limit":
		default:
			return inbound{}, false
		}
		// A done frame carrying both a value and an error settles as the error.
		return inbound{kind: frameDone, errKind: *e.Kind, errMsg: *e.Message}, true
	}
	return inbound{}, false
}

// exitCode accepts a JSON number that is an integer in the 32-bit range of exit codes.
func exitCode(raw jsontext.Value) (int64, bool) {
	if raw.Kind() != '0' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 32)
	return n, err == nil
}

// callID accepts a JSON number that is a non-negative integer JavaScript holds exactly.
func callID(raw jsontext.Value) (int64, bool) {
	if raw.Kind() != '0' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f < 0 || f > maxCallID || f != math.Trunc(f) {
		return 0, false
	}
	return int64(f), true
}

// errFrameTooLarge reports a line longer than the frame bound.
var errFrameTooLarge = errors.New("frame too large")

// frameReader reads newline-delimited frames of at most max bytes.
type frameReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// buffered is how many bytes were read ahead and not returned yet.
func (fr *frameReader) buffered() int { return fr.r.Buffered() }

// next returns the next frame without its newline. The slice is valid until the next call.
// A final line without a newline is returned as a frame. It returns errFrameTooLarge for
// an oversized line, after which the reader is unusable.
func (fr *frameReader) next() ([]byte, error) {
	fr.buf = fr.buf[:0]
	for {
		chunk, err := fr.r.ReadSlice('\n')
		if len(fr.buf)+len(chunk) > fr.max+1 {
			return nil, fmt.Errorf("%w: more than %d bytes", errFrameTooLarge, fr.max)
		}
		switch {
		case err == nil:
			if len(fr.buf) == 0 {
				return chunk[:len(chunk)-1], nil
			}
			fr.buf = append(fr.buf, chunk[:len(chunk)-1]...)
			return fr.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			fr.buf = append(fr.buf, chunk...)
		default:
			fr.buf = append(fr.buf, chunk...)
			if len(fr.buf) > fr.max {
				return nil, fmt.Errorf("%w: more than %d bytes", errFrameTooLarge, fr.max)
			}
			if len(fr.buf) > 0 && err == io.EOF {
				return fr.buf, nil
			}
			return nil, err
		}
	}
}

// appendString appends s as a JSON string (invalid UTF-8 becomes U+FFFD).
func appendString(b []byte, s string) []byte {
	out, err := jsontext.AppendQuote(b, s)
	if err != nil {
		out, _ = jsontext.AppendQuote(b, string(bytes.ToValidUTF8([]byte(s), []byte("\uFFFD"))))
	}
	return out
}

// The call frame as the worker writes it (worker.hostCall): the fields in this order, no
// white space, the arguments last.
const (
	callHead   = `{"type":"call","id":`
	callGlobal = `,"global":"`
	callName   = `","name":"`
	callArgs   = `","args":`
)

// idleHead is the idle frame as the worker writes it (worker.sayIdle), up to the id; a
// closing brace follows the id.
const idleHead = `{"type":"idle","id":`

// scanIdle decodes the idle frame exactly as an honest worker writes it, without the
// generic decoder (the worker sends one for most binding calls); anything else is left to
// the generic decoder, which decodes what scanIdle accepts to the same frame (FuzzScanIdle).
func scanIdle(line []byte) (inbound, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(idleHead))
	if !ok {
		return inbound{}, false
	}
	id, rest, ok := cutDecimalID(rest, 16)
	if !ok || id > maxCallID || len(rest) != 1 || rest[0] != '}' {
		return inbound{}, false
	}
	return inbound{kind: frameIdle, id: id}, true
}

// isIdleFor reports whether line is the idle frame for call id exactly as an honest worker
// writes it. The reader carries a call itself only on this form, right after the call.
func isIdleFor(line []byte, id int64) bool {
	f, ok := scanIdle(line)
	return ok && f.id == id
}

// peekLine returns the next complete line the reader holds already, without its newline
// and without consuming it, or false when no complete line is buffered: it never reads.
func (fr *frameReader) peekLine() ([]byte, bool) {
	b, _ := fr.r.Peek(fr.r.Buffered())
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return nil, false
	}
	return b[:i], true
}

// tryReader is an input (rawPipe) that can be read without waiting, and waited for
// briefly without the Go poller.
type tryReader interface {
	// setTry makes the reads that follow fail with errNotReady instead of waiting when
	// there is nothing to read, or with on false, wait again.
	setTry(on bool)
	// waitReadable waits at most d for the input to hold something and reports whether
	// it does.
	waitReadable(d time.Duration) bool
}

// errNotReady is what a try read fails with when the input holds nothing.
var errNotReady = errors.New("nothing to read yet")

// hasLine reports whether a complete line is buffered.
func (fr *frameReader) hasLine() bool {
	_, ok := fr.peekLine()
	return ok
}

// tryLine is peekLine that, when no complete line is buffered and src (the reader's input)
// is a tryReader, first reads what src holds without waiting. A line returned earlier by
// next may be overwritten.
func (fr *frameReader) tryLine(src io.Reader) ([]byte, bool) {
	if line, ok := fr.peekLine(); ok {
		return line, true
	}
	t, ok := src.(tryReader)
	if !ok || fr.r.Buffered() == fr.r.Size() {
		return nil, false
	}
	t.setTry(true)
	// One read at most; its error (errNotReady, or the end of the input, which the next
	// ordinary read meets again) is dropped.
	fr.r.Peek(fr.r.Buffered() + 1)
	t.setTry(false)
	return fr.peekLine()
}

// skipLine consumes the line peekLine returned.
func (fr *frameReader) skipLine(line []byte) { fr.r.Discard(len(line) + 1) }

// cutDecimalID cuts the id that starts b: a non-negative decimal integer of at most
// maxDigits digits without leading zeros, as strconv writes it. It returns the id and what
// follows it; ok is false when b does not start with such a number.
func cutDecimalID(b []byte, maxDigits int) (id int64, rest []byte, ok bool) {
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	if n == 0 || n > maxDigits || n > 1 && b[0] == '0' {
		return 0, b, false
	}
	id, err := strconv.ParseInt(string(b[:n]), 10, 64)
	if err != nil {
		return 0, b, false
	}
	return id, b[n:], true
}

// scanCall decodes the call frame exactly as an honest worker writes it, without the
// reflection of the generic decoder: this is the frame of every binding call. The frame
// is hostile, so the scanner accepts only a strict subset of what the generic decoder
// accepts — names without escapes, in valid UTF-8, arguments that are valid JSON, an id
// written as plain digits — and leaves everything else to it (FuzzScanCall checks that
// whatever it accepts, the generic decoder decodes to the same frame). The arguments
// alias line, as the generic decoder's do.
func scanCall(line []byte) (inbound, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(callHead))
	if !ok {
		return inbound{}, false
	}
	id, rest, ok := cutDecimalID(rest, 16)
	if !ok || id > maxCallID {
		return inbound{}, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(callGlobal)); !ok {
		return inbound{}, false
	}
	global, rest, ok := plainString(rest)
	if !ok {
		return inbound{}, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(callName)); !ok {
		return inbound{}, false
	}
	name, rest, ok := plainString(rest)
	if !ok {
		return inbound{}, false
	}
	args, ok := bytes.CutPrefix(rest, []byte(callArgs))
	if !ok || len(args) < 2 || args[len(args)-1] != '}' {
		return inbound{}, false
	}
	args = args[:len(args)-1]
	if !jsontext.Value(args).IsValid() {
		return inbound{}, false
	}
	return inbound{kind: frameCall, id: id, global: global, name: name, args: jsontext.Value(args)}, true
}

// plainString returns the text of a JSON string whose opening quote was consumed, up to
// its closing quote, and what follows the quote. It reports false for a string that needs
// decoding (an escape), holds a control character or is not valid UTF-8.
func plainString(b []byte) (string, []byte, bool) {
	i := 0
	for i < len(b) && b[i] != '"' {
		if b[i] == '\\' || b[i] < 0x20 {
			return "", nil, false
		}
		i++
	}
	if i == len(b) || !utf8.Valid(b[:i]) {
		return "", nil, false
	}
	return string(b[:i]), b[i:], true
}
