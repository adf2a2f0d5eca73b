// Package coderuntime is the contract between Code Mode and the engines that run a
// model-written program against host bindings (docs/behaviour.md §10.7).
//
// A Runtime runs one program per Run call in isolation from every other run, exposes the
// request's binding namespaces to it as global objects of async functions, and reports the
// outcome as a Result. Every program outcome, including budget expiry, cancellation and the
// death of the execution substrate, is a Result whose Error field says what failed; Run
// returns a Go error only when the caller misuses the contract (invalid binding
// declarations, a run after Close).
//
// The package holds no engine. Backends live in sub-packages (coderuntime/quickjs runs
// TypeScript in a worker subprocess); this package provides what every backend shares: the
// request and result vocabulary, the portable naming rules for bindings (ValidateBindings)
// and the outer-output ledger that bounds what a run may return (Ledger).
package coderuntime

import (
	"context"
	"errors"
)

// Func is one host function exposed to a program as an async callable. args is a lossless
// JSON value (see package jsonv) that the runtime has already validated; the returned value
// must be lossless JSON too, or the program sees the call fail with
// "binding resolution must be lossless JSON". A returned error rejects the program-side call
// with the error's message. ctx is cancelled, with cause ErrRunSettled, when the run settles,
// so a long-running binding must watch it: Run waits for every binding call it started
// before it returns.
type Func func(ctx context.Context, args any) (any, error)

// ErrorClass declares the typed rejection a namespace's failed calls raise inside the
// program. The runtime injects a real error constructor under Name; a rejected call becomes
// an instance whose name is Name, whose MemberNameProperty property holds the function name
// and whose message is the host error's message, so `instanceof` works in the program.
type ErrorClass struct {
	Name               string `json:"name"`
	MemberNameProperty string `json:"memberNameProperty"`
}

// Namespace is a group of host functions the program sees as one global object, such as
// `tools`. Function names are arbitrary strings and are own properties of that object:
// `__proto__` and `constructor` are ordinary names.
type Namespace struct {
	Global     string
	Functions  map[string]Func
	ErrorClass *ErrorClass
}

// Request is one run: the program source in the runtime's language and the bindings it may
// call. The program is the body of an async function, so top-level await and return work.
// Cancellation comes from the context passed to Run.
type Request struct {
	Program  string
	Bindings []Namespace
}

// FailureKind classifies why a run failed. The kinds are orthogonal: a budget expiry is not
// an exception, a cancellation is not a timeout and a substrate death is neither.
type FailureKind string

// The failure kinds of docs/behaviour.md §10.7, spelled as on the wire.
const (
	// FailureException: the program threw, or did not parse or type-strip.
	FailureException FailureKind = "exception"
	// FailureTimeout: a runtime budget expired; the message says which.
	FailureTimeout FailureKind = "timeout"
	// FailureAbort: the run's context was cancelled or the runtime was closed.
	FailureAbort FailureKind = "abort"
	// FailureWorkerExit: the execution substrate died before the program settled.
	FailureWorkerExit FailureKind = "worker-exit"
	// FailureInvalidOutput: the completion value was not lossless JSON.
	FailureInvalidOutput FailureKind = "invalid-output"
	// FailureOutputLimit: logs plus completion exceeded the output cap.
	FailureOutputLimit FailureKind = "output-limit"
)

// Failure says why a run failed, in words fit to show the model so it can correct itself.
type Failure struct {
	Kind    FailureKind `json:"kind"`
	Message string      `json:"message"`
}

// Error formats the failure as "<kind>: <message>" so a Failure can be used as an error.
func (f *Failure) Error() string { return string(f.Kind) + ": " + f.Message }

// Result is the outcome of one run. Logs holds what the program printed, in order, even
// when it failed. Value is the completion (the top-level return) when HasValue is set; a
// program that returned undefined, or failed, has none. Error is set iff the run failed.
type Result struct {
	Value    any
	HasValue bool
	Logs     []string
	Error    *Failure
}

// Runtime runs model-written programs. Implementations are safe for concurrent use: each
// Run is independent and no state survives from one run to the next.
type Runtime interface {
	// Language is the source language Run expects, e.g. "typescript" or "python".
	Language() string
	// Isolation describes the execution substrate, e.g. "process" or "in-process".
	// It is informational, not a security claim.
	Isolation() string
	// Run executes one program. Program outcomes are reported in the Result with a nil
	// error; the error is non-nil only for contract misuse (invalid bindings, ErrDisposed).
	// Cancelling ctx stops the program and yields a FailureAbort whose message is the
	// text of context.Cause(ctx).
	Run(ctx context.Context, req Request) (Result, error)
	// Close fails every in-flight run with FailureAbort "runtime disposed", waits until
	// their workers and binding calls have stopped, and makes later Runs return
	// ErrDisposed.
	Close() error
}

// ErrDisposed is returned by Run after the runtime was closed.
var ErrDisposed = errors.New("run() after disposal")

// ErrRunSettled is the cancellation cause of a binding call's context when its run settles
// (completes, fails, times out or is aborted) while the call is still in flight.
var ErrRunSettled = errors.New("code run settled")

// DisposedMessage is the abort message of the runs that Close interrupts.
const DisposedMessage = "runtime disposed"

// AbortMessage returns the abort message for a cancelled context: the text of its
// cancellation cause, which is what the reference runtime reports as String(signal.reason).
func AbortMessage(ctx context.Context) string {
	if cause := context.Cause(ctx); cause != nil {
		return cause.Error()
	}
	return context.Canceled.Error()
}
