package tool_test

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// TestAppendCanonicalArgs checks the canonical arguments a policy reads: member order does
// not matter, dst's contents are kept, and arguments that were not lossless JSON report
// false and append nothing.
func TestAppendCanonicalArgs(t *testing.T) {
	tests := []struct {
		name string
		args any
		want string
		ok   bool
	}{
		{"sorted", tool.ParseArguments(`{"b":1,"a":{"d":[1,"x"],"c":null}}`), `prefix:{"a":{"c":null,"d":[1,"x"]},"b":1}`, true},
		{"empty", &jsonv.Object{}, `prefix:{}`, true},
		{"not lossless", map[string]any{"f": func() {}}, `prefix:`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := newReg(t)
			register(t, reg, bodyTool("t", func(context.Context, *tool.Call) (any, error) { return "ok", nil }))
			var got string
			var ok bool
			reg.OnResult(func(_ context.Context, exec *tool.Execution, _ *tool.Result) error {
				b, k := exec.AppendCanonicalArgs([]byte("prefix:"))
				got, ok = string(b), k
				return nil
			})
			reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: tt.args})
			if got != tt.want || ok != tt.ok {
				t.Errorf("AppendCanonicalArgs = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
