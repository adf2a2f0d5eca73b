//go:build !unix

package mcp

import (
	"os"
	"os/exec"
	"syscall"
)

func setProcAttr(*exec.Cmd) {}

// terminate ends the server process; without process groups only the process itself.
func terminate(p *os.Process, _ syscall.Signal) {
	p.Kill()
}
