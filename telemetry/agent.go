package telemetry

import (
	"context"
	"errors"
	"iter"
	"net/url"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/openai"
	"github.com/dsh-go/dsh/session"
)

// AgentName is the gen_ai.agent.name of dsh's agent turns.
const AgentName = "dsh"

// TurnTracer returns the agent loop's tracer, which opens an invoke_agent span per turn;
// conversationID (the session id, "" for none) becomes gen_ai.conversation.id. It returns
// nil when tracing is disabled.
func (t *Tracing) TurnTracer(conversationID string) agent.TurnTracer {
	if !t.Enabled() {
		return nil
	}
	return turnTracer{t: t, conversation: conversationID}
}

type turnTracer struct {
	t            *Tracing
	conversation string
}

// usageKey marks the turn's usage total in a context, for the chat spans under it.
type usageKey struct{}

// turnUsage sums the usage of a turn's model requests.
type turnUsage struct {
	mu                       sync.Mutex
	input, output, cacheRead int
	seen                     bool
}

func (u *turnUsage) add(x llm.Usage) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.input += x.InputTokens + x.CacheReadTokens
	u.output += x.OutputTokens
	u.cacheRead += x.CacheReadTokens
	u.seen = true
}

// StartTurn opens the turn's span under the span of ctx.
func (tt turnTracer) StartTurn(ctx context.Context, info agent.TurnInfo) (context.Context, func(agent.TurnResult, error)) {
	attrs := []attribute.KeyValue{
		attribute.String(AttrOperationName, OperationInvokeAgent),
		attribute.String(AttrAgentName, AgentName),
		attribute.String(AttrProviderName, info.Provider),
		attribute.String(AttrRequestModel, info.Model),
		attribute.Int(AttrTurn, info.Turn),
	}
	if tt.conversation != "" {
		attrs = append(attrs, attribute.String(AttrConversationID, tt.conversation))
	}
	ctx, span := tt.t.tracer.Start(ctx, OperationInvokeAgent+" "+AgentName,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	u := &turnUsage{}
	ctx = context.WithValue(ctx, usageKey{}, u)
	return ctx, func(res agent.TurnResult, err error) {
		u.mu.Lock()
		if u.seen {
			span.SetAttributes(
				attribute.Int(AttrInputTokens, u.input),
				attribute.Int(AttrOutputTokens, u.output),
				attribute.Int(AttrCacheReadTokens, u.cacheRead),
			)
		}
		u.mu.Unlock()
		if res.Reason.Kind != "" {
			span.SetAttributes(attribute.String(AttrTurnEnd, res.Reason.Kind))
		}
		if err != nil || res.Reason.Kind == session.EndError || res.Reason.Kind == session.EndAborted {
			span.SetAttributes(attribute.String(AttrErrorType, turnErrorType(res.Reason, err)))
			desc := turnErrorType(res.Reason, err)
			if tt.t.content && err != nil {
				desc = err.Error()
			}
			span.SetStatus(codes.Error, desc)
		}
		span.End()
	}
}

// turnErrorType is the error.type of a failed or aborted turn: the failure's code, or the
// end reason's kind.
func turnErrorType(r session.EndReason, err error) string {
	if r.Error != nil && r.Error.Code != "" {
		return r.Error.Code
	}
	if r.Kind != "" {
		return r.Kind
	}
	return ErrorOther
}

// Model returns m with a chat span around each model request; m itself when tracing is
// disabled.
func (t *Tracing) Model(m llm.Model) llm.Model {
	if !t.Enabled() || m == nil {
		return m
	}
	return &tracedModel{Model: m, t: t}
}

// tracedModel opens a chat span per Stream.
type tracedModel struct {
	llm.Model
	t *Tracing
}

// Provider names the provider as the semantic conventions do (gen_ai.provider.name):
// "openai" for an OpenAI-compatible adapter pointed at api.openai.com, otherwise the
// wrapped model's own name for it ("deepseek" for DeepSeek's API).
func (m *tracedModel) Provider() string { return providerName(m.Model) }

// providerName is the gen_ai.provider.name of m.
func providerName(m llm.Model) string {
	p := m.Provider()
	if b, ok := m.(interface{ BaseURL() string }); ok && p != openai.ProviderDeepSeek {
		if u, err := url.Parse(b.BaseURL()); err == nil && u.Hostname() == "api.openai.com" {
			return "openai"
		}
	}
	return p
}

// Stream runs the model request inside a chat span, which ends with the stream.
func (m *tracedModel) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		attrs := []attribute.KeyValue{
			attribute.String(AttrOperationName, OperationChat),
			attribute.String(AttrProviderName, providerName(m.Model)),
			attribute.String(AttrRequestModel, m.Name()),
		}
		if req.MaxTokens > 0 {
			attrs = append(attrs, attribute.Int(AttrRequestMaxTokens, req.MaxTokens))
		}
		if req.Temperature != nil {
			attrs = append(attrs, attribute.Float64(AttrRequestTemp, *req.Temperature))
		}
		sctx, span := m.t.tracer.Start(ctx, OperationChat+" "+m.Name(),
			trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
		finished := false
		defer func() {
			if !finished {
				// The caller stopped reading before the stream ended.
				span.SetAttributes(attribute.String(AttrErrorType, llm.CodeAborted))
				span.SetStatus(codes.Error, llm.CodeAborted)
			}
			span.End()
		}()
		for ev, err := range m.Model.Stream(sctx, req) {
			switch {
			case err != nil:
				finished = true
				typ := llmErrorType(ctx, err)
				span.SetAttributes(attribute.String(AttrErrorType, typ))
				desc := typ
				if m.t.content {
					desc = err.Error()
				}
				span.SetStatus(codes.Error, desc)
			case ev.Type == llm.EventFinish && ev.Response != nil:
				finished = true
				r := ev.Response
				span.SetAttributes(
					attribute.StringSlice(AttrFinishReasons, []string{finishReason(r.FinishReason)}),
					attribute.Int(AttrInputTokens, r.Usage.InputTokens+r.Usage.CacheReadTokens),
					attribute.Int(AttrOutputTokens, r.Usage.OutputTokens),
					attribute.Int(AttrCacheReadTokens, r.Usage.CacheReadTokens),
				)
				if r.Model != "" {
					span.SetAttributes(attribute.String(AttrResponseModel, r.Model))
				}
				if u, ok := ctx.Value(usageKey{}).(*turnUsage); ok {
					u.add(r.Usage)
				}
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// llmErrorType is the error.type of a failed model request: the llm error code when it
// has one, ABORTED when the caller cancelled.
func llmErrorType(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return llm.CodeAborted
	}
	var e *llm.Error
	if errors.As(err, &e) && e.Code != "" {
		return e.Code
	}
	return ErrorOther
}

// finishReason names a finish reason as OpenAI-style APIs do, which is what the semantic
// conventions' gen_ai.response.finish_reasons examples use: stop, tool_calls, length.
func finishReason(r llm.FinishReason) string {
	switch r {
	case llm.FinishToolCalls:
		return "tool_calls"
	case llm.FinishMaxTokens:
		return "length"
	}
	return string(r)
}
