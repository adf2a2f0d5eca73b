package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/dsh-go/dsh/llm"
)

// errStopped reports that the consumer stopped iterating; nothing more may be yielded.
var errStopped = errors.New("consumer stopped")

// maxWholeBody bounds a non-streamed JSON reply.
const maxWholeBody = 64 << 20

var doneMarker = []byte("[DONE]")

// Stream sends req to the endpoint and streams the reply; see llm.Model for the event
// protocol. Failed attempts are retried as the package documentation describes.
func (m *Model) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		body, err := m.requestBody(req)
		if err != nil {
			yield(llm.Event{}, err)
			return
		}
		for attempt := 1; ; attempt++ {
			streamed, err := m.attempt(ctx, body, yield)
			if err == nil || errors.Is(err, errStopped) {
				return
			}
			var e *llm.Error
			if !errors.As(err, &e) {
				e = &llm.Error{Code: llm.CodeTransport, Message: err.Error(), Err: err}
			}
			e.Attempts = attempt
			if streamed || !retryable(e) || attempt > m.cfg.MaxRetries {
				// attempt counts the requests made; only a retried failure mentions it.
				if attempt > 1 && e.Code != llm.CodeAborted {
					e.Message += fmt.Sprintf(" (gave up after %d attempts)", attempt)
				}
				yield(llm.Event{}, e)
				return
			}
			if e.RetryAfter > m.cfg.RetryMaxDelay {
				e.Message += fmt.Sprintf(" (the server asks to wait %s before retrying)", e.RetryAfter)
				yield(llm.Event{}, e)
				return
			}
			if !m.sleep(ctx.Done(), m.backoff(attempt, e.RetryAfter)) {
				yield(llm.Event{}, m.contextError(ctx))
				return
			}
		}
	}
}

// retryable reports whether a failed attempt that streamed nothing is worth repeating: only
// a rate limit (HTTP 429), a server fault (HTTP 5xx, or a 200 reply with no content) or a
// failed connection (including a stream cut before its first event). Everything else — a
// rejected key, an unknown model, an invalid request, a request timeout, an idle timeout —
// would fail the same way again.
func retryable(e *llm.Error) bool {
	switch e.Code {
	case llm.CodeRateLimit, llm.CodeTransport, llm.CodeStreamClosed, llm.CodeEmptyResponse:
		return true
	case llm.CodeServer:
		return e.Status == 0 || e.Status >= 500
	}
	return false
}

// backoff returns the delay before retry number attempt: what the server asked for, or
// RetryBaseDelay doubled per attempt, capped at RetryMaxDelay, with "equal jitter"
// (uniform between half and all of it) so that clients that failed together spread out.
func (m *Model) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	d := m.cfg.RetryBaseDelay
	for i := 1; i < attempt && d < m.cfg.RetryMaxDelay; i++ {
		d *= 2
	}
	d = min(d, m.cfg.RetryMaxDelay)
	half := d / 2
	return half + rand.N(d-half+1)
}

// attempt makes one request and streams its reply. streamed reports whether any event
// reached the consumer, which forbids a retry.
func (m *Model) attempt(ctx context.Context, body []byte, yield func(llm.Event, error) bool) (streamed bool, err error) {
	reqCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var watchdog *time.Timer
	if m.cfg.IdleTimeout > 0 {
		watchdog = time.AfterFunc(m.cfg.IdleTimeout, func() { cancel(errIdle) })
		defer watchdog.Stop()
	}
	hreq, err := http.NewRequestWithContext(reqCtx, http.MethodPost, m.url, bytes.NewReader(body))
	if err != nil {
		return false, &llm.Error{Code: llm.CodeInvalidRequest, Err: err,
			Message: fmt.Sprintf("building the request to %s: %v", m.url, err)}
	}
	m.setHeaders(hreq.Header)
	resp, err := m.client.Do(hreq)
	if err != nil {
		return false, m.failure(ctx, reqCtx, err, m.connectError)
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if watchdog != nil {
		watchdog.Reset(m.cfg.IdleTimeout)
		r = &idleReader{r: r, t: watchdog, d: m.cfg.IdleTimeout}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, err := io.ReadAll(io.LimitReader(r, maxErrorBody))
		if err != nil && len(data) == 0 {
			if e := m.contextError(ctx); e != nil {
				return false, e
			}
		}
		return false, m.statusError(resp.StatusCode, resp.Header, data)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		return m.consumeWhole(ctx, reqCtx, r, yield)
	}
	return m.consume(ctx, reqCtx, r, yield)
}

func (m *Model) setHeaders(h http.Header) {
	for name, values := range m.cfg.Header {
		for _, v := range values {
			h.Add(name, v)
		}
	}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	h.Set("User-Agent", m.cfg.UserAgent)
	if m.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+m.cfg.APIKey)
	}
}

// failure classifies an I/O error: the caller's cancellation or deadline first, then the
// idle watchdog, then a client timeout, then fallback.
func (m *Model) failure(ctx, reqCtx context.Context, err error, fallback func(error) *llm.Error) *llm.Error {
	if e := m.contextError(ctx); e != nil {
		return e
	}
	if errors.Is(context.Cause(reqCtx), errIdle) {
		return m.idleError(err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &llm.Error{Code: llm.CodeTimeout, Err: err,
			Message: fmt.Sprintf("the request to %s timed out: %v", m.baseURL, unwrapURLError(err))}
	}
	return fallback(err)
}

// idleReader re-arms the idle watchdog whenever bytes arrive.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.t.Reset(r.d)
	}
	return n, err
}

// wireChunk is one streamed chat-completions chunk, or an error object some servers send
// inside the stream.
type wireChunk struct {
	Model   string                                `json:"model"`
	Choices []goopenai.ChatCompletionStreamChoice `json:"choices"`
	Usage   *wireUsage                            `json:"usage"`
	Error   json.RawMessage                       `json:"error"`
}

// wireUsage is the usage object, with DeepSeek's cache-hit count next to OpenAI's.
type wireUsage struct {
	goopenai.Usage
	PromptCacheHitTokens *int `json:"prompt_cache_hit_tokens"`
}

// usage maps wire usage to disjoint counts: prompt tokens include cache hits on the wire.
func (u *wireUsage) usage() llm.Usage {
	cached := 0
	switch {
	case u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens > 0:
		cached = u.PromptTokensDetails.CachedTokens
	case u.PromptCacheHitTokens != nil:
		cached = *u.PromptCacheHitTokens
	}
	out := llm.Usage{
		InputTokens:     max(u.PromptTokens-cached, 0),
		OutputTokens:    u.CompletionTokens,
		CacheReadTokens: cached,
	}
	if u.CompletionTokensDetails != nil {
		out.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	return out
}

// reply is the state of one reply under assembly.
type reply struct {
	asm    *llm.Assembler
	keys   callKeys
	model  string
	finish string
	usage  llm.Usage
}

// apply feeds one chunk to the assembler; false means the consumer stopped.
func (st *reply) apply(c *wireChunk) bool {
	if st.model == "" {
		st.model = c.Model
	}
	if c.Usage != nil {
		st.usage = c.Usage.usage()
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue
		}
		d := &ch.Delta
		if !st.asm.Reasoning(d.ReasoningContent) || !st.asm.Text(d.Content) {
			return false
		}
		for _, tc := range d.ToolCalls {
			if !st.asm.ToolCall(st.keys.key(tc.Index, tc.ID), tc.ID, tc.Function.Name, tc.Function.Arguments) {
				return false
			}
		}
		if fc := d.FunctionCall; fc != nil && !st.asm.ToolCall(legacyFunctionKey, "", fc.Name, fc.Arguments) {
			return false
		}
		if ch.FinishReason != "" && ch.FinishReason != goopenai.FinishReasonNull {
			st.finish = string(ch.FinishReason)
		}
	}
	return true
}

// end finishes the reply: it maps the finish reason and emits the closing events.
func (st *reply) end(m *Model) error {
	var reason llm.FinishReason
	switch st.finish {
	case "", "stop":
		reason = llm.FinishStop
	case "tool_calls", "function_call":
		reason = llm.FinishToolCalls
	case "length":
		reason = llm.FinishMaxTokens
	default:
		return &llm.Error{Code: strings.ToUpper(st.finish),
			Message: fmt.Sprintf("the model stopped: %s", st.finish)}
	}
	if st.asm.Len() == 0 && reason != llm.FinishMaxTokens {
		return &llm.Error{Code: llm.CodeEmptyResponse,
			Message: fmt.Sprintf("%s returned a completed reply with no content", m.baseURL)}
	}
	model := st.model
	if model == "" {
		model = m.cfg.Model
	}
	st.asm.Finish(reason, st.usage, model)
	return nil
}

// consume reads an event stream.
func (m *Model) consume(ctx, reqCtx context.Context, r io.Reader, yield func(llm.Event, error) bool) (streamed bool, err error) {
	st := reply{asm: llm.NewAssembler(func(ev llm.Event) bool {
		streamed = true
		return yield(ev, nil)
	})}
	sse := newSSEReader(r)
	chunks := 0
	for {
		event, data, err := sse.next()
		switch {
		case err == io.EOF:
			if st.finish != "" {
				return streamed, st.end(m)
			}
			return streamed, droppedError(fmt.Sprintf("no [DONE] and no finish_reason after %d chunks", chunks), nil)
		case err == errTruncatedEvent:
			return streamed, droppedError(fmt.Sprintf("it ended in the middle of an event after %d chunks", chunks), err)
		case errors.Is(err, bufio.ErrTooLong):
			return streamed, &llm.Error{Code: llm.CodeMalformedResponse, Err: err,
				Message: fmt.Sprintf("%s sent a stream line longer than %d bytes", m.baseURL, maxLine)}
		case err != nil:
			return streamed, m.failure(ctx, reqCtx, err, func(err error) *llm.Error {
				return droppedError(fmt.Sprintf("%v after %d chunks", unwrapURLError(err), chunks), err)
			})
		}
		if bytes.Equal(data, doneMarker) {
			return streamed, st.end(m)
		}
		if string(event) == "error" {
			return streamed, m.inBandError(data)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		chunks++
		var c wireChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return streamed, &llm.Error{Code: llm.CodeMalformedResponse, Err: err, Message: fmt.Sprintf(
				"%s sent a malformed stream chunk: %v (chunk: %s)", m.baseURL, err, oneLine(string(data), 120))}
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			return streamed, m.inBandError(c.Error)
		}
		if !st.apply(&c) {
			return streamed, errStopped
		}
	}
}

// wholeReply is a non-streamed chat-completions reply, which some servers send despite
// "stream": true.
type wholeReply struct {
	Model   string `json:"model"`
	Choices []struct {
		Index        int                            `json:"index"`
		Message      goopenai.ChatCompletionMessage `json:"message"`
		FinishReason string                         `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// consumeWhole reads a non-streamed JSON reply and emits it as if it had been streamed.
func (m *Model) consumeWhole(ctx, reqCtx context.Context, r io.Reader, yield func(llm.Event, error) bool) (streamed bool, err error) {
	data, err := io.ReadAll(io.LimitReader(r, maxWholeBody))
	if err != nil {
		return false, m.failure(ctx, reqCtx, err, func(err error) *llm.Error {
			return droppedError(unwrapURLError(err).Error(), err)
		})
	}
	var w wholeReply
	if err := json.Unmarshal(data, &w); err != nil {
		return false, &llm.Error{Code: llm.CodeMalformedResponse, Err: err, Message: fmt.Sprintf(
			"%s sent a malformed reply: %v (reply: %s)", m.baseURL, err, oneLine(string(data), 120))}
	}
	if len(w.Error) > 0 && string(w.Error) != "null" {
		return false, m.inBandError(w.Error)
	}
	st := reply{asm: llm.NewAssembler(func(ev llm.Event) bool {
		streamed = true
		return yield(ev, nil)
	}), model: w.Model}
	if w.Usage != nil {
		st.usage = w.Usage.usage()
	}
	for _, ch := range w.Choices {
		if ch.Index != 0 {
			continue
		}
		msg := ch.Message
		if !st.asm.Reasoning(msg.ReasoningContent) || !st.asm.Text(msg.Content) {
			return streamed, errStopped
		}
		for i, tc := range msg.ToolCalls {
			if !st.asm.ToolCall(i, tc.ID, tc.Function.Name, tc.Function.Arguments) {
				return streamed, errStopped
			}
		}
		st.finish = ch.FinishReason
	}
	if len(w.Choices) == 0 {
		return false, &llm.Error{Code: llm.CodeMalformedResponse, Message: fmt.Sprintf(
			"%s sent a reply without choices: %s", m.baseURL, oneLine(string(data), 120))}
	}
	return streamed, st.end(m)
}

// legacyFunctionKey is the assembler key of a pre-tools "function_call" delta.
const legacyFunctionKey = -1

// callKeys maps the tool-call deltas of one reply to assembler keys. Deltas are matched by
// index; a server that sends no index is matched by id, and a delta with neither continues
// the previous call. A new id under an index that already has a different one starts a new
// call (some servers number every call 0).
type callKeys struct {
	byIndex map[int]int
	byID    map[string]int
	ids     []string // key → first id
	last    int
}

func (c *callKeys) key(index *int, id string) int {
	k := -1
	switch {
	case index != nil:
		if known, ok := c.byIndex[*index]; ok && (id == "" || c.ids[known] == "" || c.ids[known] == id) {
			k = known
		} else {
			k = c.fresh()
			if c.byIndex == nil {
				c.byIndex = make(map[int]int)
			}
			c.byIndex[*index] = k
		}
	case id != "":
		if known, ok := c.byID[id]; ok {
			k = known
		} else {
			k = c.fresh()
		}
	case len(c.ids) > 0:
		k = c.last
	default:
		k = c.fresh()
	}
	if id != "" {
		if c.ids[k] == "" {
			c.ids[k] = id
		}
		if c.byID == nil {
			c.byID = make(map[string]int)
		}
		c.byID[id] = k
	}
	c.last = k
	return k
}

func (c *callKeys) fresh() int {
	c.ids = append(c.ids, "")
	return len(c.ids) - 1
}
