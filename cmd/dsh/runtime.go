package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dsh-go/dsh/tool"
	"github.com/dsh-go/dsh/tools/fs"
)

// runtimeConfig is what a command needs to assemble the governed tool set.
type runtimeConfig struct {
	Workspace string
	Mode      tool.Mode
}

// runtime is the registry with the built-in tools installed, and what to undo at exit.
type runtime struct {
	reg   *tool.Registry
	undos []func()
}

// newRuntime builds the registry and installs the built-in tools for the workspace.
func newRuntime(cfg runtimeConfig) (*runtime, error) {
	ws, err := filepath.Abs(cfg.Workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", cfg.Workspace, err)
	}
	st, err := os.Stat(ws)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", cfg.Workspace, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("workspace %q is not a directory", cfg.Workspace)
	}
	reg, err := tool.NewRegistry(tool.Config{Mode: cfg.Mode})
	if err != nil {
		return nil, err
	}
	rt := &runtime{reg: reg}
	for _, install := range builtins() {
		undo, err := install(reg, ws)
		if err != nil {
			rt.Close()
			return nil, err
		}
		rt.undos = append(rt.undos, undo)
	}
	return rt, nil
}

// Close undoes every installation, newest first.
func (rt *runtime) Close() error {
	for i := len(rt.undos) - 1; i >= 0; i-- {
		rt.undos[i]()
	}
	rt.undos = nil
	return nil
}

// installer installs one built-in package into reg for the workspace ws.
type installer func(reg *tool.Registry, ws string) (undo func(), err error)

// builtins lists the built-in tool packages in registration order.
func builtins() []installer {
	return []installer{
		func(reg *tool.Registry, ws string) (func(), error) { return fs.Install(reg, fs.Config{Root: ws}) },
	}
}
