package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// TestTypedCallAllocations pins what a typed call costs in allocations under `dsh run`'s
// wiring (scenario (c) of docs/benchmarks.md): the registry newRuntime builds, with every
// policy on, the model's argument text parsed and handed over as the scheduler does, and the
// output rendered for the model. The bare pipeline's share is pinned in tool's
// TestExecuteTypedAllocations; what the wiring adds is the argument object (one block for
// the object, its member and its strings' bytes, one for the string held in an interface),
// and no policy allocates on this path.
func TestTypedCallAllocations(t *testing.T) {
	home := filepath.Join(t.TempDir(), "dsh-home")
	c, err := loadConfig(&env{getenv: func(k string) string {
		if k == "DSH_HOME" {
			return home
		}
		return ""
	}}, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := newRuntime(t.Context(), runtimeConfig{Workspace: t.TempDir(), Mode: tool.ModeBoth, Config: c.Config,
		Log: session.NewMemory(nil), NoMCP: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	type text struct {
		Text string `json:"text"`
	}
	echo := tool.Must(tool.New("echo", "Echoes its text.",
		func(ctx context.Context, call *tool.Call, in text) (text, error) { return in, nil }, tool.ConcurrencySafe()))
	if _, err := rt.reg.Register(echo); err != nil {
		t.Fatal(err)
	}
	scope := rt.reg.NewScope("alloc", nil)
	t.Cleanup(func() { scope.Close() })
	call := func() {
		res := rt.reg.Execute(t.Context(), tool.Input{CallID: "c1", Name: "echo", Args: rt.reg.ParseArguments(`{"text":"hello"}`), OwnArgs: true, Agent: scope})
		if res.IsError || len(res.Content) != 1 || res.Content[0].Text != "{\n  \"text\": \"hello\"\n}" {
			t.Fatalf("echo: %+v", res)
		}
	}
	call()
	// 7: the invocation, the output object and its boxed string, the rendered text and the
	// result (the bare call's 6 but for the copy of the arguments, which OwnArgs saves), and
	// the parsed arguments' 2.
	const want = 7
	if got := testing.AllocsPerRun(200, call); got != want {
		t.Fatalf("a typed call under dsh run's wiring allocates %v times, want %v", got, want)
	}
}
