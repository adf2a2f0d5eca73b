package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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

// cancelledCall runs a call and cancels it once the server has received it: received
// counts the tools/call requests that reached the server (see tapStdio and tapHTTP), so
// the cancellation lands after the dispatch began, however loaded the machine is, and the
// result is ABORTED. It fails the test if the call returns before the server received it
// or does not return within the test's deadline.
func (e *env) cancelledCall(t *testing.T, name, args string, received func() int) *tool.Result {
	t.Helper()
	before := received()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *tool.Result, 1)
	go func() {
		defer cancel()
		done <- e.call(ctx, name, args)
	}()
	wait := testwait.Context(t)
	for received() == before {
		select {
		case res := <-done:
			t.Fatalf("the call returned before the server received it: %+v", res)
		case <-wait.Done():
			t.Fatalf("gave up waiting for the server to receive the call: %v", context.Cause(wait))
		case <-time.After(time.Millisecond): // polls the tap; the wait is bounded by wait
		}
	}
	cancel()
	return testwait.Recv(t, done, "the cancelled call to return")
}

// tapStdio makes cfg's stdio server read its input through tee, which copies it to a file,
// and returns a count of the tools/call requests that reached the server so far.
func tapStdio(t *testing.T, cfg mcp.ServerConfig) (mcp.ServerConfig, func() int) {
	t.Helper()
	wire := filepath.Join(t.TempDir(), "wire")
	argv := append([]string{cfg.Command}, cfg.Args...)
	cfg.Args = append([]string{"-c", `tee -a "$0" | exec "$@"`, wire}, argv...)
	cfg.Command = "/bin/sh"
	return cfg, func() int {
		b, _ := os.ReadFile(wire)
		return bytes.Count(b, []byte(`"method":"tools/call"`))
	}
}

// tapHTTP wraps base (nil: http.DefaultTransport) and returns a client and a count of the
// tools/call requests the server answered with response headers, that is, took.
func tapHTTP(base http.RoundTripper) (*http.Client, func() int) {
	if base == nil {
		base = http.DefaultTransport
	}
	tap := &httpTap{base: base}
	return &http.Client{Transport: tap}, func() int { return int(tap.calls.Load()) }
}

type httpTap struct {
	base  http.RoundTripper
	calls atomic.Int64
}

func (h *httpTap) RoundTrip(req *http.Request) (*http.Response, error) {
	isCall := false
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("tap: read the request body: %w", err)
		}
		isCall = bytes.Contains(body, []byte(`"method":"tools/call"`))
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	res, err := h.base.RoundTrip(req)
	if err == nil && isCall && res.StatusCode == http.StatusOK {
		h.calls.Add(1)
	}
	return res, err
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
