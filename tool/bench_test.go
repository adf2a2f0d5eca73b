package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/cputime"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

type echoArgs struct {
	Text string `json:"text"`
}

type echoOut struct {
	Text string `json:"text"`
}

func newEchoRegistry(tb testing.TB) *tool.Registry {
	tb.Helper()
	return newEchoRegistryWith(tb, tool.Config{Workers: benchWorkers, DirectSwitch: true})
}

// benchWorkers is the Config.Workers of the benchmarks' and allocation tests' registries: a
// few kept goroutines, handed each call by a direct switch (Config.DirectSwitch), as dsh's
// own registry keeps them.
const benchWorkers = 4

// newEchoRegistryWith is newEchoRegistry with cfg; the registry is closed when tb ends.
func newEchoRegistryWith(tb testing.TB, cfg tool.Config) *tool.Registry {
	tb.Helper()
	reg, err := tool.NewRegistry(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(reg.Close)
	def := tool.Must(tool.New("echo", "Echoes its text.",
		func(ctx context.Context, call *tool.Call, in echoArgs) (echoOut, error) {
			return echoOut(in), nil
		}))
	if _, err := reg.Register(def); err != nil {
		tb.Fatal(err)
	}
	return reg
}

// newEchoRegistryWithHooks is newEchoRegistry with one pass-through hook of every kind: a
// pre-execute hook, an around-execute wrapper, a post-execute hook and a result listener.
func newEchoRegistryWithHooks(tb testing.TB) *tool.Registry {
	tb.Helper()
	reg := newEchoRegistry(tb)
	reg.OnPreExecute(func(ctx context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		return next()
	})
	reg.WrapExecute(func(ctx context.Context, exec *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
		return next(ctx)
	})
	reg.OnPostExecute(func(ctx context.Context, exec *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		return next()
	})
	reg.OnResult(func(ctx context.Context, exec *tool.Execution, res *tool.Result) error { return nil })
	return reg
}

// cpuPerOp starts measuring the process's CPU time (user and system, garbage collection
// and the scheduler's own work included); the returned func reports it per iteration as
// cpu-ns/op, which moves far less than wall time with other work on a shared machine.
func cpuPerOp(b *testing.B) func() {
	b.Helper()
	return cputime.PerOp(b, "cpu-ns/op", 1)
}

// benchEcho measures reg's echo tool called with {"text":"hello"} through the full
// pipeline: allocations and CPU time per call.
func benchEcho(b *testing.B, reg *tool.Registry) {
	b.Helper()
	args, _ := jsonv.ParseString(`{"text":"hello"}`)
	ctx := context.Background()
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		res := reg.Execute(ctx, tool.Input{CallID: "c1", Name: "echo", Args: args})
		if res.IsError {
			b.Fatal(res.Error.Message)
		}
	}
}

// BenchmarkExecuteTyped measures a trivial typed tool through the full pipeline, no hooks.
func BenchmarkExecuteTyped(b *testing.B) {
	benchEcho(b, newEchoRegistry(b))
}

// BenchmarkExecuteTypedScheduled is BenchmarkExecuteTyped on a registry whose kept
// goroutines are handed each step through the scheduler (Config.Workers without
// DirectSwitch).
func BenchmarkExecuteTypedScheduled(b *testing.B) {
	benchEcho(b, newEchoRegistryWith(b, tool.Config{Workers: benchWorkers}))
}

// BenchmarkExecuteTypedNoWorkers is BenchmarkExecuteTyped on a registry without
// Config.Workers: the call's steps run on a goroutine started for the call.
func BenchmarkExecuteTypedNoWorkers(b *testing.B) {
	benchEcho(b, newEchoRegistryWith(b, tool.Config{}))
}

// BenchmarkExecuteTypedOwned is BenchmarkExecuteTyped the way the agent loop calls: the
// arguments come fresh from Registry.ParseArguments and are handed over (Input.OwnArgs), so
// the pipeline takes them without a copy. Parsing is part of the measured work.
func BenchmarkExecuteTypedOwned(b *testing.B) {
	reg := newEchoRegistry(b)
	ctx := context.Background()
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		res := reg.Execute(ctx, tool.Input{CallID: "c1", Name: "echo", Args: reg.ParseArguments(`{"text":"hello"}`), OwnArgs: true})
		if res.IsError {
			b.Fatal(res.Error.Message)
		}
	}
}

// BenchmarkEncodingJSONFloor is the floor the typed call is measured against: a plain
// encoding/json decode of the same arguments into echoArgs and encode of the echoOut.
func BenchmarkEncodingJSONFloor(b *testing.B) {
	data := []byte(`{"text":"hello"}`)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		var in echoArgs
		if err := json.Unmarshal(data, &in); err != nil {
			b.Fatal(err)
		}
		out, err := json.Marshal(echoOut(in))
		if err != nil || len(out) == 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecuteTypedHooks is the same call with one pre, one around and one post hook and
// one result listener.
func BenchmarkExecuteTypedHooks(b *testing.B) {
	benchEcho(b, newEchoRegistryWithHooks(b))
}

// BenchmarkSchemas200 projects the schemas of 200 registered tools.
func BenchmarkSchemas200(b *testing.B) {
	reg, _ := tool.NewRegistry(tool.Config{})
	for i := range 200 {
		def := tool.Must(tool.New(fmt.Sprintf("tool_%03d", i), "A tool.",
			func(ctx context.Context, call *tool.Call, in echoArgs) (echoOut, error) { return echoOut(in), nil }))
		if _, err := reg.Register(def); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := reg.Schemas(nil)
		if err != nil || len(s) != 200 {
			b.Fatal(err, len(s))
		}
	}
}

// BenchmarkValidateArgs1MB validates a 1 MB argument document against a typed tool's schema
// through the pipeline.
func BenchmarkValidateArgs1MB(b *testing.B) {
	type item struct {
		Name  string   `json:"name"`
		Value float64  `json:"value"`
		Tags  []string `json:"tags"`
	}
	type bulk struct {
		Items []item `json:"items"`
	}
	reg, _ := tool.NewRegistry(tool.Config{MaxArgBytes: 2 << 20}) // the document is over the default cap
	def := tool.Must(tool.New("bulk", "Counts items.",
		func(ctx context.Context, call *tool.Call, in bulk) (int, error) { return len(in.Items), nil }))
	if _, err := reg.Register(def); err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	sb.WriteString(`{"items":[`)
	for i := 0; sb.Len() < 1<<20; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"name":"item-%d","value":%d.5,"tags":["a","b","c"]}`, i, i)
	}
	sb.WriteString(`]}`)
	args, err := jsonv.ParseString(sb.String())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(int64(sb.Len()))
	b.ReportAllocs()
	for b.Loop() {
		res := reg.Execute(ctx, tool.Input{CallID: "c1", Name: "bulk", Args: args})
		if res.IsError {
			b.Fatal(res.Error.Message)
		}
	}
}
