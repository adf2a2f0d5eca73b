package shell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dsh-go/dsh/tool"
)

// sandboxMode is the mode the bwrap sandbox enforces, as the model-facing markers name it.
const sandboxMode = "workspace-write"

// bwrapPaths are the places bubblewrap is looked for, in order. It is never looked up in
// $PATH: a directory there may be writable by the very commands it is meant to confine.
func bwrapPaths() []string { return []string{"/usr/bin/bwrap", "/bin/bwrap"} }

// findBwrap resolves the bubblewrap binary: the configured absolute path, else the first
// of bwrapPaths that is an executable file.
func findBwrap(configured string) (string, error) {
	candidates := bwrapPaths()
	if configured != "" {
		if !filepath.IsAbs(configured) {
			return "", fmt.Errorf("shell: Config.Bwrap must be an absolute path, got %q", configured)
		}
		candidates = []string{configured}
	}
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("shell: sandbox %q needs bubblewrap, which is not installed at %s (Debian: apt-get install bubblewrap)",
		SandboxBwrap, strings.Join(candidates, " or "))
}

// argv returns the command line that runs command in dir: the shell (after the resource
// limits it must set itself, if any), inside bwrap when sandboxed.
func (r *Runner) argv(command, dir string, rlim limits) []string {
	sh := []string{r.shell, "-c", limitPrefix(rlim, r.procFlag) + command}
	if r.sandbox != SandboxBwrap {
		return sh
	}
	return append(r.bwrapArgs(dir), sh...)
}

// bwrapArgs confines a command: the whole file system read-only, the workspace writable
// except for the protected paths inside it, a private /tmp, /dev and /proc, no network,
// and a private PID namespace that dies with the runner, so nothing the command starts
// can outlive it.
func (r *Runner) bwrapArgs(dir string) []string {
	args := []string{
		r.bwrap,
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/tmp",
		"--bind", r.root, r.root,
	}
	for _, p := range r.protectedMounts() {
		args = append(args, "--ro-bind", p, p)
	}
	return append(args,
		"--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
		"--die-with-parent",
		"--chdir", dir,
		"--",
	)
}

// protectedMounts returns the existing protected paths that lie inside the workspace, with
// symbolic links resolved, to be bound read-only over the writable workspace. Paths
// outside it are read-only in the sandbox already. A protected path that is a symbolic
// link protects its target (a mount cannot cover the link itself); a ".git" file
// ("gitdir: …", as in a linked worktree or a submodule) protects the file and the
// directory it names. A path that does not exist yet is skipped: it is looked at again for
// every command.
func (r *Runner) protectedMounts() []string {
	var out []string
	add := func(p string) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil || real == r.root || !inside(r.root, real) {
			return
		}
		for _, q := range out {
			if q == real {
				return
			}
		}
		out = append(out, real)
	}
	for _, p := range r.readOnly {
		st, err := os.Lstat(p)
		if err != nil {
			continue
		}
		add(p)
		if st.Mode().IsRegular() && filepath.Base(p) == ".git" {
			if gitdir := readGitdir(p); gitdir != "" {
				add(gitdir)
			}
		}
	}
	return out
}

// protectedNames returns the protected paths that lie inside the workspace, relative to it,
// as the bash tool's description names them.
func (r *Runner) protectedNames() []string {
	var out []string
	for _, p := range r.readOnly {
		for _, root := range []string{r.root, r.alias} {
			if rel, err := filepath.Rel(root, p); err == nil && rel != "." && inside(root, p) {
				out = append(out, rel)
				break
			}
		}
	}
	return out
}

// readGitdir returns the directory a ".git" file points to, absolute, or "".
func readGitdir(p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return parseGitdir(data, filepath.Dir(p))
}

// parseGitdir reads the "gitdir: <path>" line of a ".git" file in directory dir and returns
// the path, absolute and clean, or "" when data is not such a file. The file comes from
// the workspace, so it is treated as untrusted: a large or malformed one names nothing.
func parseGitdir(data []byte, dir string) string {
	if len(data) > 4096 {
		return ""
	}
	line, _, _ := strings.Cut(string(data), "\n")
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	gitdir = strings.TrimSpace(gitdir)
	if !ok || gitdir == "" || strings.ContainsRune(gitdir, 0) {
		return ""
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(dir, gitdir)
	}
	return filepath.Clean(gitdir)
}

// probeBwrap checks that bwrap can build the sandbox on this host, by running the shell's
// no-op command (":") in it once.
func (r *Runner) probeBwrap() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := append(r.bwrapArgs(r.root), r.shell, "-c", ":")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err := cmd.Run()
	if cmd.Process != nil {
		// bwrap's own helper processes may be re-parented to this process (a subreaper)
		// and exit after it: stop and reap them.
		fam := &family{leader: cmd.Process.Pid, pgid: cmd.Process.Pid, marker: markerVar + "=" + r.id + "-probe"}
		fam.signal(syscall.SIGKILL)
		for deadline := time.Now().Add(5 * time.Second); fam.alive() && time.Now().Before(deadline); {
			time.Sleep(pollInterval)
		}
		fam.reap()
	}
	if err != nil {
		return fmt.Errorf("shell: sandbox %q is not usable on this host: %v: %s", SandboxBwrap, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// chooseSandbox settles the configured mode: bwrap must work, auto uses bwrap when it
// works and otherwise records why not.
func (r *Runner) chooseSandbox(mode, bwrap string) error {
	switch mode {
	case "", SandboxNone:
		r.sandbox = SandboxNone
		return nil
	case SandboxBwrap, SandboxAuto:
	default:
		return fmt.Errorf("shell: unknown sandbox %q (supported: %q, %q, %q)", mode, SandboxAuto, SandboxBwrap, SandboxNone)
	}
	path, err := findBwrap(bwrap)
	if err == nil {
		r.bwrap, r.sandbox = path, SandboxBwrap
		err = r.probeBwrap()
	}
	if err == nil {
		return nil
	}
	if mode == SandboxBwrap {
		return err
	}
	r.sandbox = SandboxNone
	r.fallback = strings.TrimPrefix(err.Error(), "shell: ")
	return nil
}

// sandboxInfo classifies a finished sandboxed command: a non-zero exit whose stderr reports
// a read-only file system is a denial. It returns nil when commands are not sandboxed.
func (r *Runner) sandboxInfo(exitCode *int, stderr string) *SandboxInfo {
	if r.sandbox != SandboxBwrap {
		return nil
	}
	denied := exitCode != nil && *exitCode != 0 && strings.Contains(strings.ToLower(stderr), "read-only file system")
	return &SandboxInfo{Mode: sandboxMode, Denied: denied, Enforcement: "full"}
}

// denialMarker is the line that tells the model a sandbox policy, not the command, failed.
func denialMarker(mode string) string {
	return "[sandbox: file access denied under " + mode + " mode]"
}

// runnerFailure reports a foreground run in which bwrap itself failed, so the command never
// ran: a non-zero exit with a "bwrap: " diagnostic line on stderr. Running the command
// unconfined instead is not an option.
func (r *Runner) runnerFailure(res *RunResult) error {
	if r.sandbox != SandboxBwrap || res.ExitCode == nil || *res.ExitCode == 0 {
		return nil
	}
	for line := range strings.SplitSeq(res.Stderr.Text, "\n") {
		if strings.HasPrefix(line, "bwrap: ") {
			return &tool.Error{Name: "SandboxUnavailableError", Code: "SANDBOX_UNAVAILABLE",
				Message: "sandbox mode \"" + sandboxMode + "\" is requested but bubblewrap could not build the sandbox; refusing to run the command unconfined. Runner failure: " + line}
		}
	}
	return nil
}

var errClosed = errors.New("shell: the runner is closed")
