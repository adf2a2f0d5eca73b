// Package script is an llm.Model that replays a script of assistant replies instead of
// calling a real model: for the offline demo, and for tests that need a deterministic
// model. Each call to Stream consumes the next reply, streams it as deltas (optionally in
// small chunks, so a UI shows it arriving) and finishes; a call after the last reply fails
// with llm.CodeScriptExhausted.
//
// # Script format
//
// A script is JSON Lines: one reply per line, as an object with these members (all
// optional, but a reply needs at least text, reasoning, a tool call or an error):
//
//	reasoning          string   the reply's reasoning (thinking) text
//	text               string   the reply's visible text
//	toolCalls          array    the tool calls, in model order, each {"id", "name", "arguments"}:
//	                              id         string  default "call_<reply>_<n>" (both 1-based)
//	                              name       string  required
//	                              arguments  a string (the raw argument text, sent verbatim —
//	                                         it may be invalid JSON on purpose) or any other
//	                                         JSON value (sent as its compact text); default "{}"
//	finish             string   "stop", "tool-calls" or "max-tokens"; default "tool-calls"
//	                            when there are tool calls, "stop" otherwise
//	usage              object   {"inputTokens", "outputTokens", "cacheReadTokens", "reasoningTokens"}
//	error              string   fail the call with this message (llm.CodeScripted) after
//	                            streaming the reply's content
//	expectToolResults  array    call ids whose tool results the request must carry (after
//	                            the last assistant message); otherwise the call fails with
//	                            llm.CodeScriptMismatch
//
// Blank lines and lines starting with "#" or "//" are ignored. Unknown members are errors,
// so a misspelt member does not silently change the demo.
//
// Example:
//
//	# the model reads two files in parallel, then answers
//	{"reasoning":"I should look at both files.","toolCalls":[{"id":"c1","name":"read_file","arguments":{"path":"a.txt"}},{"id":"c2","name":"read_file","arguments":{"path":"b.txt"}}]}
//	{"expectToolResults":["c1","c2"],"text":"Both files say hello."}
package script

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/llm"
)

// Reply is one scripted assistant reply.
type Reply struct {
	Reasoning string
	Text      string
	ToolCalls []ToolCall
	// Finish is the finish reason; "" means FinishToolCalls when there are tool calls and
	// FinishStop otherwise.
	Finish llm.FinishReason
	Usage  llm.Usage
	// Error, when set, makes the call fail with this message (llm.CodeScripted) after the
	// reply's content was streamed.
	Error string
	// ExpectToolResults lists call ids whose tool results the request must carry after its
	// last assistant message.
	ExpectToolResults []string

	line int // the script line, for messages; 0 for replies built in Go
}

// ToolCall is one scripted tool call. Arguments is the raw argument text.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Options configure a Model.
type Options struct {
	// Name is the model name reported by Name and in responses. Default "script".
	Name string
	// Source names the script in error messages, e.g. its file name. Default "the script".
	Source string
	// ChunkSize splits reasoning, text and arguments into deltas of at most this many
	// runes; 0 sends each as one delta.
	ChunkSize int
	// Delay pauses before each delta, so a terminal shows the reply arriving. Cancelling the
	// call's context cuts the pause short.
	Delay time.Duration
}

// SyntaxError reports a script line that is not a valid reply.
type SyntaxError struct {
	Source string // the script's name, e.g. its file name
	Line   int    // 1-based
	Err    error
}

// Error returns "<source>:<line>: <problem>".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d: %v", e.Source, e.Line, e.Err)
}

// Unwrap returns the underlying problem.
func (e *SyntaxError) Unwrap() error { return e.Err }

// wireReply is the JSON shape of a script line.
type wireReply struct {
	Reasoning         string         `json:"reasoning"`
	Text              string         `json:"text"`
	ToolCalls         []wireToolCall `json:"toolCalls"`
	Finish            string         `json:"finish"`
	Usage             llm.Usage      `json:"usage"`
	Error             string         `json:"error"`
	ExpectToolResults []string       `json:"expectToolResults"`
}

type wireToolCall struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Arguments jsontext.Value `json:"arguments"`
}

// Parse reads a script (see the package documentation). source names it in errors; an
// invalid line is a *SyntaxError.
func Parse(r io.Reader, source string) ([]Reply, error) {
	if source == "" {
		source = "script"
	}
	var replies []Reply
	br := bufio.NewReader(r)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("reading %s: %w", source, err)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' && !bytes.HasPrefix(t, []byte("//")) {
			reply, perr := parseLine(t, len(replies)+1)
			if perr != nil {
				return nil, &SyntaxError{Source: source, Line: lineNo, Err: perr}
			}
			reply.line = lineNo
			replies = append(replies, reply)
		}
		if err == io.EOF {
			return replies, nil
		}
	}
}

// ParseFile reads the script in the named file.
func ParseFile(path string) ([]Reply, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, path)
}

// Load reads the script in the named file and returns a Model replaying it. Unless
// opts.Source is set, errors name the file.
func Load(path string, opts Options) (*Model, error) {
	replies, err := ParseFile(path)
	if err != nil {
		return nil, err
	}
	if opts.Source == "" {
		opts.Source = path
	}
	return New(replies, opts)
}

func parseLine(line []byte, n int) (Reply, error) {
	var w wireReply
	if err := json.Unmarshal(line, &w, json.RejectUnknownMembers(true)); err != nil {
		return Reply{}, describeJSONError(err)
	}
	r := Reply{
		Reasoning: w.Reasoning, Text: w.Text, Finish: llm.FinishReason(w.Finish),
		Usage: w.Usage, Error: w.Error, ExpectToolResults: w.ExpectToolResults,
	}
	for i, c := range w.ToolCalls {
		args := "{}"
		switch c.Arguments.Kind() {
		case 0: // absent
		case '"':
			var s string
			if err := json.Unmarshal(c.Arguments, &s); err != nil {
				return Reply{}, fmt.Errorf("toolCalls[%d].arguments: %v", i, err)
			}
			args = s
		default:
			v := c.Arguments.Clone()
			if err := v.Compact(); err != nil {
				return Reply{}, fmt.Errorf("toolCalls[%d].arguments: %v", i, err)
			}
			args = string(v)
		}
		id := c.ID
		if id == "" {
			id = "call_" + strconv.Itoa(n) + "_" + strconv.Itoa(i+1)
		}
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: id, Name: c.Name, Arguments: args})
	}
	return r, validate(r)
}

// describeJSONError turns a json decoding error into a sentence about the line.
func describeJSONError(err error) error {
	var se *json.SemanticError
	if !errors.As(err, &se) {
		return fmt.Errorf("invalid JSON: %v", err)
	}
	where := string(se.JSONPointer)
	switch {
	case errors.Is(se.Err, json.ErrUnknownName):
		if parent := se.JSONPointer.Parent(); parent != "" {
			return fmt.Errorf("unknown member %q in %s", se.JSONPointer.LastToken(), parent)
		}
		return fmt.Errorf("unknown member %q", se.JSONPointer.LastToken())
	case where == "" && se.JSONKind != '{':
		return fmt.Errorf("a reply must be a JSON object, not %s", kindName(se.JSONKind))
	case se.GoType != nil && se.JSONKind != 0 && se.Err == nil:
		return fmt.Errorf("%s must be %s, not %s", where, goTypeName(se.GoType), kindName(se.JSONKind))
	case se.GoType != nil:
		return fmt.Errorf("%s must be %s", where, goTypeName(se.GoType))
	}
	return fmt.Errorf("%s: %v", where, err)
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "this value"
}

func goTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Slice:
		return "an array"
	case reflect.Struct:
		return "an object"
	}
	return "a " + t.String()
}

// validate checks what the JSON shape cannot.
func validate(r Reply) error {
	switch r.Finish {
	case "", llm.FinishStop, llm.FinishToolCalls, llm.FinishMaxTokens:
	default:
		return fmt.Errorf(`finish must be "stop", "tool-calls" or "max-tokens", got %q`, r.Finish)
	}
	if r.Reasoning == "" && r.Text == "" && len(r.ToolCalls) == 0 && r.Error == "" {
		return errors.New("a reply needs text, reasoning, toolCalls or an error")
	}
	seen := make(map[string]bool, len(r.ToolCalls))
	for i, c := range r.ToolCalls {
		if c.Name == "" {
			return fmt.Errorf("toolCalls[%d] needs a name", i)
		}
		if seen[c.ID] {
			return fmt.Errorf("toolCalls[%d]: id %q is used twice", i, c.ID)
		}
		seen[c.ID] = true
	}
	return nil
}

var _ llm.Model = (*Model)(nil)

// Model replays scripted replies; see the package documentation. It is safe for
// concurrent use: concurrent calls take replies in the order they start.
type Model struct {
	opts    Options
	mu      sync.Mutex
	replies []Reply
	next    int
	reqs    []llm.Request
}

// New returns a Model replaying replies in order. It validates them like Parse does (a
// tool call needs a name, ids are unique within a reply, the finish reason is known) and
// gives tool calls without an id the default one.
func New(replies []Reply, opts Options) (*Model, error) {
	if opts.Name == "" {
		opts.Name = "script"
	}
	if opts.Source == "" {
		opts.Source = "the script"
	}
	own := make([]Reply, len(replies))
	for i, r := range replies {
		r.ToolCalls = slices.Clone(r.ToolCalls)
		r.ExpectToolResults = slices.Clone(r.ExpectToolResults)
		for j := range r.ToolCalls {
			if r.ToolCalls[j].ID == "" {
				r.ToolCalls[j].ID = "call_" + strconv.Itoa(i+1) + "_" + strconv.Itoa(j+1)
			}
		}
		if err := validate(r); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", opts.Source, r.where(i), err)
		}
		own[i] = r
	}
	return &Model{opts: opts, replies: own}, nil
}

func (r Reply) where(i int) string {
	if r.line > 0 {
		return fmt.Sprintf("reply %d (line %d)", i+1, r.line)
	}
	return fmt.Sprintf("reply %d", i+1)
}

// Name returns the configured model name ("script" by default).
func (m *Model) Name() string { return m.opts.Name }

// Provider returns "script", so logs and UIs can tell a scripted model from a real one.
func (m *Model) Provider() string { return "script" }

// Remaining reports how many replies have not been used yet.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.replies) - m.next
}

// Requests returns copies of the requests received so far, in order, so tests can check
// what a caller sent.
func (m *Model) Requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]llm.Request, len(m.reqs))
	for i, r := range m.reqs {
		out[i] = r.Clone()
	}
	return out
}

// take records req and returns the next reply and its index.
func (m *Model) take(req llm.Request) (Reply, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, req.Clone())
	if m.next >= len(m.replies) {
		return Reply{}, 0, &llm.Error{Code: llm.CodeScriptExhausted, Message: fmt.Sprintf(
			"%s has no reply left for request %d (it holds %d replies)", m.opts.Source, len(m.reqs), len(m.replies))}
	}
	m.next++
	return m.replies[m.next-1], m.next - 1, nil
}

// Stream consumes the next reply and streams it; see llm.Model.
func (m *Model) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		r, i, err := m.take(req)
		if err == nil {
			err = m.check(r, i, req)
		}
		if err != nil {
			yield(llm.Event{}, err)
			return
		}
		s := &streamer{ctx: ctx, opts: &m.opts}
		s.asm = llm.NewAssembler(func(ev llm.Event) bool {
			if !yield(ev, nil) {
				s.stopped = true
				return false
			}
			return true
		})
		if !s.send(r.Reasoning, s.asm.Reasoning) || !s.send(r.Text, s.asm.Text) {
			s.fail(yield)
			return
		}
		for key, c := range r.ToolCalls {
			if !s.pause() || !s.asm.ToolCall(key, c.ID, c.Name, "") {
				s.fail(yield)
				return
			}
			if !s.send(c.Arguments, func(d string) bool { return s.asm.ToolCall(key, c.ID, c.Name, d) }) {
				s.fail(yield)
				return
			}
		}
		if r.Error != "" {
			yield(llm.Event{}, &llm.Error{Code: llm.CodeScripted, Message: r.Error})
			return
		}
		finish := r.Finish
		if finish == "" {
			finish = llm.FinishStop
			if len(r.ToolCalls) > 0 {
				finish = llm.FinishToolCalls
			}
		}
		s.asm.Finish(finish, r.Usage, m.opts.Name)
	}
}

// check verifies a reply's expectations against the request.
func (m *Model) check(r Reply, i int, req llm.Request) error {
	if len(r.ExpectToolResults) == 0 {
		return nil
	}
	var got []string
	for j := len(req.Messages) - 1; j >= 0 && req.Messages[j].Role != content.RoleAssistant; j-- {
		for _, b := range req.Messages[j].Content {
			if b.Type == content.TypeToolResult {
				got = append(got, b.ToolCallID)
			}
		}
	}
	for _, id := range r.ExpectToolResults {
		if !slices.Contains(got, id) {
			have := "none"
			if len(got) > 0 {
				slices.Reverse(got)
				have = strings.Join(got, ", ")
			}
			return &llm.Error{Code: llm.CodeScriptMismatch, Message: fmt.Sprintf(
				"%s: %s expects a tool result for call %q, but the request carries results for: %s",
				m.opts.Source, r.where(i), id, have)}
		}
	}
	return nil
}

// streamer paces one reply's deltas.
type streamer struct {
	ctx     context.Context
	opts    *Options
	asm     *llm.Assembler
	stopped bool // the consumer stopped, as opposed to the context ending
}

// send emits s through emit in chunks, pausing before each.
func (st *streamer) send(s string, emit func(string) bool) bool {
	for s != "" {
		chunk := s
		if n := st.opts.ChunkSize; n > 0 && utf8.RuneCountInString(s) > n {
			cut := 0
			for range n {
				_, size := utf8.DecodeRuneInString(s[cut:])
				cut += size
			}
			chunk = s[:cut]
		}
		s = s[len(chunk):]
		if !st.pause() {
			return false
		}
		if !emit(chunk) {
			return false
		}
	}
	return true
}

// pause waits for the configured delay and reports whether the context is still live.
func (st *streamer) pause() bool {
	if st.opts.Delay > 0 {
		t := time.NewTimer(st.opts.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-st.ctx.Done():
		}
	}
	return st.ctx.Err() == nil
}

// fail ends an interrupted reply: nothing when the consumer stopped, an abort error when the
// context ended.
func (st *streamer) fail(yield func(llm.Event, error) bool) {
	if st.stopped || st.ctx.Err() == nil {
		return
	}
	err := st.ctx.Err()
	if cause := context.Cause(st.ctx); cause != nil && !errors.Is(cause, err) {
		err = errors.Join(err, cause)
	}
	code, what := llm.CodeAborted, "cancelled"
	if errors.Is(err, context.DeadlineExceeded) {
		code, what = llm.CodeTimeout, "ran past its deadline"
	}
	yield(llm.Event{}, &llm.Error{Code: code, Err: err, Message: "the scripted model call was " + what})
}
