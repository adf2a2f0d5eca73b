package openai

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxLine bounds one SSE line. A chat-completions chunk is a few hundred bytes; a server
// that sends megabytes without a line break is broken, not verbose.
const maxLine = 8 << 20

var (
	// errUnterminatedLine reports that the byte stream ended in the middle of a line.
	errUnterminatedLine = errors.New("the stream ended in the middle of a line")
	// errTruncatedEvent reports that the byte stream ended inside an event.
	errTruncatedEvent = errors.New("the stream ended in the middle of an event")
)

// sseReader decodes a server-sent-events byte stream (the WHATWG event-stream format) into
// events. Lines end with LF, CRLF or a lone CR; a leading byte-order mark is skipped;
// comment lines and fields other than "event" and "data" are ignored; several data lines
// of one event are joined with LF. An event is dispatched only by the blank line that ends
// it, so a stream cut inside an event is reported as truncated rather than guessed at.
type sseReader struct {
	br      *bufio.Reader
	sc      *bufio.Scanner
	started bool
	event   []byte
	data    []byte
	hasData bool
	pending bool // a field of the current event was seen
}

func newSSEReader(r io.Reader) *sseReader {
	br := bufio.NewReader(r)
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 16<<10), maxLine)
	sc.Split(splitLines)
	return &sseReader{br: br, sc: sc}
}

var byteOrderMark = []byte("\xEF\xBB\xBF")

// next returns the type ("" when the event named none) and data of the next event. The
// returned slices are valid until the following call. It returns io.EOF when the stream
// ends between events, errTruncatedEvent when it ends inside one, bufio.ErrTooLong for
// an oversized line, and the underlying reader's error otherwise.
func (s *sseReader) next() (event, data []byte, err error) {
	s.event, s.data, s.hasData, s.pending = s.event[:0], s.data[:0], false, false
	if !s.started {
		s.started = true
		if b, _ := s.br.Peek(len(byteOrderMark)); bytes.Equal(b, byteOrderMark) {
			s.br.Discard(len(byteOrderMark))
		}
	}
	for s.sc.Scan() {
		line := s.sc.Bytes()
		if len(line) == 0 {
			if s.hasData {
				return s.event, s.data, nil
			}
			s.event, s.pending = s.event[:0], false
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		s.pending = true
		switch string(field) {
		case "data":
			if s.hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			s.hasData = true
		case "event":
			s.event = append(s.event[:0], value...)
		}
	}
	switch err := s.sc.Err(); {
	case errors.Is(err, errUnterminatedLine):
		return nil, nil, errTruncatedEvent
	case err != nil:
		return nil, nil, err
	case s.pending:
		return nil, nil, errTruncatedEvent
	}
	return nil, nil, io.EOF
}

// splitLines is a bufio.SplitFunc for SSE lines: it accepts LF, CRLF and lone CR endings
// and reports a final line without an ending as errUnterminatedLine.
func splitLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	lf := bytes.IndexByte(data, '\n')
	end := lf
	if lf < 0 {
		end = len(data)
	}
	if cr := bytes.IndexByte(data[:end], '\r'); cr >= 0 {
		switch {
		case cr+1 < len(data) && data[cr+1] == '\n':
			return cr + 2, data[:cr], nil
		case cr+1 < len(data) || atEOF:
			return cr + 1, data[:cr], nil
		}
		return 0, nil, nil // a CR at the end of the buffer may be the start of CRLF
	}
	if lf >= 0 {
		return lf + 1, data[:lf], nil
	}
	if atEOF && len(data) > 0 {
		return 0, nil, errUnterminatedLine
	}
	return 0, nil, nil
}
