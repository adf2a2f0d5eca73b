package redact

import (
	"context"

	"github.com/dsh-go/dsh/tool"
)

// wrap is clean as an around-execute wrapper, as the policy was installed before it became
// an after-execute hook: the tests hold the two forms equal.
func (p *Policy) wrap(ctx context.Context, exec *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
	res, err := next(nil)
	if err != nil || res == nil {
		return res, err
	}
	return p.clean(ctx, exec, res)
}

// post is decide as a post-execute hook that calls next, as the policy was installed before
// it registered with OnPostDecision.
func (p *Policy) post(ctx context.Context, exec *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
	d, err := next()
	return p.decide(ctx, exec, res, d, err)
}
