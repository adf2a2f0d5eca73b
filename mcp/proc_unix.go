//go:build unix

package mcp

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcAttr puts a stdio server in its own process group, so that shutting it down also
// reaches the processes it started (npx, node and shell wrappers are common).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminate sends sig to the server's process group.
func terminate(p *os.Process, sig syscall.Signal) {
	if err := syscall.Kill(-p.Pid, sig); err != nil {
		p.Signal(sig)
	}
}
