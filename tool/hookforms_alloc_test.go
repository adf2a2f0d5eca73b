//go:build !race

package tool_test

import (
	"testing"
)

// TestHookFormsAllocations pins what the frameless hook forms save a call
// (BenchmarkExecuteTypedHookForms's calls): with a deadline hook, an after-execute hook and
// a post-decision hook instead of an around-execute wrapper and a post-execute hook, the
// call makes no closure for either's next — two allocations fewer.
func TestHookFormsAllocations(t *testing.T) {
	counts := map[string]float64{}
	for _, f := range hookForms {
		reg := newEchoRegistry(t)
		installHookForm(reg, f.install)
		counts[f.name] = testing.AllocsPerRun(200, echoCall(t, reg))
	}
	if counts["frameless"] > counts["classic"]-2 {
		t.Errorf("the frameless forms make %v allocations a call, the classic ones %v: want at least 2 fewer", counts["frameless"], counts["classic"])
	}
}
