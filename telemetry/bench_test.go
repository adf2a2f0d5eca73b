package telemetry_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/telemetry"
	"github.com/dsh-go/dsh/tool"
)

// BenchmarkTracedCall measures one tool call through the pipeline with tracing off (no
// observer installed, what OTEL_TRACES_EXPORTER=none gives), and on with the SDK recording
// each span to a discarding exporter.
func BenchmarkTracedCall(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			reg, err := tool.NewRegistry(tool.Config{})
			if err != nil {
				b.Fatal(err)
			}
			reg.Register(tool.Must(tool.New("greet", "Greets someone.", func(_ context.Context, _ *tool.Call, in greetIn) (greetOut, error) {
				return greetOut{Greeting: "Hello, " + in.Name}, nil
			})))
			if on {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
				defer tp.Shutdown(context.Background())
				reg.ObserveCalls(telemetry.New(tp, telemetry.Settings{}).CallObserver())
			}
			args, _ := jsonv.ParseString(`{"name":"Ada"}`)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if res := reg.Execute(ctx, tool.Input{CallID: "c1", Name: "greet", Args: args}); res.IsError {
					b.Fatal(res.Error.Message)
				}
			}
		})
	}
}
