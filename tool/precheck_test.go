package tool_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/tool"
)

// preStep is one drawn pre-execute hook: a check ("none", "allow", "ask", "deny", "error",
// "panic") registered with OnPreCheck or as the PreExecuteFunc its documentation describes,
// or a classic hook ("pass", "ask-after", "deny-first") that is always a PreExecuteFunc.
type preStep struct {
	Kind    string
	Check   bool // registered with OnPreCheck when the run uses checks
	Prepend bool
}

func (s preStep) isCheck() bool {
	switch s.Kind {
	case "pass", "ask-after", "deny-first":
		return false
	}
	return true
}

// check is the verdict of a check step i; it logs that it ran.
func (s preStep) check(i int, log *[]string) (tool.PreDecision, bool, error) {
	*log = append(*log, fmt.Sprint(i, " checked"))
	switch s.Kind {
	case "allow":
		return tool.Allow(), true, nil
	case "ask":
		return tool.Ask(fmt.Sprint("asked by ", i)), true, nil
	case "deny":
		return tool.DenyWith(fmt.Sprint("denied by ", i), tool.Info{Name: "TestDenied", Code: "TEST_DENIED"}), true, nil
	case "error":
		return tool.PreDecision{}, true, errors.New(fmt.Sprint("check ", i, " failed"))
	case "panic":
		panic(fmt.Sprint("check ", i))
	}
	return tool.Deny("ignored: no opinion"), false, nil
}

// classic is step i as a PreExecuteFunc: a check step in the form PreCheckFunc documents,
// or one of the classic steps.
func (s preStep) classic(i int, log *[]string) tool.PreExecuteFunc {
	return func(_ context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		switch s.Kind {
		case "pass":
			*log = append(*log, fmt.Sprint(i, " passed"))
			return next()
		case "ask-after":
			*log = append(*log, fmt.Sprint(i, " asks after"))
			d, err := next()
			if err != nil || d.Kind != tool.PreAllow {
				return d, err
			}
			return tool.Ask(fmt.Sprint("asked after by ", i)), nil
		case "deny-first":
			*log = append(*log, fmt.Sprint(i, " denied first"))
			return tool.Deny(fmt.Sprint("denied first by ", i)), nil
		}
		d, decided, err := s.check(i, log)
		switch {
		case err != nil:
			return d, err
		case !decided:
			return next()
		case d.Kind == tool.PreDeny:
			return d, nil
		}
		later, err := next()
		if err != nil || later.Kind == tool.PreDeny {
			return later, err
		}
		return d, nil
	}
}

// TestPropertyPreCheckEqualsClassic: a hook registered with OnPreCheck ends every call, and
// runs the same hooks in the same order, exactly as the PreExecuteFunc PreCheckFunc's
// documentation describes, in any chain of both kinds with classic hooks, prepended or not:
// no opinion, allowing, asking, denying, failing or panicking.
func TestPropertyPreCheckEqualsClassic(t *testing.T) {
	kinds := []string{"none", "allow", "ask", "deny", "error", "panic", "pass", "ask-after", "deny-first"}
	rapid.Check(t, func(t *rapid.T) {
		steps := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) preStep {
			return preStep{
				Kind:    rapid.SampledFrom(kinds).Draw(t, "kind"),
				Check:   rapid.Bool().Draw(t, "check"),
				Prepend: rapid.Bool().Draw(t, "prepend"),
			}
		}), 0, 6).Draw(t, "steps")
		run := func(asChecks bool) (string, []string) {
			reg := newReg(t)
			register(t, reg, strTool("t", "ok"))
			var log []string
			for i, s := range steps {
				var opts []tool.HookOption
				if s.Prepend {
					opts = append(opts, tool.Prepend())
				}
				if asChecks && s.Check && s.isCheck() {
					reg.OnPreCheck(func(_ context.Context, _ *tool.Execution) (tool.PreDecision, bool, error) {
						return s.check(i, &log)
					}, opts...)
					continue
				}
				reg.OnPreExecute(s.classic(i, &log), opts...)
			}
			res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "t", Args: map[string]any{}})
			out := fmt.Sprintf("error=%v text=%q", res.IsError, firstText(res))
			if res.Error != nil {
				out += fmt.Sprintf(" info=%+v message=%q", res.Error.Info, res.Error.Message)
			}
			return out, log
		}
		wantRes, wantLog := run(false)
		gotRes, gotLog := run(true)
		if gotRes != wantRes {
			t.Fatalf("with checks the call ends %s, as PreExecuteFuncs %s", gotRes, wantRes)
		}
		if fmt.Sprint(gotLog) != fmt.Sprint(wantLog) {
			t.Fatalf("with checks the hooks ran %q, as PreExecuteFuncs %q", gotLog, wantLog)
		}
	})
}

// TestPreCheck pins each verdict of a check against the later hooks', and its failures.
func TestPreCheck(t *testing.T) {
	const panicking = "check exploded"
	later := func(d tool.PreDecision, err error) tool.PreExecuteFunc {
		return func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			return d, err
		}
	}
	for _, tc := range []struct {
		name     string
		check    tool.PreCheckFunc
		later    tool.PreExecuteFunc // nil: no later hook
		wantText string              // "" for success
		wantCode string
		laterRan bool
	}{
		{"no opinion, no later hook", func(context.Context, *tool.Execution) (tool.PreDecision, bool, error) {
			return tool.Deny("ignored"), false, nil
		}, nil, "", "", false},
		{"no opinion, later denies", func(context.Context, *tool.Execution) (tool.PreDecision, bool, error) {
			return tool.PreDecision{}, false, nil
		}, later(tool.Deny("later says no"), nil), "Error: later says no", "", true},
		{"allow turns a later ask into allow", func(context.Context, *tool.Execution) (tool.PreDecision, bool, error) {
			return tool.Allow(), true, nil
		}, later(tool.Ask("later asks"), nil), "", "", true},
		{"allow keeps a later deny", func(context.Context, *tool.Execution) (tool.PreDecision, bool, error) {
			return tool.Allow(), true, nil
		}, later(tool.Deny("later says no"), nil), "Error: later says no", "", true},
		{"ask replaces a later allow", func(context.Context, *tool.Execution) (tool.PreDecision, bool, error) {
			return tool.Ask("check asks"), true, nil
		}, later(tool.Allow(), nil), "Error: check asks", "", true},
		{"a later error stands", func(context.Context, *tool.Execution) (tool.PreDecision, bool, error) {
			return tool.Allow(), true, nil
		}, later(tool.PreDecision{}, errors.New("later failed")), "Error: later failed", "", true},
		{"deny ends the chain", func(context.Context, *tool.Execution) (tool.PreDecision, bool, error) {
			return tool.DenyWith("check says no", tool.Info{Name: "TestDenied", Code: "TEST_DENIED"}), true, nil
		}, later(tool.Allow(), nil), "Error: check says no", "TEST_DENIED", false},
		{"an error fails the call at once", func(context.Context, *tool.Execution) (tool.PreDecision, bool, error) {
			return tool.Allow(), false, errors.New("check failed")
		}, later(tool.Allow(), nil), "Error: check failed", "", false},
		{"a panic fails the call", func(context.Context, *tool.Execution) (tool.PreDecision, bool, error) {
			panic(panicking)
		}, later(tool.Allow(), nil), `Error: tool "t": a pre-execute hook panicked: ` + panicking, tool.CodeToolPanic, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := newReg(t)
			register(t, reg, strTool("t", "ok"))
			reg.OnPreCheck(tc.check)
			ran := false
			if tc.later != nil {
				l := tc.later
				reg.OnPreExecute(func(ctx context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
					ran = true
					return l(ctx, exec, next)
				})
			}
			res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "t", Args: map[string]any{}})
			if ran != tc.laterRan {
				t.Errorf("later hook ran: %v, want %v", ran, tc.laterRan)
			}
			if tc.wantText == "" {
				if res.IsError {
					t.Fatalf("call failed: %s", firstText(res))
				}
				return
			}
			if !res.IsError || firstText(res) != tc.wantText {
				t.Fatalf("result %v %q, want failure %q", res.IsError, firstText(res), tc.wantText)
			}
			if tc.wantCode != "" && (res.Error == nil || res.Error.Info == nil || res.Error.Info.Code != tc.wantCode) {
				t.Fatalf("error %+v, want code %s", res.Error, tc.wantCode)
			}
		})
	}
}
