package mcp_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/internal/mcptest"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/tool"
)

// TestMountStreamableHTTP mounts a dsh server over streamable HTTP: headers reach the
// server, tools are bridged, registry changes on the server reach the client bridge as
// list_changed, and a server that goes away fails calls instead of hanging them.
func TestMountStreamableHTTP(t *testing.T) {
	for _, jsonResponse := range []bool{false, true} {
		t.Run(fmt.Sprintf("JSONResponse=%v", jsonResponse), func(t *testing.T) { testMountStreamableHTTP(t, jsonResponse) })
	}
}

func testMountStreamableHTTP(t *testing.T, jsonResponse bool) {
	f := newFixture(t)
	srv := mcp.NewServer(f.reg, mcp.ServerOptions{})
	var mu sync.Mutex
	var auth []string
	h := srv.Handler(&sdk.StreamableHTTPOptions{JSONResponse: jsonResponse})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	defer srv.Close()

	e := newEnv(t, mcp.Options{})
	cfg := mcp.ServerConfig{URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer test-token"}}
	cfg.Reconnect = &mcp.ReconnectConfig{Enabled: boolp(false)}
	m := e.mount("remote", cfg)
	if m.State() != mcp.StateConnected || m.Transport() != mcp.TransportStreamableHTTP {
		t.Fatalf("state %s (%v), transport %s", m.State(), m.Err(), m.Transport())
	}
	res := e.call(context.Background(), "mcp__remote__lookup", `{"key":"over http"}`)
	if res.IsError || text(t, res) != "{\n  \"key\": \"over http\",\n  \"value\": 9\n}" {
		t.Fatalf("lookup: %+v", res)
	}
	res = e.call(context.Background(), "mcp__remote__lookup", `{"key":"missing"}`)
	if !res.IsError || text(t, res) != "Error: Error: no such key: missing" {
		t.Errorf("missing: %+v", res)
	}
	mu.Lock()
	for _, a := range auth {
		if a != "Bearer test-token" {
			t.Errorf("a request carried Authorization %q", a)
		}
	}
	mu.Unlock()

	undo, err := f.reg.Register(tool.Must(tool.New("added", "", func(context.Context, *tool.Call, empty) (string, error) { return "added!", nil })))
	if err != nil {
		t.Fatal(err)
	}
	defer undo()
	eventually(t, "the bridged new tool", func() bool { return e.reg.Get("mcp__remote__added", nil) != nil })
	if res := e.call(context.Background(), "mcp__remote__added", `{}`); res.IsError || text(t, res) != "added!" {
		t.Errorf("added: %+v", res)
	}

	// The server goes away: calls fail with a bridge error, promptly.
	srv.Close()
	hs.CloseClientConnections()
	hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res = e.call(ctx, "mcp__remote__lookup", `{"key":"gone"}`)
	if !res.IsError || !strings.HasPrefix(code(res), "MCP_") {
		t.Errorf("call to a vanished server: %+v", res.Error)
	}
}

// TestServerEverythingOverHTTP mounts the npm reference server in its streamable HTTP mode.
func TestServerEverythingOverHTTP(t *testing.T) {
	nm := mcptest.Installed(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js"), "streamableHttp")
	cmd.Env = append(cmd.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		closed := false
		for sc.Scan() {
			if !closed && strings.Contains(sc.Text(), "listening on port") {
				close(ready)
				closed = true
			}
		}
	}()
	select {
	case <-ready:
	case <-testwait.Context(t).Done():
		t.Fatal("server-everything did not start")
	}
	client, received := tapHTTP(nil)
	e := newEnv(t, mcp.Options{HTTPClient: client})
	m := e.mount("everything", mcp.ServerConfig{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)})
	if len(m.Tools()) < 12 {
		t.Fatalf("tools over HTTP: %v (%v)", m.Tools(), m.Err())
	}
	res := e.call(context.Background(), "mcp__everything__get-sum", `{"a":1,"b":2}`)
	if res.IsError || text(t, res) != "The sum of 1 and 2 is 3." {
		t.Fatalf("get-sum over HTTP: %+v", res)
	}
	// Only the cancellation can end an operation this long.
	if res := e.cancelledCall(t, "mcp__everything__trigger-long-running-operation", `{"duration":3600,"steps":1}`, received); code(res) != tool.CodeAborted {
		t.Fatalf("cancelled over HTTP: %+v", res)
	}
	m.Close()
}
