package main

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/internal/otlptest"
)

// otelEnv is a clean environment for the built binary that sends its traces to endpoint.
func otelEnv(home, endpoint string, extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "DSH_HOME=" + home, "TERM=dumb",
		"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint}, extra...)
}

// TestTracesDemoBinary runs the demo through the built binary with OTEL_TRACES_EXPORTER=otlp
// against a collector stand-in: the turn, its model requests and its tool calls arrive as
// one trace, Code Mode sub-calls under their run_code span, flushed before dsh exits.
func TestTracesDemoBinary(t *testing.T) {
	bin := builtDsh(t)
	col := otlptest.New()
	srv := httptest.NewServer(col)
	defer srv.Close()
	home := filepath.Join(t.TempDir(), "home")
	cmd := exec.CommandContext(t.Context(), bin, "demo")
	cmd.Dir = t.TempDir()
	cmd.Env = otelEnv(home, srv.URL, "OTEL_SERVICE_NAME=dsh-e2e")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dsh demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	// dsh flushed at exit: everything is already there.
	spans := col.Spans()
	byID := map[string]otlptest.Span{}
	count := map[string]int{}
	var turn otlptest.Span
	for _, s := range spans {
		byID[s.SpanID] = s
		count[s.Attributes["gen_ai.operation.name"]]++
		if s.Name == "invoke_agent dsh" {
			turn = s
		}
		if s.Resource["service.name"] != "dsh-e2e" {
			t.Errorf("span %s has resource %v, want service.name dsh-e2e", s.Name, s.Resource)
		}
	}
	if turn.SpanID == "" || count["chat"] < 2 || count["execute_tool"] < 3 {
		t.Fatalf("want a turn, model requests and tool calls; got %v from %d spans", count, len(spans))
	}
	nested := 0
	for _, s := range spans {
		if s.TraceID != turn.TraceID {
			t.Errorf("span %s is in trace %s, not the turn's %s", s.Name, s.TraceID, turn.TraceID)
		}
		if s.Name == "invoke_agent dsh" {
			continue
		}
		p, ok := byID[s.ParentID]
		if !ok {
			t.Errorf("span %s has parent %q, which was not received", s.Name, s.ParentID)
			continue
		}
		if s.Attributes["dsh.tool.root_call.id"] != "" {
			nested++
			if p.Name != "execute_tool run_code" {
				t.Errorf("Code Mode sub-call %s is under %s, not its run_code span", s.Name, p.Name)
			}
		} else if p.SpanID != turn.SpanID {
			t.Errorf("span %s is under %s, not the turn", s.Name, p.Name)
		}
	}
	if nested == 0 {
		t.Error("no Code Mode sub-call span arrived")
	}
	if strings.Contains(stdout.String()+stderr.String(), "telemetry") {
		t.Errorf("dsh reported a telemetry problem:\n%s", stderr.String())
	}
}

// TestTracesMCPServeBinary: `dsh mcp serve`, run as the built binary with tracing on, joins
// the trace a client sends in a call's _meta.
func TestTracesMCPServeBinary(t *testing.T) {
	bin := builtDsh(t)
	col := otlptest.New()
	srv := httptest.NewServer(col)
	defer srv.Close()
	home, ws := filepath.Join(t.TempDir(), "home"), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp", "serve")
	cmd.Dir = ws
	cmd.Env = otelEnv(home, srv.URL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to dsh mcp serve: %v\n%s", err, stderr.String())
	}
	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{
		Meta: sdk.Meta{"traceparent": "00-" + traceID + "-" + parentID + "-01"},
		Name: "read", Arguments: map[string]any{"file_path": "a.txt"},
	})
	if err != nil || res.IsError {
		cs.Close()
		t.Fatalf("tools/call read: %v %+v\n%s", err, res, stderr.String())
	}
	// Closing the session ends the server, which flushes its spans before it exits.
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	spans, err := col.Wait(t.Context(), 1)
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, stderr.String())
	}
	s := spans[0]
	if s.Name != "execute_tool read" || s.TraceID != traceID || s.ParentID != parentID {
		t.Errorf("server span %s in trace %s under %s, want execute_tool read in %s under %s", s.Name, s.TraceID, s.ParentID, traceID, parentID)
	}
}

// TestTracesConsole: the console exporter writes spans to standard error, never into what
// a command prints on standard output.
func TestTracesConsole(t *testing.T) {
	bin := builtDsh(t)
	home, ws := filepath.Join(t.TempDir(), "home"), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "call", "read", `{"file_path":"a.txt"}`)
	cmd.Dir = ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "DSH_HOME=" + home, "TERM=dumb", "OTEL_TRACES_EXPORTER=console"}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dsh call: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), `"Name":"execute_tool read"`) {
		t.Errorf("standard error lacks the span:\n%s", stderr.String())
	}
	if strings.Contains(stdout.String(), "SpanContext") || !strings.Contains(stdout.String(), "hello") {
		t.Errorf("standard output is not the call's output alone:\n%s", stdout.String())
	}
}

// TestTracesBadConfig: an OTEL_* value dsh cannot honour stops it with a usage error that
// names the variable.
func TestTracesBadConfig(t *testing.T) {
	bin := builtDsh(t)
	home := filepath.Join(t.TempDir(), "home")
	cmd := exec.CommandContext(context.Background(), bin, "tools")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "DSH_HOME=" + home, "OTEL_TRACES_EXPORTER=jaeger"}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("dsh tools with OTEL_TRACES_EXPORTER=jaeger: %v, want exit status 2\n%s", err, out)
	}
	if !strings.Contains(string(out), `OTEL_TRACES_EXPORTER="jaeger": unknown exporter "jaeger"`) {
		t.Errorf("the error does not name the variable:\n%s", out)
	}
}
