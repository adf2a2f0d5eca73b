package mcptest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNodeModulesSaysHowToInstall(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := NodeModules(sub)
	if err == nil || !strings.Contains(err.Error(), "run scripts/npm-deps.sh") {
		t.Fatalf("NodeModules = %v, want the install hint", err)
	}
	for _, p := range []string{"server-everything", "server-filesystem", "sdk"} {
		pkg := filepath.Join(dir, ".ci", "node_modules", "@modelcontextprotocol", p)
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	nm, err := NodeModules(sub)
	if err != nil || nm != filepath.Join(dir, ".ci", "node_modules") {
		t.Fatalf("NodeModules = %q, %v", nm, err)
	}
}
