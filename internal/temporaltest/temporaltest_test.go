package temporaltest

import (
	"context"
	"net"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestMissingBinaryNamesTheSetUpScript checks that a machine without the cached CLI gets a
// failure that says what to run, not a skip.
func TestMissingBinaryNamesTheSetUpScript(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv(EnvAddr, "")
	_, err := Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "scripts/test-deps.sh") || !strings.Contains(err.Error(), "temporal-"+Version) {
		t.Fatalf("Start without the binary: %v", err)
	}
}

// TestStartAndStop starts the cached dev server, connects to it and stops it.
func TestStartAndStop(t *testing.T) {
	s, err := Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", s.Addr); err == nil {
		c.Close()
		t.Fatalf("the server still listens on %s after Stop", s.Addr)
	}
}
