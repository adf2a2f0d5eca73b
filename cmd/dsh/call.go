package main

import (
	"context"
	"fmt"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/tool"
)

// runCall implements "dsh call TOOL 'JSON'": one call through the whole pipeline — the
// permission rules, approval, guards, the timeout policy, the tool, output validation, the
// post-execute policies — exactly as an agent's call would run. It prints the call's card
// and its result's card, or with --json the result object of SPEC §1.7. A failed call
// exits with status 1.
func runCall(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "call", "call [flags] TOOL ['JSON arguments']")
	asJSON := fs.Bool("json", false, "print the result object as JSON instead of cards")
	workspace := fs.String("workspace", e.cwd, "the workspace the file and shell tools are confined to")
	cf := addConfigFlags(fs, "mode", "permissions.allow", "permissions.ask", "permissions.deny", "shell.sandbox")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		fs.Usage()
		return &usageError{"want a tool name and optionally its arguments as JSON"}
	}
	name, raw := pos[0], "{}"
	if len(pos) == 2 {
		raw = pos[1]
	}
	ws, err := workspaceDir(*workspace)
	if err != nil {
		return err
	}
	c, err := loadConfig(e, ws, cf)
	if err != nil {
		return err
	}
	var prompter approval.Prompter
	if f := stderrFile(e); e.stdin != nil && f != nil {
		prompter = approval.ForStdio(e.stdin, f)
	}
	rt, err := newRuntime(ctx, runtimeConfig{Workspace: ws, Mode: c.Mode, Config: c.Config, Prompter: prompter,
		MCPDepth: mcp.Depth(e.getenv), Stderr: e.stderr})
	if err != nil {
		return err
	}
	defer rt.Close()
	// The call runs for an agent scope of its own, so policies that route by agent (approval,
	// the observation policy) treat it as an agent's call.
	scope := rt.reg.NewScope("dsh call", nil)
	defer scope.Close()
	in := tool.Input{CallID: "call_1", Name: name, Args: tool.ParseArguments(raw), Agent: scope}
	r := term.For(e.stdout, e.getenv)
	def := rt.reg.Get(name, scope)
	if !*asJSON {
		fmt.Fprint(e.stdout, r.Call(name, agent.CallCard(def, name, in.Args)))
	}
	res := rt.reg.Execute(ctx, in)
	if *asJSON {
		b, err := jsonv.Marshal(res.JSON())
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\n", b)
	} else {
		rc := agent.ResultCard(def, name, in.Args, card.ToolResult{Content: res.Content, IsError: res.IsError, Meta: res.Meta})
		fmt.Fprint(e.stdout, r.Result(name, rc, res.IsError))
	}
	if res.IsError {
		return &exitError{code: 1, err: silentError}
	}
	return nil
}
