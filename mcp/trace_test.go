package mcp

import (
	"context"
	"testing"

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
