package main

import (
	"context"
	"fmt"
	"path/filepath"

	"go.temporal.io/sdk/worker"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/tool"
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
	rt, err := newRuntime(ctx, runtimeConfig{Workspace: ws, Mode: tool.ModeNative, Config: c.Config, NoMCP: true, Stderr: e.stderr, Approval: *preset})
	if err != nil {
		return err
	}
	defer rt.Close()
	host, err := durable.NewHost(durable.HostConfig{
		Registry: rt.reg, Store: store, Results: filepath.Join(store.Root(), "durable-results"),
		KeepApprover: *preset == approval.PresetFullAuto,
		Model:        model, System: agent.BasePrompt + "\n\nThe workspace is " + ws + ".", MaxTokens: *maxTokens,
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
