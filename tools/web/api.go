package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxBody bounds an API response read into memory.
const maxBody = 32 << 20

// post sends one API request and decodes its JSON answer into out, retrying 429, 5xx and
// connection failures with backoff. The error says what failed, where, and after how many
// attempts when there were several.
func (c *client) post(ctx context.Context, toolName, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return webError(CodeInvalidArgs, "%s: encoding the request: %v", toolName, err)
	}
	endpoint := c.base + path
	for attempt := 1; ; attempt++ {
		retryAfter, err := c.once(ctx, toolName, endpoint, body, out)
		if err == nil {
			return nil
		}
		var te *attemptError
		if !errors.As(err, &te) {
			return err // cancellation, a malformed answer: not retried
		}
		giveUp := !te.retry || attempt > c.MaxRetries
		if !giveUp {
			d := c.backoff(attempt, retryAfter)
			if retryAfter > c.RetryMaxDelay {
				te.msg += fmt.Sprintf(" (the API asks to wait %s before retrying)", retryAfter)
				giveUp = true
			} else if c.Sleep(ctx, d) != nil {
				return aborted(ctx, toolName)
			}
		}
		if giveUp {
			if attempt > 1 {
				te.msg += fmt.Sprintf(" (gave up after %d attempts)", attempt)
			}
			return webError(te.code, "%s", te.msg)
		}
	}
}

// attemptError is a failed request, retryable or not.
type attemptError struct {
	code, msg string
	retry     bool
}

func (e *attemptError) Error() string { return e.msg }

// backoff is the delay before retry number attempt: what the API asked for, else
// RetryBaseDelay doubled per attempt, capped at RetryMaxDelay.
func (c *client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	d := c.RetryBaseDelay
	for i := 1; i < attempt && d < c.RetryMaxDelay; i++ {
		d *= 2
	}
	return min(d, c.RetryMaxDelay)
}

// once makes one request. It returns the delay a 429 or 503 asked for.
func (c *client) once(ctx context.Context, toolName, endpoint string, body []byte, out any) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, webError(CodeNoEndpoint, "%s: building the request to %s: %v", toolName, endpoint, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.APIKey)
	req.Header.Set("User-Agent", "dsh (+https://github.com/dsh-go/dsh)")
	resp, err := c.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, aborted(ctx, toolName)
		}
		return 0, &attemptError{code: CodeTransport, retry: true, msg: fmt.Sprintf("%s could not reach %s: %v", toolName, endpoint, unwrap(err))}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return 0, aborted(ctx, toolName)
		}
		return 0, &attemptError{code: CodeTransport, retry: true, msg: fmt.Sprintf("%s: reading the answer of %s: %v", toolName, endpoint, err)}
	}
	if resp.StatusCode != http.StatusOK {
		return retryAfter(resp.Header), statusError(toolName, endpoint, c.APIKeyEnv, resp.StatusCode, data)
	}
	if len(data) > maxBody {
		return 0, webError(CodeMalformed, "%s: %s answered more than %d bytes", toolName, endpoint, maxBody)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return 0, webError(CodeMalformed, "%s: %s answered something that is not a result: %v (answer: %s)", toolName, endpoint, err, excerpt(data))
	}
	return 0, nil
}

// statusError classifies an error status.
func statusError(toolName, endpoint, keyEnv string, status int, body []byte) error {
	msg := apiMessage(body)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return &attemptError{code: CodeAuth, msg: fmt.Sprintf("%s: the API key was rejected by %s (HTTP %d): %s (check %s)", toolName, endpoint, status, msg, keyEnv)}
	case status == http.StatusTooManyRequests:
		return &attemptError{code: CodeRateLimit, retry: true, msg: fmt.Sprintf("%s: %s is rate limiting requests (HTTP 429): %s", toolName, endpoint, msg)}
	case status >= 500:
		return &attemptError{code: CodeServer, retry: true, msg: fmt.Sprintf("%s: %s failed with HTTP %d: %s", toolName, endpoint, status, msg)}
	case status == http.StatusNotFound:
		return &attemptError{code: CodeNoEndpoint, msg: fmt.Sprintf("%s: %s was not found (HTTP 404): the server has no Search and Fetch APIs there; check web.baseUrl", toolName, endpoint)}
	}
	return &attemptError{code: CodeRejected, msg: fmt.Sprintf("%s: %s rejected the request (HTTP %d): %s", toolName, endpoint, status, msg)}
}

// apiMessage extracts the message of DeepSeek's error JSON, else an excerpt of the body.
func apiMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil {
		if e.Error.Message != "" {
			return e.Error.Message
		}
		if e.Message != "" {
			return e.Message
		}
	}
	return excerpt(body)
}

// excerpt is the first 200 bytes of body on one line.
func excerpt(body []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(body), "\uFFFD")), " ")
	if len(s) <= 200 {
		return s
	}
	cut := 200
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// retryAfter reads Retry-After in seconds (0 when absent or not a number).
func retryAfter(h http.Header) time.Duration {
	s, err := strconv.ParseFloat(strings.TrimSpace(h.Get("Retry-After")), 64)
	if err != nil || s <= 0 || s > 1e6 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

// unwrap drops the *url.Error wrapper, whose message repeats the method and URL.
func unwrap(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}
