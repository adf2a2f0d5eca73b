package mcp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// captureRoundTripper captures the results of streamable HTTP requests made with a capture
// in their context (see capture): the POST carrying the request is answered either with one
// JSON message or with a server-sent event stream, and the response to that request is
// taken out of whichever it is and replaced by the placeholder.
type captureRoundTripper struct {
	base  http.RoundTripper
	limit int // the largest message rewritten; larger ones pass through untouched
}

func (t *captureRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	slot, _ := req.Context().Value(captureKey{}).(*capture)
	if slot == nil || req.Method != http.MethodPost || req.Body == nil {
		return t.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	msg, err := jsonrpc.DecodeMessage(body)
	call, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || !call.IsCall() || call.Method != slot.method {
		return t.base.RoundTrip(req)
	}
	slot.setID(call.ID)
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		resp.Body = &jsonRewriter{src: resp.Body, slot: slot, id: call.ID, limit: t.limit}
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	case "text/event-stream":
		resp.Body = &sseRewriter{src: resp.Body, r: bufio.NewReader(resp.Body), slot: slot, id: call.ID, limit: t.limit}
	}
	return resp, nil
}

// rewrite returns msg with the result of the response to id captured into slot and
// replaced, or msg itself when it is something else.
func rewrite(msg []byte, slot *capture, id jsonrpc.ID) []byte {
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return msg
	}
	resp, ok := m.(*jsonrpc.Response)
	if !ok || resp.ID != id || resp.Error != nil {
		return msg
	}
	resp.Result = slot.fill(resp.Result)
	out, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		return msg
	}
	return out
}

// jsonRewriter rewrites a whole application/json response body on first read.
type jsonRewriter struct {
	src   io.ReadCloser
	slot  *capture
	id    jsonrpc.ID
	limit int
	out   *bytes.Reader
	err   error
}

func (j *jsonRewriter) Read(p []byte) (int, error) {
	if j.out == nil && j.err == nil {
		b, err := io.ReadAll(io.LimitReader(j.src, int64(j.limit)+1))
		switch {
		case err != nil:
			j.err = err
		case len(b) > j.limit:
			j.err = &FrameTooLargeError{Size: int64(len(b)), Limit: j.limit}
		default:
			j.out = bytes.NewReader(rewrite(b, j.slot, j.id))
		}
	}
	if j.err != nil {
		return 0, j.err
	}
	return j.out.Read(p)
}

func (j *jsonRewriter) Close() error { return j.src.Close() }

// sseRewriter rewrites the data of server-sent events, one event at a time, passing every
// other field through in order.
type sseRewriter struct {
	src   io.ReadCloser
	r     *bufio.Reader
	slot  *capture
	id    jsonrpc.ID
	limit int
	out   bytes.Buffer
	err   error
}

func (s *sseRewriter) Read(p []byte) (int, error) {
	for s.out.Len() == 0 && s.err == nil {
		s.err = s.event()
	}
	if s.out.Len() > 0 {
		return s.out.Read(p)
	}
	return 0, s.err
}

// event moves one event (or the rest of the stream) to s.out.
func (s *sseRewriter) event() error {
	var fields [][]byte // the event's lines other than data, in order
	var data [][]byte
	size := 0
	for {
		line, err := s.r.ReadBytes('\n')
		if len(line) > 0 {
			trimmed := bytes.TrimRight(line, "\r\n")
			switch {
			case len(trimmed) == 0:
				s.flush(fields, data, size)
				return nil
			case bytes.HasPrefix(trimmed, []byte("data:")):
				d := bytes.TrimPrefix(trimmed[len("data:"):], []byte(" "))
				data = append(data, d)
				size += len(d) + 1
			default:
				fields = append(fields, line)
			}
		}
		if err != nil {
			s.flush(fields, data, size)
			if errors.Is(err, io.EOF) {
				return io.EOF
			}
			return err
		}
	}
}

func (s *sseRewriter) flush(fields, data [][]byte, size int) {
	for _, f := range fields {
		s.out.Write(f)
	}
	if len(data) == 0 {
		if len(fields) > 0 {
			s.out.WriteString("\n")
		}
		return
	}
	msg := bytes.Join(data, []byte("\n"))
	if size <= s.limit {
		msg = rewrite(msg, s.slot, s.id)
	}
	for _, l := range bytes.Split(msg, []byte("\n")) {
		fmt.Fprintf(&s.out, "data: %s\n", l)
	}
	s.out.WriteString("\n")
}

func (s *sseRewriter) Close() error { return s.src.Close() }
