// Package timeout is the timeout policy (docs/behaviour.md §11.1): it turns the cooperative budget a tool
// declares (tool.Definition.Timeout, tool.WithTimeout) into a deadline on the call's context
// and reports an expired budget to the model as a TOOL_TIMEOUT failure.
//
// Install adds the policy as a deadline hook (tool.Scope.OnDeadline): the pipeline itself
// arms the budget around the body, on the goroutine that runs it, so the policy costs a
// call neither a wrapper frame nor a goroutine of its own for the body. A call whose visible
// definition declares no budget keeps its context untouched. Otherwise the body runs under a
// context that is cancelled when the budget elapses (with a cause private to this call) or
// when the call's context is cancelled, and, when the budget elapsed first, whatever the body
// produced — a success, the tool's own abort error, or the registry's ABORTED — is replaced by
//
//	Error: tool call timed out after <ms>ms      (info {name: ToolTimeoutError, code: TOOL_TIMEOUT})
//
// A caller cancellation that happens first is not a timeout: the registry's ABORTED stands.
// A caller cancellation after the deadline fired keeps TOOL_TIMEOUT, the more specific cause.
//
// The deadline is cooperative only. A body that ignores its context is not stopped: the
// pipeline waits for it to return (it never abandons a running body), and only then is the
// result replaced. Tools that do I/O must pass their context down to honour their budget.
//
// Installed, the budget covers each run of the body, inside every around-execute wrapper: a
// retry wrapper gives each attempt the full budget. Wrapper is the same policy as an
// around-execute wrapper for a chain that needs the budget elsewhere: placed before
// (outside) a retry wrapper, the budget spans every attempt.
package timeout

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/dsh-go/dsh/tool"
)

// PluginID is the policy's plugin id, as in the reference harness.
const PluginID = "timeout-policy"

// MaxBudget is the largest budget the policy arms (2147483647 ms, the reference's timer
// limit). A call of a tool declaring more fails before its body runs.
const MaxBudget = math.MaxInt32 * time.Millisecond

// ErrToolTimeout is the cause a body observes through context.Cause when the policy's
// deadline ends its call: errors.Is(context.Cause(ctx), timeout.ErrToolTimeout) tells a
// timeout from a caller cancellation.
var ErrToolTimeout = errors.New("tool call timed out")

// Config configures the timeout policy. The zero Config is the policy as dsh runs it.
type Config struct {
	// Clock arms the deadlines. Nil is the real clock, under which a budgeted body's context
	// also reports its deadline (ctx.Deadline). A test injects its own Clock to fire a
	// deadline at a moment it chooses instead of after real time passes.
	Clock Clock
}

// Clock arms timers for the policy's deadlines.
type Clock interface {
	// AfterFunc calls f in its own goroutine once d has elapsed, unless stop is called
	// first; stop reports whether it prevented the call.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Validate reports a configuration error; the empty configuration is always valid.
func (Config) Validate() error { return nil }

// reason is the cancellation cause of one armed deadline. Each call gets its own, so a
// deadline of another wrapper (an outer timeout policy, a caller deadline) is never mistaken
// for this call's own.
type reason struct{ budget time.Duration }

func (r *reason) Error() string { return "tool call timed out after " + FormatMillis(r.budget) + "ms" }
func (r *reason) Unwrap() error { return ErrToolTimeout }

// Install adds the policy to scope (the registry's global scope covers every call; an
// agent's scope only that agent's calls and its descendants') as a deadline hook
// (DeadlineFunc). The returned function removes it.
func Install(scope *tool.Scope, cfg Config) (undo func(), err error) {
	if scope == nil {
		return nil, errors.New("timeout: Install needs a scope (use reg.Global() for every call)")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return scope.OnDeadline(DeadlineFunc(scope.Registry(), cfg)), nil
}

// DeadlineFunc returns the policy as a deadline hook for reg: each call gets the budget its
// visible definition declares, armed by the pipeline around the body, with a cause of its
// own and the TOOL_TIMEOUT failure for an expiry. A budget above MaxBudget fails the call
// before its body runs.
func DeadlineFunc(reg *tool.Registry, cfg Config) tool.DeadlineFunc {
	var after func(time.Duration, func()) func() bool
	if cfg.Clock != nil {
		after = cfg.Clock.AfterFunc
	}
	return func(exec *tool.Execution) (tool.Deadline, error) {
		budget, err := budgetOf(reg, exec)
		if err != nil || budget <= 0 {
			return tool.Deadline{}, err
		}
		return tool.Deadline{Budget: budget, Cause: &reason{budget: budget}, Expired: expired(budget), AfterFunc: after}, nil
	}
}

// budgetOf returns the budget the definition of exec's tool visible to its agent declares:
// zero for none (or no such tool), an error above MaxBudget.
func budgetOf(reg *tool.Registry, exec *tool.Execution) (time.Duration, error) {
	def := reg.Get(exec.Name(), exec.Agent())
	if def == nil || def.Timeout <= 0 {
		return 0, nil
	}
	if def.Timeout > MaxBudget {
		return 0, fmt.Errorf("deadline timeoutMs must be a positive finite number no greater than %d (tool %q declares %sms)",
			int64(math.MaxInt32), exec.Name(), FormatMillis(def.Timeout))
	}
	return def.Timeout, nil
}

// Wrapper returns the timeout policy's around-execute function for reg, for callers that
// place it in a wrapper chain themselves. It reads each call's budget from the definition
// visible to the call's agent in reg. Installed as a wrapper, the policy makes the body of
// every call run on a goroutine of its own (see tool.ExecuteFunc); Install does not.
func Wrapper(reg *tool.Registry, cfg Config) tool.ExecuteFunc {
	return func(ctx context.Context, exec *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
		budget, err := budgetOf(reg, exec)
		if err != nil {
			return nil, err
		}
		if budget <= 0 {
			return next(ctx)
		}
		own := &reason{budget: budget}
		dctx, cancel := arm(ctx, cfg.Clock, budget, own)
		res, err := next(dctx)
		// Stop the timer before looking: a deadline that had not fired by the time the chain
		// returned must not turn a finished call into a timeout.
		cancel()
		if context.Cause(dctx) == error(own) {
			return Result(budget), nil
		}
		return res, err
	}
}

// arm derives the context of one budgeted call: cancelled with cause own when the budget
// elapses on clock (nil: the real clock), or when ctx is. The returned cancel stops the timer.
func arm(ctx context.Context, clock Clock, budget time.Duration, own error) (context.Context, context.CancelFunc) {
	if clock == nil {
		return context.WithTimeoutCause(ctx, budget, own)
	}
	dctx, cancel := context.WithCancelCause(ctx)
	stop := clock.AfterFunc(budget, func() { cancel(own) })
	return dctx, func() {
		stop()
		cancel(context.Canceled)
	}
}

// Result returns the TOOL_TIMEOUT failure of a call whose budget elapsed.
func Result(budget time.Duration) *tool.Result { return tool.Fail(expired(budget)) }

// expired is the TOOL_TIMEOUT error of a call whose budget elapsed.
func expired(budget time.Duration) *tool.Error {
	return &tool.Error{
		Name:    "ToolTimeoutError",
		Code:    tool.CodeToolTimeout,
		Message: "tool call timed out after " + FormatMillis(budget) + "ms",
	}
}

// FormatMillis renders d in milliseconds as JavaScript renders a number: 30000, 1.5.
func FormatMillis(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return strconv.FormatInt(int64(d/time.Millisecond), 10)
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64)
}
