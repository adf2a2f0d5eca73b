package tool_test

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// TestCodedDenials: a pre-execute hook's DenyWith and a GuardCoded guard give the failure
// their error info; Deny, Guard and a guard returning no info keep the uncoded denial.
func TestCodedDenials(t *testing.T) {
	info := tool.Info{Name: "PolicyError", Code: "POLICY_DENIED"}
	const coded = `{"isError":true,"error":{"message":"no","info":{"name":"PolicyError","code":"POLICY_DENIED"}},"content":[{"type":"text","text":"Error: no"}]}`
	const plain = `{"isError":true,"error":{"message":"no"},"content":[{"type":"text","text":"Error: no"}]}`
	pre := func(d tool.PreDecision) func(reg *tool.Registry) {
		return func(reg *tool.Registry) {
			reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				return d, nil
			})
		}
	}
	tests := []struct {
		name  string
		setup func(reg *tool.Registry)
		want  string
	}{
		{"DenyWith", pre(tool.DenyWith("no", info)), coded},
		{"Deny", pre(tool.Deny("no")), plain},
		{"GuardCoded", func(reg *tool.Registry) {
			reg.GuardCoded(func(*tool.Execution) (string, *tool.Info) { return "no", &info })
		}, coded},
		{"GuardCoded without info", func(reg *tool.Registry) {
			reg.GuardCoded(func(*tool.Execution) (string, *tool.Info) { return "no", nil })
		}, plain},
		{"Guard", func(reg *tool.Registry) {
			reg.Guard(func(*tool.Execution) string { return "no" })
		}, plain},
		{"a guard's code after a hook allowed", func(reg *tool.Registry) {
			pre(tool.Allow())(reg)
			reg.GuardCoded(func(*tool.Execution) (string, *tool.Info) { return "no", &info })
		}, coded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := newReg(t)
			register(t, reg, strTool("t", "ran"))
			tt.setup(reg)
			res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "t", Args: &jsonv.Object{}})
			wantJSON(t, res, tt.want)
		})
	}
}
