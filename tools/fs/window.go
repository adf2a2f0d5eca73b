package fs

import (
	"bytes"
	"errors"
	"strconv"
	"unicode/utf8"
)

// binarySample is how many leading bytes are searched for NUL to call a file binary.
const binarySample = 8192

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// Errors of the window builder; the read tool turns them into FS_NOT_TEXT failures.
var (
	errBinary      = errors.New("binary file")
	errInvalidUTF8 = errors.New("invalid UTF-8 text")
)

// Line is one numbered line of a read window.
type Line struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
}

// windowSpec is a resolved read request: defaults and caps already applied.
type windowSpec struct {
	offset, limit int // 1-based first line; most lines returned
	maxLineLength int // UTF-16 code units per line before truncation
	maxBytes      int // UTF-8 bytes of returned lines, newlines between them included
}

// windowBuilder consumes a file's bytes in chunks of any size and keeps the requested window
// of lines, the exact line count and whether the byte cap cut the window short. It checks
// the text as it goes: a NUL in the first 8192 bytes makes the file binary, any invalid UTF-8
// makes it not text. Memory stays bounded by the window, whatever the file and line sizes.
type windowBuilder struct {
	spec     windowSpec
	lines    []Line
	total    int  // lines completed so far
	outBytes int  // bytes of the kept lines
	capped   bool // the byte cap stopped the window
	lineBuf  []byte
	lineCap  int // bytes of a line kept: enough for maxLineLength+1 code units
	lineLen  int // bytes of the current line seen, capped or not
	head     []byte
	started  bool // the leading byte-order mark has been dealt with
	sampled  int
	invalid  bool // invalid UTF-8 seen; reported once the binary sample is complete
	utf      utf8Stream
}

func newWindowBuilder(spec windowSpec) *windowBuilder {
	return &windowBuilder{spec: spec, lineCap: 4 * (spec.maxLineLength + 1), lines: []Line{}}
}

// Write consumes the next chunk of the file.
func (b *windowBuilder) Write(p []byte) error {
	if err := b.check(p); err != nil {
		return err
	}
	if b.invalid {
		return nil // the verdict is already invalid text; only the binary sample matters now
	}
	if !b.started {
		// A leading byte-order mark is not text (a UTF-8 decoder drops it).
		need := len(utf8BOM) - len(b.head)
		take := min(need, len(p))
		b.head = append(b.head, p[:take]...)
		p = p[take:]
		if len(b.head) < len(utf8BOM) {
			return nil
		}
		b.started = true
		if !bytes.Equal(b.head, utf8BOM) {
			b.scan(b.head)
		}
	}
	b.scan(p)
	return nil
}

// check applies the binary and UTF-8 checks to raw bytes. A NUL in the sample wins over
// invalid UTF-8 anywhere, as when a whole file is sampled before it is decoded.
func (b *windowBuilder) check(p []byte) error {
	if b.sampled < binarySample {
		n := min(len(p), binarySample-b.sampled)
		if bytes.IndexByte(p[:n], 0) >= 0 {
			return errBinary
		}
		b.sampled += n
	}
	if !b.invalid && !b.utf.feed(p) {
		b.invalid = true
	}
	if b.invalid && b.sampled >= binarySample {
		return errInvalidUTF8
	}
	return nil
}

// finish ends the input. It fails with errInvalidUTF8 for text that ended invalid or
// unfinished, and with errOffset when the requested offset lies past the end of the file.
func (b *windowBuilder) finish() error {
	if b.invalid || !b.utf.complete() {
		return errInvalidUTF8
	}
	if !b.started {
		b.started = true
		if !bytes.Equal(b.head, utf8BOM) {
			b.scan(b.head)
		}
	}
	if b.lineLen > 0 {
		b.flush()
	}
	if !b.capped && b.spec.offset > b.total && !(b.total == 0 && b.spec.offset == 1) {
		return errOffset
	}
	return nil
}

var errOffset = errors.New("offset out of range")

// wanted reports whether the line being completed now (number total+1) belongs in the window.
func (b *windowBuilder) wanted() bool {
	return !b.capped && b.total+1 >= b.spec.offset && len(b.lines) < b.spec.limit
}

// scan splits p into lines.
func (b *windowBuilder) scan(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b.appendLine(p)
			return
		}
		b.appendLine(p[:i])
		b.flush()
		p = p[i+1:]
	}
}

func (b *windowBuilder) appendLine(seg []byte) {
	b.lineLen += len(seg)
	if len(b.lineBuf) < b.lineCap && b.wanted() {
		b.lineBuf = append(b.lineBuf, seg[:min(len(seg), b.lineCap-len(b.lineBuf))]...)
	}
}

// flush completes the current line.
func (b *windowBuilder) flush() {
	keep := b.wanted()
	b.total++
	if keep {
		text := lineText(b.lineBuf, b.spec.maxLineLength)
		n := len(text)
		if len(b.lines) > 0 {
			n++
		}
		if b.outBytes+n > b.spec.maxBytes {
			b.capped = true
		} else {
			b.outBytes += n
			b.lines = append(b.lines, Line{Number: b.total, Text: text})
		}
	}
	b.lineBuf = b.lineBuf[:0]
	b.lineLen = 0
}

// lineText returns the displayed text of one line (without its newline), from a prefix of
// the line holding at least max+1 UTF-16 code units when the line is that long. It follows
// the reference's arithmetic, which counts UTF-16 code units: the first max+1 units are
// taken, a carriage return ending them is dropped, and what still exceeds max units is cut
// to max units plus a marker. A cut never splits a surrogate pair (Go strings hold no lone
// surrogates), so a line may show one unit less than max.
func lineText(buf []byte, max int) string {
	units := 0
	cut := 0 // bytes of the longest prefix of at most max units
	end := len(buf)
	full := false // the prefix reached max+1 units
	for i := 0; i < len(buf); {
		r, size := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError && size <= 1 && !utf8.FullRune(buf[i:]) {
			end = i // a rune cut by the line cap: it lies beyond what is shown
			break
		}
		u := 1
		if r >= 0x10000 {
			u = 2
		}
		if units+u > max+1 {
			full = true
			end = i
			break
		}
		units += u
		i += size
		if units <= max {
			cut = i
		}
		if units == max+1 {
			full = true
			end = i
			break
		}
	}
	if full {
		if units == max+1 && end > 0 && buf[end-1] == '\r' {
			return string(buf[:end-1])
		}
		return string(buf[:cut]) + "... (line truncated to " + strconv.Itoa(max) + " chars)"
	}
	line := buf[:end]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return string(line)
}

// utf8Stream validates UTF-8 fed in arbitrary chunks.
type utf8Stream struct {
	carry [utf8.UTFMax]byte
	n     int
}

// feed consumes p and reports whether everything so far can still be valid UTF-8.
func (s *utf8Stream) feed(p []byte) bool {
	if s.n > 0 {
		need := seqLen(s.carry[0])
		take := min(need-s.n, len(p))
		copy(s.carry[s.n:], p[:take])
		s.n += take
		p = p[take:]
		if s.n < need {
			return true
		}
		if !utf8.Valid(s.carry[:need]) {
			return false
		}
		s.n = 0
	}
	tail := incompleteTail(p)
	if !utf8.Valid(p[:len(p)-tail]) {
		return false
	}
	s.n = copy(s.carry[:], p[len(p)-tail:])
	return true
}

// complete reports whether no sequence is left unfinished.
func (s *utf8Stream) complete() bool { return s.n == 0 }

// seqLen is the length of the UTF-8 sequence a leading byte announces (1 for bytes that
// cannot start one; validation then rejects them).
func seqLen(c byte) int {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 2
	case c >= 0xE0 && c <= 0xEF:
		return 3
	case c >= 0xF0 && c <= 0xF4:
		return 4
	}
	return 1
}

// incompleteTail returns how many trailing bytes of p form the start of a sequence that
// continues in the next chunk.
func incompleteTail(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-(utf8.UTFMax-1); i-- {
		c := p[i]
		if c&0xC0 == 0x80 {
			continue // a continuation byte: look further back for the leading byte
		}
		if n := seqLen(c); n > len(p)-i {
			return len(p) - i
		}
		return 0
	}
	return 0
}
