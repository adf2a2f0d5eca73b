package tool_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/tool"
)

// The kinds of step state an invocation keeps in its hook state, which a call allocates
// with the invocation when its registry has per-call hooks, and on first use otherwise.
const (
	lateDeadline = iota
	lateWrap
	lateAfter
	latePost
	lateResult
	lateKinds
)

// installLate adds the hooks of kinds (a bit per kind) to reg, each recording its run in
// log; every hook changes the result or records something visible in it.
func installLate(reg *tool.Registry, kinds int, log *strings.Builder) {
	if kinds&(1<<lateDeadline) != 0 {
		reg.OnDeadline(func(exec *tool.Execution) (tool.Deadline, error) {
			log.WriteString("deadline;")
			return tool.Deadline{Budget: time.Hour, Cause: errors.New("too slow"),
				Expired: &tool.Error{Name: "TimeoutError", Code: tool.CodeToolTimeout, Message: "too slow"}}, nil
		})
	}
	if kinds&(1<<lateWrap) != 0 {
		reg.WrapExecute(func(ctx context.Context, exec *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			log.WriteString("wrap;")
			res, err := next(ctx)
			if err != nil {
				return nil, err
			}
			out := *res
			out.Content = append([]content.Block{content.Text("wrapped")}, res.Content...)
			return &out, nil
		})
	}
	if kinds&(1<<lateAfter) != 0 {
		reg.AfterExecute(func(ctx context.Context, exec *tool.Execution, res *tool.Result) (*tool.Result, error) {
			log.WriteString("after;")
			return res, nil
		})
	}
	if kinds&(1<<latePost) != 0 {
		reg.OnPostExecute(func(ctx context.Context, exec *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			log.WriteString("post;")
			return tool.PostDecision{ReplaceContent: true, Content: append([]content.Block{content.Text("posted")}, res.Content...)}, nil
		})
	}
	if kinds&(1<<lateResult) != 0 {
		reg.OnResult(func(ctx context.Context, exec *tool.Execution, res *tool.Result) error {
			log.WriteString("result:" + firstText(res) + ";")
			return nil
		})
	}
}

// TestPropHookStateOnFirstUse checks that a call whose invocation was allocated without its
// hook state (the registry had no per-call hook when Prepare ran) and gets it on first use
// ends exactly like the same call on a registry that had those hooks from the start: the
// same final result and the same hook runs.
func TestPropHookStateOnFirstUse(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		kinds := rapid.IntRange(1, 1<<lateKinds-1).Draw(t, "kinds")
		guard := rapid.Bool().Draw(t, "guard")
		finalize := rapid.Bool().Draw(t, "finalize")
		text := rapid.StringMatching(`[a-z]{0,8}`).Draw(t, "text")

		outcome := func(late bool) (string, string) {
			reg, err := tool.NewRegistry(tool.Config{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Close()
			var log strings.Builder
			opts := []tool.Option{}
			if finalize {
				opts = append(opts, tool.FinalizeContent(func(exec *tool.Execution, res *tool.Result) ([]content.Block, error) {
					log.WriteString("finalize;")
					return append([]content.Block{content.Text("final")}, res.Content...), nil
				}))
			}
			def := tool.Must(tool.New("echo", "Echoes its text.",
				func(ctx context.Context, call *tool.Call, in echoArgs) (echoOut, error) { return echoOut(in), nil }, opts...))
			if _, err := reg.Register(def); err != nil {
				t.Fatal(err)
			}
			if guard {
				reg.Guard(func(exec *tool.Execution) string { log.WriteString("guard;"); return "" })
			}
			if !late {
				installLate(reg, kinds, &log)
			}
			inv := reg.Prepare(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: js(t, fmt.Sprintf(`{"text":%q}`, text))})
			if late {
				installLate(reg, kinds, &log)
			}
			if inv.NeedsDispatch() {
				inv.Dispatch()
			}
			return resultJSON(t, inv.Finalize()), log.String()
		}
		early, earlyLog := outcome(false)
		late, lateLog := outcome(true)
		if early != late {
			t.Fatalf("result with the hooks installed after Prepare:\n%s\nwith them from the start:\n%s", late, early)
		}
		if earlyLog != lateLog {
			t.Fatalf("hook runs with the hooks installed after Prepare: %q, from the start: %q", lateLog, earlyLog)
		}
	})
}
