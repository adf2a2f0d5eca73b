package tool_test

import (
	"context"
	"math"
	"testing"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
	"github.com/google/go-cmp/cmp"
)

// TestOwnArgs checks that handing arguments over (Input.OwnArgs) changes nothing a caller
// can see: parsed JSON runs as it would copied, and a value that is not plain parsed JSON is
// still snapshotted and checked, failing exactly as it fails without OwnArgs.
func TestOwnArgs(t *testing.T) {
	reg := newEchoRegistry(t)
	parsed := func(s string) any { return reg.ParseArguments(s) }
	tests := []struct {
		name string
		args func() any
	}{
		{"parsed object", func() any { return parsed(`{"text":"hello"}`) }},
		{"parsed raw text", func() any { return parsed(`{"text":`) }},
		{"parsed wrong type", func() any { return parsed(`{"text":1}`) }},
		{"Go map", func() any { return map[string]any{"text": "hi"} }},
		{"Go value that is not JSON", func() any { return map[string]any{"text": make(chan int)} }},
		{"NaN", func() any { return jsonv.NewObject(jsonv.Member{Name: "text", Value: math.NaN()}) }},
		{"negative zero", func() any { return jsonv.NewObject(jsonv.Member{Name: "n", Value: math.Copysign(0, -1)}) }},
		{"invalid UTF-8", func() any { return jsonv.NewObject(jsonv.Member{Name: "text", Value: "\xff"}) }},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			copied := reg.Execute(ctx, tool.Input{CallID: "c1", Name: "echo", Args: tc.args()})
			owned := reg.Execute(ctx, tool.Input{CallID: "c1", Name: "echo", Args: tc.args(), OwnArgs: true})
			if diff := cmp.Diff(copied, owned, cmp.Comparer(func(a, b *jsonv.Object) bool {
				x, _ := jsonv.Marshal(a)
				y, _ := jsonv.Marshal(b)
				return string(x) == string(y)
			})); diff != "" {
				t.Fatalf("owned arguments changed the result (-copied +owned):\n%s", diff)
			}
		})
	}
}
