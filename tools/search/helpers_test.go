package search

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// baseTime is the modification time of generated files unless a test sets another.
var baseTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// writeTree creates files (slash paths → content) under a new temporary directory, all
// with modification time baseTime, and returns the directory.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, data := range files {
		abs := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(abs, baseTime, baseTime); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// touch sets the modification time of a file of the tree.
func touch(t testing.TB, root, p string, mtime time.Time) {
	t.Helper()
	if err := os.Chtimes(filepath.Join(root, filepath.FromSlash(p)), mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// newRegistry installs the search tools for cfg (SpillDir defaults to a test directory).
func newRegistry(t testing.TB, cfg Config) *tool.Registry {
	t.Helper()
	if cfg.SpillDir == "" {
		cfg.SpillDir = t.TempDir()
	}
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	undo, err := Install(reg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(undo)
	return reg
}

// call runs one call through the whole pipeline.
func call(t testing.TB, reg *tool.Registry, name, args string) *tool.Result {
	t.Helper()
	return reg.Execute(context.Background(), tool.Input{CallID: "call-1", Name: name, Args: tool.ParseArguments(args)})
}

// text returns the only text block of a result.
func text(t testing.TB, res *tool.Result) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("want one content block, got %d: %+v", len(res.Content), res.Content)
	}
	return res.Content[0].Text
}

// code returns the error code of a failed result ("" when it has none).
func code(res *tool.Result) string {
	if res.Error == nil || res.Error.Info == nil {
		return ""
	}
	return res.Error.Info.Code
}
