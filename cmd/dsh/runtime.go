package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/coderuntime/quickjs"
	"github.com/dsh-go/dsh/coderuntime/starlark"
	"github.com/dsh-go/dsh/config"
	"github.com/dsh-go/dsh/internal/protect"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/policy/redact"
	"github.com/dsh-go/dsh/policy/reminder"
	"github.com/dsh-go/dsh/policy/rules"
	"github.com/dsh-go/dsh/policy/spill"
	"github.com/dsh-go/dsh/policy/timeout"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/telemetry"
	"github.com/dsh-go/dsh/tool"
	"github.com/dsh-go/dsh/tools/fs"
	"github.com/dsh-go/dsh/tools/search"
	"github.com/dsh-go/dsh/tools/shell"
	"github.com/dsh-go/dsh/tools/web"
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
	// Logs, when set instead of Log, routes those events to the log attached to the
	// calling agent's scope: one session per agent (each MCP connection).
	Logs *codemode.ScopeLogs
	// Prompter answers approval questions; nil means nobody can (every "ask" is
	// unavailable).
	Prompter approval.Prompter
	// Approval is the approval preset (read-only, auto-edit, full-auto), "" for none.
	Approval string
	// NoMCP skips the configured MCP servers: for commands that do not need them (rendering
	// cards from a log, "dsh call" of built-in tools), which then do not wait for them.
	NoMCP bool
	// MCPLog is the file the MCP servers' own logs (their stderr) and the connection
	// messages are appended to, instead of the terminal: mcp.log in the session directory,
	// or under the dsh home for commands without a session. "" discards them.
	MCPLog string
	// MCPDepth is how many dsh processes started this one as an MCP server (mcp.Depth of
	// the environment). When it is not 0 the configured MCP servers are not mounted: they
	// may include dsh itself, which would mount them again without end.
	MCPDepth int
	// Stderr receives notices (why MCP servers were not mounted); nil discards them.
	Stderr io.Writer
	// Session is the id of the session the runtime serves, which names its spill directory
	// so that a resumed session can still read what it spilled; "" gives the runtime a
	// private spill directory of its own.
	Session string
	// Attachments stores the images tools read (read_image, MCP image results) so the
	// model receives them: the session's attachment store. Nil gives the runtime an
	// in-memory store that lasts as long as it does.
	Attachments session.Attachments
	// ImageRefusal, when set, is why read_image refuses: the model takes no image input.
	ImageRefusal string
	// RunsCode says the command runs tool calls (a turn, dsh call, an MCP server): with a
	// mode that presents run_code, a QuickJS worker is then started ahead of the first
	// program (see codeWorkersAhead). Commands that only list or render tools leave it off.
	RunsCode bool
	// CodeWorker is the QuickJS worker's argv. Empty means this executable re-executed in
	// its hidden worker mode, as dsh runs it; a test binary sets the dsh binary instead so
	// that a benchmark measures the worker a user's runs start.
	CodeWorker []string
}

// codeWorkersAhead is how many QuickJS worker processes a runtime that runs code keeps
// started ahead of demand: one, so that run_code takes a worker that has already prepared
// instead of starting the dsh binary (tens of milliseconds) on its critical path. A run that
// finds none ready (several programs at once) starts its own.
const codeWorkersAhead = 1

// runtime is the registry with the built-in tools and policies installed, and what to undo
// at exit.
type runtime struct {
	reg       *tool.Registry
	workspace string
	reminder  *reminder.Reminder
	mcp       *mcp.Host // nil when no MCP server is configured or mounted
	// mcpSkipped says why the configured MCP servers were not mounted ("" when they were,
	// or none are configured).
	mcpSkipped string
	spillDir   string              // where the tools save full outputs; read may open it
	images     session.Attachments // the images tools read (read_image, MCP results)
	code       coderuntime.Runtime // the Code Mode backend run_code runs programs on
	mcpLog     string              // where the MCP servers' logs go ("" when none are mounted)
	tracing    *telemetry.Tracing  // the process's tracing; nil when disabled
	undos      []func()
}

// newRuntime builds the registry for cfg: the built-in tools (fs, search, shell), the
// policies (permission rules, approval, timeout, repeat reminder, spill), Code Mode on
// QuickJS and the configured MCP servers. The spill policy, search and shell save full
// outputs in one spill directory (see openSpillDir), which read may open but write and edit
// may not, so the model can read what a result says was saved. Close undoes all of it:
// background jobs are killed, the code runtime is closed, an empty spill directory removed.
func newRuntime(ctx context.Context, cfg runtimeConfig) (_ *runtime, err error) {
	ws, err := workspaceDir(cfg.Workspace)
	if err != nil {
		return nil, err
	}
	if cfg.Mode == "" {
		cfg.Mode = tool.ModeNative
	}
	c := cfg.Config
	// Workers: goroutines kept for the calls' contained steps (a wrapped call uses two),
	// handed each step by a direct switch (DirectSwitch): no goroutine of dsh that calls
	// Execute is locked to its thread. The first undo, so the registry's Close runs last.
	reg, err := tool.NewRegistry(tool.Config{Mode: cfg.Mode, MaxArgBytes: c.Limits.MaxArgBytes, Workers: 8, DirectSwitch: true})
	if err != nil {
		return nil, err
	}
	rt := &runtime{reg: reg, workspace: ws, tracing: tracingOf(ctx), undos: []func(){reg.Close}}
	rt.undos = append(rt.undos, observeCalls(rt.tracing, reg))
	defer func() {
		if err != nil {
			rt.Close()
		}
	}()
	add := func(undo func(), err error) error {
		if err != nil {
			return err
		}
		rt.undos = append(rt.undos, undo)
		return nil
	}
	// The images tools read (read_image, MCP results): the session's attachments, or kept
	// in memory for commands without a session.
	rt.images = cfg.Attachments
	if rt.images == nil {
		rt.images = session.NewMemoryAttachments()
	}
	// MCP servers start first, all at once, and connect while the rest is assembled.
	joinMCP := rt.startMCP(ctx, cfg)
	// One spill directory for the spill policy, search and shell, which read may open.
	spillDir, err := openSpillDir(c.Spill.Dir, cfg.Session)
	if err != nil {
		return nil, err
	}
	rt.spillDir = spillDir
	rt.undos = append(rt.undos, func() { os.Remove(spillDir) }) // only when nothing was spilled
	// Tools.
	images := rt.images
	// The file tools refuse writes to the protected paths (.git, .dsh, the dsh home) unless
	// the user opened them.
	if err := add(fs.Install(reg, fs.Config{Root: ws, ReadOnlyRoots: []string{spillDir}, Home: c.Home, OpenProtected: c.OpenProtected,
		Images: images, ImageRefusal: cfg.ImageRefusal})); err != nil {
		return nil, fmt.Errorf("file tools: %w", err)
	}
	if err := add(search.Install(reg, search.Config{Root: ws, SpillDir: spillDir})); err != nil {
		return nil, fmt.Errorf("search tools: %w", err)
	}
	// Commands may not change the repository's metadata, the project's dsh configuration
	// or dsh's home, even inside the writable workspace (enforced under the sandbox): the
	// same protected set the file tools refuse, less what the user opened.
	prot, err := protect.New(protect.Config{Workspace: ws, Home: c.Home, Open: c.OpenProtected})
	if err != nil {
		return nil, fmt.Errorf("protected paths: %w", err)
	}
	protected := prot.Enforced()
	shellCfg := shell.Config{Root: ws, Sandbox: c.ShellSandbox(), SpillDir: spillDir,
		ReadOnlyPaths:  protected,
		MaxProcesses:   c.Shell.MaxProcesses,
		MaxMemoryBytes: int64(c.Shell.MaxMemoryMiB) << 20,
		Notice: func(msg string) {
			if cfg.Stderr != nil {
				fmt.Fprintln(cfg.Stderr, "dsh: "+msg+"; set shell.sandbox to none to accept that, or to bwrap to require the sandbox")
			}
		},
	}
	if err := add(shell.Install(reg, shellCfg)); err != nil {
		return nil, fmt.Errorf("shell tools: %w", err)
	}
	// The web tools run on DeepSeek's Search and Fetch APIs: offered when the model server
	// is DeepSeek or web.baseUrl names another server with those APIs.
	if base, ok := c.WebBaseURL(); ok {
		if err := add(web.Install(reg, web.Config{BaseURL: base, APIKey: c.APIKey, APIKeyEnv: c.APIKeyEnv})); err != nil {
			return nil, fmt.Errorf("web tools: %w", err)
		}
	}
	// Code Mode: TypeScript programs run in a fresh worker process each (this binary in its
	// hidden mode), started ahead when the command runs code; with codeRuntime: starlark,
	// Python-flavoured programs run in Starlark.
	ahead := 0
	if cfg.RunsCode && cfg.Mode != tool.ModeNative {
		ahead = codeWorkersAhead
	}
	js, err := newCodeRuntime(c.CodeRuntime, c.CodeMode, ahead, cfg.CodeWorker)
	if err != nil {
		return nil, fmt.Errorf("code runtime: %w", err)
	}
	rt.code = js
	rt.undos = append(rt.undos, func() { js.Close() })
	var dispatchLog codemode.DispatchLog
	switch {
	case cfg.Logs != nil:
		dispatchLog = cfg.Logs
	case cfg.Log != nil:
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
	// Redaction keeps secrets and control bytes out of what the model reads and the log
	// keeps. Its post-execute hook goes in front of the spill policy's (so it cleans the
	// spill preview), and the spill file gets the exact text the tool produced.
	red := redact.New(redactConfig(c.Redact, cfg.Log))
	spillCfg := c.Spill
	spillCfg.Dir = spillDir
	spillCfg.Original = red.Original
	if err := add(spill.Install(reg.Global(), spillCfg)); err != nil {
		return nil, fmt.Errorf("spill policy: %w", err)
	}
	if err := add(red.Install(reg.Global())); err != nil {
		return nil, fmt.Errorf("redaction policy: %w", err)
	}
	perms := c.Permissions
	perms.Workspace = ws
	if err := add(rules.Install(reg.Global(), perms)); err != nil {
		return nil, fmt.Errorf("permission rules: %w", err)
	}
	if err := add(approval.InstallPreset(reg, cfg.Approval)); err != nil {
		return nil, fmt.Errorf("approval preset: %w", err)
	}
	ac := approval.Config{Policy: approval.PresetPolicy(cfg.Approval), Prompter: cfg.Prompter, Cards: callCards(reg), Workdir: ws}
	if ac.Prompter == nil {
		ac.Prompter = approval.NonInteractive()
	}
	switch {
	case cfg.Logs != nil:
		ac.Auditor = approval.NewSessionAuditorFunc(cfg.Logs.Log)
	case cfg.Log != nil:
		ac.Auditor = approval.NewSessionAuditor(cfg.Log)
	}
	if err := add(approval.Install(reg, ac)); err != nil {
		return nil, fmt.Errorf("approval: %w", err)
	}
	if cl, ok := cfg.Prompter.(io.Closer); ok {
		rt.undos = append(rt.undos, func() { cl.Close() })
	}
	if err := joinMCP(); err != nil {
		return nil, fmt.Errorf("MCP servers: %w", err)
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

// openSpillDir returns the directory every spilling tool of a runtime writes to, creating
// it: "dsh-spill-<session>" for a session (so a resumed session finds its files again), a
// fresh "dsh-spill-*" otherwise, in base (spill.dir) or else the system's temporary
// directory. The directory is private: one that exists already is used only when it is a
// real directory that grants nothing to group or others, so a directory planted in a shared
// temporary directory can neither read the spilled outputs nor redirect them.
func openSpillDir(base, id string) (string, error) {
	if base == "" {
		base = os.TempDir()
	} else if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("spill directory: %w", err)
	}
	base, err := filepath.Abs(base)
	if err != nil {
		return "", fmt.Errorf("spill directory %q: %w", base, err)
	}
	if id == "" {
		dir, err := os.MkdirTemp(base, "dsh-spill-")
		if err != nil {
			return "", fmt.Errorf("spill directory: %w", err)
		}
		return dir, nil
	}
	name, err := session.EncodeSegment(id)
	if err != nil || len(name) > 200 {
		sum := sha256.Sum256([]byte(id))
		name = hex.EncodeToString(sum[:8])
	}
	dir := filepath.Join(base, "dsh-spill-"+name)
	err = os.Mkdir(dir, 0o700)
	if err == nil {
		return dir, nil
	}
	if !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("spill directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("spill directory: %w", err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("spill directory %s exists but is not a private directory (mode %v); remove it or set spill.dir", dir, fi.Mode())
	}
	return dir, nil
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

// callsRunCode reports whether a dsh call command line calls run_code.
func callsRunCode(calls []callSpec) bool {
	for _, c := range calls {
		if c.name == tool.RunCodeName {
			return true
		}
	}
	return false
}

// newCodeRuntime returns the Code Mode backend the configuration names, under the
// configured budgets; a QuickJS backend keeps ahead worker processes started ahead of demand,
// each running worker (empty: this executable in its hidden mode).
func newCodeRuntime(name string, b config.CodeMode, ahead int, worker []string) (coderuntime.Runtime, error) {
	switch name {
	case "", config.CodeRuntimeQuickJS:
		return quickjs.New(quickjs.Config{ComputeMs: float64(b.ComputeMs), MaxWallMs: float64(b.WallMs),
			MaxOutputBytes: int64(b.MaxOutputBytes), MaxHeapMB: float64(b.HeapMiB), Pool: ahead, WorkerCommand: worker})
	case config.CodeRuntimeStarlark:
		return starlark.New(starlark.Config{ComputeMs: float64(b.ComputeMs), MaxWallMs: float64(b.WallMs),
			MaxOutputBytes: int64(b.MaxOutputBytes), MaxHeapMB: float64(b.HeapMiB)})
	default:
		return nil, fmt.Errorf("unknown code runtime %q (want %q or %q)", name, config.CodeRuntimeQuickJS, config.CodeRuntimeStarlark)
	}
}

// redactConfig completes the configured redaction policy: the values of dsh's own
// environment variables named like secrets are redacted, and with a session log each
// redaction is recorded there as an ignorable "redact/applied" event {callId, name,
// secrets: {kind: count}, escapes, controls, overwrites, binary} — kinds and counts, never
// the secrets.
func redactConfig(c redact.Config, log session.Log) redact.Config {
	c.Env = os.Environ()
	if log != nil {
		c.Report = func(_ context.Context, exec *tool.Execution, r redact.Report) {
			secrets := &jsonv.Object{}
			for _, k := range slices.Sorted(maps.Keys(r.Secrets)) {
				secrets.Set(k, float64(r.Secrets[k]))
			}
			data := jsonv.NewObject(
				jsonv.Member{Name: "callId", Value: exec.CallID()},
				jsonv.Member{Name: "name", Value: exec.Name()},
				jsonv.Member{Name: "secrets", Value: secrets},
				jsonv.Member{Name: "escapes", Value: float64(r.Text.Escapes)},
				jsonv.Member{Name: "controls", Value: float64(r.Text.Controls)},
				jsonv.Member{Name: "overwrites", Value: float64(r.Text.Overwrites)},
				jsonv.Member{Name: "binary", Value: r.Text.Binary},
			)
			// Best effort: the result is already clean, and a failed append surfaces at the
			// tool/result that follows.
			_, _ = log.Append(session.Event{Type: redactEventType, Ignorable: true, Data: data})
		}
	}
	return c
}

// redactEventType is the session event recording what the redaction policy did to a result.
const redactEventType = "redact/applied"
