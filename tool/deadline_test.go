package tool_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/manualclock"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

var errOwnBudget = errors.New("budget elapsed")

// budgetHook gives every call the budget d on clock c, with cause and an expiry error
// naming tag.
func budgetHook(c *manualclock.Clock, d time.Duration, cause error, tag string) tool.DeadlineFunc {
	return func(*tool.Execution) (tool.Deadline, error) {
		return tool.Deadline{Budget: d, Cause: cause, Expired: tool.NewError("ToolTimeoutError", tool.CodeToolTimeout, tag+" expired"), AfterFunc: c.AfterFunc}, nil
	}
}

func execDL(reg *tool.Registry, ctx context.Context) *tool.Result {
	return reg.Execute(ctx, tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}})
}

const expiredJSON = `{"isError":true,"error":{"message":"t expired","info":{"name":"ToolTimeoutError","code":"TOOL_TIMEOUT"}},"content":[{"type":"text","text":"Error: t expired"}]}`

func TestDeadline(t *testing.T) {
	okBody := func(context.Context, *tool.Call) (any, error) { return "ok", nil }
	const okJSON = `{"isError":false,"content":[{"type":"text","text":"ok"}],"value":"ok"}`
	tests := []struct {
		name string
		fire bool // the deadline elapses as the body starts
		body func(context.Context, *tool.Call) (any, error)
		want string
	}{
		{"not elapsed: the body's success", false, okBody, okJSON},
		{"elapsed: a success is replaced", true, func(ctx context.Context, _ *tool.Call) (any, error) {
			<-ctx.Done()
			return "ok", nil
		}, expiredJSON},
		{"elapsed: the body's own error is replaced", true, func(ctx context.Context, _ *tool.Call) (any, error) {
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}, expiredJSON},
		{"not elapsed: a panic is TOOL_PANIC", false, func(context.Context, *tool.Call) (any, error) { panic("boom") },
			`{"isError":true,"error":{"message":"tool \"t\": the body panicked: boom","info":{"name":"ToolPanicError","code":"TOOL_PANIC"}},"content":[{"type":"text","text":"Error: tool \"t\": the body panicked: boom"}]}`},
		{"elapsed: a panic is replaced", true, func(context.Context, *tool.Call) (any, error) { panic("boom") }, expiredJSON},
		{"not elapsed: a Goexit is TOOL_PANIC", false, func(context.Context, *tool.Call) (any, error) { runtime.Goexit(); return nil, nil },
			`{"isError":true,"error":{"message":"tool \"t\": the body called runtime.Goexit","info":{"name":"ToolPanicError","code":"TOOL_PANIC"}},"content":[{"type":"text","text":"Error: tool \"t\": the body called runtime.Goexit"}]}`},
		{"elapsed: a Goexit is replaced", true, func(context.Context, *tool.Call) (any, error) { runtime.Goexit(); return nil, nil }, expiredJSON},
	}
	for _, wrapped := range []bool{false, true} {
		for _, tt := range tests {
			name := tt.name
			if wrapped {
				name += ", under a wrapper"
			}
			t.Run(name, func(t *testing.T) {
				reg := newReg(t)
				clk := manualclock.New()
				reg.OnDeadline(budgetHook(clk, time.Second, errOwnBudget, "t"))
				var seen []string
				reg.AfterExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result) (*tool.Result, error) {
					seen = append(seen, firstText(res))
					return res, nil
				}, tool.ReadOnly())
				if wrapped {
					reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
						return next(ctx)
					})
				}
				body := tt.body
				register(t, reg, bodyTool("t", func(ctx context.Context, call *tool.Call) (any, error) {
					if tt.fire {
						clk.Fire(0)
					}
					return body(ctx, call)
				}))
				res := execDL(reg, t.Context())
				checkInvariants(t, res)
				wantJSON(t, res, tt.want)
				if len(clk.Budgets()) != 1 || clk.Budgets()[0] != time.Second {
					t.Errorf("timers armed %v, want one of 1s", clk.Budgets())
				}
				if n := clk.Pending(); n != 0 {
					t.Errorf("%d timers still armed after the call", n)
				}
				if len(seen) != 1 || seen[0] != firstText(res) {
					t.Errorf("the after-execute hook saw %q, want the final %q", seen, firstText(res))
				}
			})
		}
	}
}

func TestDeadlineCause(t *testing.T) {
	reg := newReg(t)
	clk := manualclock.New()
	reg.OnDeadline(budgetHook(clk, time.Second, errOwnBudget, "t"))
	var cause error
	register(t, reg, bodyTool("t", func(ctx context.Context, _ *tool.Call) (any, error) {
		clk.Fire(0)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return "ok", nil
	}))
	wantJSON(t, execDL(reg, t.Context()), expiredJSON)
	if cause != errOwnBudget {
		t.Errorf("the body saw cause %v, want the deadline's", cause)
	}
}

// TestDeadlineWaitsForBody checks that a body ignoring its expired context is waited for.
func TestDeadlineWaitsForBody(t *testing.T) {
	reg := newReg(t)
	clk := manualclock.New()
	reg.OnDeadline(budgetHook(clk, time.Second, errOwnBudget, "t"))
	var finished atomic.Bool
	register(t, reg, bodyTool("t", func(ctx context.Context, _ *tool.Call) (any, error) {
		clk.Fire(0)
		<-ctx.Done()
		finished.Store(true) // after the deadline, ignoring it
		return "ok", nil
	}))
	wantJSON(t, execDL(reg, t.Context()), expiredJSON)
	if !finished.Load() {
		t.Error("Execute returned before the body did")
	}
}

func TestDeadlineCallerCancelsFirst(t *testing.T) {
	reg := newReg(t)
	clk := manualclock.New()
	reg.OnDeadline(budgetHook(clk, time.Second, errOwnBudget, "t"))
	ctx, cancel := context.WithCancel(t.Context())
	register(t, reg, bodyTool("t", func(bctx context.Context, _ *tool.Call) (any, error) {
		cancel()
		<-bctx.Done()
		clk.Fire(0) // after the caller's cancellation: not an expiry
		return "ok", nil
	}))
	res := execDL(reg, ctx)
	if res.Error == nil || res.Error.Info == nil || res.Error.Info.Code != tool.CodeAborted {
		t.Errorf("result %s, want ABORTED", resultJSON(t, res))
	}
}

func TestDeadlineNested(t *testing.T) {
	outerCause, innerCause := errors.New("outer"), errors.New("inner")
	for _, tt := range []struct {
		name string
		fire []int // timers fired as the body starts: 0 the outer, 1 the inner
		want string
	}{
		{"inner elapsed", []int{1}, "inner expired"},
		{"outer elapsed", []int{0}, "outer expired"},
		{"both elapsed: the outer's", []int{1, 0}, "outer expired"},
		{"none elapsed", nil, "ok"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := newReg(t)
			clk := manualclock.New()
			reg.OnDeadline(budgetHook(clk, 2*time.Second, outerCause, "outer"))
			reg.OnDeadline(budgetHook(clk, time.Second, innerCause, "inner"))
			register(t, reg, bodyTool("t", func(ctx context.Context, _ *tool.Call) (any, error) {
				for _, id := range tt.fire {
					clk.Fire(id)
				}
				return "ok", nil
			}))
			res := execDL(reg, t.Context())
			if got := firstText(res); got != tt.want && got != "Error: "+tt.want {
				t.Errorf("result %s, want %q", resultJSON(t, res), tt.want)
			}
			if len(clk.Budgets()) != 2 || clk.Budgets()[0] != 2*time.Second || clk.Budgets()[1] != time.Second {
				t.Errorf("timers armed %v, want the outer's then the inner's", clk.Budgets())
			}
		})
	}
}

func TestDeadlineEveryBodyRun(t *testing.T) {
	reg := newReg(t)
	clk := manualclock.New()
	reg.OnDeadline(budgetHook(clk, time.Second, errOwnBudget, "t"))
	reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
		if res, err := next(ctx); err != nil || res.IsError {
			return res, err
		}
		return next(ctx) // a retry: the second run gets a budget of its own
	})
	runs := 0
	register(t, reg, bodyTool("t", func(ctx context.Context, _ *tool.Call) (any, error) {
		runs++
		if runs == 2 {
			clk.Fire(1)
			<-ctx.Done()
		}
		return "ok", nil
	}))
	wantJSON(t, execDL(reg, t.Context()), expiredJSON)
	if runs != 2 || len(clk.Budgets()) != 2 {
		t.Errorf("%d runs, timers %v; want 2 runs, each with its timer", runs, clk.Budgets())
	}
}

func TestDeadlineNone(t *testing.T) {
	reg := newReg(t)
	calls := 0
	reg.OnDeadline(func(*tool.Execution) (tool.Deadline, error) {
		calls++
		return tool.Deadline{}, nil
	})
	type key struct{}
	ctx := context.WithValue(t.Context(), key{}, "caller")
	var same bool
	register(t, reg, bodyTool("t", func(bctx context.Context, _ *tool.Call) (any, error) {
		_, has := bctx.Deadline()
		same = bctx == ctx && !has
		return "ok", nil
	}))
	wantJSON(t, execDL(reg, ctx), `{"isError":false,"content":[{"type":"text","text":"ok"}],"value":"ok"}`)
	if !same || calls != 1 {
		t.Errorf("the body got the caller's context: %v; hook calls %d, want 1", same, calls)
	}
}

func TestDeadlineRealClock(t *testing.T) {
	reg := newReg(t)
	reg.OnDeadline(func(*tool.Execution) (tool.Deadline, error) {
		return tool.Deadline{Budget: time.Hour, Cause: errOwnBudget, Expired: tool.NewError("ToolTimeoutError", tool.CodeToolTimeout, "t expired")}, nil
	})
	var left time.Duration
	register(t, reg, bodyTool("t", func(ctx context.Context, _ *tool.Call) (any, error) {
		if d, ok := ctx.Deadline(); ok {
			left = time.Until(d)
		}
		return "ok", nil
	}))
	wantJSON(t, execDL(reg, t.Context()), `{"isError":false,"content":[{"type":"text","text":"ok"}],"value":"ok"}`)
	if left <= 0 || left > time.Hour {
		t.Errorf("the body's deadline was %v away, want within the hour", left)
	}
}

// TestDeadlineBadHook pins each way a deadline hook fails the call: the body does not run,
// post-execute does not either, and the failure says what went wrong.
func TestDeadlineBadHook(t *testing.T) {
	expired := tool.NewError("ToolTimeoutError", tool.CodeToolTimeout, "t expired")
	tests := []struct {
		name string
		hook tool.DeadlineFunc
		msg  string
		code string
	}{
		{"an error", func(*tool.Execution) (tool.Deadline, error) {
			return tool.Deadline{}, errors.New("budget too large")
		}, "budget too large", ""},
		{"a panic", func(*tool.Execution) (tool.Deadline, error) { panic("bad budget") },
			`tool "t": a deadline hook panicked: bad budget`, tool.CodeToolPanic},
		{"a Goexit", func(*tool.Execution) (tool.Deadline, error) { runtime.Goexit(); return tool.Deadline{}, nil },
			`tool "t": a deadline hook called runtime.Goexit`, tool.CodeToolPanic},
		{"no cause", func(*tool.Execution) (tool.Deadline, error) {
			return tool.Deadline{Budget: time.Second, Expired: expired}, nil
		}, `tool "t": a deadline hook gave a 1s budget without a Cause`, ""},
		{"no expiry", func(*tool.Execution) (tool.Deadline, error) {
			return tool.Deadline{Budget: time.Second, Cause: errOwnBudget}, nil
		}, `tool "t": a deadline hook gave a 1s budget without an Expired error`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := newReg(t)
			reg.OnDeadline(tt.hook)
			var ran, post atomic.Bool
			reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				post.Store(true)
				return next()
			})
			register(t, reg, bodyTool("t", func(context.Context, *tool.Call) (any, error) {
				ran.Store(true)
				return "ok", nil
			}))
			res := execDL(reg, t.Context())
			checkInvariants(t, res)
			code := ""
			if res.Error != nil && res.Error.Info != nil {
				code = res.Error.Info.Code
			}
			if !res.IsError || res.Error.Message != tt.msg || code != tt.code {
				t.Errorf("result %s, want %s %q", resultJSON(t, res), tt.code, tt.msg)
			}
			if ran.Load() || post.Load() {
				t.Errorf("body ran %v, post-execute ran %v; want neither", ran.Load(), post.Load())
			}
		})
	}
	t.Run("a clock that panics", func(t *testing.T) {
		reg := newReg(t)
		reg.OnDeadline(func(*tool.Execution) (tool.Deadline, error) {
			return tool.Deadline{Budget: time.Second, Cause: errOwnBudget, Expired: expired,
				AfterFunc: func(time.Duration, func()) func() bool { panic("no timers") }}, nil
		})
		var ran atomic.Bool
		register(t, reg, bodyTool("t", func(context.Context, *tool.Call) (any, error) {
			ran.Store(true)
			return "ok", nil
		}))
		res := execDL(reg, t.Context())
		checkInvariants(t, res)
		if res.Error == nil || res.Error.Message != `tool "t": a deadline's clock panicked: no timers` || ran.Load() {
			t.Errorf("result %s, body ran %v", resultJSON(t, res), ran.Load())
		}
	})
}

func TestDeadlineScoped(t *testing.T) {
	reg := newReg(t)
	clk := manualclock.New()
	a, b := reg.NewScope("a", nil), reg.NewScope("b", nil)
	remove := a.OnDeadline(budgetHook(clk, time.Second, errOwnBudget, "t"))
	register(t, reg, bodyTool("t", func(context.Context, *tool.Call) (any, error) { return "ok", nil }))
	for _, agent := range []*tool.Scope{b, a} {
		reg.Execute(t.Context(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}, Agent: agent})
	}
	if len(clk.Budgets()) != 1 {
		t.Errorf("timers %v: want one, for the call of a only", clk.Budgets())
	}
	remove()
	reg.Execute(t.Context(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}, Agent: a})
	if len(clk.Budgets()) != 1 {
		t.Errorf("timers %v after the hook was removed", clk.Budgets())
	}
}

func TestAfterExecute(t *testing.T) {
	okJSON := `{"isError":false,"content":[{"type":"text","text":"ok"}],"value":"ok"}`
	tests := []struct {
		name     string
		hook     tool.AfterExecuteFunc
		readOnly bool
		body     func(context.Context, *tool.Call) (any, error)
		want     string
		post     bool // post-execute runs
	}{
		{"keeps the result", func(_ context.Context, _ *tool.Execution, res *tool.Result) (*tool.Result, error) {
			return res, nil
		}, true, nil, okJSON, true},
		{"a copy changed and returned keeps the registry's result", func(_ context.Context, _ *tool.Execution, res *tool.Result) (*tool.Result, error) {
			res.Value, res.Content = "changed", content.Texts("changed")
			return res, nil
		}, false, nil, okJSON, true},
		{"a new value is validated and rendered", func(_ context.Context, _ *tool.Execution, res *tool.Result) (*tool.Result, error) {
			return &tool.Result{Value: "clean", AdditionalContexts: []content.Message{msg("p", "note")}}, nil
		}, true, nil, `{"isError":false,"content":[{"type":"text","text":"clean"}],"additionalContexts":[{"id":"m-p","role":"user","content":[{"type":"text","text":"note"}],"source":{"kind":"plugin","plugin":"p"}}],"value":"clean"}`, true},
		{"a value the output schema refuses fails the call", func(_ context.Context, _ *tool.Execution, res *tool.Result) (*tool.Result, error) {
			return &tool.Result{Value: 7.0}, nil
		}, true, nil, `{"isError":true,"error":{"message":"tool \"t\" returned invalid output: \"value\" must be a string","info":{"name":"ToolOutputError","code":"INVALID_TOOL_OUTPUT"}},"content":[{"type":"text","text":"Error: tool \"t\" returned invalid output: \"value\" must be a string"}]}`, false},
		{"a failure is replaced by a copy", func(_ context.Context, _ *tool.Execution, res *tool.Result) (*tool.Result, error) {
			out := res.Clone()
			out.Error.Message, out.Content = "cleaned", content.Texts("Error: cleaned")
			return out, nil
		}, true, func(context.Context, *tool.Call) (any, error) { return nil, errors.New("secret") },
			`{"isError":true,"error":{"message":"cleaned"},"content":[{"type":"text","text":"Error: cleaned"}]}`, true},
		{"an error fails the call", func(context.Context, *tool.Execution, *tool.Result) (*tool.Result, error) {
			return nil, errors.New("cannot clean")
		}, true, nil, `{"isError":true,"error":{"message":"cannot clean"},"content":[{"type":"text","text":"Error: cannot clean"}]}`, false},
		{"no result fails the call", func(context.Context, *tool.Execution, *tool.Result) (*tool.Result, error) {
			return nil, nil
		}, true, nil, `{"isError":true,"error":{"message":"tool \"t\": tools/after-execute hook returned no result"},"content":[{"type":"text","text":"Error: tool \"t\": tools/after-execute hook returned no result"}]}`, false},
		{"a panic fails the call", func(context.Context, *tool.Execution, *tool.Result) (*tool.Result, error) {
			panic("boom")
		}, true, nil, `{"isError":true,"error":{"message":"tool \"t\": an after-execute hook panicked: boom","info":{"name":"ToolPanicError","code":"TOOL_PANIC"}},"content":[{"type":"text","text":"Error: tool \"t\": an after-execute hook panicked: boom"}]}`, false},
		{"a Goexit fails the call", func(context.Context, *tool.Execution, *tool.Result) (*tool.Result, error) {
			runtime.Goexit()
			return nil, nil
		}, true, nil, `{"isError":true,"error":{"message":"tool \"t\": an after-execute hook called runtime.Goexit","info":{"name":"ToolPanicError","code":"TOOL_PANIC"}},"content":[{"type":"text","text":"Error: tool \"t\": an after-execute hook called runtime.Goexit"}]}`, false},
		{"sees a body's Goexit", func(_ context.Context, _ *tool.Execution, res *tool.Result) (*tool.Result, error) {
			return &tool.Result{IsError: true, Error: &tool.Failure{Message: "seen: " + res.Error.Message}, Content: content.Texts("seen")}, nil
		}, true, func(context.Context, *tool.Call) (any, error) { runtime.Goexit(); return nil, nil },
			`{"isError":true,"error":{"message":"seen: tool \"t\": the body called runtime.Goexit"},"content":[{"type":"text","text":"seen"}]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := newReg(t)
			var opts []tool.HookOption
			if tt.readOnly {
				opts = append(opts, tool.ReadOnly())
			}
			reg.AfterExecute(tt.hook, opts...)
			var post atomic.Bool
			reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				post.Store(true)
				return next()
			})
			d := strTool("t", "ok")
			if tt.body != nil {
				d.Execute = tt.body
			}
			register(t, reg, d)
			res := execDL(reg, t.Context())
			checkInvariants(t, res)
			wantJSON(t, res, tt.want)
			if post.Load() != tt.post {
				t.Errorf("post-execute ran %v, want %v", post.Load(), tt.post)
			}
		})
	}
}

// TestAfterExecuteOrder checks that the first registered after-execute hook is the
// outermost (it runs last), that Prepend makes a hook the outermost, that the hooks see the
// result after every wrapper, and that contexts the body deferred are added after them.
func TestAfterExecuteOrder(t *testing.T) {
	reg := newReg(t)
	var order []string
	hook := func(name string) tool.AfterExecuteFunc {
		return func(_ context.Context, _ *tool.Execution, res *tool.Result) (*tool.Result, error) {
			order = append(order, name+":"+firstText(res)+":"+string(rune('0'+len(res.AdditionalContexts))))
			return res, nil
		}
	}
	reg.AfterExecute(hook("second"), tool.ReadOnly())
	reg.AfterExecute(hook("first"))
	reg.AfterExecute(hook("last"), tool.Prepend(), tool.ReadOnly())
	reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
		if _, err := next(ctx); err != nil {
			return nil, err
		}
		return &tool.Result{Value: "wrapped"}, nil
	})
	register(t, reg, bodyTool("t", func(_ context.Context, call *tool.Call) (any, error) {
		call.DeferContext(msg("body", "deferred"))
		return "ok", nil
	}))
	res := execDL(reg, t.Context())
	if want := []string{"first:wrapped:0", "second:wrapped:0", "last:wrapped:0"}; !equalStrings(order, want) {
		t.Errorf("order %q, want %q", order, want)
	}
	if len(res.AdditionalContexts) != 1 {
		t.Errorf("result %s: want the deferred context", resultJSON(t, res))
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAfterExecuteScoped(t *testing.T) {
	reg := newReg(t)
	a, b := reg.NewScope("a", nil), reg.NewScope("b", nil)
	seen := 0
	remove := a.AfterExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result) (*tool.Result, error) {
		seen++
		return res, nil
	})
	register(t, reg, bodyTool("t", func(context.Context, *tool.Call) (any, error) { return "ok", nil }))
	for _, agent := range []*tool.Scope{b, a} {
		reg.Execute(t.Context(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}, Agent: agent})
	}
	remove()
	reg.Execute(t.Context(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}, Agent: a})
	if seen != 1 {
		t.Errorf("the hook saw %d calls, want 1 (a's, before it was removed)", seen)
	}
}
