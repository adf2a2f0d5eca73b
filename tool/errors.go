package tool

import (
	"errors"
	"fmt"
)

// Error codes of the tool runtime (docs/behaviour.md §5.2). Tool packages define their own
// domain codes (for example FS_NOT_FOUND) with the same Error type.
const (
	CodeUnknownTool           = "UNKNOWN_TOOL"
	CodeInvalidArgs           = "INVALID_ARGS"
	CodeInvalidToolOutput     = "INVALID_TOOL_OUTPUT"
	CodeUnsupportedSchema     = "UNSUPPORTED_SCHEMA"
	CodeAborted               = "ABORTED"
	CodeAbortedBeforeDispatch = "ABORTED_BEFORE_DISPATCH"
	CodeToolTimeout           = "TOOL_TIMEOUT"
	CodeCodeRunFailed         = "CODE_RUN_FAILED"
	CodeToolNotStarted        = "TOOL_NOT_STARTED"
	CodeToolOutcomeUnknown    = "TOOL_OUTCOME_UNKNOWN"
	// CodeToolPanic marks a call ended by a panic or runtime.Goexit in its body, a hook, a
	// guard, the approver, a wrapper or finalize-content; the message says where.
	CodeToolPanic = "TOOL_PANIC"
)

// panicFailure is the TOOL_PANIC error of a panic with value p in where ("the body", "a
// pre-execute hook", …) of tool name. A panic value that is an error stays in the chain, for
// errors.Is and errors.As.
func panicFailure(name, where string, p any) *Error {
	err, _ := p.(error)
	return &Error{Name: "ToolPanicError", Code: CodeToolPanic, Err: err,
		Message: fmt.Sprintf("tool \"%s\": %s panicked: %s", name, where, ErrorMessage(p))}
}

// goexitFailure is the TOOL_PANIC error of a runtime.Goexit in where of tool name.
func goexitFailure(name, where string) *Error {
	return &Error{Name: "ToolPanicError", Code: CodeToolPanic,
		Message: fmt.Sprintf("tool \"%s\": %s called runtime.Goexit", name, where)}
}

// Error is a coded error: a failure whose Name and Code reach the result as error.info.
// A tool body returns one (or wraps one) to give the model and the log a stable code;
// any other error yields a failure without info.
type Error struct {
	Name    string // the error class, e.g. "ToolArgsError"
	Code    string // the stable code, e.g. "INVALID_ARGS"
	Message string // the human-readable message
	Err     error  // an optional underlying cause, for errors.Is / errors.As
}

// NewError returns a coded error with the given class name, code and message.
func NewError(name, code, message string) *Error {
	return &Error{Name: name, Code: code, Message: message}
}

// Errorf returns a coded error whose message is formatted with fmt.Sprintf.
func Errorf(name, code, format string, args ...any) *Error {
	return &Error{Name: name, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Info is the durable identity of a coded failure: {name, code}.
type Info struct {
	Name string `json:"name"`
	Code string `json:"code"`
}

// ErrorName returns the error class name ("Error" when unset).
func (e *Error) ErrorName() string {
	if e.Name == "" {
		return "Error"
	}
	return e.Name
}

// ErrorCode returns the stable code.
func (e *Error) ErrorCode() string { return e.Code }

// Coded is implemented by errors that carry a class name and a stable code. Packages that
// cannot import tool (schema, coderuntime) implement it to have their codes reach results.
type Coded interface {
	error
	ErrorName() string
	ErrorCode() string
}

// InfoOf returns the Info of the first coded error in err's chain, or nil when err carries
// no code. It never panics: an error whose methods panic (a typed nil, say) has no info.
func InfoOf(err error) (info *Info) {
	defer func() {
		if recover() != nil {
			info = nil
		}
	}()
	var ce Coded
	if errors.As(err, &ce) && ce.ErrorCode() != "" {
		return &Info{Name: ce.ErrorName(), Code: ce.ErrorCode()}
	}
	return nil
}
