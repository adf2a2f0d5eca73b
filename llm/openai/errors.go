package openai

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/dsh-go/dsh/llm"
)

// errIdle is the cancellation cause set by the idle watchdog.
var errIdle = errors.New("idle timeout")

// maxErrorBody bounds how much of a failed response is read for its message.
const maxErrorBody = 64 << 10

// serverMessage extracts the human-readable message (and the provider's code and type)
// from an error body: {"error":{"message":…}}, {"error":"…"}, {"message":…} or plain text.
func serverMessage(body []byte) (msg, detail string) {
	var resp goopenai.ErrorResponse
	if json.Unmarshal(body, &resp) == nil && resp.Error != nil && resp.Error.Message != "" {
		e := resp.Error
		code := ""
		if e.Code != nil {
			code = fmt.Sprint(e.Code)
		}
		return e.Message, strings.Join([]string{code, e.Type, e.Message}, " ")
	}
	var loose struct {
		Error   any    `json:"error"`
		Message string `json:"message"`
		Detail  string `json:"detail"`
	}
	if json.Unmarshal(body, &loose) == nil {
		if s, ok := loose.Error.(string); ok && s != "" {
			return s, s
		}
		if loose.Message != "" {
			return loose.Message, loose.Message
		}
		if loose.Detail != "" {
			return loose.Detail, loose.Detail
		}
	}
	s := oneLine(string(body), 300)
	return s, s
}

// oneLine collapses whitespace and cuts s to at most n bytes (on a rune boundary).
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func containsAny(s string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func isUnknownModel(detail string) bool {
	d := strings.ToLower(detail)
	return strings.Contains(d, "model") && containsAny(d,
		"not exist", "not found", "not_found", "does not exist", "unknown model", "no such model", "unsupported model")
}

func isContextWindow(detail string) bool {
	return containsAny(strings.ToLower(detail), "context length", "context_length", "maximum context",
		"context window", "too many tokens", "prompt is too long", "context_window")
}

func isQuota(detail string) bool {
	return containsAny(strings.ToLower(detail), "insufficient balance", "insufficient_balance",
		"insufficient_quota", "exceeded your current quota", "quota exceeded")
}

// statusError classifies a non-2xx response.
func (m *Model) statusError(status int, header http.Header, body []byte) *llm.Error {
	msg, detail := serverMessage(body)
	if msg == "" {
		msg = http.StatusText(status)
	}
	e := &llm.Error{Status: status, RetryAfter: retryAfter(header, time.Now())}
	base := m.baseURL
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Code = llm.CodeAuth
		if m.cfg.APIKey == "" {
			e.Message = fmt.Sprintf("%s requires an API key (HTTP %d): %s", base, status, msg)
		} else {
			e.Message = fmt.Sprintf("the API key was rejected by %s (HTTP %d): %s", base, status, msg)
		}
		if m.cfg.APIKeyEnv != "" {
			e.Message += fmt.Sprintf(" (check %s)", m.cfg.APIKeyEnv)
		}
	case status == http.StatusPaymentRequired || isQuota(detail):
		e.Code = llm.CodeQuotaExceeded
		e.Message = fmt.Sprintf("%s refused the request for lack of balance or quota (HTTP %d): %s", base, status, msg)
	case (status == http.StatusNotFound || status == http.StatusBadRequest || status == http.StatusUnprocessableEntity) && isUnknownModel(detail):
		e.Code = llm.CodeUnknownModel
		e.Message = fmt.Sprintf("model %q is not available at %s: %s", m.cfg.Model, base, msg)
		if r := RetiredModelError(m.cfg.Model); r != nil {
			e.Message = fmt.Sprintf("%s answered %q (HTTP %d): %s", base, msg, status, r.Message)
		}
	case status == http.StatusNotFound:
		e.Code = llm.CodeNotFound
		e.Message = fmt.Sprintf("%s was not found (HTTP 404); check the base URL: %s", m.url, msg)
	case status == http.StatusTooManyRequests:
		e.Code = llm.CodeRateLimit
		e.Message = fmt.Sprintf("%s is rate limiting requests (HTTP 429): %s", base, msg)
	case isContextWindow(detail):
		e.Code = llm.CodeContextWindowExceeded
		e.Message = fmt.Sprintf("the conversation is too long for model %q at %s (HTTP %d): %s", m.cfg.Model, base, status, msg)
	case status == http.StatusRequestTimeout:
		e.Code = llm.CodeTimeout
		e.Message = fmt.Sprintf("%s timed out waiting for the request (HTTP 408): %s", base, msg)
	case status >= 500:
		e.Code = llm.CodeServer
		e.Message = fmt.Sprintf("%s failed with HTTP %d: %s", base, status, msg)
	default:
		e.Code = llm.CodeInvalidRequest
		e.Message = fmt.Sprintf("%s rejected the request (HTTP %d): %s", base, status, msg)
	}
	return e
}

// inBandError classifies an error object the server sent inside a 200 stream. An error that
// names a client-side HTTP status (a numeric code or status, or a type such as
// "authentication_error" or "invalid_request_error") is classified as that status would be,
// so it is not retried; anything else is a server fault.
func (m *Model) inBandError(raw []byte) *llm.Error {
	msg, detail := serverMessage(raw)
	if msg == "" || msg == "null" {
		msg = oneLine(string(raw), 300)
	}
	e := &llm.Error{Code: llm.CodeServer}
	switch d := strings.ToLower(detail); {
	case isContextWindow(d):
		e.Code = llm.CodeContextWindowExceeded
	case isQuota(d):
		e.Code = llm.CodeQuotaExceeded
	case containsAny(d, "rate limit", "rate_limit", "too many requests"):
		e.Code = llm.CodeRateLimit
	default:
		if status := inBandStatus(raw); status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests {
			e.Code = m.statusError(status, nil, raw).Code
			e.Message = fmt.Sprintf("%s reported an error in the middle of the stream (HTTP %d): %s", m.baseURL, status, msg)
			if e.Code == llm.CodeAuth && m.cfg.APIKeyEnv != "" {
				e.Message += fmt.Sprintf(" (check %s)", m.cfg.APIKeyEnv)
			}
			return e
		}
	}
	e.Message = fmt.Sprintf("%s reported an error in the middle of the stream: %s", m.baseURL, msg)
	return e
}

// inBandStatus returns the HTTP status an in-band error object names, or 0: its "status"
// or numeric "code", else one implied by its "type".
func inBandStatus(raw []byte) int {
	var outer struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &outer) == nil && len(outer.Error) > 0 && outer.Error[0] == '{' {
		raw = outer.Error
	}
	var e struct {
		Status any    `json:"status"`
		Code   any    `json:"code"`
		Type   string `json:"type"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return 0
	}
	for _, v := range []any{e.Status, e.Code} {
		var n int
		switch x := v.(type) {
		case float64:
			n = int(x)
		case string:
			n, _ = strconv.Atoi(x)
		}
		if n >= 400 && n <= 599 {
			return n
		}
	}
	switch e.Type {
	case "authentication_error":
		return http.StatusUnauthorized
	case "permission_error":
		return http.StatusForbidden
	case "invalid_request_error":
		return http.StatusBadRequest
	case "not_found_error":
		return http.StatusNotFound
	}
	return 0
}

// retryAfter reads the delay a response asks for: Retry-After-Ms (milliseconds), or
// Retry-After as seconds or an HTTP date. Anything else is 0.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// contextError is the error for a call whose own context ended, or nil when it has not.
func (m *Model) contextError(ctx context.Context) *llm.Error {
	if ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	err := ctx.Err()
	if cause != nil && !errors.Is(cause, err) {
		err = errors.Join(err, cause)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &llm.Error{Code: llm.CodeTimeout, Err: err,
			Message: fmt.Sprintf("the call to %s ran past its deadline", m.baseURL)}
	}
	return &llm.Error{Code: llm.CodeAborted, Err: err,
		Message: fmt.Sprintf("the call to %s was cancelled", m.baseURL)}
}

// idleError is the error for a request the idle watchdog abandoned.
func (m *Model) idleError(err error) *llm.Error {
	return &llm.Error{Code: llm.CodeTimeout, Err: err, Message: fmt.Sprintf(
		"%s sent nothing for %s, so the request was abandoned (idle timeout)", m.baseURL, m.cfg.IdleTimeout)}
}

// connectError classifies a failure to get a response at all.
func (m *Model) connectError(err error) *llm.Error {
	code := llm.CodeTransport
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	if (errors.As(err, &dns) && dns.IsNotFound) || errors.As(err, &cert) {
		code = llm.CodeInvalidRequest // a wrong host name or a bad certificate does not heal
	}
	return &llm.Error{Code: code, Err: err, Message: fmt.Sprintf("could not reach %s: %v", m.baseURL, unwrapURLError(err))}
}

// unwrapURLError drops the *url.Error wrapper, whose message repeats the method and URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}

// droppedError is the error for a stream that ended before the reply finished.
func droppedError(why string, err error) *llm.Error {
	return &llm.Error{Code: llm.CodeStreamClosed, Err: err,
		Message: fmt.Sprintf("the server closed the stream before the reply finished (%s)", why)}
}
