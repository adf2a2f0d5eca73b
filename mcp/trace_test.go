package mcp

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
)

// TestTraceMeta: a valid traceparent in _meta becomes the remote parent, anything else is
// ignored; and a context's span context is written back as the same traceparent.
func TestTraceMeta(t *testing.T) {
	const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	cases := []struct {
		name  string
		meta  map[string]any
		valid bool
	}{
		{"valid", map[string]any{"traceparent": valid}, true},
		{"valid with state", map[string]any{"traceparent": valid, "tracestate": "a=1,b=2"}, true},
		{"unsampled", map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}, true},
		{"nil meta", nil, false},
		{"no traceparent", map[string]any{"progressToken": 1}, false},
		{"not a string", map[string]any{"traceparent": []any{valid}}, false},
		{"zero trace id", map[string]any{"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}, false},
		{"bad version", map[string]any{"traceparent": "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, false},
		{"short", map[string]any{"traceparent": "00-4bf92f35-00f067aa-01"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := withTraceMeta(t.Context(), tc.meta)
			sc := trace.SpanContextFromContext(ctx)
			if sc.IsValid() != tc.valid {
				t.Fatalf("span context valid %v, want %v (%v)", sc.IsValid(), tc.valid, sc)
			}
			meta := traceMeta(ctx)
			if !tc.valid {
				if meta != nil {
					t.Errorf("an invalid parent was passed on: %v", meta)
				}
				return
			}
			if !sc.IsRemote() {
				t.Error("the extracted parent is not remote")
			}
			if meta["traceparent"] != tc.meta["traceparent"] {
				t.Errorf("re-injected traceparent %v, want %v", meta["traceparent"], tc.meta["traceparent"])
			}
			if ts, ok := tc.meta["tracestate"]; ok && meta["tracestate"] != ts {
				t.Errorf("re-injected tracestate %v, want %v", meta["tracestate"], ts)
			}
		})
	}
	if traceMeta(context.Background()) != nil {
		t.Error("a context without a span wrote _meta")
	}
}

// FuzzTraceMeta feeds arbitrary _meta trace fields from an MCP client: the server never
// fails on them, and what it accepts as a parent round-trips unchanged.
func FuzzTraceMeta(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=1")
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "")
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09", "a=1,b=2,,c")
	f.Add("", "=")
	f.Fuzz(func(t *testing.T, parent, state string) {
		ctx := withTraceMeta(context.Background(), map[string]any{"traceparent": parent, "tracestate": state})
		sc := trace.SpanContextFromContext(ctx)
		meta := traceMeta(ctx)
		if !sc.IsValid() {
			if meta != nil {
				t.Fatalf("invalid parent %q passed on as %v", parent, meta)
			}
			return
		}
		again := trace.SpanContextFromContext(withTraceMeta(context.Background(), meta))
		if again.TraceID() != sc.TraceID() || again.SpanID() != sc.SpanID() || again.TraceFlags() != sc.TraceFlags() || again.TraceState().String() != sc.TraceState().String() {
			t.Fatalf("%q/%q: %v did not round-trip: %v", parent, state, sc, again)
		}
	})
}

// TestTraceMiddleware: the host's sending middleware puts a traced context's span in the
// _meta of any message with params (here tools/list), keeps a traceparent the message
// names itself, copies rather than changes the caller's _meta, and leaves messages
// without params and untraced contexts alone; the server's receiving middleware gives the
// handler of any message (here tools/list) the remote parent its _meta names.
func TestTraceMiddleware(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	traced := withTraceMeta(t.Context(), map[string]any{"traceparent": parent})
	send := func(ctx context.Context, p *sdk.ListToolsParams) (sent sdk.Params) {
		h := sendTrace(func(_ context.Context, _ string, req sdk.Request) (sdk.Result, error) {
			sent = paramsOf(req)
			return nil, nil
		})
		if _, err := h(ctx, "tools/list", &sdk.ClientRequest[*sdk.ListToolsParams]{Params: p}); err != nil {
			t.Fatal(err)
		}
		return sent
	}
	callers := map[string]any{"progressToken": 7.0}
	cases := []struct {
		name   string
		ctx    context.Context
		params *sdk.ListToolsParams
		want   any // the traceparent sent; nil: none
	}{
		{"traced", traced, &sdk.ListToolsParams{Cursor: "c2"}, parent},
		{"traced, the caller's _meta", traced, &sdk.ListToolsParams{Meta: callers}, parent},
		{"the message's own traceparent", traced, &sdk.ListToolsParams{Meta: sdk.Meta{"traceparent": own}}, own},
		{"untraced", t.Context(), &sdk.ListToolsParams{Cursor: "c2"}, nil},
		{"no params", traced, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sent := send(tc.ctx, tc.params)
			if tc.params == nil {
				if sent != nil {
					t.Fatalf("a message without params was sent with %v", sent)
				}
				return
			}
			if got := sent.GetMeta()["traceparent"]; got != tc.want {
				t.Errorf("traceparent %v, want %v", got, tc.want)
			}
		})
	}
	if _, changed := callers["traceparent"]; changed || len(callers) != 1 {
		t.Errorf("the caller's _meta map was changed: %v", callers)
	}

	receive := func(req sdk.Request) trace.SpanContext {
		var got trace.SpanContext
		h := receiveTrace(func(ctx context.Context, _ string, _ sdk.Request) (sdk.Result, error) {
			got = trace.SpanContextFromContext(ctx)
			return nil, nil
		})
		if _, err := h(t.Context(), "tools/list", req); err != nil {
			t.Fatal(err)
		}
		return got
	}
	sc := receive(&sdk.ListToolsRequest{Params: &sdk.ListToolsParams{Meta: sdk.Meta{"traceparent": parent}}})
	if !sc.IsValid() || !sc.IsRemote() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("tools/list with a traceparent: the handler's parent is %v", sc)
	}
	if sc := receive(&sdk.ListToolsRequest{}); sc.IsValid() {
		t.Errorf("tools/list without params: the handler got a parent %v", sc)
	}
	if sc := receive(&sdk.ListToolsRequest{Params: &sdk.ListToolsParams{Meta: sdk.Meta{"traceparent": "00-bad"}}}); sc.IsValid() {
		t.Errorf("a malformed traceparent became a parent: %v", sc)
	}
}
