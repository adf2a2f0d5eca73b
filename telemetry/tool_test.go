package telemetry_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/policy/timeout"
	"github.com/dsh-go/dsh/telemetry"
	"github.com/dsh-go/dsh/tool"
)

type greetIn struct {
	Name string `json:"name"`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

func greetTool(t *testing.T) *tool.Definition {
	t.Helper()
	return tool.Must(tool.New("greet", "Greets someone.", func(_ context.Context, _ *tool.Call, in greetIn) (greetOut, error) {
		if in.Name == "" {
			return greetOut{}, &tool.Error{Name: "GreetError", Code: "NO_NAME", Message: "who should I greet?"}
		}
		return greetOut{Greeting: "Hello, " + in.Name}, nil
	}, tool.ConcurrencySafe()))
}

// manualClock fires the timeout policy's deadline when the test says so.
type manualClock struct {
	mu    sync.Mutex
	fires []func()
}

func (c *manualClock) AfterFunc(_ time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fires = append(c.fires, f)
	return func() bool { return false }
}

func (c *manualClock) fire() {
	c.mu.Lock()
	fs := c.fires
	c.fires = nil
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// TestToolSpans pins the execute_tool span of a call in each way a call ends: success
// (with and without content recording), a coded failure, denials by a hook, the approver
// and a guard, a post-execute block, and a timeout.
func TestToolSpans(t *testing.T) {
	cases := []struct {
		name    string
		content bool
		args    string
		setup   func(t *testing.T, reg *tool.Registry, scope *tool.Scope)
		tool    func(t *testing.T, reg *tool.Registry) *tool.Definition
		wantErr string // the result's error code, "" for a success or uncoded failure
	}{
		{name: "call", args: `{"name":"Ada"}`, setup: func(t *testing.T, reg *tool.Registry, _ *tool.Scope) {
			reg.OnPreExecute(func(_ context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				return next()
			})
			reg.Global().OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				return next()
			})
		}},
		{name: "call_content", content: true, args: `{"name":"Ada"}`},
		{name: "failed", args: `{"name":""}`, wantErr: "NO_NAME"},
		{name: "failed_content", content: true, args: `{"name":""}`, wantErr: "NO_NAME"},
		{name: "denied_by_hook", args: `{"name":"Eve"}`, setup: func(t *testing.T, reg *tool.Registry, _ *tool.Scope) {
			reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				return tool.Deny("Eve is not to be greeted"), nil
			})
		}},
		{name: "denied_by_approver", args: `{"name":"Mallory"}`, setup: func(t *testing.T, reg *tool.Registry, _ *tool.Scope) {
			reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				return tool.Ask("greeting strangers needs approval"), nil
			})
			reg.SetApprover(tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
				return tool.ApprovalRejected, nil
			}))
		}},
		{name: "approved", args: `{"name":"Grace"}`, setup: func(t *testing.T, reg *tool.Registry, _ *tool.Scope) {
			reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				return tool.Ask("greeting strangers needs approval"), nil
			})
			reg.SetApprover(tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
				return tool.ApprovalAllowedOnce, nil
			}))
		}},
		{name: "denied_by_guard", args: `{"name":"Trudy"}`, setup: func(t *testing.T, _ *tool.Registry, scope *tool.Scope) {
			scope.Guard(func(exec *tool.Execution) string {
				if strings.Contains(exec.ArgsJSON(), "Trudy") {
					return "Trudy is blocked by the guard"
				}
				return ""
			})
		}},
		{name: "blocked", args: `{"name":"Ada"}`, setup: func(t *testing.T, reg *tool.Registry, _ *tool.Scope) {
			reg.Global().OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				return tool.BlockWith(content.Texts("the result was withheld")), nil
			})
		}},
		{name: "timed_out", args: `{}`, wantErr: tool.CodeToolTimeout, tool: func(t *testing.T, reg *tool.Registry) *tool.Definition {
			// The body fires the policy's deadline itself, then waits for it: no real time
			// has to pass.
			clock := &manualClock{}
			if _, err := timeout.Install(reg.Global(), timeout.Config{Clock: clock}); err != nil {
				t.Fatal(err)
			}
			return tool.Must(tool.New("wait", "Waits for its deadline.", func(ctx context.Context, _ *tool.Call, _ struct{}) (string, error) {
				clock.fire()
				<-ctx.Done()
				return "", context.Cause(ctx)
			}, tool.WithTimeout(1500*time.Millisecond)))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(t, tc.content)
			reg, err := tool.NewRegistry(tool.Config{})
			if err != nil {
				t.Fatal(err)
			}
			reg.ObserveCalls(r.tr.CallObserver())
			def := greetTool(t)
			if tc.tool != nil {
				def = tc.tool(t, reg)
			}
			if _, err := reg.Register(def); err != nil {
				t.Fatal(err)
			}
			scope := reg.NewScope("agent", nil)
			defer scope.Close()
			if tc.setup != nil {
				tc.setup(t, reg, scope)
			}
			res := reg.Execute(t.Context(), tool.Input{CallID: "call_1", Name: def.Name, Args: tool.ParseArguments(tc.args), Agent: scope})
			code := ""
			if res.IsError && res.Error.Info != nil {
				code = res.Error.Info.Code
			}
			if code != tc.wantErr {
				t.Fatalf("result error code %q, want %q (result %+v)", code, tc.wantErr, res.Error)
			}
			golden(t, "tool_"+tc.name, tree(r.rec.Ended()))
		})
	}
}

// TestToolSpanParent shows that a call's span is a child of the span in the caller's
// context, and that the body, hooks and listeners run under the call's span.
func TestToolSpanParent(t *testing.T) {
	r := newRecorder(t, false)
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	reg.ObserveCalls(r.tr.CallObserver())
	var seen []string
	var mu sync.Mutex
	note := func(ctx context.Context, where string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, where+"="+spanName(ctx))
	}
	reg.Register(tool.Must(tool.New("probe", "Reports its span.", func(ctx context.Context, _ *tool.Call, _ struct{}) (string, error) {
		note(ctx, "body")
		return "ok", nil
	})))
	reg.OnPreExecute(func(ctx context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		note(ctx, "pre")
		return next()
	})
	reg.Global().OnResult(func(ctx context.Context, _ *tool.Execution, _ *tool.Result) error {
		note(ctx, "listener")
		return nil
	})
	ctx, parent := r.tp.Tracer("test").Start(t.Context(), "caller")
	res := reg.Execute(ctx, tool.Input{CallID: "c1", Name: "probe", Args: tool.ParseArguments(`{}`)})
	parent.End()
	if res.IsError {
		t.Fatalf("probe failed: %s", res.Error.Message)
	}
	want := []string{"pre=execute_tool probe", "body=execute_tool probe", "listener=execute_tool probe"}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("the stages ran under %v, want %v", seen, want)
	}
	golden(t, "tool_parent", tree(r.rec.Ended()))
}

// spanName names the recording span of ctx ("" when none).
func spanName(ctx context.Context) string {
	if s, ok := trace.SpanFromContext(ctx).(sdktrace.ReadOnlySpan); ok {
		return s.Name()
	}
	return ""
}

// TestDisabledInstallsNothing: a disabled Tracing hands out nil hooks and the model
// unchanged, so nothing is installed on the hot paths.
func TestDisabledInstallsNothing(t *testing.T) {
	t.Setenv(telemetry.EnvTracesExporter, "")
	t.Setenv(telemetry.EnvSDKDisabled, "")
	off, err := telemetry.Setup(t.Context(), telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var nilTracing *telemetry.Tracing
	for _, tr := range []*telemetry.Tracing{off, nilTracing, {}} {
		if tr.Enabled() {
			t.Fatal("tracing is enabled without an exporter")
		}
		if tr.CallObserver() != nil || tr.TurnTracer("s") != nil {
			t.Error("a disabled Tracing hands out hooks")
		}
		m := scriptModel(t, nil)
		if tr.Model(m) != m {
			t.Error("a disabled Tracing wraps the model")
		}
		if err := tr.Shutdown(t.Context()); err != nil {
			t.Errorf("Shutdown of a disabled Tracing: %v", err)
		}
	}
}
