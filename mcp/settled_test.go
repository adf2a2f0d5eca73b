package mcp_test

import (
	"strings"
	"testing"

	"github.com/dsh-go/dsh/mcp"
)

// A server that dies during its handshake: the mount has settled when Mount returns, and its
// error names the server's last stderr line once (the stdio transport's exit message already
// carries it).
func TestDeadServerSettledWithOneStderrLine(t *testing.T) {
	e := newEnv(t, mcp.Options{})
	m := e.mount("dead", mcp.ServerConfig{Command: "sh", Args: []string{"-c", "echo dead-server-says-bye >&2; exit 1"},
		Reconnect: &mcp.ReconnectConfig{InitialDelayMs: ms(60_000), MaxDelayMs: ms(60_000)}})
	select {
	case <-m.Settled():
	default:
		t.Fatal("Settled is open after Mount returned")
	}
	err := m.Err()
	if err == nil {
		t.Fatalf("state %s and no error", m.State())
	}
	if n := strings.Count(err.Error(), "dead-server-says-bye"); n != 1 || !strings.Contains(err.Error(), "last stderr line: dead-server-says-bye") {
		t.Errorf("the error names the last stderr line %d times: %v", n, err)
	}
}
