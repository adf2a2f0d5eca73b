package approval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// Decisions a ChannelAnswer carries.
const (
	DecisionYes = "yes" // allow the call this once
	DecisionNo  = "no"  // reject it; a reason is told to the model
)

// maxChannelMessage bounds one request or reply on the approval socket.
const maxChannelMessage = 64 << 10

// channelIOTimeout bounds how long one connection may take to send its request and read
// the reply, so a stuck client cannot hold a connection open forever.
const channelIOTimeout = 30 * time.Second

// ChannelAnswer is one answer sent to a session's approval socket: the call it answers (its
// call id, or the question's id), "yes" or "no", and with "no" an optional reason the
// model reads with the rejection.
type ChannelAnswer struct {
	CallID   string `json:"callId"`
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// Check reports what is wrong with an answer before it is sent.
func (a ChannelAnswer) Check() error {
	if strings.TrimSpace(a.CallID) == "" {
		return errors.New("approval answer: the call id is empty")
	}
	switch a.Decision {
	case DecisionYes:
		if strings.TrimSpace(a.Reason) != "" {
			return errors.New(`approval answer: a reason goes with "no" (the model reads it); "yes" takes none`)
		}
	case DecisionNo:
	default:
		return fmt.Errorf(`approval answer: decision must be "yes" or "no", got %q`, a.Decision)
	}
	return nil
}

// channelReply is the socket's one-line reply to an answer.
type channelReply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// Channel is a Prompter answered from other processes of the same user on this machine:
// the session viewer's approval buttons and "dsh approve". It listens on a unix socket
// (mode 0600, in a 0700 directory, see SocketPath; on Linux the peer's user id is checked
// too), and each question waits until an answer names its call, or until its context ends
// (ApprovalCancelled). An answer for a call that is not waiting is refused with an error
// the sender sees, so nothing answers a question before it is asked. The usual rules are
// unchanged: the service still records every question and answer, and a question nobody
// answers never runs the call.
type Channel struct {
	ln   *net.UnixListener
	path string
	// Asked, when set, is told of each question when it starts waiting (the terminal says
	// where to answer it).
	Asked func(q Question)

	mu      sync.Mutex
	pending map[string]chan Reply // by call id and by question id
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// ListenChannel creates the approval socket at path (refusing one that exists and answers)
// and starts accepting answers. Close stops it and removes the socket.
func ListenChannel(path string) (*Channel, error) {
	if err := removeStale(path); err != nil {
		return nil, err
	}
	var ln *net.UnixListener
	err := withSocketAddr(path, func(addr string) error {
		var err error
		ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("approval channel: listen on %q: %w", path, err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		os.Remove(path)
		return nil, fmt.Errorf("approval channel: %w", err)
	}
	c := &Channel{ln: ln, path: path, pending: map[string]chan Reply{}, conns: map[net.Conn]struct{}{}}
	c.wg.Add(1)
	go c.accept()
	return c, nil
}

// removeStale removes a socket file left by a process that died; a socket something still
// listens on is an error (two processes cannot own one session's questions).
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("approval channel: %w", err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("approval channel: %q exists and is not a socket", path)
	}
	var conn net.Conn
	err = withSocketAddr(path, func(addr string) error {
		var err error
		conn, err = net.Dial("unix", addr)
		return err
	})
	if err == nil {
		conn.Close()
		return fmt.Errorf("approval channel: another process is answering this session's questions on %q", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("approval channel: remove the stale socket: %w", err)
	}
	return nil
}

// Path returns the socket's path.
func (c *Channel) Path() string { return c.path }

// Close stops accepting answers, ends the open connections, waits for their goroutines and
// removes the socket. Questions still waiting end ApprovalUnavailable.
func (c *Channel) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	for conn := range c.conns {
		conn.Close()
	}
	closed := map[chan Reply]bool{}
	for id, ch := range c.pending {
		if !closed[ch] {
			close(ch) // one channel may be filed under a call id and a question id
			closed[ch] = true
		}
		delete(c.pending, id)
	}
	c.mu.Unlock()
	err := c.ln.Close()
	c.wg.Wait()
	if rerr := os.Remove(c.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}

// Prompt waits for an answer to q from the socket (Prompter).
func (c *Channel) Prompt(ctx context.Context, q Question) (Reply, error) {
	ch := make(chan Reply, 1)
	keys := []string{q.ID}
	if q.CallID != "" && q.CallID != q.ID {
		keys = append(keys, q.CallID)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return Reply{Outcome: tool.ApprovalUnavailable}, nil
	}
	for _, k := range keys {
		if _, dup := c.pending[k]; dup {
			c.mu.Unlock()
			return Reply{}, fmt.Errorf("approval channel: a question about call %q is already waiting", k)
		}
	}
	for _, k := range keys {
		c.pending[k] = ch
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		for _, k := range keys {
			if c.pending[k] == ch {
				delete(c.pending, k)
			}
		}
		c.mu.Unlock()
	}()
	if c.Asked != nil {
		c.Asked(q)
	}
	select {
	case <-ctx.Done():
		return Reply{Outcome: tool.ApprovalCancelled}, nil
	case r, ok := <-ch:
		if !ok {
			return Reply{Outcome: tool.ApprovalUnavailable}, nil
		}
		return r, nil
	}
}

// accept serves connections until the listener closes.
func (c *Channel) accept() {
	defer c.wg.Done()
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			conn.Close()
			return
		}
		c.conns[conn] = struct{}{}
		c.wg.Add(1)
		c.mu.Unlock()
		go c.serve(conn)
	}
}

// serve reads one answer from conn, delivers it and writes the reply.
func (c *Channel) serve(conn net.Conn) {
	defer c.wg.Done()
	defer func() {
		c.mu.Lock()
		delete(c.conns, conn)
		c.mu.Unlock()
		conn.Close()
	}()
	conn.SetDeadline(time.Now().Add(channelIOTimeout))
	reply := channelReply{OK: true}
	if err := c.receive(conn); err != nil {
		reply = channelReply{Error: err.Error()}
	}
	b, _ := json.Marshal(reply)
	conn.Write(append(b, '\n'))
}

// receive reads and delivers one answer.
func (c *Channel) receive(conn net.Conn) error {
	if err := checkPeer(conn); err != nil {
		return err
	}
	line, err := bufio.NewReader(io.LimitReader(conn, maxChannelMessage+1)).ReadBytes('\n')
	if len(line) > maxChannelMessage {
		return fmt.Errorf("the answer is longer than %d bytes", maxChannelMessage)
	}
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return fmt.Errorf("reading the answer: %w", err)
	}
	a, err := decodeAnswer(line)
	if err != nil {
		return err
	}
	r := Reply{Outcome: tool.ApprovalAllowedOnce}
	if a.Decision == DecisionNo {
		r = Reply{Outcome: tool.ApprovalRejected, Feedback: strings.TrimSpace(a.Reason)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.pending[a.CallID]
	if !ok {
		return fmt.Errorf("no question about call %q is waiting in this session", a.CallID)
	}
	for k, v := range c.pending {
		if v == ch {
			delete(c.pending, k) // one answer per question: a second one finds nothing waiting
		}
	}
	ch <- r
	return nil
}

// decodeAnswer reads one answer line: a JSON object with exactly the members of
// ChannelAnswer, nothing after it, and a valid answer.
func decodeAnswer(line []byte) (ChannelAnswer, error) {
	var a ChannelAnswer
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return ChannelAnswer{}, fmt.Errorf("the answer is not a JSON object {callId, decision, reason}: %w", err)
	}
	if len(bytes.TrimSpace(line[dec.InputOffset():])) != 0 {
		return ChannelAnswer{}, errors.New("the answer has more after its JSON object")
	}
	if err := a.Check(); err != nil {
		return ChannelAnswer{}, err
	}
	return a, nil
}

// SendAnswer sends a to the approval socket at path and returns once the session has taken
// it, or with the session's reason for refusing it. ctx bounds the whole exchange.
func SendAnswer(ctx context.Context, path string, a ChannelAnswer) error {
	if err := a.Check(); err != nil {
		return err
	}
	var conn net.Conn
	err := withSocketAddr(path, func(addr string) error {
		var err error
		conn, err = (&net.Dialer{}).DialContext(ctx, "unix", addr)
		return err
	})
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, errConnRefused) {
			return fmt.Errorf("the session takes no answers from outside (it is not running, or was not started with --approve-from web): %w", err)
		}
		return fmt.Errorf("approval channel %q: %w", path, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("sending the answer: %w", ctxErr(ctx, err))
	}
	line, err := bufio.NewReader(io.LimitReader(conn, maxChannelMessage)).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return fmt.Errorf("reading the session's reply: %w", ctxErr(ctx, err))
	}
	var r channelReply
	if err := json.Unmarshal(line, &r); err != nil {
		return fmt.Errorf("the session's reply %q is not JSON: %w", line, err)
	}
	if !r.OK {
		return fmt.Errorf("the session refused the answer: %s", r.Error)
	}
	return nil
}

// ctxErr prefers the context's error to the I/O error its cancellation caused.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// SocketDir returns the directory that holds the approval sockets of the sessions a user
// runs on this machine, under their dsh home. It does not depend on where the sessions'
// logs are kept, so a session in a database takes answers as one in files does.
func SocketDir(home string) string { return filepath.Join(home, "run", "approve") }

// maxSocketName bounds the file name of an approval socket (a file name's usual limit).
const maxSocketName = 255

// SocketPath returns where the session id listens for approval answers in dir (see
// SocketDir): a file named for the id, encoded as a file name as the session store
// encodes it.
func SocketPath(dir, id string) (string, error) {
	seg, err := session.EncodeSegment(id)
	if err != nil {
		return "", fmt.Errorf("approval socket of session %q: %w", id, err)
	}
	name := seg + ".sock"
	if len(name) > maxSocketName {
		return "", fmt.Errorf("approval socket of session %q: the id is too long for a file name (%d bytes encoded)", id, len(seg))
	}
	return filepath.Join(dir, name), nil
}

// ListenSession opens the approval socket of session id in dir (see SocketDir), creating
// the directory with mode 0700. A directory that other users may write to is refused:
// they could replace the socket and read the answers meant for the session.
func ListenSession(dir, id string) (*Channel, error) {
	path, err := SocketPath(dir, id)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("approval channel: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("approval channel: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("approval channel: %q is not a directory", dir)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("approval channel: other users may write to %q (mode %v): make it private (chmod 700)", dir, fi.Mode().Perm())
	}
	return ListenChannel(path)
}
