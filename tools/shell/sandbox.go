package shell

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/dsh-go/dsh/tool"
)

// sandboxMode is the mode the bwrap sandbox enforces, as the model-facing markers name it.
const sandboxMode = "workspace-write"

// argv returns the command line that runs command in dir: the shell, inside bwrap when
// sandboxed.
func (r *Runner) argv(command, dir string) []string {
	sh := []string{r.shell, "-c", command}
	if r.sandbox != SandboxBwrap {
		return sh
	}
	return append(r.bwrapArgs(dir), sh...)
}

// bwrapArgs confines a command: the whole file system read-only, the workspace writable, a
// private /tmp, /dev and /proc, no network, and a private PID namespace that dies with the
// runner, so nothing the command starts can outlive it.
func (r *Runner) bwrapArgs(dir string) []string {
	return []string{
		"bwrap",
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/tmp",
		"--bind", r.root, r.root,
		"--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
		"--die-with-parent",
		"--chdir", dir,
		"--",
	}
}

// probeBwrap checks that bwrap is installed and can build the sandbox on this host.
func (r *Runner) probeBwrap() error {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return fmt.Errorf("shell: sandbox %q needs bubblewrap, which is not installed (Debian: apt-get install bubblewrap)", SandboxBwrap)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := append(r.bwrapArgs(r.root), "true")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args[1:]...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("shell: sandbox %q is not usable on this host: %v: %s", SandboxBwrap, err, strings.TrimSpace(stderr.String()))
	}
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
	for _, line := range strings.Split(res.Stderr.Text, "\n") {
		if strings.HasPrefix(line, "bwrap: ") {
			return &tool.Error{Name: "SandboxUnavailableError", Code: "SANDBOX_UNAVAILABLE",
				Message: "sandbox mode \"" + sandboxMode + "\" is requested but bubblewrap could not build the sandbox; refusing to run the command unconfined. Runner failure: " + line}
		}
	}
	return nil
}
