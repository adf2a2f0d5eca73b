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
// tool through the worker's registry; a sub-call that needs an approval is refused there,
// and the sub-calls are not in the session log.
func TestDurableWorkerRunsCodeAndMCP(t *testing.T) {
	nm := mcptest.Installed(t)
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
console.log(JSON.stringify(m));
let nested;
try { nested = JSON.stringify(await tools.bash({ command: "touch nested", description: "asks" })); } catch (e) { nested = "threw " + String(e && e.message || e); }
console.log("nested: " + nested);`,
	})
	if err != nil {
		t.Fatal(err)
	}
	script := w.script("code.jsonl", fmt.Sprintf(`{"toolCalls":[{"id":"c1","name":"run_code","arguments":%s}]}
{"expectToolResults":["c1"],"text":"done"}
`, program))
	w.worker(ws, "q", script, "--ask", "bash(touch *)")
	id := newSessionID()
	res := testwait.Recv(t, w.run(t.Context(), ws, id, "--queue", "q", "program it"), "dsh run to end")
	res.want(t, 0)
	mustContain(t, "stdout", res.stdout, "tool run_code (c1): ok", "done")
	evs := w.events(id)
	results := durableResults(t, evs)
	r := results["c1"]
	got := textOf(r.Content)
	if r.IsError || !strings.Contains(got, "read-ok") || !strings.Contains(got, "Echo: from the worker") || !strings.Contains(got, "nested: ") {
		t.Fatalf("run_code on the worker: error %v, %s", r.IsError, got)
	}
	// The sub-call that asks for an approval is refused inside the tool activity: nobody
	// can answer there.
	if _, err := os.Stat(filepath.Join(ws, "nested")); err == nil {
		t.Fatalf("a sub-call that needs an approval ran on the worker; the program said:\n%s", got)
	}
	if !strings.Contains(got, "approv") {
		t.Errorf("the refused sub-call does not say why:\n%s", got)
	}
	// The program's sub-calls are not in the session log (the tool worker does not keep it).
	for _, e := range evs {
		if strings.HasPrefix(e.Type, "code/") {
			t.Errorf("the log holds %s", e.Type)
		}
	}
}
