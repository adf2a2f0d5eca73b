package tool_test

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/internal/cputime"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// BenchmarkResultHooks measures a typed call with a post-execute hook and a result
// listener, without and with an around-execute wrapper (which runs the body on a goroutine
// of its own: a second hand-off), the hooks registered ReadOnly or given copies.
func BenchmarkResultHooks(b *testing.B) {
	for _, c := range []struct {
		name           string
		wrap, readOnly bool
	}{
		{"no-wrapper/read-only", false, true},
		{"no-wrapper/copies", false, false},
		{"wrapper/read-only", true, true},
		{"wrapper/copies", true, false},
	} {
		reg := newEchoRegistry(b)
		var opts []tool.HookOption
		if c.readOnly {
			opts = append(opts, tool.ReadOnly())
		}
		reg.OnPostExecute(func(ctx context.Context, exec *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			return next()
		}, opts...)
		reg.OnResult(func(context.Context, *tool.Execution, *tool.Result) error { return nil }, opts...)
		if c.wrap {
			reg.WrapExecute(func(ctx context.Context, exec *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
				return next(ctx)
			}, opts...)
		}
		args, _ := jsonv.ParseString(`{"text":"hello"}`)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			defer cputime.PerOp(b, "cpu-ns/op", 1)()
			for b.Loop() {
				if res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: args}); res.IsError {
					b.Fatal(res.Error.Message)
				}
			}
		})
	}
}
