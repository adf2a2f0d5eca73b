package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/dsh-go/dsh/coderuntime/quickjs"
	"github.com/dsh-go/dsh/config"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// codeBench is run_code wired as dsh call wires it: the registry newRuntime builds (built-in
// tools, every policy, Code Mode on QuickJS with a worker started ahead, dispatch events
// going to a session log), an agent scope, plus one trivial tool, echo. The worker is the
// dsh binary, as for a user (see benchWorker: $DSH_BENCH_WORKER, or built once per
// benchmark).
type codeBench struct {
	rt    *runtime
	scope *tool.Scope
	js    *quickjs.Runtime
	n     int
}

type echoArgs struct {
	Value string `json:"value"`
}

func newCodeBench(b *testing.B, ahead bool) *codeBench {
	b.Helper()
	c := config.Default(b.TempDir())
	rt, err := newRuntime(context.Background(), runtimeConfig{Workspace: b.TempDir(), Mode: tool.ModeCode, Config: c,
		Log: session.NewMemory(time.Now), NoMCP: true, RunsCode: ahead, CodeWorker: benchWorker(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	echo, err := tool.New("echo", "Returns its argument.", func(_ context.Context, _ *tool.Call, in echoArgs) (echoArgs, error) {
		return in, nil
	}, tool.ConcurrencySafe())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := rt.reg.Register(echo); err != nil {
		b.Fatal(err)
	}
	scope := rt.reg.NewScope("bench", nil)
	b.Cleanup(scope.Close)
	js, ok := rt.code.(*quickjs.Runtime)
	if !ok {
		b.Fatalf("code runtime is %T, want QuickJS", rt.code)
	}
	return &codeBench{rt: rt, scope: scope, js: js}
}

// run executes one run_code call of program and checks the text of its result.
func (cb *codeBench) run(b *testing.B, program, want string) {
	cb.n++
	args, _ := json.Marshal(map[string]string{"code": program, "description": "bench"})
	res := cb.rt.reg.Execute(context.Background(), tool.Input{CallID: "c" + string(rune('a'+cb.n%26)), Name: tool.RunCodeName,
		Args: cb.rt.reg.ParseArguments(string(args)), Agent: cb.scope})
	if res.IsError {
		b.Fatalf("run_code failed: %v", res.Error)
	}
	if len(res.Content) != 1 || res.Content[0].Text != want {
		b.Fatalf("run_code returned %+v, want the text %q", res.Content, want)
	}
}

// warm waits, untimed, until the worker the next run takes has prepared: runs of an agent
// loop are seconds apart (a model round trip), so each finds one ready.
func (cb *codeBench) warm(b *testing.B) {
	b.StopTimer()
	if err := cb.js.WaitReady(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
}

// BenchmarkRunCodeTrivial is a trivial program (return 1) through Execute. warm: each
// run takes a prepared worker; back-to-back: runs follow each other at once, so each waits
// for the worker started after the previous one (the throughput the worker start-up allows);
// started-per-run: no worker started ahead (a command that does not run code, and dsh
// before the pool).
func BenchmarkRunCodeTrivial(b *testing.B) {
	b.Run("started-per-run", func(b *testing.B) {
		cb := newCodeBench(b, false)
		b.ReportAllocs()
		for b.Loop() {
			cb.run(b, "return 1", "1")
		}
	})
	b.Run("warm", func(b *testing.B) {
		cb := newCodeBench(b, true)
		b.ReportAllocs()
		for b.Loop() {
			cb.warm(b)
			cb.run(b, "return 1", "1")
		}
	})
	b.Run("back-to-back", func(b *testing.B) {
		cb := newCodeBench(b, true)
		b.ReportAllocs()
		for b.Loop() {
			cb.run(b, "return 1", "1")
		}
	})
}

// BenchmarkRunCode1000Echo is one program making 1,000 sequential binding calls, each a
// whole pipeline call of echo with its dispatch events logged; ns/call is per binding call.
func BenchmarkRunCode1000Echo(b *testing.B) {
	const calls = 1000
	cb := newCodeBench(b, true)
	program := `let r; for (let i = 0; i < 1000; i++) r = await tools.echo({ value: "v" + i }); return r.value`
	b.ReportAllocs()
	for b.Loop() {
		cb.warm(b)
		cb.run(b, program, "v999")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*calls), "ns/call")
}
