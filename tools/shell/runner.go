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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

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
	// DefaultMaxProcesses bounds the processes of one command (see Config.MaxProcesses).
	DefaultMaxProcesses = 4096
	// DefaultMaxMemoryBytes bounds the memory of one command (see Config.MaxMemoryBytes).
	DefaultMaxMemoryBytes int64 = 8 << 30
)

// Sandbox values.
const (
	// SandboxNone runs commands as they are: contained (process group, death signal,
	// cgroup or rlimits) but not sandboxed.
	SandboxNone = "none"
	// SandboxBwrap runs commands under bubblewrap and fails when it is not usable.
	SandboxBwrap = "bwrap"
	// SandboxAuto runs commands under bubblewrap when a probe shows it works on this host,
	// and as SandboxNone otherwise, saying so once through Config.Notice.
	SandboxAuto = "auto"
)

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
	// Sandbox confines commands: "" or SandboxNone runs them as they are (not a sandbox),
	// SandboxBwrap runs them under bubblewrap with the workspace writable, ReadOnlyPaths
	// and the rest of the file system read-only, a private /tmp and no network, and
	// SandboxAuto does so when bubblewrap works here.
	Sandbox string
	// ReadOnlyPaths are absolute paths that sandboxed commands may read but not change,
	// even inside the workspace (for example <workspace>/.git, <workspace>/.dsh and dsh's
	// home). A path that is a symbolic link protects its target; a ".git" file protects
	// the git directory it names too. They cannot be enforced without a sandbox.
	ReadOnlyPaths []string
	// Bwrap is the bubblewrap binary, an absolute path. Empty means the first of
	// /usr/bin/bwrap and /bin/bwrap that exists; $PATH is never searched.
	Bwrap string
	// Notice receives the one-line explanation when Sandbox is SandboxAuto and commands
	// run without a sandbox because bubblewrap is not usable. nil writes it to standard
	// error.
	Notice func(string)
	// MaxProcesses bounds the processes of one command: pids.max of its cgroup where the
	// pids controller is available, else RLIMIT_NPROC (which counts all of the user's
	// processes and does not bind root). 0 means DefaultMaxProcesses; negative, no limit.
	MaxProcesses int
	// MaxMemoryBytes bounds the memory of one command: memory.max of its cgroup where the
	// memory controller is available, else RLIMIT_AS of each of its processes. 0 means
	// DefaultMaxMemoryBytes; negative, no limit.
	MaxMemoryBytes int64
	// DisableCgroups runs commands without their own cgroups even where cgroup v2 is
	// writable; limits then use rlimits, and processes are found by group and marker only.
	DisableCgroups bool
	// CgroupParent is the cgroup v2 directory under which the runner creates its own;
	// empty means the cgroup this process is in.
	CgroupParent string
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

// Runner runs shell commands in their own process groups within a workspace. Close it to
// stop everything its commands left and to release its cgroup and guard process.
type Runner struct {
	root       string // absolute, symbolic links resolved
	alias      string // absolute, as configured
	timeout    time.Duration
	maxTimeout time.Duration
	maxOutput  int
	maxSpill   int64
	grace      time.Duration
	shell      string
	sandbox    string // SandboxNone or SandboxBwrap, as settled
	fallback   string // why SandboxAuto fell back to none
	bwrap      string // the bubblewrap binary
	readOnly   []string
	env        []string

	id        string // names the cgroup and the marker
	seq       atomic.Int64
	limits    limits
	procFlag  string   // the shell's ulimit option for RLIMIT_NPROC
	cgroups   *cgroups // nil without cgroups
	cgroupErr string   // why there are no cgroups

	guardMu sync.Mutex
	guard   *guard
	closed  bool
	// timer arms a foreground command's timeout and afterFunc the kill that follows
	// SIGTERM after the grace period. They are real timers; tests replace them to decide
	// when a timeout or a grace period ends instead of racing a short real one against the
	// machine's load.
	timer     timerFunc
	afterFunc afterFunc
	// reapOrphans: this process's pidfds tell os/exec's children from orphans, so the
	// runner reaps orphans (see reapOrphans).
	reapOrphans bool

	spillDir string
	spillMu  sync.Mutex
	spillTmp string
}

// NewRunner validates cfg and returns a runner. With Sandbox "bwrap" or "auto" it checks
// once that bubblewrap is installed and works. It makes this process a child subreaper
// (PR_SET_CHILD_SUBREAPER), so that descendants of commands whose parents exit are
// re-parented to it and can be stopped and reaped when their command ends; it starts the
// runner's guard process and, where cgroup v2 is writable, creates the runner's cgroup.
// Close releases both.
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
		spillDir:   cfg.SpillDir,
		id:         newRunnerID(),
		timer:      realTimer,
		afterFunc:  realAfterFunc,
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
	for _, p := range cfg.ReadOnlyPaths {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("shell: read-only path %q is not absolute", p)
		}
		r.readOnly = append(r.readOnly, filepath.Clean(p))
	}
	r.limits = limits{procs: cfg.MaxProcesses, memory: cfg.MaxMemoryBytes}
	if r.limits.procs == 0 {
		r.limits.procs = DefaultMaxProcesses
	}
	if r.limits.memory == 0 {
		r.limits.memory = DefaultMaxMemoryBytes
	}
	if err := r.chooseSandbox(cfg.Sandbox, cfg.Bwrap); err != nil {
		return nil, err
	}
	if r.fallback != "" {
		msg := "shell sandbox: bubblewrap is not usable here, so commands run without a sandbox (" + r.fallback + ")"
		if cfg.Notice != nil {
			cfg.Notice(msg)
		} else {
			fmt.Fprintln(os.Stderr, msg)
		}
	}
	if err := becomeSubreaper(); err != nil {
		return nil, fmt.Errorf("shell: cannot become a child subreaper: %w", err)
	}
	// The guard starts before the runner's cgroup exists, so that whenever this process
	// dies there is someone to remove it.
	cgName := "dsh-shell-" + r.id
	cgPath := ""
	if cfg.DisableCgroups {
		r.cgroupErr = "disabled by the configuration"
	} else if dir, _, err := cgroupDir(cfg.CgroupParent, cgName); err != nil {
		r.cgroupErr = err.Error()
	} else {
		cgPath = dir
	}
	if r.guard, err = startGuard(cgPath, markerVar+"="+r.id+"-"); err != nil {
		return nil, err
	}
	r.reapOrphans = pidfdsTell(r.guard.pid())
	if cgPath != "" {
		if cg, err := openCgroups(cfg.CgroupParent, cgName); err != nil {
			r.cgroupErr = err.Error()
		} else {
			r.cgroups = cg
		}
	}
	if r.rlimits() != (limits{}) {
		r.procFlag = procLimitFlag(r.shell)
	}
	return r, nil
}

// rlimits returns the limits the shell must set itself, those no cgroup controller
// enforces, lowered to this process's hard limits.
func (r *Runner) rlimits() limits {
	lim := r.limits
	if r.cgroups != nil && r.cgroups.pids {
		lim.procs = 0
	}
	if r.cgroups != nil && r.cgroups.memory {
		lim.memory = 0
	}
	lim.procs = int(capToHard(unix.RLIMIT_NPROC, int64(lim.procs)))
	lim.memory = capToHard(unix.RLIMIT_AS, lim.memory)
	return lim
}

// Sandbox returns the sandbox commands run under, SandboxBwrap or SandboxNone, and when
// SandboxAuto fell back to none, why.
func (r *Runner) Sandbox() (mode, fallback string) { return r.sandbox, r.fallback }

// containment describes how commands are contained on this host, in one line: the
// sandbox, whether each gets its own cgroup, and how its limits are enforced.
func (r *Runner) containment() string {
	var b strings.Builder
	b.WriteString("sandbox " + r.sandbox)
	if r.cgroups != nil {
		b.WriteString("; a cgroup per command under " + r.cgroups.dir)
	} else {
		b.WriteString("; no cgroups (" + r.cgroupErr + ")")
	}
	var how []string
	if r.cgroups != nil && r.cgroups.pids {
		how = append(how, "pids.max")
	}
	if r.cgroups != nil && r.cgroups.memory {
		how = append(how, "memory.max")
	}
	rl := r.rlimits()
	if rl.procs > 0 {
		how = append(how, "RLIMIT_NPROC")
	}
	if rl.memory > 0 {
		how = append(how, "RLIMIT_AS")
	}
	if len(how) > 0 {
		b.WriteString("; limits by " + strings.Join(how, ", "))
	}
	return b.String()
}

// Close stops whatever the runner's commands left running, waits for its guard process
// and removes its cgroup. Commands still running are killed; later ones fail to start.
// It is idempotent.
func (r *Runner) Close() error {
	r.guardMu.Lock()
	r.closed = true
	g := r.guard
	r.guard = nil
	r.guardMu.Unlock()
	if g != nil {
		g.close() // the guard kills what is left and removes the cgroups
	}
	if r.cgroups != nil {
		_ = os.Remove(r.cgroups.dir)
	}
	if r.reapOrphans {
		reapOrphans()
	}
	return nil
}

// liveGuard returns the guard, or an error once the runner is closed.
func (r *Runner) liveGuard() (*guard, error) {
	r.guardMu.Lock()
	defer r.guardMu.Unlock()
	if r.closed {
		return nil, errClosed
	}
	return r.guard, nil
}

// timerFunc starts a timer of d and returns the channel it fires on and a function that
// stops it.
type timerFunc func(d time.Duration) (<-chan time.Time, func())

// realTimer is a timerFunc backed by time.NewTimer.
func realTimer(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// afterFunc calls f in its own goroutine after d, unless the returned stop is called first.
type afterFunc func(d time.Duration, f func()) (stop func())

// realAfterFunc is an afterFunc backed by time.AfterFunc.
func realAfterFunc(d time.Duration, f func()) func() {
	t := time.AfterFunc(d, f)
	return func() { t.Stop() }
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
	g, err := r.liveGuard()
	if err != nil {
		return nil, err
	}
	var cg *cgroup
	if r.cgroups != nil {
		if cg, err = r.cgroups.create(r.limits); err != nil {
			return nil, err
		}
	}
	dirFn := r.spillDirectory
	stdout := newCollector(r.maxOutput, r.maxSpill, dirFn, "stdout")
	stderr := newCollector(r.maxOutput, r.maxSpill, dirFn, "stderr")
	if out := req.Output; out != nil {
		stdout.tee = func(p []byte) { out("stdout", p) }
		stderr.tee = func(p []byte) { out("stderr", p) }
	}
	p, err := spawn(spawnSpec{
		argv:   r.argv(req.Command, dir, r.rlimits()),
		dir:    dir,
		env:    r.env,
		stdout: stdout,
		stderr: stderr,
		grace:  r.grace,
		after:  r.afterFunc,
		marker: markerVar + "=" + r.id + "-" + strconv.FormatInt(r.seq.Add(1), 10),
		cg:     cg,
		guard:  g,

		signalExit:  r.sandbox == SandboxBwrap,
		reapOrphans: r.reapOrphans,
	})
	if err != nil && cg != nil {
		cg.remove()
	}
	return p, err
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
	expired, stop := r.timer(timeout)
	defer stop()
	select {
	case <-p.exited:
	case <-expired:
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
