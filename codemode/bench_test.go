package codemode_test

import (
	"context"
	"testing"
	"time"

	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/internal/cputime"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// BenchmarkBindingSequential measures the bridge's round trip: one run_code call whose
// program makes 1,000 sequential binding calls of a trivial tool, each a full pipeline
// call with its dispatch events recorded. ns/call is the per-binding cost.
func BenchmarkBindingSequential(b *testing.B) {
	const calls = 1000
	e := newEnv(b, tool.ModeCode, codemode.Config{})
	e.echo(b, "echo")
	args := jsonv.NewObject(jsonv.Member{Name: "value", Value: "x"})
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		for range calls {
			if _, err := p.call("echo", args); err != nil {
				return coderuntime.Result{}, err
			}
		}
		return ok(nil)
	})
	b.ReportAllocs()
	b.ResetTimer()
	defer cputime.PerOp(b, "cpu-ns/call", calls)()
	for b.Loop() {
		e.log.reset()
		if res := e.run(context.Background(), e.agent, "p"); res.IsError {
			b.Fatal(res.Error.Message)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*calls), "ns/call")
}

// BenchmarkBindingConcurrent measures the pool: 100 concurrent binding calls of a
// concurrency-safe tool that waits 10 ms, with the default cap of 10 (about 100 ms per run).
func BenchmarkBindingConcurrent(b *testing.B) {
	const calls = 100
	e := newEnv(b, tool.ModeCode, codemode.Config{})
	def, err := tool.New("wait", "Waits 10 ms.", func(ctx context.Context, _ *tool.Call, _ struct{}) (string, error) {
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
		}
		return "ok", nil
	}, tool.ConcurrencySafe())
	e.register(b, def, err)
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		pend := make([]*pending, calls)
		for i := range pend {
			pend[i] = p.spawn("wait", jsonv.NewObject())
		}
		for _, c := range pend {
			if _, err := c.wait(); err != nil {
				return coderuntime.Result{}, err
			}
		}
		return ok(nil)
	})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		e.log.reset()
		if res := e.run(context.Background(), e.agent, "p"); res.IsError {
			b.Fatal(res.Error.Message)
		}
	}
}

// BenchmarkBindingNumbered measures the submission order of numbered calls (as the QuickJS
// runtime makes them): 100 calls of a concurrency-safe trivial tool made at once, each on
// its own goroutine, numbered in reverse of the order they are made, so most wait for
// their turn.
func BenchmarkBindingNumbered(b *testing.B) {
	const calls = 100
	e := newEnv(b, tool.ModeCode, codemode.Config{})
	def, err := tool.New("nop", "Does nothing.", func(context.Context, *tool.Call, struct{}) (string, error) {
		return "ok", nil
	}, tool.ConcurrencySafe())
	e.register(b, def, err)
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		pend := make([]*pending, calls)
		for i := range pend {
			pend[i] = spawnNumbered(p, uint64(calls-1-i), "nop", jsonv.NewObject())
		}
		for _, c := range pend {
			if _, err := c.wait(); err != nil {
				return coderuntime.Result{}, err
			}
		}
		return ok(nil)
	})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		e.log.reset()
		if res := e.run(context.Background(), e.agent, "p"); res.IsError {
			b.Fatal(res.Error.Message)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*calls), "ns/call")
}

// BenchmarkRenderTypeScript renders the SDK section of the sample tool set, as every
// prompt assembly of a code-mode agent does.
func BenchmarkRenderTypeScript(b *testing.B) {
	reg := sampleRegistry(b, "typescript", nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codemode.SDKSection(reg, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderPython renders the Python SDK section of the sample tool set.
func BenchmarkRenderPython(b *testing.B) {
	reg := sampleRegistry(b, "python", nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codemode.SDKSection(reg, nil); err != nil {
			b.Fatal(err)
		}
	}
}
