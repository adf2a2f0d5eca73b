package tool_test

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/tool"
)

// BenchmarkExecuteTypedHookForms is BenchmarkExecuteTypedHooks with the hooks in the forms
// that need no frame around the body and no closure for next — a pre-execute check instead
// of the pre-execute hook, a deadline hook (giving no budget) and an after-execute hook
// instead of the around-execute wrapper, a post-decision hook instead of the post-execute
// hook — as "frameless", next to the classic forms as "classic": what the permission
// rules, timeout, redaction, spill and reminder policies save a call by installing
// themselves so.
func BenchmarkExecuteTypedHookForms(b *testing.B) {
	for _, f := range hookForms {
		b.Run(f.name, func(b *testing.B) {
			reg := newEchoRegistry(b)
			installHookForm(reg, f.install)
			benchEcho(b, reg)
		})
	}
}

// hookForms are the two ways of installing the same hooks BenchmarkExecuteTypedHookForms
// compares.
var hookForms = []struct {
	name    string
	install func(reg *tool.Registry)
}{
	{"classic", func(reg *tool.Registry) {
		reg.OnPreExecute(func(_ context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			return next()
		})
		reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			return next(ctx)
		}, tool.ReadOnly())
		reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			return next()
		}, tool.ReadOnly())
	}},
	{"frameless", func(reg *tool.Registry) {
		reg.OnPreCheck(func(context.Context, *tool.Execution) (tool.PreDecision, bool, error) {
			return tool.PreDecision{}, false, nil
		})
		reg.OnDeadline(func(*tool.Execution) (tool.Deadline, error) { return tool.Deadline{}, nil })
		reg.AfterExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result) (*tool.Result, error) {
			return res, nil
		}, tool.ReadOnly())
		reg.OnPostDecision(func(_ context.Context, _ *tool.Execution, _ *tool.Result, d tool.PostDecision, err error) (tool.PostDecision, error) {
			return d, err
		}, tool.ReadOnly())
	}},
}

// installHookForm installs install's hooks and a result listener on reg.
func installHookForm(reg *tool.Registry, install func(reg *tool.Registry)) {
	install(reg)
	reg.OnResult(func(context.Context, *tool.Execution, *tool.Result) error { return nil }, tool.ReadOnly())
}
