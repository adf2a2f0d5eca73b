package tool_test

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/tool"
)

// TestPrepareAdmitted checks the seam a durable workflow uses: the pre-dispatch decision was
// made elsewhere, so no pre-execute hook, approver or guard runs again, while the arguments
// are still checked, an unknown tool still fails, a cancelled call still aborts before
// dispatch, and the body, post-execute and listeners run as after Prepare.
func TestPrepareAdmitted(t *testing.T) {
	type in struct {
		N int `json:"n"`
	}
	cases := []struct {
		name     string
		call     tool.Input
		cancel   bool
		wantCode string
		wantBody bool
	}{
		{name: "admitted", call: tool.Input{CallID: "c", Name: "double", Args: map[string]any{"n": 2}}, wantBody: true},
		{name: "bad arguments", call: tool.Input{CallID: "c", Name: "double", Args: map[string]any{"n": "x"}}, wantCode: tool.CodeInvalidArgs, wantBody: false},
		{name: "unknown tool", call: tool.Input{CallID: "c", Name: "nope", Args: map[string]any{}}, wantCode: tool.CodeUnknownTool},
		{name: "cancelled", call: tool.Input{CallID: "c", Name: "double", Args: map[string]any{"n": 2}}, cancel: true, wantCode: tool.CodeAbortedBeforeDispatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := newReg(t)
			ran := false
			def, err := tool.New("double", "Double n.", func(ctx context.Context, call *tool.Call, v in) (int, error) {
				ran = true
				return v.N * 2, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := reg.Register(def); err != nil {
				t.Fatal(err)
			}
			pre, guards, post := 0, 0, 0
			reg.Global().OnPreExecute(func(ctx context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				pre++
				return tool.Deny("denied by a hook"), nil
			})
			reg.Guard(func(exec *tool.Execution) string { guards++; return "denied by a guard" })
			reg.Global().OnPostExecute(func(ctx context.Context, exec *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				post++
				return next()
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				cancel()
			}
			inv := reg.PrepareAdmitted(ctx, c.call)
			if inv.NeedsDispatch() {
				inv.Dispatch()
			}
			res := inv.Finalize()
			if pre != 0 || guards != 0 {
				t.Fatalf("pre-execute ran %d times, guards %d times", pre, guards)
			}
			if ran != c.wantBody {
				t.Fatalf("body ran: %v, want %v", ran, c.wantBody)
			}
			if c.wantCode == "" {
				if res.IsError || res.Value != float64(4) {
					t.Fatalf("result %+v", res)
				}
				if post != 1 {
					t.Fatalf("post-execute ran %d times", post)
				}
				return
			}
			if !res.IsError || res.Error.Info == nil || res.Error.Info.Code != c.wantCode {
				t.Fatalf("result %+v, want %s", res, c.wantCode)
			}
		})
	}
}
