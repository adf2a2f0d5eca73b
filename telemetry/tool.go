package telemetry

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// Attribute and event names. The gen_ai.* and error.type names are the OpenTelemetry
// semantic conventions'; the dsh.* names are dsh's own.
const (
	AttrOperationName    = "gen_ai.operation.name"
	AttrToolName         = "gen_ai.tool.name"
	AttrToolCallID       = "gen_ai.tool.call.id"
	AttrToolType         = "gen_ai.tool.type"
	AttrToolArguments    = "gen_ai.tool.call.arguments"
	AttrToolResult       = "gen_ai.tool.call.result"
	AttrErrorType        = "error.type"
	AttrProviderName     = "gen_ai.provider.name"
	AttrRequestModel     = "gen_ai.request.model"
	AttrRequestMaxTokens = "gen_ai.request.max_tokens"
	AttrRequestTemp      = "gen_ai.request.temperature"
	AttrResponseModel    = "gen_ai.response.model"
	AttrFinishReasons    = "gen_ai.response.finish_reasons"
	AttrInputTokens      = "gen_ai.usage.input_tokens"
	AttrOutputTokens     = "gen_ai.usage.output_tokens"
	AttrCacheReadTokens  = "gen_ai.usage.cache_read.input_tokens"
	AttrAgentName        = "gen_ai.agent.name"
	AttrConversationID   = "gen_ai.conversation.id"

	AttrRootCallID = "dsh.tool.root_call.id" // the model call owning a Code Mode sub-call
	AttrTurn       = "dsh.turn"              // the turn's number in the session
	AttrTurnEnd    = "dsh.turn.end_reason"   // how the turn ended: completed, aborted, …
	AttrDecision   = "dsh.decision"          // a policy stage's decision (event attribute)
	AttrReason     = "dsh.reason"            // the reason the policy gave (event attribute)

	// Event names are "dsh." plus the stage: dsh.pre_execute, dsh.approval, dsh.guard,
	// dsh.post_execute.
	eventPrefix = "dsh."

	OperationExecuteTool = "execute_tool"
	OperationChat        = "chat"
	OperationInvokeAgent = "invoke_agent"

	// ToolTypeFunction is a tool dsh runs itself; ToolTypeExtension one an MCP server runs.
	ToolTypeFunction  = "function"
	ToolTypeExtension = "extension"

	// ErrorDenied and ErrorBlocked are the error.type of failures without a dsh error
	// code: a denial by a hook, the approver or a guard, and a post-execute block.
	ErrorDenied  = "denied"
	ErrorBlocked = "blocked"
	// ErrorOther is the semantic conventions' fallback for any other uncoded failure.
	ErrorOther = "_OTHER"
)

// mcpPrefix starts the public names of MCP tools (mcp.PublicToolName).
const mcpPrefix = "mcp__"

// CallObserver returns the tool pipeline's observer, which opens an execute_tool span per
// call; nil when tracing is disabled, so that nothing is installed.
func (t *Tracing) CallObserver() tool.CallObserver {
	if !t.Enabled() {
		return nil
	}
	return callObserver{t: t}
}

type callObserver struct{ t *Tracing }

// CallStarted opens the call's span under the span of ctx.
func (o callObserver) CallStarted(ctx context.Context, c tool.ObservedCall) (context.Context, tool.CallTrace) {
	typ := ToolTypeFunction
	if strings.HasPrefix(c.Name, mcpPrefix) {
		typ = ToolTypeExtension
	}
	attrs := []attribute.KeyValue{
		attribute.String(AttrOperationName, OperationExecuteTool),
		attribute.String(AttrToolName, c.Name),
		attribute.String(AttrToolCallID, c.CallID),
		attribute.String(AttrToolType, typ),
	}
	if c.Nested {
		attrs = append(attrs, attribute.String(AttrRootCallID, c.RootCallID))
	}
	ctx, span := o.t.tracer.Start(ctx, OperationExecuteTool+" "+c.Name,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, &callTrace{span: span, content: o.t.content}
}

// callTrace is one call's span.
type callTrace struct {
	span    trace.Span
	content bool
	failure string // the error.type of an uncoded failure, from the decisions seen
}

// Decision adds the stage's decision as an event.
func (c *callTrace) Decision(stage, decision, reason string) {
	attrs := []attribute.KeyValue{attribute.String(AttrDecision, decision)}
	if reason != "" {
		attrs = append(attrs, attribute.String(AttrReason, reason))
	}
	c.span.AddEvent(eventPrefix+stage, trace.WithAttributes(attrs...))
	switch decision {
	case "deny", "denied":
		c.failure = ErrorDenied
	case "block":
		c.failure = ErrorBlocked
	}
}

// Finished sets the outcome and ends the span.
func (c *callTrace) Finished(exec *tool.Execution, res *tool.Result) {
	if c.content {
		if args, ok := exec.Args(); ok {
			if b, err := jsonv.Marshal(args); err == nil {
				c.span.SetAttributes(attribute.String(AttrToolArguments, string(b)))
			}
		}
	}
	if !res.IsError {
		if c.content {
			if b, err := jsonv.Marshal(res.Value); err == nil {
				c.span.SetAttributes(attribute.String(AttrToolResult, string(b)))
			}
		}
		c.span.End()
		return
	}
	typ := c.failure
	if res.Error != nil && res.Error.Info != nil && res.Error.Info.Code != "" {
		typ = res.Error.Info.Code
	}
	if typ == "" {
		typ = ErrorOther
	}
	c.span.SetAttributes(attribute.String(AttrErrorType, typ))
	desc := typ
	if c.content && res.Error != nil {
		desc = res.Error.Message
	}
	c.span.SetStatus(codes.Error, desc)
	c.span.End()
}
