package telemetry_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dsh-go/dsh/telemetry"
	"github.com/dsh-go/dsh/tool"
)

// ExampleNew traces a registry's calls with a tracer provider the program configured
// itself (here one recording in memory).
func ExampleNew() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	tr := telemetry.New(tp, telemetry.Settings{})

	reg, _ := tool.NewRegistry(tool.Config{})
	reg.Register(tool.Must(tool.New("add", "Adds two numbers.", func(_ context.Context, _ *tool.Call, in struct{ A, B int }) (int, error) {
		return in.A + in.B, nil
	})))
	reg.ObserveCalls(tr.CallObserver())
	reg.Execute(context.Background(), tool.Input{CallID: "call_1", Name: "add", Args: tool.ParseArguments(`{"A":2,"B":40}`)})

	for _, s := range exp.GetSpans() {
		fmt.Println(s.Name)
		for _, a := range s.Attributes {
			fmt.Printf("  %s=%s\n", a.Key, a.Value.Emit())
		}
	}
	// Output:
	// execute_tool add
	//   gen_ai.operation.name=execute_tool
	//   gen_ai.tool.name=add
	//   gen_ai.tool.call.id=call_1
	//   gen_ai.tool.type=function
}

// ExampleSetup builds tracing from the OTEL_* environment, as dsh does at start, and
// flushes it at exit. With OTEL_TRACES_EXPORTER unset tracing is off and costs nothing.
func ExampleSetup() {
	ctx := context.Background()
	tr, err := telemetry.Setup(ctx, telemetry.Options{Getenv: func(string) string { return "" }})
	if err != nil {
		panic(err)
	}
	defer tr.Shutdown(ctx)
	fmt.Println("enabled:", tr.Enabled())
	// Output:
	// enabled: false
}
