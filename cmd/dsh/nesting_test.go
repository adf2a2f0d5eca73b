package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildDsh builds the dsh binary into a temporary directory (skipped with -short).
func buildDsh(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH, so the binary cannot be built: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "dsh")
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestMCPServeDoesNotMountItself configures the built dsh binary as an MCP server of
// itself — the same configuration, so "dsh mcp serve" would mount "dsh mcp serve" again
// without end. The top-level dsh mounts it once; the nested one starts without mounting MCP
// servers, says why on its standard error, and serves the built-in tools.
func TestMCPServeDoesNotMountItself(t *testing.T) {
	bin := buildDsh(t)
	home, ws, logs := t.TempDir(), t.TempDir(), t.TempDir()
	starts, stderr := filepath.Join(logs, "starts"), filepath.Join(logs, "stderr")
	// A shell wrapper counts the server's starts and keeps its standard error.
	script := fmt.Sprintf("echo start >> %q; exec %q mcp serve 2>> %q", starts, bin, stderr)
	cfg := fmt.Sprintf("mcp:\n  servers:\n    self:\n      command: /bin/sh\n      args: [-c, %q]\n      env: {DSH_HOME: %q}\n      failOnStartupError: true\n", script, home)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "DSH_HOME=" + home, "TERM=dumb"}
	run := func(extraEnv []string, args ...string) (string, string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = ws
		cmd.Env = append(append([]string(nil), env...), extraEnv...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}

	out, errOut, err := run(nil, "mcp", "ls", "--wait", "30s")
	if err != nil {
		t.Fatalf("dsh mcp ls: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	mustContain(t, "mcp ls", out, "self", "connected", "mcp__self__read", "mcp__self__bash")
	if strings.Contains(out, "mcp__self__mcp__") {
		t.Errorf("the nested dsh mounted its MCP servers:\n%s", out)
	}
	b, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "start"); n != 1 {
		t.Errorf("the server was started %d times, want once", n)
	}
	b, _ = os.ReadFile(stderr)
	mustContain(t, "the nested dsh's stderr", string(b),
		"dsh: not mounting the configured MCP servers (self): this dsh was started as an MCP server by another dsh (DSH_MCP_SERVE_DEPTH=1)")

	// Run directly with the marker, dsh mcp serve still serves (its input ends at once) and
	// says why it mounts nothing; dsh mcp ls says so instead of listing.
	out, errOut, err = run([]string{"DSH_MCP_SERVE_DEPTH=2"}, "mcp", "serve")
	if err != nil || out != "" {
		t.Errorf("nested dsh mcp serve: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	mustContain(t, "nested dsh mcp serve", errOut, "not mounting the configured MCP servers (self)", "DSH_MCP_SERVE_DEPTH=2")
	out, _, err = run([]string{"DSH_MCP_SERVE_DEPTH=1"}, "mcp", "ls")
	if err != nil {
		t.Errorf("nested dsh mcp ls: %v", err)
	}
	mustContain(t, "nested dsh mcp ls", out, "not mounting the configured MCP servers (self)")
}
