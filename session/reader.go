package session

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/klauspost/compress/zstd"
)

// CorruptError reports a session log that cannot be read: damage before its final
// record, a bad header, or a record that is intact but invalid (an unknown required event
// type, a seq gap, a malformed payload).
type CorruptError struct {
	// Path is the log file ("" when reading bytes that came from elsewhere).
	Path string
	// Offset is the byte offset in the file of the damaged frame or line.
	Offset int64
	// Err says what is wrong.
	Err error
}

// Error describes the damage with the file and byte offset.
func (e *CorruptError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("session: corrupt log at byte %d: %v", e.Offset, e.Err)
	}
	return fmt.Sprintf("session: corrupt log %q at byte %d: %v", e.Path, e.Offset, e.Err)
}

// Unwrap returns the underlying reason.
func (e *CorruptError) Unwrap() error { return e.Err }

// scan is the intact content of a log file.
type scan struct {
	header Header
	events []Event
	arena  jsonv.Arena // the events' payloads, one after the other
	// committed is the length of the intact prefix; bytes past it are a torn tail.
	committed int64
}

// tornBytes returns the length of the dropped tail of a file of size n.
func (s *scan) tornBytes(n int) int64 { return int64(n) - s.committed }

// ReadLog decodes the bytes of a session log file: the header and the events of every
// intact record. A damaged final record (a torn last batch) is dropped and reported through
// the returned committed length; damage followed by an intact record, a bad header or an
// invalid event is a *CorruptError. ReadLog adds no recovery events.
func ReadLog(data []byte, c Compression) (h Header, events []Event, committed int64, err error) {
	s, err := readLog(data, c)
	if err != nil {
		return Header{}, nil, 0, err
	}
	return s.header, s.events, s.committed, nil
}

func readLog(data []byte, c Compression) (*scan, error) {
	switch c {
	case CompressionNone:
		return readJSONL(data)
	case CompressionZstd, "":
		dec, err := newDecoder()
		if err != nil {
			return nil, fmt.Errorf("session: zstd decoder: %w", err)
		}
		defer dec.Close()
		return readZstd(dec, data)
	default:
		return nil, fmt.Errorf("session: unknown compression %q", c)
	}
}

func corrupt(off int, format string, args ...any) error {
	return &CorruptError{Offset: int64(off), Err: fmt.Errorf(format, args...)}
}

func readZstd(dec *zstd.Decoder, data []byte) (*scan, error) {
	if len(data) == 0 {
		return nil, corrupt(0, "empty or header-less session log")
	}
	end, err := scanFrame(data, 0)
	if err != nil {
		return nil, corrupt(0, "header frame: %v", err)
	}
	plain, err := decodeFrame(dec, data[:end])
	if err != nil {
		return nil, corrupt(0, "header frame: %v", err)
	}
	if len(plain) == 0 || bytes.IndexByte(plain, '\n') != len(plain)-1 {
		return nil, corrupt(0, "first frame is not exactly one header line")
	}
	h, err := parseHeaderLine(plain[:len(plain)-1])
	if err != nil {
		return nil, &CorruptError{Err: err}
	}
	s := &scan{header: h, committed: int64(end)}
	for off := end; off < len(data); {
		end, err := scanFrame(data, off)
		var plain []byte
		if err == nil {
			plain, err = decodeFrame(dec, data[off:end])
		}
		if err != nil {
			if intactFrameAfter(dec, data, off+1) {
				return nil, corrupt(off, "damaged frame before the end of the log: %v", err)
			}
			break // torn tail: the last batch never completed
		}
		// The checksum matched, so these are the bytes that were written: a bad line
		// here is a writer fault, never a torn write.
		events, err := splitLines(&s.arena, plain)
		if err != nil {
			return nil, corrupt(off, "intact frame holds an invalid record: %v", err)
		}
		for i := range events {
			if err := s.add(&events[i]); err != nil {
				return nil, &CorruptError{Offset: int64(off), Err: err}
			}
		}
		s.committed = int64(end)
		off = end
	}
	return s, nil
}

// splitLines parses a frame's plaintext: complete lines, each a JSON event envelope, into
// arena.
func splitLines(arena *jsonv.Arena, plain []byte) ([]Event, error) {
	if len(plain) == 0 || plain[len(plain)-1] != '\n' {
		return nil, errors.New("frame does not end with a complete line")
	}
	var out []Event
	for len(plain) > 0 {
		i := bytes.IndexByte(plain, '\n')
		e, err := parseEventLine(arena, plain[:i])
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		plain = plain[i+1:]
	}
	return out, nil
}

// parseEventLine parses one event line's envelope, into arena when it is not nil.
func parseEventLine(arena *jsonv.Arena, line []byte) (Event, error) {
	parse := jsonv.Parse
	if arena != nil {
		parse = arena.Parse
	}
	v, err := parse(line)
	if err != nil {
		return Event{}, fmt.Errorf("unparsable event line: %w", err)
	}
	return eventFromValue(v)
}

// add appends an event read from the file after checking its seq and content.
func (s *scan) add(e *Event) error {
	if want := int64(len(s.events)); e.Seq != want {
		return fmt.Errorf("seq gap: expected seq %d, got %d", want, e.Seq)
	}
	if err := checkEvent(e); err != nil {
		return fmt.Errorf("event seq %d: %w", e.Seq, err)
	}
	s.events = append(s.events, *e)
	return nil
}

func readJSONL(data []byte) (*scan, error) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return nil, corrupt(0, "empty or header-less session log")
	}
	h, err := parseHeaderLine(data[:nl])
	if err != nil {
		return nil, &CorruptError{Err: err}
	}
	s := &scan{header: h, committed: int64(nl + 1)}
	for off := nl + 1; off < len(data); {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			break // torn tail: an unterminated final line
		}
		end := off + i + 1
		e, err := parseEventLine(&s.arena, data[off:end-1])
		if err != nil {
			// A line that is not an event envelope is damage: fatal when an intact line
			// follows, a torn tail otherwise.
			if intactLineAfter(data, end) {
				return nil, corrupt(off, "damaged line before the end of the log: %v", err)
			}
			break
		}
		if err := s.add(&e); err != nil {
			return nil, &CorruptError{Offset: int64(off), Err: err}
		}
		s.committed = int64(end)
		off = end
	}
	return s, nil
}

// intactLineAfter reports whether a complete line at or after from parses as an event
// envelope.
func intactLineAfter(data []byte, from int) bool {
	for from < len(data) {
		i := bytes.IndexByte(data[from:], '\n')
		if i < 0 {
			return false
		}
		if _, err := parseEventLine(nil, data[from:from+i]); err == nil {
			return true
		}
		from += i + 1
	}
	return false
}
