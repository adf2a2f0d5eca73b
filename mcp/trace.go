package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
)

// Trace context travels in a request's _meta as the W3C Trace Context headers
// ("traceparent", "tracestate"), so that the spans an MCP server records join the trace of
// the call that asked. Only the span context crosses: a context without a valid span
// carries nothing, and what arrives is used only as a parent.

// traceMeta returns the _meta carrying ctx's span context, or nil when ctx has none.
func traceMeta(ctx context.Context) sdk.Meta {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	if len(c) == 0 {
		return nil
	}
	meta := make(sdk.Meta, len(c))
	for k, v := range c {
		meta[k] = v
	}
	return meta
}

// withTraceMeta returns ctx with the remote span context a request's _meta carries as its
// parent, or ctx itself when _meta carries none (or an invalid one).
func withTraceMeta(ctx context.Context, meta map[string]any) context.Context {
	tp, ok := meta["traceparent"].(string)
	if !ok {
		return ctx
	}
	c := propagation.MapCarrier{"traceparent": tp}
	if ts, ok := meta["tracestate"].(string); ok {
		c["tracestate"] = ts
	}
	return propagation.TraceContext{}.Extract(ctx, c)
}
