package timeout_test

import (
	"context"
	"testing"
	"time"

	"github.com/dsh-go/dsh/internal/cputime"
	"github.com/dsh-go/dsh/policy/timeout"
	"github.com/dsh-go/dsh/tool"
)

// BenchmarkWrapper measures the timeout wrapper by itself around a body that returns at
// once: for a tool that declares no budget (the call path's common case: the wrapper only
// looks the budget up, nothing may be allocated) and for one with a budget (a deadline
// armed and stopped per call, on the real clock).
func BenchmarkWrapper(b *testing.B) {
	reg, execs := benchExecutions(b)
	wrap := timeout.Wrapper(reg, timeout.Config{})
	done := tool.Success("ok", nil)
	body := func(context.Context) (*tool.Result, error) { return done, nil }
	for _, name := range []string{"unbudgeted", "budgeted"} {
		exec := execs[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			defer cputime.PerOp(b, "cpu-ns/op", 1)()
			for b.Loop() {
				if res, err := wrap(b.Context(), exec, body); err != nil || res != done {
					b.Fatalf("result %+v, %v", res, err)
				}
			}
		})
	}
}

// BenchmarkCall measures a whole typed call under the policy, installed (a deadline the
// pipeline arms; the body runs on the call's goroutine) and as an around-execute wrapper
// (Wrapper; the body runs on a goroutine of its own), for a tool with no budget and one
// with a budget armed and stopped per call on the real clock.
func BenchmarkCall(b *testing.B) {
	for _, how := range []string{"installed", "wrapper"} {
		reg := benchRegistry(b)
		if how == "installed" {
			if _, err := timeout.Install(reg.Global(), timeout.Config{}); err != nil {
				b.Fatal(err)
			}
		} else {
			reg.WrapExecute(timeout.Wrapper(reg, timeout.Config{}), tool.ReadOnly())
		}
		args := tool.ParseArguments(`{}`)
		for _, name := range []string{"unbudgeted", "budgeted"} {
			b.Run(how+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				defer cputime.PerOp(b, "cpu-ns/op", 1)()
				for b.Loop() {
					if res := reg.Execute(b.Context(), tool.Input{CallID: "c1", Name: name, Args: args}); res.IsError {
						b.Fatal(res.Error.Message)
					}
				}
			})
		}
	}
}

// BenchmarkDeadlineFunc measures the policy's deadline hook by itself: for a tool with no
// budget (only the budget's lookup; nothing may be allocated) and for one with a budget
// (its cause and expiry error).
func BenchmarkDeadlineFunc(b *testing.B) {
	reg, execs := benchExecutions(b)
	hook := timeout.DeadlineFunc(reg, timeout.Config{})
	for _, name := range []string{"unbudgeted", "budgeted"} {
		exec := execs[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			defer cputime.PerOp(b, "cpu-ns/op", 1)()
			for b.Loop() {
				if _, err := hook(exec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchRegistry returns a registry with two echo tools: "unbudgeted" declares no timeout,
// "budgeted" one minute.
func benchRegistry(b *testing.B) *tool.Registry {
	b.Helper()
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts []tool.Option
	}{{"unbudgeted", nil}, {"budgeted", []tool.Option{tool.WithTimeout(time.Minute)}}} {
		def := tool.Must(tool.New(c.name, "Echoes.", func(_ context.Context, _ *tool.Call, in struct{}) (struct{}, error) { return in, nil }, c.opts...))
		if _, err := reg.Register(def); err != nil {
			b.Fatal(err)
		}
	}
	return reg
}

// benchExecutions returns benchRegistry's registry and the Execution of one call of each
// of its tools, as a hook would be given it.
func benchExecutions(b *testing.B) (*tool.Registry, map[string]*tool.Execution) {
	b.Helper()
	reg := benchRegistry(b)
	execs := map[string]*tool.Execution{}
	reg.OnPreExecute(func(_ context.Context, e *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		execs[e.Name()] = e
		return next()
	})
	for _, name := range []string{"unbudgeted", "budgeted"} {
		if res := reg.Execute(b.Context(), tool.Input{CallID: "c1", Name: name, Args: tool.ParseArguments(`{}`)}); res.IsError {
			b.Fatal(res.Error.Message)
		}
	}
	return reg, execs
}
