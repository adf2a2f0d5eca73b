package telemetry

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The environment variables Setup reads itself; the exporters read their own (endpoint,
// headers, timeout, TLS, compression), as the OpenTelemetry specification defines them.
const (
	EnvTracesExporter     = "OTEL_TRACES_EXPORTER"
	EnvProtocol           = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol     = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvSDKDisabled        = "OTEL_SDK_DISABLED"
	EnvCaptureContent     = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
	EnvRecordContent      = "DSH_OTEL_RECORD_CONTENT"
	DefaultServiceName    = "dsh"
	instrumentationScope  = "github.com/dsh-go/dsh/telemetry"
	protocolHTTPProtobuf  = "http/protobuf"
	protocolGRPC          = "grpc"
	exporterOTLP          = "otlp"
	exporterConsole       = "console"
	exporterNone          = "none"
	defaultTracesExporter = exporterNone
)

// Options configures Setup.
type Options struct {
	// Getenv reads the environment variables Setup itself interprets; nil means os.Getenv.
	// The exporters and the resource detector read the process environment directly.
	Getenv func(string) string
	// Console is where the console exporter writes; nil means os.Stderr, so that spans
	// never mix with what a command prints on standard output.
	Console io.Writer
}

// Tracing is dsh's tracing: a tracer and whether content is recorded. A disabled Tracing
// (the zero value, or what Setup returns with no exporter) installs nothing.
type Tracing struct {
	tracer  trace.Tracer // nil when disabled
	content bool
	// shutdown flushes and stops the provider Setup built; nil otherwise.
	shutdown func(context.Context) error
}

// Settings are the choices New takes besides the provider.
type Settings struct {
	// RecordContent records tool arguments and results and failure messages.
	RecordContent bool
}

// New returns tracing over tp, for a program that configures its own provider (and tests,
// with an in-memory exporter). Shutting tp down stays the caller's job.
func New(tp trace.TracerProvider, s Settings) *Tracing {
	return &Tracing{tracer: tp.Tracer(instrumentationScope), content: s.RecordContent}
}

// Setup builds tracing from the OTEL_* environment variables. OTEL_TRACES_EXPORTER lists
// the exporters (comma-separated): "otlp" (OTLP over HTTP/protobuf, or gRPC when
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL is "grpc"), "console"
// (JSON lines to Options.Console) or "none", the default. OTEL_SDK_DISABLED=true disables
// tracing whatever the exporter. The service name defaults to "dsh" and yields to
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. An unknown exporter, protocol or
// content switch is an error naming the variable and its value. Call Shutdown before the
// program exits: it flushes the spans still queued.
func Setup(ctx context.Context, opts Options) (*Tracing, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	content, err := recordContent(getenv)
	if err != nil {
		return nil, err
	}
	if v := strings.TrimSpace(getenv(EnvSDKDisabled)); strings.EqualFold(v, "true") {
		return &Tracing{}, nil
	}
	names, err := exporterNames(getenv(EnvTracesExporter))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return &Tracing{}, nil
	}
	var exporters []sdktrace.SpanExporter
	closeAll := func() {
		for _, e := range exporters {
			_ = e.Shutdown(ctx)
		}
	}
	for _, name := range names {
		var exp sdktrace.SpanExporter
		switch name {
		case exporterOTLP:
			exp, err = otlpExporter(ctx, getenv)
		case exporterConsole:
			w := opts.Console
			if w == nil {
				w = os.Stderr
			}
			exp, err = stdouttrace.New(stdouttrace.WithWriter(w))
		}
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("telemetry: %s exporter: %w", name, err)
		}
		exporters = append(exporters, exp)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("telemetry: resource from %s/%s: %w", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", err)
	}
	popts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, e := range exporters {
		popts = append(popts, sdktrace.WithBatcher(e))
	}
	tp := sdktrace.NewTracerProvider(popts...)
	t := New(tp, Settings{RecordContent: content})
	t.shutdown = tp.Shutdown
	return t, nil
}

// exporterNames parses OTEL_TRACES_EXPORTER: the exporters to build, none for "none".
func exporterNames(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		v = defaultTracesExporter
	}
	var names []string
	seen := map[string]bool{}
	none := false
	for _, part := range strings.Split(v, ",") {
		name := strings.ToLower(strings.TrimSpace(part))
		switch name {
		case exporterOTLP, exporterConsole:
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		case exporterNone:
			none = true
		default:
			return nil, fmt.Errorf("telemetry: %s=%q: unknown exporter %q (want otlp, console or none)", EnvTracesExporter, v, name)
		}
	}
	if none && len(names) > 0 {
		return nil, fmt.Errorf("telemetry: %s=%q: \"none\" cannot be combined with other exporters", EnvTracesExporter, v)
	}
	return names, nil
}

// otlpExporter builds the OTLP exporter of the configured protocol; the exporter reads its
// endpoint, headers, timeout and TLS settings from the environment.
func otlpExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	name, proto := EnvTracesProtocol, strings.TrimSpace(getenv(EnvTracesProtocol))
	if proto == "" {
		name, proto = EnvProtocol, strings.TrimSpace(getenv(EnvProtocol))
	}
	switch proto {
	case "", protocolHTTPProtobuf:
		return otlptracehttp.New(ctx)
	case protocolGRPC:
		return otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("%s=%q: unsupported protocol (want http/protobuf or grpc)", name, proto)
	}
}

// recordContent reads the content opt-in: either variable set to true (or 1) opts in.
func recordContent(getenv func(string) string) (bool, error) {
	on := false
	for _, name := range []string{EnvCaptureContent, EnvRecordContent} {
		switch v := strings.ToLower(strings.TrimSpace(getenv(name))); v {
		case "":
		case "true", "1":
			on = true
		case "false", "0":
		default:
			return false, fmt.Errorf("telemetry: %s=%q: want true or false", name, getenv(name))
		}
	}
	return on, nil
}

// Enabled reports whether spans are recorded.
func (t *Tracing) Enabled() bool { return t != nil && t.tracer != nil }

// Shutdown flushes the spans still queued and stops the exporters Setup built, within
// ctx. It does nothing for a disabled Tracing or one made by New.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	if err := t.shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: flush traces: %w", err)
	}
	return nil
}
