package shell

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dsh-go/dsh/tool"
)

// Defaults of Config.
const (
	DefaultTimeout        = 120 * time.Second
	DefaultMaxTimeout     = 600 * time.Second
	DefaultMaxOutputBytes = 64_000
	DefaultMaxSpillBytes  = 64 << 20
	DefaultGrace          = 3 * time.Second
	DefaultMaxJobs        = 10
)

// SandboxBwrap is the Sandbox value that runs commands under bubblewrap.
const SandboxBwrap = "bwrap"

// Config configures the shell runner and tools. Only Root is required.
type Config struct {
	// Root is the workspace: the default working directory, and the only place a workdir
	// may point to.
	Root string
	// Timeout is the default foreground timeout (default 120s) and MaxTimeout the cap on a
	// requested one (default 600s).
	Timeout, MaxTimeout time.Duration
	// MaxOutputBytes is how much of each output stream is kept in memory: the tail
	// (default 64000).
	MaxOutputBytes int
	// MaxSpillBytes bounds the spill file holding a whole stream that outgrew
	// MaxOutputBytes (default 64 MiB); a larger stream keeps only its tail.
	MaxSpillBytes int64
	// SpillDir receives spill files. Empty means a private directory created under
	// os.TempDir on first use.
	SpillDir string
	// Grace is the time between SIGTERM and SIGKILL when a command is stopped (default 3s).
	Grace time.Duration
	// Sandbox confines commands: "" runs them as they are (not a sandbox), SandboxBwrap
	// runs them under bubblewrap with the workspace writable, the rest of the file system
	// read-only, a private /tmp and no network.
	Sandbox string
	// Shell is the shell binary; default /bin/bash, or sh when bash is missing.
	Shell string
	// Env adds variables to the commands' environment (after the ambient environment
	// without credential-like names such as *_TOKEN, *KEY*, *SECRET*, *PASSWORD*, and
	// without DSH_* names).
	Env map[string]string
	// DisableBackground removes run_in_background from the bash tool.
	DisableBackground bool
	// MaxJobs bounds the running background jobs of one owner (default 10).
	MaxJobs int
}

// Runner runs shell commands in their own process groups within a workspace.
type Runner struct {
	root       string // absolute, symbolic links resolved
	alias      string // absolute, as configured
	timeout    time.Duration
	maxTimeout time.Duration
	maxOutput  int
	maxSpill   int64
	grace      time.Duration
	shell      string
	sandbox    string
	env        []string

	spillDir string
	spillMu  sync.Mutex
	spillTmp string
}

// NewRunner validates cfg and returns a runner. With Sandbox "bwrap" it checks that
// bubblewrap is installed and works.
func NewRunner(cfg Config) (*Runner, error) {
	if cfg.Root == "" {
		return nil, errors.New("shell: Config.Root (the workspace root) is required")
	}
	abs, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("shell: workspace root %q: %w", cfg.Root, err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("shell: workspace root %q: %w", cfg.Root, err)
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("shell: workspace root %q is not a directory", cfg.Root)
	}
	r := &Runner{
		root:       root,
		alias:      abs,
		timeout:    orDefault(cfg.Timeout, DefaultTimeout),
		maxTimeout: orDefault(cfg.MaxTimeout, DefaultMaxTimeout),
		maxOutput:  orDefault(cfg.MaxOutputBytes, DefaultMaxOutputBytes),
		maxSpill:   orDefault(cfg.MaxSpillBytes, DefaultMaxSpillBytes),
		grace:      orDefault(cfg.Grace, DefaultGrace),
		sandbox:    cfg.Sandbox,
		spillDir:   cfg.SpillDir,
	}
	for name, v := range map[string]int64{
		"Timeout": int64(r.timeout), "MaxTimeout": int64(r.maxTimeout), "MaxOutputBytes": int64(r.maxOutput),
		"MaxSpillBytes": r.maxSpill, "Grace": int64(r.grace),
	} {
		if v <= 0 {
			return nil, fmt.Errorf("shell: %s must be positive", name)
		}
	}
	if r.shell, err = findShell(cfg.Shell); err != nil {
		return nil, err
	}
	r.env = environment(os.Environ(), cfg.Env)
	switch cfg.Sandbox {
	case "":
	case SandboxBwrap:
		if err := r.probeBwrap(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("shell: unknown sandbox %q (supported: %q)", cfg.Sandbox, SandboxBwrap)
	}
	return r, nil
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// findShell resolves the shell binary: the configured one, else bash, else sh.
func findShell(configured string) (string, error) {
	if configured != "" {
		p, err := exec.LookPath(configured)
		if err != nil {
			return "", fmt.Errorf("shell: shell %q: %w", configured, err)
		}
		return p, nil
	}
	for _, c := range []string{"/bin/bash", "bash", "/bin/sh", "sh"} {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", errors.New("shell: neither bash nor sh is installed")
}

// terminalEnv keeps tool output plain: no colours, pagers or terminal features.
var terminalEnv = map[string]string{"NO_COLOR": "1", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"}

var sensitiveName = regexp.MustCompile(`(?i)KEY|PASSWORD|SECRET|TOKEN`)

// environment builds the commands' environment: the ambient one without credential-like
// and DSH_* names, then the terminal settings, then extra.
func environment(ambient []string, extra map[string]string) []string {
	env := map[string]string{}
	for _, kv := range ambient {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || sensitiveName.MatchString(name) || strings.HasPrefix(strings.ToUpper(name), "DSH_") {
			continue
		}
		env[name] = value
	}
	maps.Copy(env, terminalEnv)
	maps.Copy(env, extra)
	out := make([]string, 0, len(env))
	for _, name := range slices.Sorted(maps.Keys(env)) {
		out = append(out, name+"="+env[name])
	}
	return out
}

// spillDirectory returns the spill directory, creating it on first use.
func (r *Runner) spillDirectory() (string, error) {
	if r.spillDir != "" {
		return r.spillDir, os.MkdirAll(r.spillDir, 0o700)
	}
	r.spillMu.Lock()
	defer r.spillMu.Unlock()
	if r.spillTmp == "" {
		d, err := os.MkdirTemp("", "dsh-shell-")
		if err != nil {
			return "", err
		}
		r.spillTmp = d
	}
	return r.spillTmp, nil
}

// Root returns the workspace root (absolute, symbolic links resolved).
func (r *Runner) Root() string { return r.root }

// Workdir resolves a requested working directory: empty is the workspace root, a relative
// path is relative to it, and anything outside it is refused (FS_SANDBOX_DENIED).
func (r *Runner) Workdir(dir string) (string, error) {
	if dir == "" {
		return r.root, nil
	}
	abs := dir
	if !filepath.IsAbs(dir) {
		abs = filepath.Join(r.root, dir)
	}
	abs = filepath.Clean(abs)
	if !inside(r.root, abs) && inside(r.alias, abs) {
		// Spelled through the configured root, before its symbolic links were resolved.
		rel, _ := filepath.Rel(r.alias, abs)
		abs = filepath.Join(r.root, rel)
	}
	if !inside(r.root, abs) {
		return "", sandboxDenied(dir)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", &tool.Error{Name: "FsError", Code: "FS_NOT_FOUND", Message: "workdir " + quote(dir) + " does not exist"}
		}
		return "", fmt.Errorf("workdir %s: %w", quote(dir), err)
	}
	if !inside(r.root, real) {
		return "", sandboxDenied(dir)
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return "", &tool.Error{Name: "FsError", Code: "FS_NOT_DIRECTORY", Message: "workdir " + quote(dir) + " is not a directory"}
	}
	return real, nil
}

func inside(root, abs string) bool {
	rel, err := filepath.Rel(root, abs)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func sandboxDenied(p string) error {
	return &tool.Error{Name: "FsError", Code: "FS_SANDBOX_DENIED", Message: fmt.Sprintf("cannot run in %q: the workdir leads outside the workspace", p)}
}

func quote(s string) string { return `"` + s + `"` }

// Request is one command to run.
type Request struct {
	Command string
	// Workdir is the working directory, as resolved by Runner.Workdir; empty is the root.
	Workdir string
	// Timeout applies to Run only; zero is the configured default, and it is capped.
	Timeout time.Duration
	// Output, when set, receives the command's output as it is written ("stdout" or
	// "stderr", and the bytes), for live display; it must return quickly.
	Output func(stream string, p []byte)
}

// SandboxInfo reports how a sandboxed command ran.
type SandboxInfo struct {
	Mode        string `json:"mode"`
	Denied      bool   `json:"denied"`
	Enforcement string `json:"enforcement,omitzero"`
}

// RunResult is the outcome of a foreground command. A non-zero exit is an outcome, not an
// error.
type RunResult struct {
	ExitCode *int          // nil when a signal ended the command
	Signal   string        // e.g. "SIGTERM"; empty on a normal exit
	TimedOut bool          // the timeout stopped the command (first cause)
	Aborted  bool          // the caller's cancellation stopped it (first cause)
	Timeout  time.Duration // the effective timeout
	Stdout   Stream
	Stderr   Stream
	Sandbox  *SandboxInfo // nil when not sandboxed
}

// effectiveTimeout applies the default and the cap.
func (r *Runner) effectiveTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		d = r.timeout
	}
	return min(d, r.maxTimeout)
}

func (r *Runner) spawn(req Request) (*process, error) {
	dir := req.Workdir
	if dir == "" {
		dir = r.root
	}
	dirFn := r.spillDirectory
	stdout := newCollector(r.maxOutput, r.maxSpill, dirFn, "stdout")
	stderr := newCollector(r.maxOutput, r.maxSpill, dirFn, "stderr")
	if out := req.Output; out != nil {
		stdout.tee = func(p []byte) { out("stdout", p) }
		stderr.tee = func(p []byte) { out("stderr", p) }
	}
	return spawn(spawnSpec{
		argv:   r.argv(req.Command, dir),
		dir:    dir,
		env:    r.env,
		stdout: stdout,
		stderr: stderr,
		grace:  r.grace,
	})
}

// Run runs a command in the foreground and waits for it and everything it started in its
// process group. On timeout or when ctx is cancelled the whole group is stopped (SIGTERM,
// then SIGKILL after the grace period); the result says which came first. It fails only
// when the command cannot be started.
func (r *Runner) Run(ctx context.Context, req Request) (*RunResult, error) {
	timeout := r.effectiveTimeout(req.Timeout)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := r.spawn(req)
	if err != nil {
		return nil, fmt.Errorf("cannot start the command: %w", err)
	}
	res := &RunResult{Timeout: timeout}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.exited:
	case <-timer.C:
		res.TimedOut = true
		p.kill()
	case <-ctx.Done():
		res.Aborted = true
		p.kill()
	}
	<-p.done // the output so far is kept: an aborted result still carries it
	res.ExitCode, res.Signal = p.exit()
	res.Stdout, res.Stderr = p.stdout.result(), p.stderr.result()
	res.Sandbox = r.sandboxInfo(res.ExitCode, res.Stderr.Text)
	return res, nil
}

// Start starts a command in the background. No timeout applies; stop it with Kill.
func (r *Runner) Start(req Request) (*Process, error) {
	p, err := r.spawn(req)
	if err != nil {
		return nil, fmt.Errorf("cannot start the command: %w", err)
	}
	return &Process{p: p, r: r}, nil
}

// Process is a background command started by Runner.Start.
type Process struct {
	p *process
	r *Runner

	mu        sync.Mutex
	killed    bool
	denied    bool // the sandbox denial notice was delivered
	outOffset int64
	errOffset int64
}

// Done is closed once the command and everything in its process group have ended and the
// output is final.
func (p *Process) Done() <-chan struct{} { return p.p.done }

// Kill stops the process group. It reports false when the command had already finished.
func (p *Process) Kill() bool {
	select {
	case <-p.p.done:
		return false
	default:
	}
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	p.p.kill()
	return true
}

// Exit returns how the command ended: its exit code or terminating signal, and whether it
// was killed (by Kill or by a signal). It is meaningful once Done is closed.
func (p *Process) Exit() (code *int, signal string, killed bool) {
	code, signal = p.p.exit()
	p.mu.Lock()
	defer p.mu.Unlock()
	return code, signal, p.killed || signal != ""
}

// Read returns the output produced since the previous Read: stdout, then stderr in a
// "[stderr]" section, then a notice when part of it was dropped from memory (naming the
// spill files that hold everything) or when the sandbox denied a file access.
func (p *Process) Read() string {
	p.mu.Lock()
	out := p.p.stdout.readFrom(p.outOffset)
	errc := p.p.stderr.readFrom(p.errOffset)
	p.outOffset, p.errOffset = out.next, errc.next
	p.mu.Unlock()

	delta := out.text
	if errc.text != "" {
		if delta != "" && !strings.HasSuffix(delta, "\n") {
			delta += "\n"
		}
		delta += "[stderr]\n" + errc.text
	}
	var notices []string
	if out.lossy || errc.lossy {
		var paths []string
		for _, s := range []string{out.spillPath, errc.spillPath} {
			if s != "" {
				paths = append(paths, s)
			}
		}
		where := "(unavailable)"
		if len(paths) > 0 {
			where = strings.Join(paths, ", ")
		}
		notices = append(notices, "[some output was dropped from memory; full output: "+where+"]")
	}
	select {
	case <-p.p.done:
		code, _ := p.p.exit()
		if sb := p.r.sandboxInfo(code, p.p.stderr.result().Text); sb != nil && sb.Denied && !p.denied {
			p.denied = true
			notices = append(notices, denialMarker(sb.Mode))
		}
	default:
	}
	if len(notices) == 0 {
		return delta
	}
	if delta != "" && !strings.HasSuffix(delta, "\n") {
		delta += "\n"
	}
	return delta + strings.Join(notices, "\n")
}
