package telemetry_test

import (
	"testing"

	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/coderuntime/starlark"
	"github.com/dsh-go/dsh/tool"
)

// TestCodeModeSpans pins a run_code call whose program calls tools: each binding call is
// an execute_tool span nested under the run_code span, with the root call id.
func TestCodeModeSpans(t *testing.T) {
	r := newRecorder(t, false)
	reg, err := tool.NewRegistry(tool.Config{Mode: tool.ModeCode})
	if err != nil {
		t.Fatal(err)
	}
	reg.ObserveCalls(r.tr.CallObserver())
	reg.Register(greetTool(t))
	rt, err := starlark.New(starlark.Config{})
	if err != nil {
		t.Fatal(err)
	}
	undo, err := codemode.Install(reg, rt, codemode.Config{MaxParallelSubCalls: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer undo()
	scope := reg.NewScope("agent", nil)
	defer scope.Close()
	program := `
for name in ["Ada", "Grace"]:
    print((await tools.greet({"name": name}))["greeting"])
return "done"
`
	res := reg.Execute(t.Context(), tool.Input{CallID: "call_run", Name: tool.RunCodeName, Agent: scope,
		Args: map[string]any{"code": program, "description": "greet"}})
	if res.IsError {
		t.Fatalf("run_code failed: %s", res.Error.Message)
	}
	golden(t, "codemode", tree(r.rec.Ended()))
}
