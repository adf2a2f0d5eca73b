package redact

import (
	"context"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/tool"
)

// TestPropertyAfterExecuteEqualsWrapper: the policy as Install adds it (an after-execute
// hook, which leaves the body on the call's goroutine) ends every call exactly as the
// policy as an outermost around-execute wrapper did — results, reports and the texts spill
// saves — on successes and failures, clean, redacted, cleaned or spilled, with another
// wrapper inside it and a later post-execute context.
func TestPropertyAfterExecuteEqualsWrapper(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := mixIn{
			Text: drawText(t, "text"),
			List: []string{drawText(t, "item0"), drawText(t, "item1")},
			Fail: rapid.IntRange(0, 3).Draw(t, "fail") == 0,
		}
		hookContext := drawText(t, "context")
		run := func(asWrapper bool) (string, []string, []string) {
			reg := newMixRegistry(t, tool.Render(func(_ mixIn, o mixOut) ([]content.Block, error) {
				return content.Texts("out: " + o.Text + "|" + strings.Join(o.List, "|")), nil
			}))
			var reports []string
			p, store, sp := newMixPolicies(t, &reports)
			g := reg.Global()
			addContextHook(g, hookContext)
			// Another wrapper, inside the policy either way. It passes the body's result
			// on: one that replaces it is where the two forms differ, the wrapper form for
			// the worse (TestAfterExecuteCleansReplacement).
			g.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
				return next(ctx)
			})
			if _, err := sp.Install(g); err != nil {
				t.Fatal(err)
			}
			if asWrapper {
				g.WrapExecute(p.wrap, tool.Prepend(), tool.ReadOnly())
				g.OnPostExecute(p.post, tool.Prepend(), tool.ReadOnly())
				g.OnResult(p.done, tool.ReadOnly())
			} else if _, err := p.Install(g); err != nil {
				t.Fatal(err)
			}
			args, _ := toArgs(in)
			res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "mix", Args: args})
			b, err := res.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			return string(b), reports, store.texts
		}
		gotRes, gotReports, gotSaved := run(false)
		wantRes, wantReports, wantSaved := run(true)
		sameRuns(t, "after-execute", "wrapper", gotRes, wantRes, gotReports, wantReports, gotSaved, wantSaved)
	})
}

// TestAfterExecuteCleansReplacement: a wrapper that replaces the body's result with a Go
// value (a map here) has its value cleaned too. The policy as an outermost wrapper saw that
// value before the pipeline made it canonical and let a secret in a map through (and, with
// no content rendered yet, kept an empty original for spill); as an after-execute hook it
// sees the canonical value and the content rendered from it.
func TestAfterExecuteCleansReplacement(t *testing.T) {
	reg := newMixRegistry(t)
	reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
		if _, err := next(ctx); err != nil {
			return nil, err
		}
		return &tool.Result{Value: map[string]any{"text": "key AKIAIOSFODNN7EXAMPLE", "list": []any{}}}, nil
	})
	if _, err := Install(reg.Global(), Config{}); err != nil {
		t.Fatal(err)
	}
	res := reg.Execute(t.Context(), tool.Input{CallID: "c1", Name: "mix", Args: map[string]any{"text": "hi", "list": []any{}}})
	b, err := res.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "AKIA") || !strings.Contains(string(b), `"text":"key [REDACTED:aws-access-token]"`) {
		t.Errorf("result %s: want the replacement's secret redacted in the value", b)
	}
}
