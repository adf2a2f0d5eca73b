// Package telemetry sends dsh's traces to OpenTelemetry: a span per tool call, per agent
// turn and per model request, named and attributed after the OpenTelemetry semantic
// conventions for generative AI.
//
// Setup builds the tracer provider from the standard OTEL_* environment variables
// (OTEL_TRACES_EXPORTER otlp, console or none; the OTLP protocol, endpoint and headers;
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES). With no exporter configured it returns a
// disabled Tracing whose hooks are nil, so a call, a turn and a model request pay nothing
// for tracing.
//
// The spans:
//
//   - invoke_agent dsh: one agent turn (Tracing.TurnTracer), with the model, the session id
//     as gen_ai.conversation.id, the turn's summed token usage and how it ended.
//   - chat {model}: one model request (Tracing.Model), a child of its turn, with the request
//     parameters, the finish reason and the token usage.
//   - execute_tool {tool}: one tool call from Prepare to Finalize (Tracing.CallObserver), a
//     child of the turn or, for a Code Mode sub-call, of its run_code call. The pre-execute
//     hooks', the approver's, the guards' and the post-execute hooks' decisions are events
//     on it; a failure sets error.type to the dsh error code and the span status to Error.
//
// Tool arguments and results (gen_ai.tool.call.arguments, gen_ai.tool.call.result) and
// failure messages are recorded only when the user opts in with
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (or DSH_OTEL_RECORD_CONTENT=1):
// they can hold anything a file or a command printed.
package telemetry
