//go:build !race

package tool_test

import (
	"testing"
)

// TestHookFormsAllocations pins what the frameless hook forms save a call
// (BenchmarkExecuteTypedHookForms's calls): with a pre-execute check, a deadline hook, an
// after-execute hook and a post-decision hook instead of a pre-execute hook, an
// around-execute wrapper and a post-execute hook, the call makes no closure for any of
// their next — three allocations fewer — and no more than the bare call.
func TestHookFormsAllocations(t *testing.T) {
	counts := map[string]float64{}
	for _, f := range hookForms {
		reg := newEchoRegistry(t)
		installHookForm(reg, f.install)
		counts[f.name] = testing.AllocsPerRun(200, echoCall(t, reg))
	}
	if counts["frameless"] > counts["classic"]-3 {
		t.Errorf("the frameless forms make %v allocations a call, the classic ones %v: want at least 3 fewer", counts["frameless"], counts["classic"])
	}
	bare := testing.AllocsPerRun(200, echoCall(t, newEchoRegistry(t)))
	if counts["frameless"] != bare {
		t.Errorf("the frameless forms make %v allocations a call, the bare call %v: want as many", counts["frameless"], bare)
	}
}
