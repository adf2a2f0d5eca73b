//go:build !race

// The race detector makes sync.Pool drop a random share of what is put in it, so allocation
// counts are checked only without it.

package tool_test

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// TestExecuteTypedAllocations pins the allocation budget of a trivial typed call through the
// whole pipeline (BenchmarkExecuteTyped's call): at most 12, the caller's arguments copied.
func TestExecuteTypedAllocations(t *testing.T) {
	reg := newEchoRegistry(t)
	args, _ := jsonv.ParseString(`{"text":"hello"}`)
	ctx := context.Background()
	call := func() {
		if res := reg.Execute(ctx, tool.Input{CallID: "c1", Name: "echo", Args: args}); res.IsError {
			t.Fatal(res.Error.Message)
		}
	}
	call() // warm the registry's runners
	if got := testing.AllocsPerRun(200, call); got > 12 {
		t.Errorf("a trivial typed call makes %v allocations, want at most 12", got)
	}
}
