package reminder_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/dsh-go/dsh/policy/reminder"
	"github.com/dsh-go/dsh/tool"
)

// TestLaterHookEndings pins when a call counts whose later post-execute hook does not
// return: the reminder decides after the later hooks, so a panic there (recovered into the
// call's result) still counts the call, and a runtime.Goexit, which ends the hooks'
// goroutine before the reminder decides, does not.
func TestLaterHookEndings(t *testing.T) {
	tests := []struct {
		name string
		end  func()
		want int
	}{
		{"panics", func() { panic("later hook") }, 3},
		{"calls Goexit", runtime.Goexit, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, reminder.Config{})
			f.reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				tt.end()
				return tool.PostDecision{}, nil
			})
			for range 3 {
				res := f.reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "probe", Args: tool.ParseArguments(`{}`), Agent: f.agent})
				if !res.IsError || res.Error.Info.Code != tool.CodeToolPanic {
					t.Fatalf("result %+v, want TOOL_PANIC", res)
				}
			}
			if n := f.rem.Count(f.agent); n != tt.want {
				t.Errorf("chain %d, want %d", n, tt.want)
			}
		})
	}
}
