package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// FrameTooLargeError is the error of a call whose response was larger than the transport's
// message limit: the response was read past and discarded, and the connection stays up.
type FrameTooLargeError struct {
	Size  int64 // bytes of the discarded message
	Limit int   // the limit it exceeded
}

// Error says how large the discarded message was and which limit it exceeded.
func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("response of %d bytes exceeds the %d-byte message limit and was discarded", e.Size, e.Limit)
}

// connLostError ends a stdio connection whose server went away; reason says how.
type connLostError struct{ reason string }

func (e *connLostError) Error() string { return e.reason }

// stdioTransport starts a stdio server process and frames its JSON-RPC messages itself, so
// that a server that writes a malformed line or an oversized message does not take the
// connection down with it (the go-sdk's own framing stops at the first such message).
type stdioTransport struct {
	command string
	args    []string
	env     []string
	dir     string
	limit   int           // the largest message read, in bytes
	grace   time.Duration // how long each shutdown step waits for the process to exit
	stderr  io.Writer     // receives the child's standard error
	lastErr func() string // the last stderr line, for exit messages
	note    func(string)  // records a diagnostic note
}

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	cmd := exec.Command(t.command, t.args...)
	cmd.Env = t.env
	cmd.Dir = t.dir
	cmd.Stderr = t.stderr
	// A grandchild that inherited stderr must not keep Wait (and Close) waiting forever.
	cmd.WaitDelay = t.grace
	setProcAttr(cmd)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", t.command, err)
	}
	inR.Close()
	outW.Close()
	c := &stdioConn{
		t:       t,
		cmd:     cmd,
		stdin:   inW,
		stdout:  outR,
		msgs:    make(chan readResult),
		closed:  make(chan struct{}),
		exited:  make(chan struct{}),
		pending: map[jsonrpc.ID]struct{}{},
	}
	go c.wait()
	go c.readLoop()
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

// stdioConn is the connection to one server process.
type stdioConn struct {
	t      *stdioTransport
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File

	msgs   chan readResult
	closed chan struct{} // closed by Close
	exited chan struct{} // closed when the process has been waited for
	exit   error         // the process's exit error, valid after exited

	writeMu sync.Mutex

	mu      sync.Mutex
	pending map[jsonrpc.ID]struct{} // ids of our calls still awaiting a response

	closeOnce sync.Once
}

func (c *stdioConn) wait() {
	c.exit = c.cmd.Wait()
	close(c.exited)
}

// exitReason describes why the server's output ended.
func (c *stdioConn) exitReason() string {
	select {
	case <-c.exited:
	case <-time.After(c.t.grace):
		return "the server closed its standard output"
	}
	reason := "the server process exited"
	var ee *exec.ExitError
	switch {
	case c.exit == nil:
		reason += " with status 0"
	case errors.As(c.exit, &ee):
		reason += " (" + ee.ProcessState.String() + ")"
	default:
		reason += ": " + c.exit.Error()
	}
	if last := c.t.lastErr(); last != "" {
		reason += "; last stderr line: " + last
	}
	return reason
}

// readLoop frames the server's output: one JSON-RPC message per line. Malformed lines and
// oversized messages that are not responses to a pending call are skipped with a note;
// an oversized response fails just its call.
func (c *stdioConn) readLoop() {
	r := bufio.NewReaderSize(c.stdout, 64<<10)
	for {
		line, big, err := readFrame(r, c.t.limit)
		if err != nil {
			var reason error
			select {
			case <-c.closed:
				reason = io.EOF
			default:
				if errors.Is(err, io.EOF) {
					reason = &connLostError{reason: c.exitReason()}
				} else {
					reason = &connLostError{reason: "reading from the server failed: " + err.Error()}
				}
			}
			c.deliver(readResult{err: reason})
			return
		}
		if big != nil {
			id, ok := big.responseID()
			if ok && c.settle(id) {
				c.t.note(fmt.Sprintf("discarded a %d-byte response to request %v (limit %d bytes)", big.size, id.Raw(), c.t.limit))
				if !c.deliver(readResult{msg: &jsonrpc.Response{ID: id, Error: &FrameTooLargeError{Size: big.size, Limit: c.t.limit}}}) {
					return
				}
			} else {
				c.t.note(fmt.Sprintf("skipped a %d-byte message that exceeds the %d-byte limit: %s…", big.size, c.t.limit, excerpt(big.head)))
			}
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			c.t.note(fmt.Sprintf("skipped a malformed message (%v): %s", err, excerpt(line)))
			continue
		}
		if resp, ok := msg.(*jsonrpc.Response); ok {
			c.settle(resp.ID)
		}
		if !c.deliver(readResult{msg: msg}) {
			return
		}
	}
}

func (c *stdioConn) deliver(r readResult) bool {
	select {
	case c.msgs <- r:
		return true
	case <-c.closed:
		return false
	}
}

// settle forgets a pending call id and reports whether it was pending.
func (c *stdioConn) settle(id jsonrpc.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case r := <-c.msgs:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.mu.Lock()
		c.pending[req.ID] = struct{}{}
		c.mu.Unlock()
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return sdk.ErrConnectionClosed
	default:
	}
	// A server that stopped reading its input must not block a cancelled writer forever.
	stop := context.AfterFunc(ctx, func() { c.stdin.SetWriteDeadline(time.Now()) })
	_, err = c.stdin.Write(data)
	if !stop() {
		c.stdin.SetWriteDeadline(time.Time{})
		if err != nil {
			return ctx.Err()
		}
	}
	return err
}

// Close shuts the server down as the MCP stdio transport prescribes: close its input, wait,
// then SIGTERM, wait, then SIGKILL (to the whole process group where supported).
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		// Closing the pipe also fails a Write blocked on a server that stopped reading.
		c.stdin.Close()
		if !c.waitExit() {
			terminate(c.cmd.Process, syscall.SIGTERM)
			if !c.waitExit() {
				terminate(c.cmd.Process, syscall.SIGKILL)
				<-c.exited
			}
		}
		// Reap any grandchild still holding the group's pipes, then unblock the reader.
		terminate(c.cmd.Process, syscall.SIGKILL)
		c.stdout.Close()
	})
	return nil
}

func (c *stdioConn) waitExit() bool {
	t := time.NewTimer(c.t.grace)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

func (c *stdioConn) SessionID() string { return "" }

// oversize describes a message longer than the limit that was read past.
type oversize struct {
	size       int64
	head, tail []byte
}

const keepEdge = 512

// readFrame reads one newline-terminated frame. A frame longer than limit is not buffered:
// its first and last bytes are kept so that a response can still be attributed to its call.
func readFrame(r *bufio.Reader, limit int) ([]byte, *oversize, error) {
	var line []byte
	var big *oversize
	for {
		chunk, err := r.ReadSlice('\n')
		if big == nil && len(line)+len(chunk) > limit {
			big = &oversize{size: int64(len(line))}
			big.head = append(big.head, line[:min(len(line), keepEdge)]...)
			big.tail = append(big.tail, line[max(0, len(line)-keepEdge):]...)
			line = nil
		}
		if big != nil {
			big.size += int64(len(chunk))
			if len(big.head) < keepEdge {
				big.head = append(big.head, chunk[:min(len(chunk), keepEdge-len(big.head))]...)
			}
			big.tail = append(big.tail, chunk...)
			if len(big.tail) > keepEdge {
				big.tail = append(big.tail[:0], big.tail[len(big.tail)-keepEdge:]...)
			}
		} else {
			line = append(line, chunk...)
		}
		switch {
		case err == nil:
			if big != nil {
				big.size-- // the newline
				return nil, big, nil
			}
			return line, nil, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && (len(line) > 0 || big != nil):
			// A last message without a newline still counts; EOF comes with the next read.
			if big != nil {
				return nil, big, nil
			}
			return line, nil, nil
		default:
			return nil, nil, err
		}
	}
}

var (
	idJSON    = `(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|"(?:[^"\\]|\\.)*")`
	headIDPat = regexp.MustCompile(`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*` + idJSON + `\s*,`)
	tailIDPat = regexp.MustCompile(`[,{]\s*"id"\s*:\s*` + idJSON + `\s*\}\s*$`)
)

// responseID finds the id of an oversized message where JSON-RPC encoders put it: first
// (after "jsonrpc") as Go encoders do, or last as JavaScript's JSON.stringify of
// {result, jsonrpc, id} does.
func (o *oversize) responseID() (jsonrpc.ID, bool) {
	for _, m := range [][][]byte{headIDPat.FindSubmatch(o.head), tailIDPat.FindSubmatch(o.tail)} {
		if m == nil {
			continue
		}
		raw := string(m[1])
		var v any
		if strings.HasPrefix(raw, `"`) {
			s, err := unquote(raw)
			if err != nil {
				continue
			}
			v = s
		} else {
			var f float64
			if _, err := fmt.Sscan(raw, &f); err != nil {
				continue
			}
			v = f
		}
		id, err := jsonrpc.MakeID(v)
		if err == nil && id.IsValid() {
			return id, true
		}
	}
	return jsonrpc.ID{}, false
}

func unquote(s string) (string, error) {
	v, err := jsonv.ParseString(s)
	if err != nil {
		return "", err
	}
	str, ok := v.(string)
	if !ok {
		return "", errors.New("not a JSON string")
	}
	return str, nil
}

// excerpt returns at most 120 bytes of b for a note, with invalid UTF-8 replaced.
func excerpt(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 120 {
		b = b[:120]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
