package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/internal/testwait"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/tool"
)

// badServer is the path of the misbehaving test server, built once by TestMain.
var badServer string

func TestMain(m *testing.M) {
	if os.Getenv("MCPTEST_SERVE") != "" {
		serveForTest() // the test binary re-executed as a dsh MCP server on stdio
		return
	}
	dir, err := os.MkdirTemp("", "mcp-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	badServer = filepath.Join(dir, "badserver")
	if out, err := exec.Command("go", "build", "-o", badServer, "github.com/dsh-go/dsh/internal/mcptest/badserver").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building badserver: %v\n%s", err, out)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

// logBuffer is a slog destination tests can search.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// env is a registry with a host for one test.
type env struct {
	t    *testing.T
	reg  *tool.Registry
	host *mcp.Host
	log  *logBuffer
}

func newEnv(t *testing.T, opts mcp.Options) *env {
	t.Helper()
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	lb := &logBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if opts.ShutdownGrace == 0 {
		opts.ShutdownGrace = 200 * time.Millisecond
	}
	// cancelledCall's calls are cancelled a moment after their dispatch began.
	reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
		if cancel, ok := ctx.Value(cancelKey{}).(context.CancelFunc); ok {
			stop := time.AfterFunc(300*time.Millisecond, cancel)
			defer stop.Stop()
		}
		return next(ctx)
	})
	h := mcp.NewHost(reg.Global(), opts)
	t.Cleanup(func() { h.Close() })
	return &env{t: t, reg: reg, host: h, log: lb}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func ms(v float64) *float64 { return &v }

func boolp(v bool) *bool { return &v }

// badConfig declares the bad server with fast reconnects and the given environment.
func badConfig(envVars ...string) mcp.ServerConfig {
	e := map[string]string{}
	for _, kv := range envVars {
		k, v, _ := strings.Cut(kv, "=")
		e[k] = v
	}
	return mcp.ServerConfig{
		Command:   badServer,
		Env:       e,
		Reconnect: &mcp.ReconnectConfig{InitialDelayMs: ms(20), MaxDelayMs: ms(200)},
	}
}

func (e *env) mount(name string, cfg mcp.ServerConfig) *mcp.Mount {
	e.t.Helper()
	m, err := e.host.Mount(context.Background(), name, cfg)
	if err != nil {
		e.t.Fatalf("Mount(%s): %v", name, err)
	}
	return m
}

func (e *env) call(ctx context.Context, name, args string) *tool.Result {
	return e.reg.Execute(ctx, tool.Input{CallID: "c1", Name: name, Args: tool.ParseArguments(args)})
}

type cancelKey struct{}

// cancelledCall runs a call that the caller cancels a moment after its dispatch began
// (after Prepare, so the result is ABORTED whenever the cancellation lands), and fails the
// test if the call does not return within the test's deadline.
func (e *env) cancelledCall(t *testing.T, name, args string) *tool.Result {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ctx = context.WithValue(ctx, cancelKey{}, context.CancelFunc(cancel))
	done := make(chan *tool.Result, 1)
	go func() {
		defer cancel()
		done <- e.call(ctx, name, args)
	}()
	return testwait.Recv(t, done, "the cancelled call to return")
}

// text returns the text of a one-text-block result.
func text(t *testing.T, res *tool.Result) string {
	t.Helper()
	if len(res.Content) != 1 || res.Content[0].Type != content.TypeText {
		t.Fatalf("content = %#v, want one text block", res.Content)
	}
	return res.Content[0].Text
}

func code(res *tool.Result) string {
	if res.Error == nil || res.Error.Info == nil {
		return ""
	}
	return res.Error.Info.Code
}

// eventually polls cond every 10 ms until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, what, cond)
}

func stderrOf(m *mcp.Mount) string {
	b, _ := m.Stderr()
	return string(b)
}

func lines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}
