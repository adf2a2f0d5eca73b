package mcp

import (
	"context"
	"maps"
	"reflect"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
)

// Trace context travels in a request's _meta as the W3C Trace Context headers
// ("traceparent", "tracestate"), so that the spans an MCP server records join the trace of
// the call that asked. Only the span context crosses: a context without a valid span
// carries nothing, and what arrives is used only as a parent. MCP allows _meta in the
// params of every request and notification, so both directions work on every message with
// params (sendTrace on the host's client, receiveTrace on dsh's server), not only on
// tools/call; a message sent without params has no _meta to carry it.

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

// paramsOf returns a message's params, or nil when it has none (a nil interface or a nil
// pointer: the SDK sends a request without params that way).
func paramsOf(req sdk.Request) sdk.Params {
	if req == nil {
		return nil
	}
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p
}

// sendTrace is the host's sending middleware: a message sent under a traced context
// carries the context's span context in its params' _meta, unless it names a traceparent
// of its own. The params' _meta map is copied, not changed in place.
func sendTrace(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if p := paramsOf(req); p != nil {
			if meta := traceMeta(ctx); meta != nil {
				if _, own := p.GetMeta()["traceparent"]; !own {
					m := maps.Clone(p.GetMeta())
					if m == nil {
						m = map[string]any{}
					}
					maps.Copy(m, meta)
					p.SetMeta(m)
				}
			}
		}
		return next(ctx, method, req)
	}
}

// receiveTrace is dsh's server's receiving middleware: the handler of a message whose
// params' _meta carries a valid traceparent runs with it as the remote parent.
func receiveTrace(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if p := paramsOf(req); p != nil {
			ctx = withTraceMeta(ctx, p.GetMeta())
		}
		return next(ctx, method, req)
	}
}
