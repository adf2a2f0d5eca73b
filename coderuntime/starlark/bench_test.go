package starlark

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/coderuntime"
)

func benchRun(b *testing.B, program string, bindings []coderuntime.Namespace, want string) {
	b.Helper()
	rt := newRuntime(b, Config{})
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

// BenchmarkTrivialRun is one whole run: prepare, parse, compile, run, settle.
func BenchmarkTrivialRun(b *testing.B) {
	benchRun(b, "x = 1\nreturn x + 1", nil, "2")
}

// BenchmarkSequentialCalls is 1,000 binding calls awaited one after another.
func BenchmarkSequentialCalls(b *testing.B) {
	bindings := tools(map[string]coderuntime.Func{"inc": func(_ context.Context, args any) (any, error) {
		return args.(float64) + 1, nil
	}})
	benchRun(b, "n = 0\nfor i in range(1000):\n    n = await tools.inc(n)\nreturn n", bindings, "1000")
}

// BenchmarkStructuredCalls is 100 binding calls with a nested arguments dict and result.
func BenchmarkStructuredCalls(b *testing.B) {
	bindings := tools(map[string]coderuntime.Func{"read": func(_ context.Context, args any) (any, error) {
		return args, nil
	}})
	benchRun(b, `total = 0
for i in range(100):
    r = await tools.read({"path": "src/file.go", "range": {"start": i, "end": i + 10}, "flags": [True, None, "x"]})
    total += r["range"]["end"]
return total`, bindings, "5950")
}

// BenchmarkPrint is 10,000 print calls charged to the output ledger.
func BenchmarkPrint(b *testing.B) {
	benchRun(b, "for i in range(10000):\n    print('line', i)\nreturn 1", nil, "1")
}

// BenchmarkCompute is a tight loop of 100,000 iterations under the step hook.
func BenchmarkCompute(b *testing.B) {
	benchRun(b, "t = 0\nfor i in range(100000):\n    t += i\nreturn t", nil, "4999950000")
}

// BenchmarkPrepare is the source preparation of a 200-line program.
func BenchmarkPrepare(b *testing.B) {
	program := strings.Repeat("    x = await tools.read({'path': 'await.txt'})  # await\n    print(x)\n", 100)
	b.ReportAllocs()
	b.SetBytes(int64(len(program)))
	for b.Loop() {
		if _, perr := prepare(program); perr != nil {
			b.Fatal(perr)
		}
	}
}

// BenchmarkFString is 1,000 f-strings with format specs and conversions.
func BenchmarkFString(b *testing.B) {
	benchRun(b, `n = 0
for i in range(1000):
    s = f"{i:>5} {i * 1.5:,.2f} {'x'!r} {i=}"
    n += len(s)
return n`, nil, "22482") // as CPython computes it
}
