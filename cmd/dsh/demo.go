package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/config"
	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/policy/rules"
	"github.com/dsh-go/dsh/tool"
)

// demoFiles is the project the demo works on, written to a fresh temporary workspace.
var demoFiles = []struct{ name, text string }{
	{"README.md", "# greeter\n\nA tiny Go program that greets whoever runs it.\n\nRun it with `go run .`.\n"},
	{"go.mod", "module greeter\n\ngo 1.26\n"},
	{"main.go", "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n"},
}

// demoDenyRule is the permission rule the demo's denied command runs into.
const demoDenyRule = "bash(rm -rf *)"

// demoTimeout is the budget of the demo's slow_check tool, which the timeout policy enforces.
const demoTimeout = 300 * time.Millisecond

// slowCheckTool is the demo's own tool: a check that waits for something slow (as a CI
// query would) and honours its context, with a 300 ms budget. The timeout policy ends it
// with TOOL_TIMEOUT — the pipeline's deadline, as opposed to bash's own timeoutMs.
func slowCheckTool() *tool.Definition {
	type checkArgs struct {
		Name string `json:"name,omitempty" jsonschema:"which check to wait for"`
	}
	return tool.Must(tool.New("slow_check", "The demo's own tool: waits for the project's slow check to report (it never does within the demo's 300 ms budget).",
		func(ctx context.Context, _ *tool.Call, _ checkArgs) (string, error) {
			<-ctx.Done()
			return "", context.Cause(ctx)
		},
		tool.WithTimeout(demoTimeout),
	))
}

// runDemo implements "dsh demo": the real agent loop, tools and policies, driven by a
// scripted model so that it runs offline and the same way every time. It works in a fresh
// temporary workspace and shows parallel reads, an edit with its diff, a command denied by
// a permission rule, a command that runs into bash's own timeout, a tool call ended by the
// timeout policy (TOOL_TIMEOUT) and — in the code and both modes — a run_code program
// fanning out parallel reads. The session log goes to a temporary directory removed with
// the workspace, unless --home (or an explicit sessions root) asks for the dsh home, where
// "dsh session show" replays it later.
func runDemo(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "demo", "demo [--mode native|code|both] [--json] [--keep] [--home]")
	asJSON := fs.Bool("json", false, "print the session events as JSON lines on standard output")
	keep := fs.Bool("keep", false, "keep the temporary workspace (and the temporary session log) instead of removing them")
	toHome := fs.Bool("home", false, "write the session log into your dsh home's sessions (sessions.root) instead of a temporary directory")
	cf := addConfigFlags(fs, "mode", "sessions.root")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	mode := tool.ModeBoth
	ws, err := os.MkdirTemp("", "dsh-demo-")
	if err != nil {
		return fmt.Errorf("temporary workspace: %w", err)
	}
	if ws, err = filepath.EvalSymlinks(ws); err != nil {
		return err
	}
	defer func() {
		if *keep {
			fmt.Fprintf(e.stderr, "workspace kept: %s\n", ws)
			return
		}
		os.RemoveAll(ws)
		if !*asJSON {
			fmt.Fprintf(e.stderr, "workspace removed: %s (pass --keep to keep it)\n", ws)
		}
	}()
	for _, f := range demoFiles {
		if err := os.WriteFile(filepath.Join(ws, f.name), []byte(f.text), 0o644); err != nil {
			return fmt.Errorf("temporary workspace: %w", err)
		}
	}
	c, err := loadConfig(e, ws, cf)
	if err != nil {
		return err
	}
	// The session log: the dsh home only when asked for.
	var replay func(id string) string
	if k := c.Source("sessions.root").Kind; !*toHome && k != config.FromEnv && k != config.FromFlag {
		sessions, err := os.MkdirTemp("", "dsh-demo-sessions-")
		if err != nil {
			return fmt.Errorf("temporary session directory: %w", err)
		}
		c.Sessions.Root = sessions
		c.Sessions.Store = "" // the temporary directory, not a configured database
		replay = func(id string) string {
			if *keep {
				return fmt.Sprintf("replay: dsh session show --sessions-dir %s %s", sessions, id)
			}
			return "the session log is temporary (pass --home to keep it in your dsh home, or --keep)"
		}
		defer func() {
			if *keep {
				fmt.Fprintf(e.stderr, "session log kept: %s\n", sessions)
				return
			}
			os.RemoveAll(sessions)
			if !*asJSON {
				fmt.Fprintf(e.stderr, "session log removed: %s\n", sessions)
			}
		}()
	}
	if k := c.Source("mode").Kind; k == config.FromEnv || k == config.FromFlag {
		mode = c.Mode
	}
	// The demo is the same everywhere: its own rules and tool order, nobody asked for
	// approval, no MCP servers.
	c.Mode = mode
	c.Permissions = rules.Config{Deny: []string{demoDenyRule}}
	c.ToolOrder = nil
	c.MaxParallelToolCalls = agent.DefaultMaxParallelToolCalls
	c.MaxSteps = agent.DefaultMaxSteps
	c.MCP = mcp.Config{}

	opts := script.Options{Name: "scripted-demo", Source: "the demo script"}
	if !*asJSON && term.IsTerminal(e.stderr) {
		opts.ChunkSize, opts.Delay = 6, 12*time.Millisecond // let the reply arrive visibly
	}
	model, err := script.New(demoScript(mode), opts)
	if err != nil {
		return fmt.Errorf("the demo script: %w", err)
	}
	return runAgent(ctx, e, agentRun{
		config:    c,
		workspace: ws,
		model:     model,
		task:      "Make the greeter greet the world, clean up old build output and run the slow check.",
		json:      *asJSON,
		banner:    fmt.Sprintf("dsh demo · SCRIPTED MODEL: the replies are replayed from a script, no LLM is called · mode %s · workspace %s", mode, ws),
		prompter:  approval.NonInteractive(),
		scripted:  true,
		replay:    replay,
		tools:     []*tool.Definition{slowCheckTool()},
	})
}

// args encodes tool arguments: name/value pairs in order.
func args(kv ...any) string {
	o := jsonv.NewObject()
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		if n, ok := v.(int); ok {
			v = float64(n)
		}
		o.Set(kv[i].(string), v)
	}
	b, err := jsonv.Marshal(o)
	if err != nil {
		panic(err) // the demo's own literals
	}
	return string(b)
}

func call(id, name, arguments string) script.ToolCall {
	return script.ToolCall{ID: id, Name: name, Arguments: arguments}
}

// Code Mode programs of the demo.
const (
	demoReadProgram = `const files = ["README.md", "main.go"];
// Both reads are concurrency-safe, so they run in parallel.
const reads = await Promise.all(files.map((file_path) => tools.read({ file_path })));
reads.forEach((r, i) => console.log(files[i] + ": " + r.totalLines + " lines"));
return reads.map((r, i) => ({ file: files[i], lines: r.totalLines }));`

	demoEditProgram = `await tools.edit({
  file_path: "main.go",
  old_string: 'fmt.Println("hello")',
  new_string: 'fmt.Println("hello, world")',
});
console.log("main.go now greets the world");`

	demoShellProgram = `try {
  await tools.bash({ command: "rm -rf build", description: "Remove old build output" });
} catch (err) {
  console.log("denied: " + (err as Error).message);
}
const slow = await tools.bash({ command: "sleep 30", description: "Wait for a slow command", timeoutMs: 300 });
console.log("slow command timed out: " + slow.timedOut);
try {
  await tools.slow_check({ name: "ci" });
} catch (err) {
  console.log("slow check: " + (err as Error).message);
}`
)

// demoScript is the scripted model's replies for a presentation mode.
func demoScript(mode tool.Mode) []script.Reply {
	final := script.Reply{Text: "Done. main.go now prints \"hello, world\". Removing the build directory was denied by the " +
		"permission rule " + demoDenyRule + "; the slow command was stopped by its own 300 ms timeoutMs, and the slow check " +
		"by the timeout policy (TOOL_TIMEOUT) at its 300 ms budget."}
	if mode == tool.ModeCode {
		return []script.Reply{
			{Reasoning: "Only run_code is available, so I read the files from a program.",
				Text:      "Let me read the project — both files at once, from one program.",
				ToolCalls: []script.ToolCall{call("c1", tool.RunCodeName, args("description", "Read README.md and main.go in parallel", "code", demoReadProgram))}},
			{ExpectToolResults: []string{"c1"}, Text: "main.go prints \"hello\". I'll make it greet the world.",
				ToolCalls: []script.ToolCall{call("c2", tool.RunCodeName, args("description", "Edit the greeting", "code", demoEditProgram))}},
			{ExpectToolResults: []string{"c2"}, Text: "Now the clean-up and the slow checks.",
				ToolCalls: []script.ToolCall{call("c3", tool.RunCodeName, args("description", "Clean up and run the slow check", "code", demoShellProgram))}},
			withExpect(final, "c3"),
		}
	}
	replies := []script.Reply{
		{Reasoning: "I should look at the project before changing anything.",
			Text: "Let me look at the project first: two reads in parallel, then a listing.",
			ToolCalls: []script.ToolCall{
				call("c1", "read", args("file_path", "README.md")),
				call("c2", "read", args("file_path", "main.go")),
				call("c3", "glob", args("pattern", "*.go")),
			}},
		{ExpectToolResults: []string{"c1", "c2", "c3"}, Text: "main.go prints \"hello\". I'll make it greet the world.",
			ToolCalls: []script.ToolCall{call("c4", "edit", args("file_path", "main.go",
				"old_string", `fmt.Println("hello")`, "new_string", `fmt.Println("hello, world")`))}},
		{ExpectToolResults: []string{"c4"}, Text: "Now I'll remove old build output and run the slow command and the slow check.",
			ToolCalls: []script.ToolCall{
				call("c5", "bash", args("command", "rm -rf build", "description", "Remove old build output")),
				call("c6", "bash", args("command", "sleep 30", "description", "Wait for a slow command", "timeoutMs", 300)),
				call("c6b", "slow_check", args("name", "ci")),
			}},
	}
	last := "c6"
	if mode == tool.ModeBoth {
		replies = append(replies, script.Reply{ExpectToolResults: []string{"c5", "c6", "c6b"},
			Text:      "Finally, Code Mode: one program fans out both reads in parallel and returns only the line counts.",
			ToolCalls: []script.ToolCall{call("c7", tool.RunCodeName, args("description", "Count the lines of README.md and main.go", "code", demoReadProgram))}})
		last = "c7"
	}
	if last == "c6" {
		final = withExpect(final, "c5", "c6", "c6b")
	} else {
		final = withExpect(final, last)
	}
	return append(replies, final)
}

func withExpect(r script.Reply, ids ...string) script.Reply {
	r.ExpectToolResults = ids
	return r
}
