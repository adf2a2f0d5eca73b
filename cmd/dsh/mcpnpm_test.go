package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-go/dsh/internal/mcptest"
)

// TestCallEverythingServer mounts the reference MCP server "everything" (installed from npm
// by scripts/npm-deps.sh) through the user's configuration and calls its tools with
// "dsh call mcp__…": every call passes the whole pipeline, a rule denies one, and a server
// error comes back as a failed result.
func TestCallEverythingServer(t *testing.T) {
	nm := mcptest.Installed(t)
	s := newSandbox(t)
	server := filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js")
	if err := os.MkdirAll(s.home, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := "mcp:\n  servers:\n    everything: {command: node, args: [" + jsonString(server) + ", stdio]}\n"
	if err := os.WriteFile(filepath.Join(s.home, "config.yaml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}

	r := s.dsh("mcp", "ls").want(t, 0)
	mustContain(t, "mcp ls", r.stdout, "everything", "connected", "mcp__everything__echo", "mcp__everything__get-sum")

	r = s.dsh("call", "--json", "mcp__everything__echo", `{"message":"hello from dsh"}`).want(t, 0)
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != "Echo: hello from dsh" {
		t.Fatalf("echo: %v %s", err, r.stdout)
	}
	r = s.dsh("call", "--json", "mcp__everything__get-sum", `{"a":2,"b":40}`).want(t, 0)
	mustContain(t, "get-sum", r.stdout, "42")

	r = s.dsh("call", "mcp__everything__echo", `{"message":"x"}`, "--deny", "mcp__everything__*").want(t, 1)
	mustContain(t, "denied", r.stdout, `is denied by permission rule "mcp__everything__*"`)

	r = s.dsh("call", "--json", "mcp__everything__get-sum", `{"a":"two"}`).want(t, 1)
	mustContain(t, "server error", r.stdout, `"isError":true`)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
