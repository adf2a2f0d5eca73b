package fs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/tool"
)

// env is a workspace in a temporary directory with the file tools registered.
type env struct {
	t     *testing.T
	dir   string // the workspace root
	tools *Tools
	reg   *tool.Registry
	n     int
}

func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	dir := t.TempDir()
	if cfg.Root == "" {
		cfg.Root = dir
	}
	tools, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { tools.Close() })
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tools.Register(reg.Global()); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, dir: dir, tools: tools, reg: reg}
}

// call runs one call through the whole pipeline as a direct call (no agent).
func (e *env) call(name, args string) *tool.Result {
	e.t.Helper()
	return e.callAs(nil, name, args)
}

// callAs runs one call for the agent scope (nil: a direct call).
func (e *env) callAs(agent *tool.Scope, name, args string) *tool.Result {
	e.t.Helper()
	e.n++
	return e.reg.Execute(context.Background(), tool.Input{CallID: "c" + strconv.Itoa(e.n), Name: name, Args: tool.ParseArguments(args), Agent: agent})
}

// path returns the absolute path of rel in the workspace.
func (e *env) path(rel string) string { return filepath.Join(e.dir, filepath.FromSlash(rel)) }

// put writes a file in the workspace directly, creating directories.
func (e *env) put(rel, data string) {
	e.t.Helper()
	p := e.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// get reads a workspace file directly.
func (e *env) get(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(e.path(rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// text returns the single text block of a result.
func text(t *testing.T, res *tool.Result) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content has %d blocks, want 1: %+v", len(res.Content), res.Content)
	}
	return res.Content[0].Text
}

// mustOK fails unless res is a success.
func mustOK(t *testing.T, res *tool.Result) {
	t.Helper()
	if res.IsError {
		t.Fatalf("call failed: %s", res.Error.Message)
	}
}

// wantErr checks a failure's code ("" for an uncoded failure) and that its message contains
// every fragment.
func wantErr(t *testing.T, res *tool.Result, code string, fragments ...string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("call succeeded, want failure %s: %+v", code, res.Content)
	}
	got := ""
	if res.Error.Info != nil {
		got = res.Error.Info.Code
		if res.Error.Info.Name != ErrorName && code != "" && strings.HasPrefix(code, "FS_") {
			t.Errorf("error name = %q, want %q", res.Error.Info.Name, ErrorName)
		}
	}
	if got != code {
		t.Fatalf("error code = %q, want %q (message %q)", got, code, res.Error.Message)
	}
	for _, f := range fragments {
		if !strings.Contains(res.Error.Message, f) {
			t.Errorf("message %q does not contain %q", res.Error.Message, f)
		}
	}
	if want := "Error: " + res.Error.Message; text(t, res) != want {
		t.Errorf("content = %q, want %q", text(t, res), want)
	}
}

// asToolError is errors.As for *tool.Error.
func asToolError(err error, te **tool.Error) bool { return errors.As(err, te) }

// asCoded returns the *tool.Error in err's chain, or nil.
func asCoded(err error) *tool.Error {
	var te *tool.Error
	if errors.As(err, &te) {
		return te
	}
	return nil
}

// toolInput builds a direct call input.
func toolInput(id, name, args string) tool.Input {
	return tool.Input{CallID: id, Name: name, Args: tool.ParseArguments(args)}
}
