package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/mcptest"
)

// writeUserConfig writes the sandbox's ~/.dsh/config.yaml.
func (s *sandbox) writeUserConfig(t *testing.T, text string) {
	t.Helper()
	if err := os.MkdirAll(s.home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.home, "config.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// MCP servers are started only by commands that need them: "dsh call read" used to start
// every configured server first (16 s with two npm servers). A server that records its
// start in a marker file shows which commands started it; "dsh tools" now lists its tools.
func TestMCPStartedOnlyWhenNeeded(t *testing.T) {
	nm := mcptest.Installed(t)
	server := filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js")
	s := newSandbox(t)
	s.write("a.txt", "alpha\n")
	marker := filepath.Join(t.TempDir(), "started")
	s.writeUserConfig(t, "mcp:\n  servers:\n    everything:\n      command: sh\n      args: [\"-c\", "+
		jsonString("echo started >> "+marker+"; exec node "+server+" stdio")+"]\n")
	started := func() int {
		b, err := os.ReadFile(marker)
		if os.IsNotExist(err) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "started")
	}

	s.dsh("call", "read", `{"file_path":"a.txt"}`).want(t, 0)
	s.dsh("call", "bash", `{"command":"true","description":"d"}`).want(t, 0)
	if n := started(); n != 0 {
		t.Fatalf("dsh call of built-in tools started the MCP server %d times", n)
	}
	r := s.dsh("call", "--json", "mcp__everything__echo", `{"message":"hi"}`).want(t, 0)
	mustContain(t, "echo", r.stdout, "Echo: hi")
	if n := started(); n != 1 {
		t.Fatalf("dsh call of an MCP tool started the server %d times, want 1", n)
	}
	r = s.dsh("tools").want(t, 0)
	mustContain(t, "dsh tools", r.stdout, "mcp__everything__echo", "mcp__everything__get-sum", "read")
	r = s.dsh("tools", "--json").want(t, 0)
	mustContain(t, "dsh tools --json", r.stdout, `"name": "mcp__everything__echo"`)
	if n := started(); n != 3 {
		t.Fatalf("the server was started %d times in all, want 3", n)
	}
}

// A broken server's log lines go to a log file, not the transcript; "dsh mcp ls" exits 1
// naming it (it used to exit 0).
func TestMCPBrokenServerLogsAndStatus(t *testing.T) {
	s := newSandbox(t)
	s.write("a.txt", "alpha\n")
	s.writeUserConfig(t, "mcp:\n  servers:\n    broken:\n      command: sh\n      args: [\"-c\", \"echo broken-server-says-hello >&2; exit 1\"]\n")
	logPath := filepath.Join(s.home, "logs", "mcp.log")

	r := s.dsh("mcp", "ls", "--wait", "30s").want(t, 1)
	mustContain(t, "mcp ls", r.stdout, "broken", "last stderr line: broken-server-says-hello")
	// The server's last stderr line is named once, not once by the transport and again
	// by the mount.
	if n := strings.Count(r.stdout, "broken-server-says-hello"); n != 1 {
		t.Errorf("mcp ls names the last stderr line %d times:\n%s", n, r.stdout)
	}
	mustContain(t, "mcp ls", r.stderr, "1 of 1 configured MCP servers not connected: broken (", "their logs are in "+logPath)

	r = s.dsh("call", "mcp__broken__anything", `{}`).want(t, 1)
	for _, out := range []string{r.stdout, r.stderr} {
		for _, leak := range []string{"broken-server-says-hello", "connection attempt failed", "level="} {
			if strings.Contains(out, leak) {
				t.Errorf("the server's log leaked into the output (%q):\n%s", leak, out)
			}
		}
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "mcp.log", string(b), "[broken] broken-server-says-hello", "mcp-client(broken)")

	// A run logs them under its session directory.
	script := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(script, []byte(`{"text":"done"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = s.dsh("run", "--script", script, "hi").want(t, 0)
	if strings.Contains(r.stderr, "broken-server-says-hello") || strings.Contains(r.stderr, "connection attempt failed") {
		t.Errorf("the server's log leaked into the transcript:\n%s", r.stderr)
	}
	_, sessionLog := sessionID(t, r.stderr)
	b, err = os.ReadFile(filepath.Join(filepath.Dir(sessionLog), "mcp.log"))
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "session mcp.log", string(b), "[broken] broken-server-says-hello")
}

// In a real process a broken server's connection messages used to go to the process's
// standard error (the default logger), into the user's transcript.
func TestMCPLogsStayOutOfTheTerminal(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home, ws := t.TempDir(), t.TempDir()
	conf := "mcp:\n  servers:\n    broken:\n      command: sh\n      args: [\"-c\", \"echo broken-server-says-hello >&2; exit 1\"]\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"tools"}, {"mcp", "ls"}} {
		cmd := exec.CommandContext(t.Context(), exe, args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "DSH_TEST_AS_DSH=1", "DSH_HOME="+home, "NO_COLOR=1")
		out, _ := cmd.CombinedOutput()
		leaks := []string{"connection attempt failed", "level=", "WARN"}
		if args[0] == "tools" {
			leaks = append(leaks, "broken-server-says-hello") // mcp ls names the last stderr line as the server's state
		}
		for _, leak := range leaks {
			if strings.Contains(string(out), leak) {
				t.Errorf("dsh %s: the server's log leaked into the terminal (%q):\n%s", strings.Join(args, " "), leak, out)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(home, "logs", "mcp.log"))
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "mcp.log", string(b), "[broken] broken-server-says-hello", "connection attempt failed")
}
