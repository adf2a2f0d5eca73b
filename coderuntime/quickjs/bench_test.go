package quickjs

import (
	"context"
	"testing"
	"time"

	"github.com/dsh-go/dsh/coderuntime"
)

func benchRun(b *testing.B, rt *Runtime, program string, bindings []coderuntime.Namespace, want string) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		res, err := rt.Run(context.Background(), coderuntime.Request{Program: program, Bindings: bindings})
		if err != nil || res.Error != nil {
			b.Fatalf("Run: %v %v", err, res.Error)
		}
		if got := jsonOf(b, res.Value); got != want {
			b.Fatalf("value %s, want %s", got, want)
		}
	}
}

func benchModes(b *testing.B, f func(b *testing.B, rt *Runtime)) {
	for _, inProcess := range []bool{false, true} {
		name := "process"
		if inProcess {
			name = "in-process"
		}
		b.Run(name, func(b *testing.B) {
			f(b, newRuntime(b, Config{InProcess: inProcess}))
		})
	}
}

// BenchmarkTrivialRun is one whole run: strip, start the worker, run, settle, reap.
func BenchmarkTrivialRun(b *testing.B) {
	benchModes(b, func(b *testing.B, rt *Runtime) {
		benchRun(b, rt, `const x: number = 1; return x + 1`, nil, "2")
	})
}

// BenchmarkSequentialCalls is 1,000 binding round trips awaited one after another.
func BenchmarkSequentialCalls(b *testing.B) {
	bindings := tools(map[string]coderuntime.Func{"inc": func(_ context.Context, args any) (any, error) {
		return args.(float64) + 1, nil
	}})
	benchModes(b, func(b *testing.B, rt *Runtime) {
		benchRun(b, rt, `let n = 0; for (let i = 0; i < 1000; i++) n = await tools.inc(n); return n`, bindings, "1000")
	})
}

// BenchmarkConcurrentCalls is 100 binding calls in flight at once, each taking 10 ms.
func BenchmarkConcurrentCalls(b *testing.B) {
	bindings := tools(map[string]coderuntime.Func{"wait": func(ctx context.Context, args any) (any, error) {
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
		}
		return args, nil
	}})
	benchModes(b, func(b *testing.B, rt *Runtime) {
		benchRun(b, rt, `const r = await Promise.all(Array.from({ length: 100 }, (_, i) => tools.wait(i))); return r.length`, bindings, "100")
	})
}

// BenchmarkConsoleLog is 10,000 console.log calls streamed to the host.
func BenchmarkConsoleLog(b *testing.B) {
	benchModes(b, func(b *testing.B, rt *Runtime) {
		benchRun(b, rt, `for (let i = 0; i < 10000; i++) console.log("line", i); return 1`, nil, "1")
	})
}
