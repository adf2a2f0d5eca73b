package main

import (
	"strings"
	"testing"

	"github.com/dsh-go/dsh/config"
	"github.com/dsh-go/dsh/tool"
)

// TestWorkerPrompt checks the system prompt of a worker's model requests: the workspace in
// every mode, the Code Mode SDK (naming the worker's tools) only where run_code is
// presented, and the instruction that only run_code is callable in code mode.
func TestWorkerPrompt(t *testing.T) {
	for _, c := range []struct {
		mode tool.Mode
		sdk  bool
	}{{tool.ModeNative, false}, {tool.ModeCode, true}, {tool.ModeBoth, true}} {
		t.Run(string(c.mode), func(t *testing.T) {
			ws := t.TempDir()
			rt, err := newRuntime(t.Context(), runtimeConfig{Workspace: ws, Mode: c.mode, Config: config.Default(t.TempDir()), NoMCP: true})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			p, err := workerPrompt(rt, rt.workspace)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p, "The workspace is "+rt.workspace+".") {
				t.Errorf("the prompt does not name the workspace:\n%s", p)
			}
			hasSDK := strings.Contains(p, "## Writing code for run_code") && strings.Contains(p, "read: {")
			if hasSDK != c.sdk {
				t.Errorf("SDK in the prompt: %v, want %v:\n%.600s", hasSDK, c.sdk, p)
			}
			if only := strings.Contains(p, tool.CodeOnlyInstruction); only != (c.mode == tool.ModeCode) {
				t.Errorf("the code-only instruction in the prompt: %v, want it in code mode only", only)
			}
		})
	}
}
