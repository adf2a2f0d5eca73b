package main

import (
	"context"
	"fmt"
	"path/filepath"

	"go.temporal.io/sdk/worker"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/session"
)

// runWorker is "dsh worker": it serves durable sessions' model requests, session logs and
// tool calls for the workspace it is started in, on one Temporal task queue, until it is
// interrupted.
func runWorker(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "worker", "worker --temporal HOST:PORT --queue NAME [flags]")
	tf := addTemporalFlags(fs)
	queue := fs.String("queue", "", "the task queue to serve (name it after the workspace or host)")
	workspace := fs.String("workspace", e.cwd, "the workspace the file and shell tools are confined to")
	scriptFile := fs.String("script", "", "answer model requests with the assistant replies of this JSONL script instead of calling a model")
	maxTokens := fs.Int("max-tokens", 0, "cap on each reply's tokens (0: the server's default)")
	preset := approvalFlag(fs)
	noModel := fs.Bool("no-model", false, "serve tool calls only (a workspace's queue): no model, no credentials")
	cf := addConfigFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return &usageError{fmt.Sprintf("dsh worker takes no arguments, got %q", pos)}
	}
	if *tf.addr == "" || *queue == "" {
		return &usageError{"dsh worker needs --temporal HOST:PORT and --queue NAME"}
	}
	if err := tf.check(); err != nil {
		return err
	}
	if err := checkApproval(*preset); err != nil {
		return err
	}
	ws, err := workspaceDir(*workspace)
	if err != nil {
		return err
	}
	c, err := loadConfig(e, ws, cf)
	if err != nil {
		return err
	}
	store, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer closeStore(store)
	var model llm.Model
	if !*noModel {
		if model, _, err = newModel(c, *scriptFile, ""); err != nil {
			return err
		}
	}
	// The tools of the workspace as "dsh run" has them: the configured mode (run_code in
	// code and both), the configured MCP servers. Every session the worker serves gets a
	// scope of its own (see durable.HostConfig.Scope).
	rt, err := newRuntime(ctx, runtimeConfig{Workspace: ws, Mode: c.Mode, Config: c.Config, Stderr: e.stderr, Approval: *preset,
		RunsCode: true, MCPLog: homeMCPLog(c), MCPDepth: mcp.Depth(e.getenv)})
	if err != nil {
		return err
	}
	defer rt.Close()
	system, err := workerPrompt(rt, ws)
	if err != nil {
		return err
	}
	host, err := durable.NewHost(durable.HostConfig{
		Registry: rt.reg, Store: store, Results: resultsDir(c, store),
		KeepApprover: *preset == approval.PresetFullAuto,
		Model:        model, System: system, MaxTokens: *maxTokens,
	})
	if err != nil {
		return err
	}
	defer host.Close()
	tc, err := tf.dial(e)
	if err != nil {
		return err
	}
	defer tc.Close()
	w := worker.New(tc, *queue, worker.Options{})
	host.Register(w)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start the worker on queue %q: %w", *queue, err)
	}
	fmt.Fprintf(e.stderr, "dsh worker: serving queue %q for %s on %s\n", *queue, ws, *tf.addr)
	<-ctx.Done()
	w.Stop()
	return nil
}

// workerPrompt is the system prompt of a worker's model requests: the base prompt, the
// workspace, and in code and both modes the Code Mode SDK that run_code programs are
// written against (in code mode after the instruction that only run_code is callable) (the tools are the same for every session the worker serves).
func workerPrompt(rt *runtime, ws string) (string, error) {
	prompt := agent.BasePrompt + "\n\nThe workspace is " + ws + "."
	scope := rt.reg.NewScope("durable-prompt", nil)
	defer scope.Close()
	sdk, err := codemode.SDKSection(rt.reg, scope)
	if err != nil {
		return "", fmt.Errorf("the Code Mode SDK of the worker's tools: %w", err)
	}
	for _, section := range []string{codemode.CodeOnlySection(rt.reg, scope), sdk} {
		if section != "" {
			prompt += "\n\n" + section
		}
	}
	return prompt, nil
}

// resultsDir is the directory of a worker's result store (tool results by call id):
// beside the sessions of a file store, in the dsh home with a database store. Workers that
// share sessions must share it.
func resultsDir(c *loadedConfig, store session.Store) string {
	if fs, ok := store.(*session.FileStore); ok {
		return filepath.Join(fs.Root(), "durable-results")
	}
	return filepath.Join(c.home, "durable-results")
}
