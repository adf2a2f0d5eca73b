package telemetry_test

import (
	"bytes"
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/dsh-go/dsh/internal/otlptest"
	"github.com/dsh-go/dsh/telemetry"
	"github.com/dsh-go/dsh/tool"
)

// cleanEnv clears every OTEL_* variable a test could inherit, then sets env.
func cleanEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, k := range []string{
		"OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE",
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
		telemetry.EnvCaptureContent, telemetry.EnvRecordContent,
	} {
		t.Setenv(k, "")
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// callGreet runs one greet call on a registry observed by tr.
func callGreet(t *testing.T, tr *telemetry.Tracing) {
	t.Helper()
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	reg.ObserveCalls(tr.CallObserver())
	reg.Register(greetTool(t))
	if res := reg.Execute(t.Context(), tool.Input{CallID: "call_1", Name: "greet", Args: tool.ParseArguments(`{"name":"Ada"}`)}); res.IsError {
		t.Fatalf("greet failed: %s", res.Error.Message)
	}
}

// TestSetupErrors: a configuration dsh cannot honour is an error naming the variable and
// its value, never a silent fallback.
func TestSetupErrors(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"unknown exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, `OTEL_TRACES_EXPORTER="zipkin": unknown exporter "zipkin"`},
		{"none with another", map[string]string{"OTEL_TRACES_EXPORTER": "none,otlp"}, `"none" cannot be combined`},
		{"json protocol", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, `OTEL_EXPORTER_OTLP_PROTOCOL="http/json": unsupported protocol`},
		{"traces protocol", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"}, `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="thrift"`},
		{"content switch", map[string]string{telemetry.EnvRecordContent: "yes"}, `DSH_OTEL_RECORD_CONTENT="yes": want true or false`},
		{"resource attributes", map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_RESOURCE_ATTRIBUTES": "team"}, `OTEL_SERVICE_NAME/OTEL_RESOURCE_ATTRIBUTES`},
		{"capture switch", map[string]string{telemetry.EnvCaptureContent: "maybe"}, `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="maybe"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cleanEnv(t, tc.env)
			tr, err := telemetry.Setup(t.Context(), telemetry.Options{})
			if err == nil {
				_ = tr.Shutdown(t.Context())
				t.Fatalf("Setup accepted %v", tc.env)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestSetupDisabled: no exporter, "none" and OTEL_SDK_DISABLED all disable tracing.
func TestSetupDisabled(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_TRACES_EXPORTER": "none"},
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"},
	} {
		cleanEnv(t, env)
		tr, err := telemetry.Setup(t.Context(), telemetry.Options{})
		if err != nil {
			t.Fatalf("%v: %v", env, err)
		}
		if tr.Enabled() {
			t.Errorf("%v: tracing is enabled", env)
		}
	}
}

// TestExportOTLPHTTP exports a call's span over OTLP/HTTP to a collector stand-in, with the
// configured headers and resource.
func TestExportOTLPHTTP(t *testing.T) {
	col := otlptest.New()
	srv := httptest.NewServer(col)
	defer srv.Close()
	cases := []struct {
		name, service string
		env           map[string]string
	}{
		{name: "default service", service: "dsh", env: map[string]string{}},
		{name: "named service", service: "review-bot", env: map[string]string{"OTEL_SERVICE_NAME": "review-bot"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["OTEL_TRACES_EXPORTER"] = "otlp"
			tc.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = srv.URL
			tc.env["OTEL_EXPORTER_OTLP_HEADERS"] = "authorization=Bearer%20token-1"
			tc.env["OTEL_RESOURCE_ATTRIBUTES"] = "deployment.environment.name=test"
			cleanEnv(t, tc.env)
			tr, err := telemetry.Setup(t.Context(), telemetry.Options{})
			if err != nil {
				t.Fatal(err)
			}
			callGreet(t, tr)
			if err := tr.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			spans, err := col.Wait(t.Context(), i+1)
			if err != nil {
				t.Fatal(err)
			}
			s := spans[i]
			if s.Name != "execute_tool greet" || s.Attributes["gen_ai.tool.call.id"] != "call_1" || s.Attributes["gen_ai.operation.name"] != "execute_tool" {
				t.Errorf("received span %+v", s)
			}
			if s.Resource["service.name"] != tc.service || s.Resource["deployment.environment.name"] != "test" {
				t.Errorf("resource %v, want service.name %s and the OTEL_RESOURCE_ATTRIBUTES", s.Resource, tc.service)
			}
			if h := col.Headers()[i]["authorization"]; h != "Bearer token-1" {
				t.Errorf("authorization header %q, want the OTEL_EXPORTER_OTLP_HEADERS value", h)
			}
		})
	}
}

// TestExportOTLPGRPC exports over OTLP/gRPC to a collector stand-in.
func TestExportOTLPGRPC(t *testing.T) {
	col := otlptest.New()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(gs, col)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	defer func() {
		gs.Stop()
		<-served
	}()
	cleanEnv(t, map[string]string{
		"OTEL_TRACES_EXPORTER":        "otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + lis.Addr().String(),
		"OTEL_EXPORTER_OTLP_HEADERS":  "x-tenant=team-a",
	})
	tr, err := telemetry.Setup(t.Context(), telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	callGreet(t, tr)
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans, err := col.Wait(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if spans[0].Name != "execute_tool greet" || spans[0].Resource["service.name"] != "dsh" {
		t.Errorf("received span %+v", spans[0])
	}
	if h := col.Headers()[0]["x-tenant"]; h != "team-a" {
		t.Errorf("x-tenant metadata %q, want team-a", h)
	}
}

// TestExportConsole: the console exporter writes the spans as JSON to Options.Console,
// with the content either switch opts into; "otlp,console" sends to both.
func TestExportConsole(t *testing.T) {
	col := otlptest.New()
	srv := httptest.NewServer(col)
	defer srv.Close()
	for _, sw := range []string{telemetry.EnvRecordContent + "=1", telemetry.EnvCaptureContent + "=true"} {
		t.Run(sw, func(t *testing.T) {
			name, val, _ := strings.Cut(sw, "=")
			cleanEnv(t, map[string]string{"OTEL_TRACES_EXPORTER": "otlp, console", "OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, name: val})
			before := len(col.Spans())
			var out bytes.Buffer
			tr, err := telemetry.Setup(t.Context(), telemetry.Options{Console: &out})
			if err != nil {
				t.Fatal(err)
			}
			callGreet(t, tr)
			if err := tr.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"Name":"execute_tool greet"`, `"Key":"gen_ai.tool.call.result"`, `{\"greeting\":\"Hello, Ada\"}`} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("console output lacks %s:\n%s", want, out.String())
				}
			}
			spans, err := col.Wait(t.Context(), before+1)
			if err != nil {
				t.Fatal(err)
			}
			if got := spans[before].Attributes["gen_ai.tool.call.arguments"]; got != `{"name":"Ada"}` {
				t.Errorf("OTLP span arguments %q", got)
			}
		})
	}
}

// TestSampler: the SDK's OTEL_TRACES_SAMPLER applies; always_off records nothing.
func TestSampler(t *testing.T) {
	cleanEnv(t, map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": "always_off"})
	var out bytes.Buffer
	tr, err := telemetry.Setup(t.Context(), telemetry.Options{Console: &out})
	if err != nil {
		t.Fatal(err)
	}
	callGreet(t, tr)
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("always_off exported:\n%s", out.String())
	}
}
