package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/dsh-go/dsh/mcp"
)

// startMCP starts mounting the configured MCP servers in the background — all of them at
// once — unless the command does not need them (cfg.NoMCP) or this dsh is itself an MCP
// server of another dsh. Their tools join the registry as mcp__<server>__<tool>, governed
// like every other tool; their logs go to cfg.MCPLog. The returned function waits for the
// first connection attempts and reports a server that must not fail (failOnStartupError);
// Close closes the servers in any case.
func (rt *runtime) startMCP(ctx context.Context, cfg runtimeConfig) (join func() error) {
	c := cfg.Config
	switch {
	case len(c.MCP.Servers) == 0 || cfg.NoMCP:
		return func() error { return nil }
	case cfg.MCPDepth > 0:
		rt.mcpSkipped = fmt.Sprintf("not mounting the configured MCP servers (%s): this dsh was started as an MCP server by another dsh (%s=%d), and mounting them could start dsh again without end",
			strings.Join(slices.Sorted(maps.Keys(c.MCP.Servers)), ", "), mcp.DepthEnv, cfg.MCPDepth)
		if cfg.Stderr != nil {
			fmt.Fprintf(cfg.Stderr, "dsh: %s\n", rt.mcpSkipped)
		}
		return func() error { return nil }
	}
	opts := mcp.Options{Logger: slog.New(slog.DiscardHandler), Images: rt.images}
	var logFile *os.File
	if cfg.MCPLog != "" {
		f, err := openMCPLog(cfg.MCPLog)
		if err != nil {
			return func() error { return err }
		}
		logFile, rt.mcpLog = f, cfg.MCPLog
		opts.Logger = slog.New(slog.NewTextHandler(f, nil))
		opts.StderrLog = f
	}
	type mounted struct {
		host *mcp.Host
		err  error
	}
	done := make(chan mounted, 1)
	go func() {
		h, err := mcp.Install(ctx, rt.reg, c.MCP, opts)
		done <- mounted{h, err}
	}()
	wait := sync.OnceValues(func() (*mcp.Host, error) {
		m := <-done
		return m.host, m.err
	})
	rt.undos = append(rt.undos, func() {
		if h, _ := wait(); h != nil {
			h.Close()
		}
		if logFile != nil {
			logFile.Close()
		}
	})
	return func() error {
		h, err := wait()
		rt.mcp = h
		return err
	}
}

// openMCPLog opens (appending, creating it and its directory) the MCP log file.
func openMCPLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("MCP log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("MCP log: %w", err)
	}
	return f, nil
}

// homeMCPLog is the MCP log of commands without a session: <dsh home>/logs/mcp.log.
func homeMCPLog(c *loadedConfig) string { return filepath.Join(c.home, "logs", "mcp.log") }

// callsNeedMCP reports whether a "dsh call" command line calls an MCP tool: only then are
// the configured servers started.
func callsNeedMCP(calls []callSpec) bool {
	for _, c := range calls {
		if strings.HasPrefix(c.name, "mcp__") {
			return true
		}
	}
	return false
}
