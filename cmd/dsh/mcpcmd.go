package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// runMCP implements "dsh mcp serve" and "dsh mcp ls".
func runMCP(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return &usageError{"want a subcommand: serve or ls"}
	}
	switch args[0] {
	case "serve":
		return runMCPServe(ctx, e, args[1:])
	case "ls", "list":
		return runMCPList(ctx, e, args[1:])
	case "-h", "-help", "--help":
		fmt.Fprintln(e.stderr, "Usage: dsh mcp serve [--http ADDR] [flags] | dsh mcp ls [flags]")
		return errHelp
	}
	return &usageError{fmt.Sprintf("unknown subcommand %q (want serve or ls)", args[0])}
}

// runMCPServe serves the whole governed tool set as an MCP server: on standard input and
// output, or over streamable HTTP with --http. Every call goes through the pipeline —
// permission rules, guards, timeouts, spill — with nobody to approve: an "ask" is denied.
// A dsh that another dsh started as an MCP server (mcp.DepthEnv is set) serves without
// mounting its configured MCP servers, which could include dsh itself.
func runMCPServe(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "mcp serve", "mcp serve [--http ADDR] [--workspace DIR] [flags]")
	addr := fs.String("http", "", "serve streamable HTTP on this address (e.g. 127.0.0.1:8931) instead of stdio")
	workspace := fs.String("workspace", e.cwd, "the workspace the file and shell tools are confined to")
	cf := addConfigFlags(fs, "mode", "permissions.allow", "permissions.ask", "permissions.deny", "permissions.openProtected", "shell.sandbox")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	ws, c, err := workspaceConfig(e, *workspace, cf)
	if err != nil {
		return err
	}
	store, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer closeStore(store)
	logs := &codemode.ScopeLogs{}
	rt, err := newRuntime(ctx, runtimeConfig{Workspace: ws, Mode: c.Mode, Config: c.Config, Logs: logs, MCPDepth: mcp.Depth(e.getenv), Stderr: e.stderr,
		MCPLog: homeMCPLog(c), RunsCode: true})
	if err != nil {
		return err
	}
	defer rt.Close()
	scope := rt.reg.NewScope("mcp client", nil)
	defer scope.Close()
	notices := &lockedWriter{w: e.stderr}
	srv := mcp.NewServer(rt.reg, mcp.ServerOptions{
		Scope:  scope,
		Images: rt.images,
		OnSession: func(ctx context.Context, info mcp.SessionInfo) (*mcp.Session, error) {
			return openMCPSession(ctx, store, ws, scope, logs, info, notices)
		},
	})
	defer srv.Close()
	if *addr == "" {
		var in io.Reader = e.stdin
		if e.stdin == nil {
			in = strings.NewReader("")
		}
		err := srv.ServeStdio(ctx, in, e.stdout)
		if ctx.Err() != nil {
			return nil // interrupted: a normal way to stop a server
		}
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Handler(nil), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.stderr, "dsh mcp: serving streamable HTTP on http://%s (workspace %s)\n", ln.Addr(), ws)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	// Closing the MCP server first ends the sessions' open SSE streams, so the HTTP
	// server's shutdown does not wait for them.
	srv.Close()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(shutdown)
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// runMCPList connects the configured MCP servers and lists their state and tools. It exits
// with status 1 when a configured server is not connected.
func runMCPList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "mcp ls", "mcp ls [--workspace DIR] [--wait DURATION]")
	workspace := fs.String("workspace", e.cwd, "the workspace whose .dsh/config.yaml applies")
	wait := fs.Duration("wait", 10*time.Second, "how long to wait for the servers to connect")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	ws, c, err := workspaceConfig(e, *workspace, nil)
	if err != nil {
		return err
	}
	if len(c.MCP.Servers) == 0 {
		fmt.Fprintf(e.stdout, "no MCP servers are configured (declare them under mcp.servers in %s or %s)\n", c.user, c.project)
		return nil
	}
	rt, err := newRuntime(ctx, runtimeConfig{Workspace: ws, Mode: c.Mode, Config: c.Config, MCPDepth: mcp.Depth(e.getenv),
		MCPLog: homeMCPLog(c)})
	if err != nil {
		return err
	}
	defer rt.Close()
	if rt.mcpSkipped != "" {
		fmt.Fprintln(e.stdout, rt.mcpSkipped)
		return nil
	}
	host := rt.mcp
	waitSettled(ctx, host, *wait)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tTRANSPORT\tTOOLS")
	var down []string
	for _, m := range host.Mounts() {
		if m.State() != mcp.StateConnected {
			down = append(down, m.Name()+" ("+string(m.State())+")")
		}
		var names []string
		for _, t := range m.Tools() {
			names = append(names, t.Name)
		}
		state := string(m.State())
		if err := m.Err(); err != nil {
			state += " (" + oneLine(err.Error()) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name(), term.Sanitize(state), m.Transport(), strings.Join(names, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(down) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d configured MCP servers not connected: %s; their logs are in %s",
			len(down), len(c.MCP.Servers), term.Sanitize(strings.Join(down, ", ")), rt.mcpLog)}
	}
	return nil
}

// waitSettled waits until every mount's first connection attempt has ended, for at most
// wait or until ctx is done.
func waitSettled(ctx context.Context, h *mcp.Host, wait time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for _, m := range h.Mounts() {
		select {
		case <-m.Settled():
		case <-ctx.Done():
			return
		}
	}
}

// openMCPSession gives one MCP client connection its agent scope (a child of the server's
// scope, so each connection's observations and approvals are its own) and its session log,
// named after the client's clientInfo: every call, result, sub-call and approval of the
// connection is recorded there. The log is closed when the connection ends.
func openMCPSession(ctx context.Context, store session.Store, ws string, parent *tool.Scope, logs *codemode.ScopeLogs, info mcp.SessionInfo, notices io.Writer) (*mcp.Session, error) {
	client := "MCP client"
	if info.ClientName != "" {
		client += " " + info.ClientName
		if info.ClientVersion != "" {
			client += " " + info.ClientVersion
		}
	}
	flog, err := store.Create(context.WithoutCancel(ctx), session.Header{Cwd: ws, Client: client})
	if err != nil {
		return nil, fmt.Errorf("session log: %w", err)
	}
	fmt.Fprintf(notices, "dsh mcp: %s (%s): session %s · log %s\n", term.Sanitize(client), info.Transport, flog.Header().ID, flog.Path())
	scope := parent.Registry().NewScope("mcp "+info.ID, parent)
	detach := logs.Attach(scope, flog)
	rec, err := newCallRecorder(flog)
	if err != nil {
		flog.Close()
		return nil, err
	}
	return &mcp.Session{
		Agent: scope,
		BeforeCall: func(_ context.Context, in tool.Input) error {
			return rec.started(in.CallID, in.Name, rawArguments(in.Args))
		},
		AfterCall: func(_ context.Context, in tool.Input, res *tool.Result) {
			if err := rec.finished(in.CallID, res); err != nil {
				fmt.Fprintf(notices, "dsh mcp: session %s: %v\n", flog.Header().ID, err)
			}
		},
		Close: func() {
			detach()
			scope.Close()
			if err := rec.close(false); err != nil {
				fmt.Fprintf(notices, "dsh mcp: session %s: %v\n", flog.Header().ID, err)
			}
			if err := flog.Close(); err != nil {
				fmt.Fprintf(notices, "dsh mcp: session %s: closing the log: %v\n", flog.Header().ID, err)
			}
		},
	}, nil
}

// lockedWriter serializes writes from concurrent connections.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
