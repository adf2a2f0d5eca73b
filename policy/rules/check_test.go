package rules_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/policy/rules"
	"github.com/dsh-go/dsh/tool"
)

// TestPropertyCheckEqualsPreExecute: the rules installed as Install does (Check, a
// pre-execute check) end every call as the rules' PreExecute registered in front of the
// same later hook does, for any allow, ask and deny lists, command and later verdict
// (allow, ask, deny, error), and run the later hook exactly when PreExecute does.
func TestPropertyCheckEqualsPreExecute(t *testing.T) {
	pattern := rapid.SampledFrom([]string{"bash(ls*)", "bash(rm *)", "bash(git status)", "bash", "read", "bash(echo *)"})
	command := rapid.SampledFrom([]string{"ls", "ls -la", "rm -rf x", "git status", "echo hi", "cat f", "ls; rm x"})
	laterKind := rapid.SampledFrom([]string{"allow", "ask", "deny", "error"})
	rapid.Check(t, func(t *rapid.T) {
		cfg := rules.Config{
			Allow:     rapid.SliceOfN(pattern, 0, 2).Draw(t, "allow"),
			Ask:       rapid.SliceOfN(pattern, 0, 2).Draw(t, "ask"),
			Deny:      rapid.SliceOfN(pattern, 0, 2).Draw(t, "deny"),
			Workspace: "/ws",
		}
		cmd, later := command.Draw(t, "command"), laterKind.Draw(t, "later")
		r, err := rules.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		run := func(asCheck bool) (string, bool) {
			reg, err := tool.NewRegistry(tool.Config{})
			if err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int32
			if _, err := reg.Register(bashTool(&runs)); err != nil {
				t.Fatal(err)
			}
			if asCheck {
				reg.OnPreCheck(r.Check)
			} else {
				reg.OnPreExecute(r.PreExecute)
			}
			laterRan := false
			reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				laterRan = true
				switch later {
				case "ask":
					return tool.Ask("later asks"), nil
				case "deny":
					return tool.Deny("later denies"), nil
				case "error":
					return tool.PreDecision{}, errors.New("later failed")
				}
				return tool.Allow(), nil
			})
			args := jsonv.NewObject(jsonv.Member{Name: "command", Value: cmd})
			res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "bash", Args: args})
			out := fmt.Sprintf("error=%v content=%+v runs=%d", res.IsError, res.Content, runs.Load())
			if res.Error != nil {
				out += fmt.Sprintf(" info=%+v message=%q", res.Error.Info, res.Error.Message)
			}
			return out, laterRan
		}
		want, wantRan := run(false)
		got, gotRan := run(true)
		if got != want || gotRan != wantRan {
			t.Fatalf("as a check: %s (later hook ran %v); as PreExecute: %s (%v)", got, gotRan, want, wantRan)
		}
	})
}
