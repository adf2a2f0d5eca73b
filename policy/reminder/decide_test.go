package reminder_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/policy/reminder"
	"github.com/dsh-go/dsh/tool"
)

var msgID = regexp.MustCompile(`"id":"msg_[0-9a-f]+"`)

// TestPropertyInstallEqualsPostExecute: the reminder as Install adds it (a post-decision
// hook, which observes the call after the later hooks decided) gives every call of any
// sequence exactly the result the reminder registered as PostExecute (observing first,
// then calling next) gives, with a later hook that adds a context, blocks or fails.
func TestPropertyInstallEqualsPostExecute(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		type step struct{ Name, Args, Later string }
		steps := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) step {
			return step{
				Name:  rapid.SampledFrom([]string{"probe", "other"}).Draw(t, "name"),
				Args:  rapid.SampledFrom([]string{`{}`, `{"a":1}`}).Draw(t, "args"),
				Later: rapid.SampledFrom([]string{"accept", "accept", "context", "block", "error"}).Draw(t, "later"),
			}
		}), 1, 12).Draw(t, "calls")
		run := func(installed bool) []string {
			reg, err := tool.NewRegistry(tool.Config{})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"probe", "other"} {
				if _, err := reg.Register(okTool(name)); err != nil {
					t.Fatal(err)
				}
			}
			rem, err := reminder.New(reminder.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if installed {
				if _, err := rem.Install(reg.Global()); err != nil {
					t.Fatal(err)
				}
			} else {
				reg.OnPostExecute(rem.PostExecute, tool.ReadOnly())
			}
			var later string
			reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				d, err := next()
				switch later {
				case "context":
					d.AdditionalContexts = append(d.AdditionalContexts, content.Message{ID: "m", Role: content.RoleUser, Content: content.Texts("later")})
				case "block":
					d = tool.BlockWith(content.Texts("blocked"))
				case "error":
					return d, fmt.Errorf("later hook failed")
				}
				return d, err
			})
			agent := reg.NewScope("agent", nil)
			defer agent.Close()
			var out []string
			for i, s := range steps {
				later = s.Later
				res := reg.Execute(context.Background(), tool.Input{CallID: fmt.Sprint("c", i), Name: s.Name, Args: tool.ParseArguments(s.Args), Agent: agent})
				b, err := res.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, msgID.ReplaceAllString(string(b), `"id":"msg"`)) // ids are random
			}
			return out
		}
		got, want := run(true), run(false)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("call %d\n installed: %s\nPostExecute: %s", i, got[i], want[i])
			}
		}
	})
}
