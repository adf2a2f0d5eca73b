// Package deepseektest is a local stand-in for DeepSeek's API as it behaved when checked on
// 2026-12-01, for end-to-end tests that must not reach the network.
//
// A Server answers, over real HTTP (httptest):
//
//   - POST /chat/completions (and /v1/chat/completions): streamed chat completions in
//     DeepSeek's OpenAI format. The model must be one DeepSeek serves today
//     (deepseek-flash, deepseek-v4-flash, deepseek-v4-pro); the retired deepseek-chat and
//     deepseek-reasoner, and any other name, get HTTP 400 "Model Not Exist". Thinking mode is
//     on unless the request says {"thinking":{"type":"disabled"}}; in thinking mode the reply
//     streams reasoning_content first, and a request whose earlier assistant message with
//     tool calls lacks its reasoning_content is refused with HTTP 400 and DeepSeek's exact
//     message (ReasoningPassBackMessage). With stream_options.include_usage the stream ends
//     with a usage chunk carrying prompt_cache_hit_tokens, prompt_cache_miss_tokens and
//     completion_tokens_details.reasoning_tokens.
//   - POST /v1/tools/search and POST /v1/tools/fetch: the Search and Fetch APIs, with
//     per-second request limits (100 and 25 by default) answered with HTTP 429.
//
// Replies are scripted: Enqueue queues what the next chat requests get — text, tool calls,
// reasoning, or an error status (400, 401, 429, 503 …) in DeepSeek's error JSON shape; a
// reply with Hold set streams its start and waits, for tests of live progress and
// cancellation. A request asking for more than 384K output tokens gets HTTP 400. A
// request with no reply queued is answered HTTP 500 and recorded as a test failure, so a
// test states every model turn it expects. Every request is recorded (Requests, WebRequests)
// for assertions.
//
// Typical use:
//
//	ds := deepseektest.New(t, deepseektest.Options{})
//	ds.Enqueue(
//		deepseektest.Calls(deepseektest.Call("read", `{"file_path":"a.txt"}`)),
//		deepseektest.Text("a.txt says hello"),
//	)
//	// point the client at ds.URL with ds.APIKey
package deepseektest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Model names, as DeepSeek accepts them on 2026-12-01.
const (
	ModelFlash       = "deepseek-flash"    // DeepSeek-V4.1-Flash, the name clients should use
	ModelFlashLegacy = "deepseek-v4-flash" // still accepted, served by V4.1 Flash
	ModelPro         = "deepseek-v4-pro"
)

// Retired model names: requests naming them get HTTP 400 "Model Not Exist".
var RetiredModels = []string{"deepseek-chat", "deepseek-reasoner"}

// ReasoningPassBackMessage is DeepSeek's error message for a thinking-mode request that
// did not send back the reasoning_content of an earlier assistant message with tool calls.
const ReasoningPassBackMessage = "The `reasoning_content` in the thinking mode must be passed back to the API."

// DefaultAPIKey is the key a Server accepts unless Options.APIKey says otherwise.
const DefaultAPIKey = "sk-deepseektest"

// Default request limits of the Search and Fetch APIs, per second.
const (
	DefaultSearchQPS = 100
	DefaultFetchQPS  = 25
)

// Options configures a Server. The zero value is DeepSeek's behaviour with DefaultAPIKey.
type Options struct {
	// APIKey is the only bearer token accepted; "" means DefaultAPIKey.
	APIKey string
	// SearchQPS and FetchQPS are the requests per second the Search and Fetch APIs answer
	// before HTTP 429; 0 means the defaults (100 and 25).
	SearchQPS, FetchQPS int
	// Now is the clock the request limits count seconds on; nil means time.Now. Tests pass
	// a fake clock to hit or clear a limit without waiting.
	Now func() time.Time
}

// Server is a running stand-in. Its methods are safe for concurrent use.
type Server struct {
	// URL is the API root, e.g. "http://127.0.0.1:41234"; use it as the base URL.
	URL string
	// APIKey is the key the server accepts.
	APIKey string

	t    testing.TB
	srv  *httptest.Server
	opts Options

	mu       sync.Mutex
	replies  []Reply
	requests []ChatRequest
	web      []WebRequest
	pages    map[string]Page
	results  map[string]SearchResponse
	window   map[string]windowCount // endpoint → requests in the current second
	webFail  map[string][]Reply     // endpoint → scripted failures answered first
}

type windowCount struct {
	second int64
	n      int
}

// New starts a Server; it is closed when the test ends.
func New(t testing.TB, opts Options) *Server {
	if opts.APIKey == "" {
		opts.APIKey = DefaultAPIKey
	}
	if opts.SearchQPS == 0 {
		opts.SearchQPS = DefaultSearchQPS
	}
	if opts.FetchQPS == 0 {
		opts.FetchQPS = DefaultFetchQPS
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{t: t, opts: opts, APIKey: opts.APIKey,
		pages: map[string]Page{}, results: map[string]SearchResponse{},
		window: map[string]windowCount{}, webFail: map[string][]Reply{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /chat/completions", s.chat)
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("POST /v1/tools/search", s.search)
	mux.HandleFunc("POST /v1/tools/fetch", s.fetch)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Not Found", "invalid_request_error")
	})
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// ToolCall is one scripted tool call of a reply.
type ToolCall struct {
	// ID is the call id; "" means "call_<n>" numbered across the server's replies.
	ID string
	// Name is the tool name and Arguments the raw JSON argument text.
	Name, Arguments string
}

// Usage overrides the token counts a reply reports. The wire usage is derived from it:
// prompt_tokens = CacheHit + CacheMiss, completion_tokens = Completion.
type Usage struct {
	CacheHit, CacheMiss, Completion, Reasoning int
}

// Reply is what one chat request gets: a streamed answer, or an error status.
type Reply struct {
	// Reasoning is the reasoning_content streamed first in thinking mode; "" means a short
	// default, since DeepSeek always reasons in thinking mode. It is not sent when the
	// request disabled thinking.
	Reasoning string
	// Text is the answer text.
	Text string
	// ToolCalls are the calls the model makes (finish_reason "tool_calls").
	ToolCalls []ToolCall
	// Usage overrides the estimated token counts; nil estimates them from the request and
	// the reply.
	Usage *Usage
	// Status, when not 0 or 200, answers the request with this HTTP status and DeepSeek's
	// error JSON carrying Message instead of a stream.
	Status int
	// Message is the error message of a Status reply; "" means DeepSeek's usual one.
	Message string
	// InBand sends a Status reply's error inside an HTTP 200 event stream, as a
	// {"error":{…}} chunk, the way a failure after the headers reaches the client.
	InBand bool
	// Hold, when not nil, pauses the stream after its first chunk (and the reasoning)
	// until Hold is closed or the client goes away: a reply that is still streaming, for
	// tests of progress display and cancellation.
	Hold <-chan struct{}
	// RetryAfter, when set, is sent with a Status reply: as Retry-After in whole seconds
	// from one second up, below that as Retry-After-Ms (so a test's retry waits a
	// millisecond, not the client's default backoff).
	RetryAfter time.Duration
}

// Text is a reply that answers with text.
func Text(s string) Reply { return Reply{Text: s} }

// Calls is a reply that makes tool calls.
func Calls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Call is a tool call with a generated id.
func Call(name, arguments string) ToolCall { return ToolCall{Name: name, Arguments: arguments} }

// Fail is a reply that fails with an HTTP status and DeepSeek's usual message for it.
func Fail(status int) Reply { return Reply{Status: status} }

// Enqueue appends replies for the next chat requests, in order.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Pending returns how many enqueued replies have not been served.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.replies)
}

// ChatRequest is one recorded chat request.
type ChatRequest struct {
	// Header is the request's HTTP header.
	Header http.Header
	// Body is the raw request body.
	Body []byte
	// Model, Thinking ("" when absent) and ReasoningEffort ("" when absent) are decoded
	// from the body.
	Model, Thinking, ReasoningEffort string
	// Messages are the request's messages.
	Messages []Message
	// Tools are the names of the offered tools.
	Tools []string
	// Status is the HTTP status the server answered.
	Status int
}

// Message is one message of a recorded chat request.
type Message struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []WireToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
}

// Requests returns the chat requests received so far, in order.
func (s *Server) Requests() []ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// chatRequest is the decoded body of a chat request.
type chatRequest struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Thinking *struct {
		Type string `json:"type"`
	} `json:"thinking"`
	ReasoningEffort string `json:"reasoning_effort"`
	MaxTokens       int    `json:"max_tokens"`
}

// MaxOutputTokens is the most output tokens a request may ask for (384K).
const MaxOutputTokens = 384 << 10

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := ChatRequest{Header: r.Header.Clone(), Body: body}
	// The request is recorded before anything is written, so a client that has read the
	// answer always finds its request in Requests.
	var respond func(http.ResponseWriter)
	rec.Status, respond = s.serveChat(r, body, &rec)
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
	respond(w)
}

// errorReply returns the status and the writer of an error answer.
func errorReply(status int, message, typ string, header ...string) (int, func(http.ResponseWriter)) {
	return status, func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		writeError(w, status, message, typ)
	}
}

// serveChat decides the answer to one chat request: its status and how to write it.
func (s *Server) serveChat(r *http.Request, body []byte, rec *ChatRequest) (int, func(http.ResponseWriter)) {
	if !s.authorized(r) {
		return errorReply(http.StatusUnauthorized, "Authentication Fails, Your api key is invalid", "authentication_error")
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return errorReply(http.StatusBadRequest, "Failed to deserialize the JSON body into the target type: "+err.Error(), "invalid_request_error")
	}
	rec.Model, rec.Messages, rec.ReasoningEffort = req.Model, req.Messages, req.ReasoningEffort
	for _, t := range req.Tools {
		rec.Tools = append(rec.Tools, t.Function.Name)
	}
	if req.Thinking != nil {
		rec.Thinking = req.Thinking.Type
	}
	switch req.Model {
	case ModelFlash, ModelFlashLegacy, ModelPro:
	default:
		return errorReply(http.StatusBadRequest, "Model Not Exist", "invalid_request_error")
	}
	thinking := true
	if req.Thinking != nil {
		switch req.Thinking.Type {
		case "enabled":
		case "disabled":
			thinking = false
		default:
			return errorReply(http.StatusBadRequest, fmt.Sprintf("thinking.type must be \"enabled\" or \"disabled\", got %q", req.Thinking.Type), "invalid_request_error")
		}
	}
	switch req.ReasoningEffort {
	case "", "low", "high", "max":
	default:
		return errorReply(http.StatusBadRequest, fmt.Sprintf("reasoning_effort must be one of low, high, max, got %q", req.ReasoningEffort), "invalid_request_error")
	}
	if req.MaxTokens < 0 || req.MaxTokens > MaxOutputTokens {
		return errorReply(http.StatusBadRequest, fmt.Sprintf("Invalid max_tokens value, the valid range of max_tokens is [1, %d]", MaxOutputTokens), "invalid_request_error")
	}
	if len(req.Messages) == 0 {
		return errorReply(http.StatusBadRequest, "messages must not be empty", "invalid_request_error")
	}
	if thinking {
		for _, m := range req.Messages {
			if m.Role == "assistant" && len(m.ToolCalls) > 0 && (m.ReasoningContent == nil || *m.ReasoningContent == "") {
				return errorReply(http.StatusBadRequest, ReasoningPassBackMessage, "invalid_request_error")
			}
		}
	}
	s.mu.Lock()
	if len(s.replies) == 0 {
		n := len(s.requests) + 1
		s.mu.Unlock()
		s.t.Errorf("deepseektest: chat request %d arrived with no reply enqueued", n)
		return errorReply(http.StatusInternalServerError, "deepseektest: no reply enqueued", "server_error")
	}
	reply := s.replies[0]
	s.replies = s.replies[1:]
	callBase := 0
	for _, q := range s.requests {
		if q.Status == http.StatusOK {
			callBase += 10
		}
	}
	prev := s.lastOK()
	s.mu.Unlock()

	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.InBand {
			return http.StatusOK, func(w http.ResponseWriter) { inBand(w, reply) }
		}
		return failReply(reply)
	}
	if !thinking {
		reply.Reasoning = ""
	} else if reply.Reasoning == "" {
		reply.Reasoning = "Let me think about the request."
	}
	for i := range reply.ToolCalls {
		if reply.ToolCalls[i].ID == "" {
			reply.ToolCalls[i].ID = fmt.Sprintf("call_%d", callBase+i)
		}
	}
	usage := reply.Usage
	if usage == nil {
		usage = estimate(req.Messages, prev, reply)
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	return http.StatusOK, func(w http.ResponseWriter) { stream(r.Context(), w, req.Model, reply, *usage, includeUsage) }
}

// inBand writes a scripted failure as an error chunk in a 200 event stream.
func inBand(w http.ResponseWriter, reply Reply) {
	msg := reply.Message
	if msg == "" {
		msg = defaultMessage(reply.Status)
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": errorType(reply.Status), "param": nil, "code": reply.Status}})
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "data: %s\n\n", b)
}

// failReply answers a scripted failure.
func failReply(reply Reply) (int, func(http.ResponseWriter)) {
	msg := reply.Message
	if msg == "" {
		msg = defaultMessage(reply.Status)
	}
	var header []string
	switch {
	case reply.RetryAfter >= time.Second:
		header = []string{"Retry-After", fmt.Sprint(int(reply.RetryAfter.Seconds()))}
	case reply.RetryAfter > 0: // a short wait, for tests that must not be slow
		header = []string{"Retry-After-Ms", fmt.Sprint(reply.RetryAfter.Milliseconds())}
	}
	return errorReply(reply.Status, msg, errorType(reply.Status), header...)
}

// lastOK returns the messages of the last request that was answered with a stream.
func (s *Server) lastOK() []Message {
	for i := len(s.requests) - 1; i >= 0; i-- {
		if s.requests[i].Status == http.StatusOK {
			return s.requests[i].Messages
		}
	}
	return nil
}

func (s *Server) authorized(r *http.Request) bool {
	return r.Header.Get("Authorization") == "Bearer "+s.opts.APIKey
}

// estimate approximates token counts: four bytes a token; the messages shared with the
// previous request are cache hits, in whole 64-token units, as DeepSeek's disk cache counts.
func estimate(msgs, prev []Message, r Reply) *Usage {
	total, shared := 0, 0
	sharing := true
	for i, m := range msgs {
		b, _ := json.Marshal(m)
		n := len(b)/4 + 1
		total += n
		if sharing && i < len(prev) {
			p, _ := json.Marshal(prev[i])
			if bytes.Equal(b, p) {
				shared += n
				continue
			}
		}
		sharing = false
	}
	hit := shared / 64 * 64
	out := len(r.Text)/4 + len(r.Reasoning)/4 + 1
	for _, c := range r.ToolCalls {
		out += (len(c.Name)+len(c.Arguments))/4 + 1
	}
	return &Usage{CacheHit: hit, CacheMiss: total - hit, Completion: out, Reasoning: len(r.Reasoning) / 4}
}

// WireToolCall is a tool call as the chat API carries it: in a request's assistant message,
// or (split by Index) in a stream's deltas.
type WireToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// stream writes the reply as DeepSeek streams it: a role chunk, reasoning_content pieces,
// content pieces, tool-call pieces (id and name first, arguments split), a finish chunk,
// the usage chunk when asked for, and [DONE].
func stream(ctx context.Context, w http.ResponseWriter, model string, r Reply, u Usage, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	id := "chatcmpl-deepseektest"
	send := func(delta map[string]any, finish any, usage any) {
		choices := []any{}
		if delta != nil || finish != nil {
			if delta == nil {
				delta = map[string]any{"content": ""}
			}
			choices = append(choices, map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish})
		}
		chunk := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1764547200, "model": model,
			"system_fingerprint": "fp_deepseektest", "choices": choices}
		if usage != nil {
			chunk["usage"] = usage
		}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	send(map[string]any{"role": "assistant", "content": nil}, nil, nil)
	for _, p := range pieces(r.Reasoning) {
		send(map[string]any{"content": nil, "reasoning_content": p}, nil, nil)
	}
	if r.Hold != nil {
		select {
		case <-r.Hold:
		case <-ctx.Done():
			return
		}
	}
	for _, p := range pieces(r.Text) {
		send(map[string]any{"content": p}, nil, nil)
	}
	for i, c := range r.ToolCalls {
		first := WireToolCall{Index: i, ID: c.ID, Type: "function"}
		first.Function.Name = c.Name
		send(map[string]any{"content": nil, "tool_calls": []WireToolCall{first}}, nil, nil)
		for _, p := range pieces(c.Arguments) {
			more := WireToolCall{Index: i}
			more.Function.Arguments = p
			send(map[string]any{"content": nil, "tool_calls": []WireToolCall{more}}, nil, nil)
		}
	}
	finish := "stop"
	if len(r.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	send(map[string]any{"content": ""}, finish, nil)
	if includeUsage {
		send(nil, nil, map[string]any{
			"prompt_tokens":             u.CacheHit + u.CacheMiss,
			"completion_tokens":         u.Completion,
			"total_tokens":              u.CacheHit + u.CacheMiss + u.Completion,
			"prompt_tokens_details":     map[string]any{"cached_tokens": u.CacheHit},
			"prompt_cache_hit_tokens":   u.CacheHit,
			"prompt_cache_miss_tokens":  u.CacheMiss,
			"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
		})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// pieces splits s into a few pieces, as a stream delivers text.
func pieces(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for len(s) > 0 {
		n := min(len(s), 16)
		for n < len(s) && (s[n]&0xC0) == 0x80 { // keep runes whole
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// writeError answers with DeepSeek's error JSON and returns the status.
func writeError(w http.ResponseWriter, status int, message, typ string) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message, "type": typ, "param": nil, "code": "invalid_request_error"}})
	w.Write(b)
	return status
}

// defaultMessage is DeepSeek's usual message for an error status.
func defaultMessage(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "Invalid request"
	case http.StatusUnauthorized:
		return "Authentication Fails, Your api key is invalid"
	case http.StatusPaymentRequired:
		return "Insufficient Balance"
	case http.StatusUnprocessableEntity:
		return "Invalid Parameters"
	case http.StatusTooManyRequests:
		return "Rate Limit Reached"
	case http.StatusInternalServerError:
		return "Server Error"
	case http.StatusServiceUnavailable:
		return "Server Overloaded"
	}
	return strings.ToLower(http.StatusText(status))
}

func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}
