package llm

import (
	"context"
	"errors"
	"time"
)

// Error codes of model calls. They are stable: callers route on them (errors.As to *Error,
// then Code), never on message text.
const (
	CodeMissingAPIKey         = "MISSING_API_KEY"         // no API key is configured
	CodeAuth                  = "AUTH"                    // the server rejected the key (HTTP 401/403)
	CodeUnknownModel          = "UNKNOWN_MODEL"           // the server does not serve the model
	CodeNotFound              = "NOT_FOUND"               // the endpoint does not exist (HTTP 404): a wrong base URL
	CodeQuotaExceeded         = "QUOTA_EXCEEDED"          // the account is out of balance or quota
	CodeRateLimit             = "RATE_LIMIT"              // HTTP 429
	CodeServer                = "SERVER"                  // HTTP 5xx
	CodeInvalidRequest        = "INVALID_REQUEST"         // the server rejected the request (other HTTP 4xx)
	CodeContextWindowExceeded = "CONTEXT_WINDOW_EXCEEDED" // the conversation is too long for the model
	CodeTransport             = "TRANSPORT"               // the server could not be reached or the connection failed
	CodeTimeout               = "TIMEOUT"                 // the server sent nothing for too long, or a deadline passed
	CodeStreamClosed          = "STREAM_CLOSED"           // the stream ended before the reply finished
	CodeMalformedResponse     = "MALFORMED_RESPONSE"      // the server sent something that is not a valid reply
	CodeEmptyResponse         = "EMPTY_RESPONSE"          // the reply finished without any content
	CodeAborted               = "ABORTED"                 // the caller cancelled the call
	CodeScriptExhausted       = "SCRIPT_EXHAUSTED"        // a scripted model has no reply left
	CodeScriptMismatch        = "SCRIPT_MISMATCH"         // a request did not match what the script expects
	CodeScripted              = "SCRIPTED_ERROR"          // a scripted reply that fails on purpose
)

// Error is a failed model call. Message is complete and meant for people; Code is for
// programs. Errors from adapters are *Error values (possibly wrapped), so
//
//	var e *llm.Error
//	if errors.As(err, &e) && e.Code == llm.CodeAuth { … }
//
// works for every adapter.
type Error struct {
	// Code is one of the Code constants, or an upper-case provider finish reason such as
	// "CONTENT_FILTER" when the model stopped for a reason dsh does not know.
	Code string
	// Message describes what failed, where, and what to do about it when that is known.
	Message string
	// Status is the HTTP status of the failed response, or 0.
	Status int
	// RetryAfter is the delay the server asked for before a retry, or 0.
	RetryAfter time.Duration
	// Attempts is how many requests were made before giving up (0 when none was made).
	Attempts int
	// Err is the underlying cause, for errors.Is and errors.As.
	Err error
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrorName returns the error class name, "LLMError"; with ErrorCode it implements the
// tool.Coded interface so a failure can be logged with a stable identity.
func (e *Error) ErrorName() string { return "LLMError" }

// ErrorCode returns Code.
func (e *Error) ErrorCode() string { return e.Code }

// Retryable reports whether a fresh request may succeed where this one failed: rate limits,
// server errors, transport failures, timeouts, truncated streams and empty replies.
// Adapters have already retried what they could before returning the error.
func (e *Error) Retryable() bool {
	switch e.Code {
	case CodeRateLimit, CodeServer, CodeTransport, CodeTimeout, CodeStreamClosed, CodeEmptyResponse:
		return true
	}
	return false
}

// CodeOf returns the Code of the first *Error in err's chain. A bare context cancellation is
// CodeAborted and a bare deadline CodeTimeout; any other error yields "".
func CodeOf(err error) string {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, context.Canceled):
		return CodeAborted
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout
	}
	return ""
}

// finishReasonOf maps a stream error to the finish reason Collect reports with it.
func finishReasonOf(err error) FinishReason {
	if CodeOf(err) == CodeAborted {
		return FinishAborted
	}
	return FinishError
}
