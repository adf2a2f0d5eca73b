package telemetry_test

import (
	"context"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/tool"
)

// serveDsh serves reg over MCP in process: every connection the host makes reaches a dsh
// mcp.Server, as `dsh mcp serve` would. The servers stop when the host disconnects.
func serveDsh(t *testing.T, reg *tool.Registry) func(string, mcp.ServerConfig) sdk.Transport {
	t.Helper()
	srv := mcp.NewServer(reg, mcp.ServerOptions{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		srv.Close()
		wg.Wait()
	})
	return func(string, mcp.ServerConfig) sdk.Transport {
		client, server := sdk.NewInMemoryTransports()
		wg.Go(func() { _ = srv.ServeTransport(context.Background(), server) })
		return client
	}
}

// TestMCPTraceParent: a call of a mounted dsh server's tool carries the caller's span in
// its _meta, and the server's execute_tool span is its child in the same trace.
func TestMCPTraceParent(t *testing.T) {
	r := newRecorder(t, false)
	serverReg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	serverReg.ObserveCalls(r.tr.CallObserver())
	serverReg.Register(greetTool(t))

	clientReg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	clientReg.ObserveCalls(r.tr.CallObserver())
	host := mcp.NewHost(clientReg.Global(), mcp.Options{Transport: serveDsh(t, serverReg)})
	defer host.Close()
	if _, err := host.Mount(t.Context(), "dsh", mcp.ServerConfig{Command: "dsh"}); err != nil {
		t.Fatal(err)
	}
	res := clientReg.Execute(t.Context(), tool.Input{CallID: "call_1", Name: "mcp__dsh__greet", Args: tool.ParseArguments(`{"name":"Ada"}`)})
	if res.IsError {
		t.Fatalf("the MCP call failed: %s", res.Error.Message)
	}
	spans := r.rec.Ended()
	var client, server sdktrace.ReadOnlySpan
	for _, s := range spans {
		switch s.Name() {
		case "execute_tool mcp__dsh__greet":
			client = s
		case "execute_tool greet":
			server = s
		}
	}
	if client == nil || server == nil {
		t.Fatalf("want a client and a server span, got:\n%s", tree(spans))
	}
	if server.Parent().SpanID() != client.SpanContext().SpanID() || server.SpanContext().TraceID() != client.SpanContext().TraceID() {
		t.Errorf("the server span's parent is %v, want the client span %v", server.Parent(), client.SpanContext())
	}
	if !server.Parent().IsRemote() {
		t.Error("the server span's parent is not marked remote")
	}
	golden(t, "mcp_host_to_server", tree(spans))
}

// TestMCPServerJoinsCallerTrace: a plain MCP client's traceparent in _meta becomes the
// parent of the dsh server's span; a malformed one is ignored and starts a new trace.
func TestMCPServerJoinsCallerTrace(t *testing.T) {
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	cases := []struct {
		name      string
		meta      sdk.Meta
		wantTrace string // "" means a fresh trace with no parent
	}{
		{name: "traceparent", meta: sdk.Meta{"traceparent": "00-" + traceID + "-" + spanID + "-01", "tracestate": "vendor=1"}, wantTrace: traceID},
		{name: "malformed", meta: sdk.Meta{"traceparent": "00-not-a-trace-01"}},
		{name: "not a string", meta: sdk.Meta{"traceparent": 42}},
		{name: "absent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(t, false)
			reg, err := tool.NewRegistry(tool.Config{})
			if err != nil {
				t.Fatal(err)
			}
			reg.ObserveCalls(r.tr.CallObserver())
			reg.Register(greetTool(t))
			cs := connect(t, reg)
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Meta: tc.meta, Name: "greet", Arguments: map[string]any{"name": "Ada"}})
			if err != nil || res.IsError {
				t.Fatalf("tools/call: %v %+v", err, res)
			}
			spans := r.rec.Ended()
			if len(spans) != 1 {
				t.Fatalf("want one span, got:\n%s", tree(spans))
			}
			s := spans[0]
			if tc.wantTrace == "" {
				if s.Parent().IsValid() {
					t.Errorf("the span has parent %v, want none", s.Parent())
				}
				return
			}
			if got := s.SpanContext().TraceID().String(); got != tc.wantTrace {
				t.Errorf("trace id %s, want the caller's %s", got, tc.wantTrace)
			}
			if got := s.Parent().SpanID().String(); got != spanID || !s.Parent().IsRemote() {
				t.Errorf("parent %s (remote %v), want the caller's remote span %s", got, s.Parent().IsRemote(), spanID)
			}
			if got := s.SpanContext().TraceState().String(); got != "vendor=1" {
				t.Errorf("trace state %q, want the caller's vendor=1", got)
			}
		})
	}
}

// connect serves reg over MCP in process and returns a plain go-sdk client session.
func connect(t *testing.T, reg *tool.Registry) *sdk.ClientSession {
	t.Helper()
	srv := mcp.NewServer(reg, mcp.ServerOptions{})
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.ServeTransport(ctx, st) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "client"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		cancel()
		<-served
		srv.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-served
		srv.Close()
	})
	return cs
}

// TestMCPHostSendsTraceParent: the host puts the calling span's traceparent in the
// request's _meta, and nothing when the call is not traced.
func TestMCPHostSendsTraceParent(t *testing.T) {
	for _, traced := range []bool{true, false} {
		name := map[bool]string{true: "traced", false: "untraced"}[traced]
		t.Run(name, func(t *testing.T) {
			got := make(chan sdk.Meta, 1)
			srv := sdk.NewServer(&sdk.Implementation{Name: "probe"}, nil)
			sdk.AddTool(srv, &sdk.Tool{Name: "probe", Description: "Records _meta."}, func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
				got <- req.Params.Meta
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
			})
			var wg sync.WaitGroup
			defer wg.Wait()
			r := newRecorder(t, false)
			reg, err := tool.NewRegistry(tool.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if traced {
				reg.ObserveCalls(r.tr.CallObserver())
			}
			host := mcp.NewHost(reg.Global(), mcp.Options{Transport: func(string, mcp.ServerConfig) sdk.Transport {
				client, server := sdk.NewInMemoryTransports()
				wg.Go(func() { _ = srv.Run(context.Background(), server) })
				return client
			}})
			defer host.Close()
			if _, err := host.Mount(t.Context(), "probe", mcp.ServerConfig{Command: "probe"}); err != nil {
				t.Fatal(err)
			}
			res := reg.Execute(t.Context(), tool.Input{CallID: "c1", Name: "mcp__probe__probe", Args: tool.ParseArguments(`{}`)})
			if res.IsError {
				t.Fatalf("the call failed: %s", res.Error.Message)
			}
			var meta sdk.Meta
			select {
			case meta = <-got:
			case <-t.Context().Done():
				t.Fatal("the server saw no call")
			}
			if !traced {
				if _, ok := meta["traceparent"]; ok {
					t.Errorf("an untraced call sent _meta %v", meta)
				}
				return
			}
			spans := r.rec.Ended()
			if len(spans) != 1 {
				t.Fatalf("want one span, got:\n%s", tree(spans))
			}
			sc := spans[0].SpanContext()
			want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
			if meta["traceparent"] != want {
				t.Errorf("traceparent %v, want the call span's %s", meta["traceparent"], want)
			}
			if spans[0].SpanKind() != trace.SpanKindInternal {
				t.Errorf("span kind %v", spans[0].SpanKind())
			}
		})
	}
}
