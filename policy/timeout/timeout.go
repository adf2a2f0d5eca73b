// Package timeout is the timeout policy (docs/behaviour.md §11.1): it turns the cooperative budget a tool
// declares (tool.Definition.Timeout, tool.WithTimeout) into a deadline on the call's context
// and reports an expired budget to the model as a TOOL_TIMEOUT failure.
//
// The policy is one around-execute wrapper. For a call whose visible definition declares no
// budget it calls next with the context it was given, untouched. Otherwise it derives a
// context that is cancelled when the budget elapses (with a cause private to this call) or
// when the context it was given is cancelled, runs the rest of the chain under it, and, when
// its own deadline fired first, replaces whatever the call produced — a success, the tool's
// own abort error, or the registry's ABORTED — by
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
// Wrapper order decides what a budget covers: installed before (outside) a retry wrapper the
// budget spans every attempt; installed after (inside) it, each attempt gets the full budget.
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

// Install adds the timeout wrapper to scope (the registry's global scope covers every call;
// an agent's scope only that agent's calls and its descendants'). The returned function
// removes it. The wrapper never looks into the result next returns, so it registers
// tool.ReadOnly: it costs the call no copy of the result.
func Install(scope *tool.Scope, cfg Config) (undo func(), err error) {
	if scope == nil {
		return nil, errors.New("timeout: Install needs a scope (use reg.Global() for every call)")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return scope.WrapExecute(Wrapper(scope.Registry(), cfg), tool.ReadOnly()), nil
}

// Wrapper returns the timeout policy's around-execute function for reg, for callers that
// place it in a wrapper chain themselves. It reads each call's budget from the definition
// visible to the call's agent in reg.
func Wrapper(reg *tool.Registry, cfg Config) tool.ExecuteFunc {
	return func(ctx context.Context, exec *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
		def := reg.Get(exec.Name(), exec.Agent())
		if def == nil || def.Timeout <= 0 {
			return next(ctx)
		}
		budget := def.Timeout
		if budget > MaxBudget {
			return nil, fmt.Errorf("deadline timeoutMs must be a positive finite number no greater than %d (tool %q declares %sms)",
				int64(math.MaxInt32), exec.Name(), FormatMillis(budget))
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
func Result(budget time.Duration) *tool.Result {
	return tool.Fail(&tool.Error{
		Name:    "ToolTimeoutError",
		Code:    tool.CodeToolTimeout,
		Message: "tool call timed out after " + FormatMillis(budget) + "ms",
	})
}

// FormatMillis renders d in milliseconds as JavaScript renders a number: 30000, 1.5.
func FormatMillis(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return strconv.FormatInt(int64(d/time.Millisecond), 10)
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64)
}
