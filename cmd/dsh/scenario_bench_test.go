package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/coderuntime/quickjs"
	"github.com/dsh-go/dsh/internal/cputime"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// The comparison scenarios of docs/benchmarks.md, run on the registry dsh itself builds
// (newRuntime: the built-in tools, every policy — permission rules, approval, timeout,
// repeat reminder, spill, redaction — and Code Mode on the configured runtime), with a
// session log attached and the calls made for an agent scope, as `dsh run` makes them:
//
//	(a) a trivial run_code program, `return 1`, through Registry.Execute;
//	(b) a run_code program making 1,000 sequential `await tools.echo(...)` calls;
//	(c) a trivial typed call, echo {"text":"hello"}, its arguments parsed and handed over
//	    as the agent loop's scheduler does;
//	(d) session.DeriveMessages at 10k / 100k / 1M events — a session-log operation with no
//	    CLI wiring, measured by the session package's BenchmarkDeriveMessages;
//	(e) 1,000 concurrency-safe calls that each wait 1 ms, through the agent loop's
//	    scheduler with the configured pool (maxParallelToolCalls, 10 by default).
//
// echo and nap are the benchmark's own tools, registered on that registry like any tool a
// deployment adds; everything they pass through is dsh's. The Code Mode worker is the dsh
// binary, as for a user: built once by the benchmark into a temporary directory, or the
// binary $DSH_BENCH_WORKER names (scripts/bench-compare.sh builds it once for all its
// runs); DSH_BENCH_WORKER=test-binary re-executes this test binary instead (bigger, and
// running test-only package initialisation at each start: the figures before 2026-12-02
// 03:00 UTC were measured so). The runtime keeps one started ahead, as for `dsh run`
// (runtimeConfig.RunsCode). (a) and (b)
// wait, untimed, until that worker has prepared before each run: in an agent loop runs are
// a model round trip apart. a-trivial-run_code-back-to-back does not wait, so each run
// also waits for the worker started after the previous one: the throughput the worker's
// start-up allows.
//
// scripts/bench-compare.sh runs these next to the floors measurable in the same run.

// scenarioRuntime is dsh's runtime for the scenarios, in a temporary workspace and home.
type scenarioRuntime struct {
	rt          *runtime
	scope       *tool.Scope
	maxParallel int
}

func newScenarioRuntime(b *testing.B) *scenarioRuntime {
	b.Helper()
	home := filepath.Join(b.TempDir(), "dsh-home")
	ws := b.TempDir()
	c, err := loadConfig(&env{getenv: func(k string) string {
		if k == "DSH_HOME" {
			return home
		}
		return ""
	}}, ws, nil)
	if err != nil {
		b.Fatal(err)
	}
	rt, err := newRuntime(b.Context(), runtimeConfig{Workspace: ws, Mode: tool.ModeBoth, Config: c.Config,
		Log: session.NewMemory(nil), NoMCP: true, RunsCode: true, CodeWorker: benchWorker(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	for _, def := range []*tool.Definition{
		tool.Must(tool.New("echo", "Echoes its text.",
			func(ctx context.Context, call *tool.Call, in scenarioText) (scenarioText, error) { return in, nil },
			tool.ConcurrencySafe())),
		tool.Must(tool.New("nap", "Waits 1 ms, then echoes its text.",
			func(ctx context.Context, call *tool.Call, in scenarioText) (scenarioText, error) {
				t := time.NewTimer(time.Millisecond)
				defer t.Stop()
				select {
				case <-t.C:
					return in, nil
				case <-ctx.Done():
					return scenarioText{}, ctx.Err()
				}
			},
			tool.ConcurrencySafe())),
	} {
		if _, err := rt.reg.Register(def); err != nil {
			b.Fatal(err)
		}
	}
	scope := rt.reg.NewScope("bench", nil)
	b.Cleanup(func() { scope.Close() })
	return &scenarioRuntime{rt: rt, scope: scope, maxParallel: c.MaxParallelToolCalls}
}

// benchWorker is the Code Mode worker's argv for the scenarios: the dsh binary that
// $DSH_BENCH_WORKER names, one built now into a temporary directory when it is unset, or
// nil (this test binary re-executed) when it is "test-binary".
func benchWorker(b *testing.B) []string {
	b.Helper()
	exe := os.Getenv("DSH_BENCH_WORKER")
	switch exe {
	case "test-binary":
		return nil
	case "":
		exe = filepath.Join(b.TempDir(), "dsh")
		// The test runs in the package's directory: "." is cmd/dsh.
		out, err := exec.CommandContext(b.Context(), "go", "build", "-o", exe, ".").CombinedOutput()
		if err != nil {
			b.Fatalf("build the dsh binary for the Code Mode worker: %v\n%s", err, out)
		}
	}
	if _, err := os.Stat(exe); err != nil {
		b.Fatalf("the Code Mode worker binary (DSH_BENCH_WORKER): %v", err)
	}
	return []string{exe, quickjs.WorkerArg}
}

// cpuPerOp starts measuring the process's CPU time (user and system, garbage collection,
// the scheduler and — for Code Mode — the wait for the worker included, but not the worker
// process's own CPU); the returned func reports it per iteration as cpu-ns/op.
func cpuPerOp(b *testing.B) func() {
	b.Helper()
	return cputime.PerOp(b, "cpu-ns/op", 1)
}

// workerCPUPerOp starts measuring the CPU time of the Code Mode workers reaped meanwhile
// (each serves one run: its start-up and its run); the returned func reports it per
// iteration as worker-cpu-ns/op. A worker is reaped in the background after its run, so the
// figure may miss the last one: it is exact to one worker over b.N runs.
func workerCPUPerOp(b *testing.B) func() {
	b.Helper()
	return cputime.ChildrenPerOp(b, "worker-cpu-ns/op", 1)
}

// warm waits, with the timer stopped, until the Code Mode worker the next run takes has
// prepared.
func (s *scenarioRuntime) warm(b *testing.B) {
	b.Helper()
	js, ok := s.rt.code.(*quickjs.Runtime)
	if !ok {
		b.Fatalf("code runtime is %T, want QuickJS", s.rt.code)
	}
	b.StopTimer()
	if err := js.WaitReady(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
}

// scenarioText is the echo and nap tools' argument and output.
type scenarioText struct {
	Text string `json:"text"`
}

// execute runs one call the way the scheduler does (arguments parsed from the model's text
// and handed over) and fails the benchmark unless it succeeds with want as its content.
func (s *scenarioRuntime) execute(b *testing.B, name, rawArgs, want string) {
	reg := s.rt.reg
	res := reg.Execute(b.Context(), tool.Input{CallID: "c1", Name: name, Args: reg.ParseArguments(rawArgs), OwnArgs: true, Agent: s.scope})
	if res.IsError {
		b.Fatalf("%s: %s", name, res.Error.Message)
	}
	if len(res.Content) == 0 || res.Content[0].Text != want {
		b.Fatalf("%s: content %+v, want %q", name, res.Content, want)
	}
}

func BenchmarkScenarios(b *testing.B) {
	s := newScenarioRuntime(b)
	b.Run("a-trivial-run_code", func(b *testing.B) {
		b.ReportAllocs()
		defer workerCPUPerOp(b)()
		defer cpuPerOp(b)()
		for b.Loop() {
			s.warm(b)
			s.execute(b, tool.RunCodeName, `{"code":"return 1","description":"one"}`, "1")
		}
	})
	b.Run("a-trivial-run_code-back-to-back", func(b *testing.B) {
		b.ReportAllocs()
		defer workerCPUPerOp(b)()
		defer cpuPerOp(b)()
		for b.Loop() {
			s.execute(b, tool.RunCodeName, `{"code":"return 1","description":"one"}`, "1")
		}
	})
	b.Run("b-run_code-1000-sequential-echo", func(b *testing.B) {
		const code = `let n = 0; for (let i = 0; i < 1000; i++) { const r = await tools.echo({ text: "x" }); n += r.text.length; } return n`
		b.ReportAllocs()
		defer workerCPUPerOp(b)()
		defer cpuPerOp(b)()
		for b.Loop() {
			s.warm(b)
			s.execute(b, tool.RunCodeName, fmt.Sprintf(`{"code":%q,"description":"echo 1000 times"}`, code), "1000")
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/binding-call")
	})
	b.Run("c-typed-call", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			s.execute(b, "echo", `{"text":"hello"}`, "{\n  \"text\": \"hello\"\n}")
		}
	})
	b.Run("e-scheduler-1000-naps", func(b *testing.B) {
		sched, err := agent.NewScheduler(s.rt.reg, s.maxParallel)
		if err != nil {
			b.Fatal(err)
		}
		calls := make([]agent.PlannedCall, 1000)
		for i := range calls {
			calls[i] = agent.PlannedCall{ID: fmt.Sprintf("n%d", i), Name: "nap", RawArgs: `{"text":"z"}`}
		}
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			c := &scenarioCommitter{b: b}
			if _, err := sched.Run(b.Context(), s.scope, calls, c); err != nil {
				b.Fatal(err)
			}
			if c.done != len(calls) {
				b.Fatalf("%d results committed, want %d", c.done, len(calls))
			}
		}
	})
}

// scenarioCommitter checks that every call of a batch succeeds and commits in model order.
type scenarioCommitter struct {
	b    *testing.B
	seq  int64
	done int
}

func (c *scenarioCommitter) CallStarted(agent.PlannedCall) (int64, error) {
	c.seq++
	return c.seq, nil
}

func (c *scenarioCommitter) CallFinished(pc agent.PlannedCall, _ int64, res *tool.Result) error {
	if res.IsError {
		return fmt.Errorf("%s failed: %s", pc.ID, res.Error.Message)
	}
	if want := fmt.Sprintf("n%d", c.done); pc.ID != want {
		return fmt.Errorf("%s committed where %s was due", pc.ID, want)
	}
	c.done++
	return nil
}
