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

// TestExecuteTypedAllocations pins the allocation count of a trivial typed call through the
// whole pipeline (BenchmarkExecuteTyped's call), the caller's arguments copied: 6, well
// under the budget of 12, so that an allocation added to the bare call shows here.
// The 6: the invocation, the snapshot of the arguments (one: a small object and its members
// together), the output object (one, likewise) and its boxed string member, the rendered
// text's buffer, and the result with its content block.
// It holds with and without kept goroutines (Config.Workers), however they are handed the
// call (Config.DirectSwitch).
func TestExecuteTypedAllocations(t *testing.T) {
	for _, cfg := range []tool.Config{{Workers: benchWorkers, DirectSwitch: true}, {Workers: benchWorkers}, {}} {
		reg := newEchoRegistryWith(t, cfg)
		call := echoCall(t, reg)
		if got := testing.AllocsPerRun(200, call); got > 6 {
			t.Errorf("Workers %d, DirectSwitch %v: a trivial typed call makes %v allocations, want at most 6", cfg.Workers, cfg.DirectSwitch, got)
		}
	}
}

// TestExecuteTypedHooksAllocations pins the allocation budget of the same call with one hook
// of every kind (BenchmarkExecuteTypedHooks's call): at most 24 — the hook chains' state
// lives in the invocation, and each hook's private copy of the result is two allocations.
func TestExecuteTypedHooksAllocations(t *testing.T) {
	reg := newEchoRegistryWithHooks(t)
	call := echoCall(t, reg)
	if got := testing.AllocsPerRun(200, call); got > 24 {
		t.Errorf("a typed call with one hook of each kind makes %v allocations, want at most 24", got)
	}
}

// echoCall returns one echo call with fixed arguments through reg's whole pipeline,
// failing t on an error result, after making it once to warm the registry's runners.
func echoCall(t *testing.T, reg *tool.Registry) func() {
	args, _ := jsonv.ParseString(`{"text":"hello"}`)
	call := func() {
		if res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: args}); res.IsError {
			t.Fatal(res.Error.Message)
		}
	}
	call()
	return call
}
