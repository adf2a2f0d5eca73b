package tool_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// postStep is what one drawn post-execute hook does with the decision of the hooks after it.
type postStep struct {
	Kind     string // "accept", "context", "block", "replace", "error", "panic", "pass-error"
	ReadOnly bool
	Decision bool // registered with OnPostDecision (else with OnPostExecute, next first)
	Prepend  bool
}

func (s postStep) decide(i int, log *[]string, res *tool.Result, d tool.PostDecision, err error) (tool.PostDecision, error) {
	*log = append(*log, fmt.Sprintf("%d saw %q %v %d", i, firstText(res), d.Block, len(d.AdditionalContexts)))
	if err != nil && s.Kind != "pass-error" {
		return d, err
	}
	switch s.Kind {
	case "context":
		d.AdditionalContexts = append(d.AdditionalContexts, msg(fmt.Sprint("p", i), "note"))
	case "block":
		d = tool.BlockWith(content.Texts(fmt.Sprint("blocked by ", i)))
	case "replace":
		d.ReplaceContent, d.Content = true, content.Texts(fmt.Sprint("replaced by ", i))
	case "error":
		return d, errors.New(fmt.Sprint("hook ", i, " failed"))
	case "panic":
		panic(fmt.Sprint("hook ", i))
	case "pass-error":
		if err != nil {
			return tool.PostDecision{}, fmt.Errorf("hook %d saw: %w", i, err)
		}
	}
	return d, nil
}

// TestPropertyPostDecisionEqualsNextFirst: a hook registered with OnPostDecision ends every
// call, and sees every decision, exactly as the same hook registered with OnPostExecute as
// a hook that calls next first: in any chain of both kinds, ReadOnly or not, prepended or
// not, accepting, adding contexts, blocking, replacing, failing or panicking.
func TestPropertyPostDecisionEqualsNextFirst(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		steps := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) postStep {
			return postStep{
				Kind:     rapid.SampledFrom([]string{"accept", "context", "block", "replace", "error", "panic", "pass-error"}).Draw(t, "kind"),
				ReadOnly: rapid.Bool().Draw(t, "readOnly"),
				Decision: rapid.Bool().Draw(t, "decision"),
				Prepend:  rapid.Bool().Draw(t, "prepend"),
			}
		}), 0, 5).Draw(t, "steps")
		run := func(asDecisions bool) (string, []string) {
			reg := newReg(t)
			register(t, reg, strTool("t", "ok"))
			var log []string
			for i, s := range steps {
				var opts []tool.HookOption
				if s.ReadOnly {
					opts = append(opts, tool.ReadOnly())
				}
				if s.Prepend {
					opts = append(opts, tool.Prepend())
				}
				if asDecisions && s.Decision {
					reg.OnPostDecision(func(_ context.Context, _ *tool.Execution, res *tool.Result, d tool.PostDecision, err error) (tool.PostDecision, error) {
						return s.decide(i, &log, res, d, err)
					}, opts...)
					continue
				}
				reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
					d, err := next()
					return s.decide(i, &log, res, d, err)
				}, opts...)
			}
			res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}})
			checkInvariants(t, res)
			return resultJSON(t, res), log
		}
		gotRes, gotLog := run(true)
		wantRes, wantLog := run(false)
		if gotRes != wantRes {
			t.Fatalf("result\nOnPostDecision: %s\n OnPostExecute: %s", gotRes, wantRes)
		}
		if !equalStrings(gotLog, wantLog) {
			t.Fatalf("hooks saw\nOnPostDecision: %q\n OnPostExecute: %q", gotLog, wantLog)
		}
	})
}

func TestPostDecisionGoexit(t *testing.T) {
	reg := newReg(t)
	register(t, reg, strTool("t", "ok"))
	reg.OnPostDecision(func(context.Context, *tool.Execution, *tool.Result, tool.PostDecision, error) (tool.PostDecision, error) {
		runtime.Goexit()
		return tool.PostDecision{}, nil
	})
	res := reg.Execute(t.Context(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}})
	checkInvariants(t, res)
	if res.Error == nil || res.Error.Message != `tool "t": a post-execute hook called runtime.Goexit` || res.Error.Info.Code != tool.CodeToolPanic {
		t.Errorf("result %s", resultJSON(t, res))
	}
}

func TestPostDecisionScoped(t *testing.T) {
	reg := newReg(t)
	register(t, reg, strTool("t", "ok"))
	a, b := reg.NewScope("a", nil), reg.NewScope("b", nil)
	seen := 0
	remove := a.OnPostDecision(func(_ context.Context, _ *tool.Execution, _ *tool.Result, d tool.PostDecision, err error) (tool.PostDecision, error) {
		seen++
		return d, err
	})
	for _, agent := range []*tool.Scope{b, a} {
		reg.Execute(t.Context(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}, Agent: agent})
	}
	remove()
	reg.Execute(t.Context(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}, Agent: a})
	if seen != 1 {
		t.Errorf("the hook saw %d calls, want 1 (a's, before it was removed)", seen)
	}
}

// A post-execute hook that only adjusts the decision of the hooks after it can say so with
// OnPostDecision: the pipeline runs the later hooks first and hands it their decision.
func ExampleRegistry_OnPostDecision() {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		panic(err)
	}
	echo := tool.Must(tool.New("echo", "Echoes its text.",
		func(_ context.Context, _ *tool.Call, in struct {
			Text string `json:"text"`
		}) (string, error) {
			return in.Text, nil
		}))
	if _, err := reg.Register(echo); err != nil {
		panic(err)
	}
	reg.OnPostDecision(func(_ context.Context, exec *tool.Execution, res *tool.Result, d tool.PostDecision, err error) (tool.PostDecision, error) {
		if err != nil || d.Block {
			return d, err // the later hooks failed or blocked: leave it so
		}
		d.AdditionalContexts = append(d.AdditionalContexts, content.Message{ID: "n1", Role: content.RoleUser, Content: content.Texts("echo ran")})
		return d, nil
	}, tool.ReadOnly())
	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: map[string]any{"text": "hi"}})
	fmt.Println(res.Content[0].Text, "+", res.AdditionalContexts[0].Content[0].Text)
	// Output: hi + echo ran
}
