package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/mcptest"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/tool"
)

// These tests run the bridge against MCP servers no one here wrote, installed from npm by
// scripts/npm-deps.sh. Missing packages fail the tests: they are part of the suite.

func everythingConfig(t *testing.T) mcp.ServerConfig {
	nm := mcptest.Installed(t)
	return mcp.ServerConfig{
		Command: "node",
		Args:    []string{filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"},
	}
}

func TestServerEverything(t *testing.T) {
	e := newEnv(t, mcp.Options{Environ: append(os.Environ(), "MY_API_KEY=sekrit", "DSH_HOME=/nowhere", "PLAIN_MCP_TEST_VAR=visible")})
	cfg := everythingConfig(t)
	cfg.Env = map[string]string{"EXPLICIT_TOKEN": "passed-on-purpose"}
	m := e.mount("everything", cfg)
	want := []string{"echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference",
		"get-structured-content", "get-sum", "get-tiny-image", "gzip-file-as-resource", "toggle-simulated-logging",
		"toggle-subscriber-updates", "trigger-long-running-operation"}
	var raw []string
	for _, ti := range m.Tools() {
		raw = append(raw, ti.RawName)
	}
	for _, w := range want {
		if !slices.Contains(raw, w) {
			t.Fatalf("tool %q is not listed; listed: %v", w, raw)
		}
	}
	ctx := context.Background()
	calls := []struct {
		tool, args string
		check      func(t *testing.T, res *tool.Result)
	}{
		{"echo", `{"message":"hello"}`, wantText("Echo: hello")},
		{"get-sum", `{"a":2,"b":40}`, wantText("The sum of 2 and 40 is 42.")},
		{"get-annotated-message", `{"messageType":"success","includeImage":true}`, wantContains("[image unavailable: image/png; this result was not admitted to durable model context")},
		{"get-tiny-image", `{}`, wantText("Here's the image you requested:\n[image unavailable: image/png; this result was not admitted to durable model context; raw image data remains available to programmatic callers]\nThe image above is the MCP logo.")},
		{"get-resource-links", `{"count":2}`, wantContains("Resource link: ")},
		{"get-resource-reference", `{"resourceType":"Text","resourceId":1}`, wantContains("[embedded resource unsupported; raw resource data remains available to programmatic callers]")},
		{"get-structured-content", `{"location":"Chicago"}`, func(t *testing.T, res *tool.Result) {
			sc, ok := res.Value.(*jsonv.Object).Get("structuredContent")
			if !ok {
				t.Fatalf("no structuredContent in %v", res.Value)
			}
			if _, ok := sc.(*jsonv.Object).Get("temperature"); !ok {
				t.Errorf("structuredContent = %v", sc)
			}
		}},
		{"get-env", `{}`, func(t *testing.T, res *tool.Result) {
			s := text(t, res)
			for _, in := range []string{"PLAIN_MCP_TEST_VAR", "EXPLICIT_TOKEN"} {
				if !strings.Contains(s, in) {
					t.Errorf("the server's environment lacks %s", in)
				}
			}
			for _, out := range []string{"MY_API_KEY", "DSH_HOME"} {
				if strings.Contains(s, out) {
					t.Errorf("the server's environment has scrubbed %s", out)
				}
			}
		}},
		{"gzip-file-as-resource", `{"name":"hi.gz","data":"data:text/plain;base64,aGVsbG8=","outputType":"resourceLink"}`, wantContains("Resource link: hi.gz")},
		{"toggle-simulated-logging", `{}`, wantContains("logging")},
		{"toggle-subscriber-updates", `{}`, wantContains("")},
		{"trigger-long-running-operation", `{"duration":0.2,"steps":2}`, wantText("Long running operation completed. Duration: 0.2 seconds, Steps: 2.")},
		// The server's argument validation failure comes back as a failed call.
		{"get-sum", `{"a":"two"}`, func(t *testing.T, res *tool.Result) {
			if !res.IsError || res.Error.Info != nil {
				t.Fatalf("invalid arguments: %+v", res)
			}
		}},
	}
	for _, c := range calls {
		t.Run(c.tool, func(t *testing.T) {
			res := e.call(ctx, mcp.PublicToolName("everything", c.tool), c.args)
			if res.IsError && !strings.Contains(c.args, `"two"`) {
				t.Fatalf("%s failed: %+v", c.tool, res.Error)
			}
			c.check(t, res)
		})
	}
}

func TestServerEverythingCancellation(t *testing.T) {
	e := newEnv(t, mcp.Options{})
	cfg, received := tapStdio(t, everythingConfig(t))
	m := e.mount("everything", cfg)
	// An operation far longer than the test may run: only the cancellation can end the
	// call, so the call returning at all shows dsh did not wait for the operation.
	if res := e.cancelledCall(t, "mcp__everything__trigger-long-running-operation", `{"duration":3600,"steps":1}`, received); code(res) != tool.CodeAborted {
		t.Fatalf("cancelled call: %+v", res)
	}

	// The server received notifications/cancelled: the TypeScript SDK aborts the request and
	// never sends its response. An operation of 2 s is cancelled as soon as the server has
	// read the request (the notification follows it on the same pipe), then one of 3 s runs
	// to completion; the server would have answered the first (started earlier, shorter)
	// before the second, and the host notes a late answer to an abandoned request.
	if res := e.cancelledCall(t, "mcp__everything__trigger-long-running-operation", `{"duration":2,"steps":1}`, received); code(res) != tool.CodeAborted {
		t.Fatalf("cancelled call: %+v", res)
	}
	if res := e.call(t.Context(), "mcp__everything__trigger-long-running-operation", `{"duration":3,"steps":1}`); res.IsError {
		t.Fatalf("uncancelled operation: %+v", res.Error)
	}
	for _, n := range m.Notes() {
		if strings.Contains(n, "late response") {
			t.Fatalf("the server answered the cancelled request: %s", n)
		}
	}
}

func TestServerFilesystem(t *testing.T) {
	nm := mcptest.Installed(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, mcp.Options{})
	m := e.mount("fs", mcp.ServerConfig{
		Command: "node",
		Args:    []string{filepath.Join(nm, "@modelcontextprotocol/server-filesystem/dist/index.js"), dir},
	})
	want := []string{"read_file", "read_text_file", "read_media_file", "read_multiple_files", "write_file", "edit_file",
		"create_directory", "list_directory", "list_directory_with_sizes", "directory_tree", "move_file", "search_files",
		"get_file_info", "list_allowed_directories"}
	var raw []string
	for _, ti := range m.Tools() {
		raw = append(raw, ti.RawName)
	}
	for _, w := range want {
		if !slices.Contains(raw, w) {
			t.Fatalf("tool %q is not listed; listed: %v", w, raw)
		}
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	q := func(s string) string { b, _ := jsonv.Marshal(s); return string(b) }
	ctx := context.Background()
	steps := []struct {
		tool, args string
		check      func(t *testing.T, res *tool.Result)
	}{
		{"list_allowed_directories", `{}`, wantContains(dir)},
		{"read_text_file", `{"path":` + q(p("a.txt")) + `}`, wantText("alpha\nbeta\n")},
		{"write_file", `{"path":` + q(p("b.txt")) + `,"content":"written by dsh"}`, wantContains("Successfully wrote")},
		{"edit_file", `{"path":` + q(p("b.txt")) + `,"edits":[{"oldText":"dsh","newText":"the bridge"}]}`, wantContains("+written by the bridge")},
		{"read_file", `{"path":` + q(p("b.txt")) + `}`, wantText("written by the bridge")},
		{"read_multiple_files", `{"paths":[` + q(p("a.txt")) + `,` + q(p("b.txt")) + `]}`, wantContains("written by the bridge")},
		{"create_directory", `{"path":` + q(p("sub")) + `}`, wantContains("Successfully created")},
		{"move_file", `{"source":` + q(p("b.txt")) + `,"destination":` + q(p("sub/c.txt")) + `}`, wantContains("Successfully moved")},
		{"list_directory", `{"path":` + q(dir) + `}`, wantContains("[DIR] sub")},
		{"list_directory_with_sizes", `{"path":` + q(dir) + `}`, wantContains("a.txt")},
		{"directory_tree", `{"path":` + q(dir) + `}`, wantContains(`"c.txt"`)},
		{"search_files", `{"path":` + q(dir) + `,"pattern":"**/c.txt"}`, wantContains("c.txt")},
		{"get_file_info", `{"path":` + q(p("a.txt")) + `}`, wantContains("size: 11")},
		{"read_media_file", `{"path":` + q(p("a.txt")) + `}`, wantContains("")},
	}
	for _, s := range steps {
		t.Run(s.tool, func(t *testing.T) {
			res := e.call(ctx, mcp.PublicToolName("fs", s.tool), s.args)
			if res.IsError {
				t.Fatalf("%s failed: %+v", s.tool, res.Error)
			}
			s.check(t, res)
		})
	}
	if b, err := os.ReadFile(p("sub/c.txt")); err != nil || string(b) != "written by the bridge" {
		t.Errorf("sub/c.txt = %q, %v", b, err)
	}
	// Errors are mapped: a path outside the allowed directory is the server's isError.
	res := e.call(ctx, "mcp__fs__read_text_file", `{"path":"/etc/hostname"}`)
	if !res.IsError || res.Error.Info != nil || !strings.Contains(res.Error.Message, "Access denied") {
		t.Errorf("outside read: %+v", res)
	}
}

func wantText(want string) func(*testing.T, *tool.Result) {
	return func(t *testing.T, res *tool.Result) {
		t.Helper()
		if got := text(t, res); got != want {
			t.Errorf("content = %q, want %q", got, want)
		}
	}
}

func wantContains(want string) func(*testing.T, *tool.Result) {
	return func(t *testing.T, res *tool.Result) {
		t.Helper()
		if got := text(t, res); !strings.Contains(got, want) {
			t.Errorf("content = %q, want it to contain %q", got, want)
		}
	}
}
