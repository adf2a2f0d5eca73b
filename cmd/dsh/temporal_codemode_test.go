package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/mcptest"
	"github.com/dsh-go/dsh/internal/testwait"
)

// TestDurableWorkerRunsCodeAndMCP configures Code Mode and an MCP server (the reference
// server "everything") for the workspace and runs a durable session on a worker: the model
// sees run_code, and a program run on the worker calls a built-in tool and the MCP server's
// tool through the worker's registry.
func TestDurableWorkerRunsCodeAndMCP(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	nm, err := mcptest.NodeModules(wd)
	if err != nil {
		t.Fatal(err) // says to run scripts/npm-deps.sh; never a skip
	}
	w := newDurableWorld(t)
	ws := w.workspace("ws")
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(w.home, 0o755); err != nil {
		t.Fatal(err)
	}
	server := filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js")
	conf := "mode: code\nmcp:\n  servers:\n    everything: {command: node, args: [" + jsonString(server) + ", stdio]}\n"
	if err := os.WriteFile(filepath.Join(w.home, "config.yaml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	program, err := json.Marshal(map[string]string{
		"description": "read a file and echo through MCP",
		"code": `const r = await tools.read({ file_path: "a.txt" });
const m = await tools.mcp__everything__echo({ message: "from the worker" });
console.log(JSON.stringify(r).includes("alpha") ? "read-ok" : "read-missing");
console.log(JSON.stringify(m));`,
	})
	if err != nil {
		t.Fatal(err)
	}
	script := w.script("code.jsonl", fmt.Sprintf(`{"toolCalls":[{"id":"c1","name":"run_code","arguments":%s}]}
{"expectToolResults":["c1"],"text":"done"}
`, program))
	w.worker(ws, "q", script)
	id := newSessionID()
	res := testwait.Recv(t, w.run(t.Context(), ws, id, "--queue", "q", "program it"), "dsh run to end")
	res.want(t, 0)
	mustContain(t, "stdout", res.stdout, "tool run_code (c1): ok", "done")
	results := durableResults(t, w.events(id))
	r := results["c1"]
	got := textOf(r.Content)
	if r.IsError || !strings.Contains(got, "read-ok") || !strings.Contains(got, "Echo: from the worker") {
		t.Fatalf("run_code on the worker: error %v, %s", r.IsError, got)
	}
}
