package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/testwait"
)

// TestMCPServeStdio speaks MCP to "dsh mcp serve" over its standard streams: the tools are
// listed, and a call runs through the pipeline with the permission rules applied.
func TestMCPServeStdio(t *testing.T) {
	s := newSandbox(t)
	s.write("a.txt", "alpha\n")
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	e := &env{stdout: outW, stderr: &errb, stdin: inR, cwd: s.ws, getenv: func(k string) string { return s.env[k] }}
	done := make(chan int, 1)
	go func() {
		code := run(context.Background(), e, []string{"mcp", "serve", "--deny", "bash(rm *)", "--ask", "bash(echo *)"})
		outW.Close()
		done <- code
	}()
	send := func(msg string) {
		if _, err := fmt.Fprintln(inW, msg); err != nil {
			t.Fatal(err)
		}
	}
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 1<<22)
	recv := func(id int) map[string]any {
		t.Helper()
		for lines.Scan() {
			var m map[string]any
			if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
				t.Fatalf("not JSON-RPC: %q", lines.Text())
			}
			if m["id"] == float64(id) {
				return m
			}
		}
		t.Fatalf("no response %d (stderr: %s)", id, errb.String())
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	if r := recv(1); r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	list := recv(2)
	b, _ := json.Marshal(list)
	mustContain(t, "tools/list", string(b), `"name":"read"`, `"name":"bash"`)
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read","arguments":{"file_path":"a.txt"}}}`)
	b, _ = json.Marshal(recv(3))
	mustContain(t, "read call", string(b), "1: alpha", `"structuredContent"`)
	if strings.Contains(string(b), `"isError":true`) {
		t.Errorf("read failed: %s", b)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"bash","arguments":{"command":"rm -rf x","description":"d"}}}`)
	b, _ = json.Marshal(recv(4))
	mustContain(t, "denied call", string(b), `denied by permission rule \"bash(rm *)\"`, `"isError":true`)
	// An "ask" has nobody to ask under dsh mcp serve: denied, and the approval is logged.
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo hi","description":"d"}}}`)
	b, _ = json.Marshal(recv(5))
	mustContain(t, "unapproved call", string(b), `"isError":true`)
	// An image a served tool reads reaches the client as an MCP image.
	pic := writePNG(t, filepath.Join(s.ws, "pic.png"), 3, 3)
	send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_image","arguments":{"file_path":"pic.png"}}}`)
	b, _ = json.Marshal(recv(6))
	mustContain(t, "read_image call", string(b), `"type":"image"`, `"mimeType":"image/png"`, `"data":"`+base64.StdEncoding.EncodeToString(pic)+`"`)
	inW.Close()
	if code := testwait.Recv(t, done, "dsh mcp serve to stop at the end of its input"); code != 0 {
		t.Errorf("dsh mcp serve exited %d: %s", code, errb.String())
	}
	inR.Close()
	outR.Close()

	// The connection is one session in the log, named after the client, with every call
	// and result.
	logs := s.storedSessions(t)
	if len(logs) != 1 {
		t.Fatalf("%d sessions, want one for the connection", len(logs))
	}
	if c := logs[0].Header.Client; c != "MCP client test 1" {
		t.Errorf("session client %q", c)
	}
	got := describeEvents(t, logs[0].Events)
	want := []string{
		"turn/start",
		`tool/call read {"file_path":"a.txt"}`, "tool/result ok",
		`tool/call bash {"command":"rm -rf x","description":"d"}`, "tool/result error",
		`tool/call bash {"command":"echo hi","description":"d"}`, "approval/asked", "approval/decided unavailable", "tool/result error",
		`tool/call read_image {"file_path":"pic.png"}`, "tool/result ok",
		"turn/end completed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
	mustContain(t, "dsh mcp serve's notices", errb.String(), "dsh mcp: MCP client test 1 (stdio): session "+logs[0].Header.ID)
}

// TestMCPBridgeToItself configures dsh (this test binary in dsh mode) as an MCP server of
// dsh: "dsh mcp ls" lists its tools and "dsh call" reaches one through the bridge.
func TestMCPBridgeToItself(t *testing.T) {
	s := newSandbox(t)
	s.write("a.txt", "bridged\n")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("mcp:\n  servers:\n    self:\n      command: %q\n      args: [mcp, serve, --workspace, %q]\n      env: {DSH_TEST_AS_DSH: \"1\", DSH_HOME: %q}\n      failOnStartupError: true\n",
		exe, s.ws, t.TempDir()) // the server's own home has no config: it must not mount itself
	s.writeFile(filepath.Join(s.home, "config.yaml"), cfg)
	r := s.dsh("mcp", "ls").want(t, 0)
	mustContain(t, "mcp ls", r.stdout, "SERVER", "self", "connected", "stdio", "mcp__self__read", "mcp__self__bash")
	r = s.dsh("call", "--json", "mcp__self__read", `{"file_path":"a.txt"}`).want(t, 0)
	mustContain(t, "bridged call", r.stdout, `{"isError":false`, "1: bridged")
	// The bridged tools are governed by the local rules as well.
	r = s.dsh("call", "mcp__self__read", `{"file_path":"a.txt"}`, "--deny", "mcp__*").want(t, 1)
	mustContain(t, "denied bridged call", r.stdout, `is denied by permission rule "mcp__*"`)
	if strings.Contains(r.stderr, "panic") {
		t.Errorf("stderr: %s", r.stderr)
	}
}

func TestMCPUsage(t *testing.T) {
	s := newSandbox(t)
	s.dsh("mcp").want(t, 2)
	r := s.dsh("mcp", "frob").want(t, 2)
	mustContain(t, "stderr", r.stderr, `unknown subcommand "frob"`)
	r = s.dsh("mcp", "ls").want(t, 0)
	mustContain(t, "mcp ls", r.stdout, "no MCP servers are configured")
}
