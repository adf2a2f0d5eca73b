package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/coderuntime/quickjs"
	"github.com/dsh-go/dsh/config"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/policy/reminder"
	"github.com/dsh-go/dsh/policy/rules"
	"github.com/dsh-go/dsh/policy/spill"
	"github.com/dsh-go/dsh/policy/timeout"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
	"github.com/dsh-go/dsh/tools/fs"
	"github.com/dsh-go/dsh/tools/search"
	"github.com/dsh-go/dsh/tools/shell"
)

// runtimeConfig is what a command needs to assemble the governed tool set.
type runtimeConfig struct {
	// Workspace is the directory the file and shell tools are confined to.
	Workspace string
	// Mode is the deployment's presentation mode.
	Mode tool.Mode
	// Config is the effective configuration (permissions, reminder, spill, shell, MCP
	// servers).
	Config *config.Config
	// Log, when set, receives the approval audit events and Code Mode's dispatch events.
	Log session.Log
	// Prompter answers approval questions; nil means nobody can (every "ask" is
	// unavailable).
	Prompter approval.Prompter
	// NoMCP skips the configured MCP servers (for rendering cards from a log).
	NoMCP bool
}

// runtime is the registry with the built-in tools and policies installed, and what to undo
// at exit.
type runtime struct {
	reg       *tool.Registry
	workspace string
	reminder  *reminder.Reminder
	mcp       *mcp.Host // nil when no MCP server is configured
	undos     []func()
}

// newRuntime builds the registry for cfg: the built-in tools (fs, search, shell), the
// policies (permission rules, approval, timeout, repeat reminder, spill), Code Mode on
// QuickJS and the configured MCP servers. Close undoes all of it: background jobs are killed, the code runtime is closed.
func newRuntime(ctx context.Context, cfg runtimeConfig) (_ *runtime, err error) {
	ws, err := workspaceDir(cfg.Workspace)
	if err != nil {
		return nil, err
	}
	if cfg.Mode == "" {
		cfg.Mode = tool.ModeNative
	}
	reg, err := tool.NewRegistry(tool.Config{Mode: cfg.Mode})
	if err != nil {
		return nil, err
	}
	rt := &runtime{reg: reg, workspace: ws}
	defer func() {
		if err != nil {
			rt.Close()
		}
	}()
	c := cfg.Config
	add := func(undo func(), err error) error {
		if err != nil {
			return err
		}
		rt.undos = append(rt.undos, undo)
		return nil
	}
	// Tools.
	if err := add(fs.Install(reg, fs.Config{Root: ws})); err != nil {
		return nil, fmt.Errorf("file tools: %w", err)
	}
	if err := add(search.Install(reg, search.Config{Root: ws})); err != nil {
		return nil, fmt.Errorf("search tools: %w", err)
	}
	if err := add(shell.Install(reg, shell.Config{Root: ws, Sandbox: c.ShellSandbox()})); err != nil {
		return nil, fmt.Errorf("shell tools: %w", err)
	}
	// Code Mode: programs run in a fresh worker process (this binary in its hidden mode).
	js, err := quickjs.New(quickjs.Config{})
	if err != nil {
		return nil, fmt.Errorf("code runtime: %w", err)
	}
	rt.undos = append(rt.undos, func() { js.Close() })
	var dispatchLog codemode.DispatchLog
	if cfg.Log != nil {
		dispatchLog = codemode.SessionLog(cfg.Log)
	}
	if err := add(codemode.Install(reg, js, codemode.Config{Log: dispatchLog})); err != nil {
		return nil, fmt.Errorf("code mode: %w", err)
	}
	// Policies. Timeout and the reminder wrap every call; spill bounds large texts; the
	// permission rules go in front of every other pre-execute hook and add a guard.
	if err := add(timeout.Install(reg.Global(), timeout.Config{})); err != nil {
		return nil, fmt.Errorf("timeout policy: %w", err)
	}
	rem, err := reminder.New(c.Reminder)
	if err != nil {
		return nil, fmt.Errorf("repeat reminder: %w", err)
	}
	if err := add(rem.Install(reg.Global())); err != nil {
		return nil, fmt.Errorf("repeat reminder: %w", err)
	}
	rt.reminder = rem
	if err := add(spill.Install(reg.Global(), c.Spill)); err != nil {
		return nil, fmt.Errorf("spill policy: %w", err)
	}
	perms := c.Permissions
	perms.Workspace = ws
	if err := add(rules.Install(reg.Global(), perms)); err != nil {
		return nil, fmt.Errorf("permission rules: %w", err)
	}
	ac := approval.Config{Policy: approval.PolicyAsk, Prompter: cfg.Prompter}
	if ac.Prompter == nil {
		ac.Prompter = approval.NonInteractive()
	}
	if cfg.Log != nil {
		ac.Auditor = approval.NewSessionAuditor(cfg.Log)
	}
	if err := add(approval.Install(reg, ac)); err != nil {
		return nil, fmt.Errorf("approval: %w", err)
	}
	if cl, ok := cfg.Prompter.(io.Closer); ok {
		rt.undos = append(rt.undos, func() { cl.Close() })
	}
	// MCP servers: their tools join the registry under mcp__<server>__<tool>, governed like
	// every other tool.
	if len(c.MCP.Servers) > 0 && !cfg.NoMCP {
		host, err := mcp.Install(ctx, reg, c.MCP, mcp.Options{})
		if err != nil {
			return nil, fmt.Errorf("MCP servers: %w", err)
		}
		rt.mcp = host
		rt.undos = append(rt.undos, func() { host.Close() })
	}
	return rt, nil
}

// attach connects the per-agent policies to an agent: the repeat reminder forgets a chain
// when the user speaks.
func (rt *runtime) attach(a *agent.Agent) {
	rt.undos = append(rt.undos, a.OnPreStep(func(_ context.Context, s agent.PreStep) error {
		rt.reminder.PreStep(s.Scope, s.Claimed)
		return nil
	}))
}

// promptSections returns the system-prompt sections the runtime contributes: the Code Mode
// SDK for agents that program against the tools.
func (rt *runtime) promptSections() []agent.PromptSectionFunc {
	return []agent.PromptSectionFunc{func(_ context.Context, info agent.PromptInfo) ([]agent.PromptSection, error) {
		if info.Mode == tool.ModeNative {
			return nil, nil
		}
		sdk, err := codemode.SDKSection(info.Registry, info.Scope)
		if err != nil {
			return nil, err
		}
		return []agent.PromptSection{{Name: "tools:sdk", Order: agent.OrderSDK, Text: sdk}}, nil
	}}
}

// Close undoes every installation, newest first: tools are unregistered, background jobs
// killed, the code runtime closed.
func (rt *runtime) Close() error {
	for i := len(rt.undos) - 1; i >= 0; i-- {
		rt.undos[i]()
	}
	rt.undos = nil
	return nil
}

// workspaceDir returns the absolute path of an existing directory.
func workspaceDir(dir string) (string, error) {
	ws, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("workspace %q: %w", dir, err)
	}
	st, err := os.Stat(ws)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("workspace %q does not exist", dir)
		}
		return "", fmt.Errorf("workspace %q: %w", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("workspace %q is not a directory", dir)
	}
	return ws, nil
}
