package tool

import (
	"context"
	"fmt"
	"time"
)

// Deadline is the time budget a DeadlineFunc gives one call's body. The pipeline arms it
// around every run of the body, inside every around-execute wrapper, on the goroutine that
// runs the body: a policy that only needs a deadline (the timeout policy) costs the call no
// wrapper frame and no goroutine of its own for the body.
type Deadline struct {
	// Budget is how long the body may run; zero or less gives the call no deadline.
	Budget time.Duration
	// Cause is what context.Cause of the body's context reports once the budget elapsed.
	// The pipeline tells its own deadline from a caller's cancellation by this value, so a
	// call should get a Cause of its own (a new pointer). Required with a Budget.
	Cause error
	// Expired is the failure that replaces whatever the body produced — a success, the
	// tool's own error, the registry's ABORTED — when the budget elapsed before the body
	// returned. A caller cancellation that came first is not an expiry: ABORTED stands.
	// Required with a Budget.
	Expired *Error
	// AfterFunc arms the timer: it calls f on a goroutine of its own once d has elapsed,
	// unless stop is called first. Nil is the real clock, under which the body's context
	// also reports the deadline (ctx.Deadline); a test passes its own to fire the deadline
	// when it chooses.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
}

// DeadlineFunc gives one call its Deadline, or none (a zero Budget). It runs once per
// dispatch, before the around-execute wrappers; an error fails the call without running
// the body or post-execute, as an around-execute wrapper's error does.
type DeadlineFunc func(exec *Execution) (Deadline, error)

// AfterExecuteFunc is an after-execute hook: it sees the result the around-execute wrappers
// (or, without any, the body) produced, before the deferred contexts, the cancellation
// check and post-execute, and returns it or a replacement. Returning res itself keeps the
// registry's result; any other result is validated and rendered again (a success) or
// copied (a failure), as a wrapper's replacement is. An error fails the call without
// post-execute, as a wrapper's does.
//
// It is what an outermost around-execute wrapper that only looks at the result next
// returned would do, without a frame around the body: the body then needs no goroutine
// of its own to keep a runtime.Goexit in it from ending the wrapper's frames. res is a
// private copy unless the hook is registered ReadOnly, when it is the registry's result,
// which the hook must not change.
type AfterExecuteFunc func(ctx context.Context, exec *Execution, res *Result) (*Result, error)

// OnDeadline adds a deadline hook that sees calls of this scope and its descendants (every
// call, for the global scope). Each hook's deadline is armed around the body, the first
// registered outermost; when several elapsed before the body returned, the outermost one's
// Expired is the result, as with nested wrappers.
func (s *Scope) OnDeadline(fn DeadlineFunc) (remove func()) {
	return addHook(s, func(h *hookSet) *[]*hook[DeadlineFunc] { return &h.deadline }, fn, nil)
}

// AfterExecute adds an after-execute hook. The first registered is the outermost: it runs
// last and sees what the ones registered after it returned (Prepend makes a hook the
// outermost).
func (s *Scope) AfterExecute(fn AfterExecuteFunc, opts ...HookOption) (remove func()) {
	return addHook(s, func(h *hookSet) *[]*hook[AfterExecuteFunc] { return &h.after }, fn, opts)
}

// OnDeadline adds a global deadline hook; see Scope.OnDeadline.
func (r *Registry) OnDeadline(fn DeadlineFunc) func() { return r.root.OnDeadline(fn) }

// AfterExecute adds a global after-execute hook; see Scope.AfterExecute.
func (r *Registry) AfterExecute(fn AfterExecuteFunc, opts ...HookOption) func() {
	return r.root.AfterExecute(fn, opts...)
}

// loadDeadlines runs the deadline hooks hs for the call and keeps the deadlines they give
// in the invocation (allocated only when there is one).
func (inv *Invocation) loadDeadlines(hs []*hook[DeadlineFunc]) error {
	if inv.hk != nil {
		inv.hk.deadlines = nil
	}
	for _, h := range hs {
		d, err := callDeadline(h.fn, inv.exec)
		if err != nil {
			return err
		}
		if d.Budget <= 0 {
			continue
		}
		switch {
		case d.Cause == nil:
			return fmt.Errorf("tool \"%s\": a deadline hook gave a %v budget without a Cause", inv.exec.name, d.Budget)
		case d.Expired == nil:
			return fmt.Errorf("tool \"%s\": a deadline hook gave a %v budget without an Expired error", inv.exec.name, d.Budget)
		}
		hk := inv.hooked()
		hk.deadlines = append(hk.deadlines, d)
	}
	return nil
}

func callDeadline(fn DeadlineFunc, exec *Execution) (d Deadline, err error) {
	defer func() {
		if p := recover(); p != nil {
			d, err = Deadline{}, panicFailure(exec.name, "a deadline hook", p)
		}
	}()
	return fn(exec)
}

// armedRun is the deadlines armed around one run of the body, and the one that elapsed.
type armedRun struct {
	armed   []armed
	one     [1]armed // storage for the common case, one deadline
	expired *Deadline
}

// armed is one deadline armed around a run of the body: the context it derived and how
// to stop its timer.
type armed struct {
	d           *Deadline
	ctx         context.Context
	cancel      context.CancelFunc      // under the real clock
	cancelCause context.CancelCauseFunc // under an AfterFunc
	stop        func() bool             // the AfterFunc's stop
}

// arm derives the body's context from ctx under every deadline of the call, the first
// outermost. disarm must follow, deferred, whatever the body does.
func (b *bodyRun) arm(ctx context.Context, ds []Deadline) context.Context {
	r := &armedRun{}
	r.armed = r.one[:0]
	b.dl = r
	for i := range ds {
		d := &ds[i]
		if d.AfterFunc == nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeoutCause(ctx, d.Budget, d.Cause)
			r.armed = append(r.armed, armed{d: d, ctx: ctx, cancel: cancel})
			continue
		}
		dctx, cancel := context.WithCancelCause(ctx)
		ctx = dctx
		// Recorded before the clock is asked, so that disarm cancels the context even when
		// the clock panics.
		r.armed = append(r.armed, armed{d: d, ctx: dctx, cancelCause: cancel})
		a := &r.armed[len(r.armed)-1]
		cause := d.Cause
		a.stop = d.AfterFunc(d.Budget, func() { cancel(cause) })
	}
	return ctx
}

// disarm stops the deadlines' timers, innermost first, and records the outermost deadline
// that elapsed before it was stopped: a deadline that had not fired by the time the body
// returned does not turn a finished call into an expired one.
func (b *bodyRun) disarm() {
	r := b.dl
	for i := len(r.armed) - 1; i >= 0; i-- {
		a := &r.armed[i]
		if a.cancel != nil {
			a.cancel()
		} else {
			a.cancelCause(context.Canceled)
		}
		if context.Cause(a.ctx) == a.d.Cause {
			r.expired = a.d
		}
	}
	// The clocks' timers last: every context is cancelled even if a stop panics.
	for i := len(r.armed) - 1; i >= 0; i-- {
		if stop := r.armed[i].stop; stop != nil {
			stop()
		}
	}
}

// timed returns res, or the expiry failure when a deadline elapsed during the run.
func (b *bodyRun) timed(res *Result) *Result {
	if b.dl == nil || b.dl.expired == nil {
		return res
	}
	e := *b.dl.expired.Expired
	return Fail(&e)
}

// afterExecute runs the after-execute hooks hs on res, the outermost last.
func (inv *Invocation) afterExecute(res *Result, hs []*hook[AfterExecuteFunc]) (*Result, error) {
	for i := len(hs) - 1; i >= 0; i-- {
		h := hs[i]
		handed := res
		if !h.readOnly {
			handed = res.Clone()
		}
		out, err := callAfter(h.fn, inv.ctx, inv.exec, handed)
		if err != nil {
			return nil, err
		}
		if out == nil {
			return nil, fmt.Errorf("tool \"%s\": tools/after-execute hook returned no result", inv.exec.name)
		}
		if out != handed {
			if res, err = inv.renormalize(out); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

func callAfter(fn AfterExecuteFunc, ctx context.Context, exec *Execution, res *Result) (out *Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, panicFailure(exec.name, "an after-execute hook", p)
		}
	}()
	return fn(ctx, exec, res)
}
