package timeout_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/manualclock"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/policy/timeout"
	"github.com/dsh-go/dsh/tool"
)

const timedOut1ms = `{"isError":true,"error":{"message":"tool call timed out after 1ms","info":{"name":"ToolTimeoutError","code":"TOOL_TIMEOUT"}},"content":[{"type":"text","text":"Error: tool call timed out after 1ms"}]}`

const abortedJSON = `{"isError":true,"error":{"message":"tool call aborted","info":{"name":"AbortError","code":"ABORTED"}},"content":[{"type":"text","text":"Error: tool call aborted"}]}`

func render(_, value any) ([]content.Block, error) {
	b, err := jsonv.Marshal(value)
	if err != nil {
		return nil, err
	}
	return content.Texts(string(b)), nil
}

// bodyTool is a raw tool with the given budget and body.
func bodyTool(name string, budget time.Duration, body func(ctx context.Context, call *tool.Call) (any, error)) *tool.Definition {
	return &tool.Definition{
		Name:        name,
		Description: "tool " + name,
		Parameters:  jsonv.NewObject(jsonv.Member{Name: "type", Value: "object"}),
		Output:      tool.Output{Schema: &jsonv.Object{}, Render: render},
		Execute:     body,
		Timeout:     budget,
	}
}

func newReg(t *testing.T) *tool.Registry {
	t.Helper()
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func install(t *testing.T, s *tool.Scope) func() {
	t.Helper()
	undo, err := timeout.Install(s, timeout.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return undo
}

func installClock(t *testing.T, s *tool.Scope, clk *manualclock.Clock) {
	t.Helper()
	if _, err := timeout.Install(s, timeout.Config{Clock: clk}); err != nil {
		t.Fatal(err)
	}
}

// expiring wraps body so that the call's deadline expires as the body starts.
func expiring(clk *manualclock.Clock, body func(ctx context.Context, call *tool.Call) (any, error)) func(ctx context.Context, call *tool.Call) (any, error) {
	return func(ctx context.Context, call *tool.Call) (any, error) {
		clk.FireAll()
		return body(ctx, call)
	}
}

func register(t *testing.T, s interface {
	Register(*tool.Definition) (func(), error)
}, def *tool.Definition) {
	t.Helper()
	if _, err := s.Register(def); err != nil {
		t.Fatal(err)
	}
}

func resultJSON(t *testing.T, r *tool.Result) string {
	t.Helper()
	b, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func run(reg *tool.Registry, ctx context.Context, name string, agent *tool.Scope) *tool.Result {
	return reg.Execute(ctx, tool.Input{CallID: "c1", Name: name, Args: &jsonv.Object{}, Agent: agent})
}

type ctxKey struct{}

// TestOutcomes pins the results of docs/behaviour.md §11.1 and the timeout rows of §4.7.
func TestOutcomes(t *testing.T) {
	waitDone := func(ctx context.Context, _ *tool.Call) (any, error) {
		<-ctx.Done()
		return "finished anyway", nil
	}
	tests := []struct {
		name    string
		budget  time.Duration
		expires bool // the deadline expires as the body starts
		body    func(ctx context.Context, call *tool.Call) (any, error)
		want    string
	}{
		{
			name:   "no budget: the result is the tool's",
			budget: 0,
			body:   func(context.Context, *tool.Call) (any, error) { return "ok", nil },
			want:   `{"isError":false,"content":[{"type":"text","text":"\"ok\""}],"value":"ok"}`,
		},
		{
			name:   "budget not reached: the result is the tool's",
			budget: time.Hour,
			body:   func(context.Context, *tool.Call) (any, error) { return "ok", nil },
			want:   `{"isError":false,"content":[{"type":"text","text":"\"ok\""}],"value":"ok"}`,
		},
		{
			name:   "budget not reached: a tool failure stays the tool's",
			budget: time.Hour,
			body: func(context.Context, *tool.Call) (any, error) {
				return nil, &tool.Error{Name: "FsError", Code: "FS_NOT_FOUND", Message: "no such file"}
			},
			want: `{"isError":true,"error":{"message":"no such file","info":{"name":"FsError","code":"FS_NOT_FOUND"}},"content":[{"type":"text","text":"Error: no such file"}]}`,
		},
		{
			name:    "deadline fired, body returned success after it: TOOL_TIMEOUT replaces ABORTED",
			budget:  time.Millisecond,
			expires: true,
			body:    waitDone,
			want:    timedOut1ms,
		},
		{
			name:    "deadline fired, body returned its own abort error: TOOL_TIMEOUT",
			budget:  time.Millisecond,
			expires: true,
			body: func(ctx context.Context, _ *tool.Call) (any, error) {
				<-ctx.Done()
				return nil, &tool.Error{Name: "WebError", Code: "WEB_ABORTED", Message: "fetch aborted"}
			},
			want: timedOut1ms,
		},
		{
			name:    "deadline fired, body returned a plain error: TOOL_TIMEOUT",
			budget:  time.Millisecond,
			expires: true,
			body: func(ctx context.Context, _ *tool.Call) (any, error) {
				<-ctx.Done()
				return nil, context.Cause(ctx)
			},
			want: timedOut1ms,
		},
		{
			name:    "fractional milliseconds render as JavaScript numbers",
			budget:  1500 * time.Microsecond,
			expires: true,
			body:    waitDone,
			want:    `{"isError":true,"error":{"message":"tool call timed out after 1.5ms","info":{"name":"ToolTimeoutError","code":"TOOL_TIMEOUT"}},"content":[{"type":"text","text":"Error: tool call timed out after 1.5ms"}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := newReg(t)
			clk := manualclock.New()
			installClock(t, reg.Global(), clk)
			body := tt.body
			if tt.expires {
				body = expiring(clk, body)
			}
			register(t, reg, bodyTool("t", tt.budget, body))
			if got := resultJSON(t, run(reg, t.Context(), "t", nil)); got != tt.want {
				t.Errorf("result\n got %s\nwant %s", got, tt.want)
			}
			if tt.budget > 0 && (len(clk.Budgets()) != 1 || clk.Budgets()[0] != tt.budget) {
				t.Errorf("armed timers %v, want one of %v", clk.Budgets(), tt.budget)
			}
			if n := clk.FireAll(); n != 0 {
				t.Errorf("%d timers still armed after the call returned", n)
			}
		})
	}
}

// TestCauseVisibleToBody checks that a body can tell its timeout from a caller cancellation.
func TestCauseVisibleToBody(t *testing.T) {
	reg := newReg(t)
	clk := manualclock.New()
	installClock(t, reg.Global(), clk)
	var cause atomic.Value
	register(t, reg, bodyTool("t", time.Millisecond, expiring(clk, func(ctx context.Context, _ *tool.Call) (any, error) {
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		return nil, errors.New("stopped")
	})))
	run(reg, t.Context(), "t", nil)
	err, _ := cause.Load().(error)
	if !errors.Is(err, timeout.ErrToolTimeout) {
		t.Fatalf("body saw cause %v, want one wrapping ErrToolTimeout", err)
	}
	if err.Error() != "tool call timed out after 1ms" {
		t.Errorf("cause message %q", err.Error())
	}
}

// TestNoBudgetLeavesContextUntouched checks the first step of docs/behaviour.md §11.1: without a budget the
// body receives the caller's own context.
func TestNoBudgetLeavesContextUntouched(t *testing.T) {
	reg := newReg(t)
	install(t, reg.Global())
	caller := context.WithValue(context.Background(), ctxKey{}, "caller")
	var same, hasDeadline atomic.Bool
	register(t, reg, bodyTool("t", 0, func(ctx context.Context, _ *tool.Call) (any, error) {
		same.Store(ctx == caller)
		_, ok := ctx.Deadline()
		hasDeadline.Store(ok)
		return "ok", nil
	}))
	run(reg, caller, "t", nil)
	if !same.Load() || hasDeadline.Load() {
		t.Errorf("body context is the caller's: %v, has a deadline: %v", same.Load(), hasDeadline.Load())
	}
}

// TestBudgetedBodyGetsDeadline checks a budgeted body runs under a derived context that still
// carries the caller's values.
func TestBudgetedBodyGetsDeadline(t *testing.T) {
	reg := newReg(t)
	install(t, reg.Global())
	caller := context.WithValue(context.Background(), ctxKey{}, "caller")
	var derived, hasDeadline, value atomic.Bool
	register(t, reg, bodyTool("t", time.Hour, func(ctx context.Context, _ *tool.Call) (any, error) {
		derived.Store(ctx != caller)
		_, ok := ctx.Deadline()
		hasDeadline.Store(ok)
		value.Store(ctx.Value(ctxKey{}) == "caller")
		return "ok", nil
	}))
	run(reg, caller, "t", nil)
	if !derived.Load() || !hasDeadline.Load() || !value.Load() {
		t.Errorf("derived %v, deadline %v, caller values %v", derived.Load(), hasDeadline.Load(), value.Load())
	}
}

// TestPostExecuteSeesCallerContext checks post-execute hooks get the caller's context, not
// the (possibly expired) deadline.
func TestPostExecuteSeesCallerContext(t *testing.T) {
	reg := newReg(t)
	clk := manualclock.New()
	installClock(t, reg.Global(), clk)
	caller := context.WithValue(t.Context(), ctxKey{}, "caller")
	register(t, reg, bodyTool("t", time.Millisecond, expiring(clk, func(ctx context.Context, _ *tool.Call) (any, error) {
		<-ctx.Done()
		return "late", nil
	})))
	var same, live atomic.Bool
	var code atomic.Value
	reg.OnPostExecute(func(ctx context.Context, _ *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		same.Store(ctx == caller)
		live.Store(ctx.Err() == nil)
		if res.Error != nil && res.Error.Info != nil {
			code.Store(res.Error.Info.Code)
		}
		return next()
	})
	run(reg, caller, "t", nil)
	if !same.Load() || !live.Load() {
		t.Errorf("post-execute context is the caller's: %v, live: %v", same.Load(), live.Load())
	}
	if code.Load() != tool.CodeToolTimeout {
		t.Errorf("post-execute saw code %v, want TOOL_TIMEOUT (the timeout reaches post-execute)", code.Load())
	}
}

// gateCtx is a caller context with a deadline that expires when the test calls expire, not
// after real time: Err reports context.DeadlineExceeded, as a real deadline does.
type gateCtx struct {
	done chan struct{}
	once sync.Once
}

func newGateCtx() *gateCtx                     { return &gateCtx{done: make(chan struct{})} }
func (c *gateCtx) expire()                     { c.once.Do(func() { close(c.done) }) }
func (c *gateCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *gateCtx) Done() <-chan struct{}       { return c.done }
func (c *gateCtx) Value(any) any               { return nil }
func (c *gateCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// await receives from ch, failing the test when its context ends first.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-t.Context().Done():
		t.Fatalf("test ended waiting for %s", what)
		panic("unreachable")
	}
}

// TestCancellationOrder pins the two cancellation rows that involve the timeout policy:
// whichever of the caller's cancellation and the deadline happens first decides. Every
// deadline here fires at a point the test chooses, so the order never depends on timing.
func TestCancellationOrder(t *testing.T) {
	t.Run("caller aborts first: ABORTED", func(t *testing.T) {
		reg := newReg(t)
		clk := manualclock.New()
		installClock(t, reg.Global(), clk)
		started := make(chan struct{})
		register(t, reg, bodyTool("t", time.Hour, func(ctx context.Context, _ *tool.Call) (any, error) {
			close(started)
			<-ctx.Done()
			clk.FireAll() // the deadline expiring after the caller's cancellation changes nothing
			return "ok", nil
		}))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan *tool.Result, 1)
		go func() { done <- run(reg, ctx, "t", nil) }()
		await(t, started, "the body to start")
		cancel()
		if got := resultJSON(t, await(t, done, "the result")); got != abortedJSON {
			t.Errorf("got %s\nwant %s", got, abortedJSON)
		}
	})
	t.Run("deadline fires first, caller aborts later: TOOL_TIMEOUT", func(t *testing.T) {
		reg := newReg(t)
		clk := manualclock.New()
		installClock(t, reg.Global(), clk)
		expired := make(chan struct{})
		release := make(chan struct{})
		register(t, reg, bodyTool("t", time.Millisecond, expiring(clk, func(ctx context.Context, _ *tool.Call) (any, error) {
			<-ctx.Done()
			close(expired)
			<-release // the caller cancels while the body is still winding down
			return "ok", nil
		})))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan *tool.Result, 1)
		go func() { done <- run(reg, ctx, "t", nil) }()
		await(t, expired, "the deadline to reach the body")
		cancel()
		close(release)
		if got := resultJSON(t, await(t, done, "the result")); got != timedOut1ms {
			t.Errorf("got %s\nwant %s", got, timedOut1ms)
		}
	})
	t.Run("a caller's own deadline is not the policy's timeout", func(t *testing.T) {
		reg := newReg(t)
		installClock(t, reg.Global(), manualclock.New())
		caller := newGateCtx()
		register(t, reg, bodyTool("t", time.Hour, func(ctx context.Context, _ *tool.Call) (any, error) {
			caller.expire() // the caller's deadline passes while the body runs
			<-ctx.Done()
			return "ok", nil
		}))
		if got := resultJSON(t, run(reg, caller, "t", nil)); got != abortedJSON {
			t.Errorf("got %s\nwant %s", got, abortedJSON)
		}
	})
	t.Run("a caller's deadline passed before the call: ABORTED_BEFORE_DISPATCH", func(t *testing.T) {
		reg := newReg(t)
		clk := manualclock.New()
		installClock(t, reg.Global(), clk)
		var ran atomic.Bool
		register(t, reg, bodyTool("t", time.Hour, func(context.Context, *tool.Call) (any, error) {
			ran.Store(true)
			return "ok", nil
		}))
		caller := newGateCtx()
		caller.expire()
		res := run(reg, caller, "t", nil)
		if res.Error == nil || res.Error.Info == nil || res.Error.Info.Code != tool.CodeAbortedBeforeDispatch {
			t.Errorf("got %s, want ABORTED_BEFORE_DISPATCH", resultJSON(t, res))
		}
		if ran.Load() || len(clk.Budgets()) != 0 {
			t.Errorf("body ran %v, timers armed %v; want neither", ran.Load(), clk.Budgets())
		}
	})
	t.Run("an outer wrapper's deadline is not the policy's timeout", func(t *testing.T) {
		reg := newReg(t)
		// An outer wrapper with its own deadline, expiring while the body runs, then the
		// policy with a long budget.
		outer := newGateCtx()
		reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			short, cancel := context.WithCancel(ctx)
			defer cancel()
			stop := context.AfterFunc(outer, cancel)
			defer stop()
			return next(short)
		})
		installClock(t, reg.Global(), manualclock.New())
		register(t, reg, bodyTool("t", time.Hour, func(ctx context.Context, _ *tool.Call) (any, error) {
			outer.expire()
			<-ctx.Done()
			return "ok", nil
		}))
		// The registry replaces the success by ABORTED (the fused context ended); the policy
		// leaves that alone because its own deadline did not fire.
		if got := resultJSON(t, run(reg, t.Context(), "t", nil)); got != abortedJSON {
			t.Errorf("got %s\nwant %s", got, abortedJSON)
		}
	})
}

// TestRealClockExpires checks the default (real) clock arms a deadline that expires on its
// own: the body waits for it, however long the machine takes to get there.
func TestRealClockExpires(t *testing.T) {
	reg := newReg(t)
	install(t, reg.Global())
	register(t, reg, bodyTool("t", time.Millisecond, func(ctx context.Context, _ *tool.Call) (any, error) {
		<-ctx.Done()
		return "late", nil
	}))
	if got := resultJSON(t, run(reg, t.Context(), "t", nil)); got != timedOut1ms {
		t.Errorf("got %s\nwant %s", got, timedOut1ms)
	}
}

// TestBudgetFromVisibleDefinition checks the budget comes from the definition the calling
// agent sees: a scoped tool shadowing a global one brings its own budget.
func TestBudgetFromVisibleDefinition(t *testing.T) {
	reg := newReg(t)
	clk := manualclock.New()
	installClock(t, reg.Global(), clk)
	waitDone := expiring(clk, func(ctx context.Context, _ *tool.Call) (any, error) {
		<-ctx.Done()
		return "ok", nil
	})
	register(t, reg, bodyTool("t", time.Millisecond, waitDone))
	agent := reg.NewScope("agent", nil)
	defer agent.Close()
	register(t, agent, bodyTool("t", 2*time.Millisecond, waitDone))

	if got := run(reg, t.Context(), "t", nil); got.Error == nil || got.Error.Message != "tool call timed out after 1ms" {
		t.Errorf("global call: %s", resultJSON(t, got))
	}
	if got := run(reg, t.Context(), "t", agent); got.Error == nil || got.Error.Message != "tool call timed out after 2ms" {
		t.Errorf("agent call: %s", resultJSON(t, got))
	}
}

// TestScopedInstall checks a policy installed on an agent's scope covers only that agent.
func TestScopedInstall(t *testing.T) {
	reg := newReg(t)
	a := reg.NewScope("a", nil)
	defer a.Close()
	b := reg.NewScope("b", nil)
	defer b.Close()
	install(t, a)
	var deadlined atomic.Int32
	register(t, reg, bodyTool("t", time.Hour, func(ctx context.Context, _ *tool.Call) (any, error) {
		if _, ok := ctx.Deadline(); ok {
			deadlined.Add(1)
		}
		return "ok", nil
	}))
	run(reg, context.Background(), "t", a)
	run(reg, context.Background(), "t", b)
	run(reg, context.Background(), "t", nil)
	if got := deadlined.Load(); got != 1 {
		t.Errorf("%d calls ran under a deadline, want 1 (agent a only)", got)
	}
}

// TestUndo checks the returned function removes the wrapper.
func TestUndo(t *testing.T) {
	reg := newReg(t)
	undo := install(t, reg.Global())
	register(t, reg, bodyTool("t", time.Hour, func(ctx context.Context, _ *tool.Call) (any, error) {
		if _, ok := ctx.Deadline(); ok {
			return "deadline", nil
		}
		return "none", nil
	}))
	if got := run(reg, context.Background(), "t", nil).Value; got != "deadline" {
		t.Fatalf("installed: %v", got)
	}
	undo()
	if got := run(reg, context.Background(), "t", nil).Value; got != "none" {
		t.Errorf("after undo: %v", got)
	}
}

// TestBudgetTooLarge checks a budget above the timer limit fails the call as a wrapper
// failure (no body, no post-execute), naming the limit.
func TestBudgetTooLarge(t *testing.T) {
	reg := newReg(t)
	install(t, reg.Global())
	var ran, post atomic.Bool
	register(t, reg, bodyTool("t", timeout.MaxBudget+time.Millisecond, func(context.Context, *tool.Call) (any, error) {
		ran.Store(true)
		return "ok", nil
	}))
	reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		post.Store(true)
		return next()
	})
	res := run(reg, context.Background(), "t", nil)
	if !res.IsError || !strings.HasPrefix(res.Error.Message, "deadline timeoutMs must be a positive finite number no greater than 2147483647") {
		t.Errorf("result %s", resultJSON(t, res))
	}
	if ran.Load() || post.Load() {
		t.Errorf("body ran %v, post-execute ran %v; want neither", ran.Load(), post.Load())
	}
	// The largest budget is accepted.
	reg2 := newReg(t)
	install(t, reg2.Global())
	register(t, reg2, bodyTool("t", timeout.MaxBudget, func(context.Context, *tool.Call) (any, error) { return "ok", nil }))
	if res := run(reg2, context.Background(), "t", nil); res.IsError {
		t.Errorf("MaxBudget: %s", resultJSON(t, res))
	}
}

// TestUnknownToolPassesThrough checks a name with no visible definition is left to the
// registry (UNKNOWN_TOOL).
func TestUnknownToolPassesThrough(t *testing.T) {
	reg := newReg(t)
	install(t, reg.Global())
	res := run(reg, context.Background(), "missing", nil)
	if res.Error == nil || res.Error.Info == nil || res.Error.Info.Code != tool.CodeUnknownTool {
		t.Errorf("result %s", resultJSON(t, res))
	}
}

func TestInstallNeedsScope(t *testing.T) {
	if _, err := timeout.Install(nil, timeout.Config{}); err == nil {
		t.Error("Install(nil) succeeded")
	}
}

func TestFormatMillis(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{30 * time.Second, "30000"},
		{time.Millisecond, "1"},
		{1500 * time.Microsecond, "1.5"},
		{time.Nanosecond, "0.000001"},
		{timeout.MaxBudget, "2147483647"},
	} {
		if got := timeout.FormatMillis(tt.d); got != tt.want {
			t.Errorf("FormatMillis(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
