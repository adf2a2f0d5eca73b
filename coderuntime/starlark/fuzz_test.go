package starlark

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/coderuntime"
)

// fuzzSeeds are programs that exercise the source preparation and the runtime.
var fuzzSeeds = []string{
	"",
	"return 1",
	"x = await tools.echo({'a': [1, 2.5, None]})\nprint('got', x)\nreturn x",
	"    s = '''a\n  await b'''\n    return s\n",
	"async def f(x):\n    return await tools.echo(x)\nreturn await f(1)",
	"import asyncio, json\nreturn asyncio.gather(*[tools.echo(i) for i in range(3)])",
	"\tx = [1,\n2] + \\\n[3]\n\treturn x",
	"x = 1\r\nawait tools.echo(x)\rreturn x\r\n",
	"try:\n    pass\nexcept:\n    pass",
	"x = f'{1}'",
	"while True:\n    print('spin')",
	"def f(n):\n    return f(n + 1)\nf(0)",
	"return {'k': [1, 'é', {'z': None}]}",
	"s = \"\\\"await\" + r'\\'' # await\nreturn s",
	"tools.fail({})",
	`n = 3
return f"{n} file{'s' if n != 1 else ''}: {n!r:>5} {n=} {3.14159:.2f} {{x}}"`,
	"x = f'''\n{await tools.echo(1)}\n''' + rf'\\d{1}'",
	"f'{x:{y}}'",
}

// FuzzPrepare checks the source preparation on arbitrary text: it never panics, keeps the
// line count, and maps every copied character back to itself.
func FuzzPrepare(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, program string) {
		p, perr := prepare(program)
		if perr != nil {
			if perr.line < 1 || perr.col < 1 || !strings.HasPrefix(perr.msg, "f-string: ") {
				t.Fatalf("bad error %+v", perr)
			}
			return
		}
		checkColumns(t, program, p)
	})
}

// FuzzRun runs arbitrary programs under small budgets: every outcome is a Result that
// respects the output cap, never a panic or a hang.
func FuzzRun(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	const maxOutput = 512
	rt, err := New(Config{MaxSteps: 20000, MaxOutputBytes: maxOutput, MaxWallMs: 5000, MaxCallDepth: 200, MaxHeapMB: 64})
	if err != nil {
		f.Fatal(err)
	}
	defer rt.Close()
	bindings := tools(map[string]coderuntime.Func{
		"echo": func(_ context.Context, args any) (any, error) { return args, nil },
		"fail": func(context.Context, any) (any, error) { return nil, context.Canceled },
	})
	f.Fuzz(func(t *testing.T, program string) {
		res, err := rt.Run(context.Background(), coderuntime.Request{Program: program, Bindings: bindings})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if res.Logs == nil {
			t.Fatal("nil logs")
		}
		if res.Error != nil && (res.HasValue || res.Error.Message == "" && res.Error.Kind != coderuntime.FailureException) {
			t.Fatalf("inconsistent result %+v", res)
		}
		if n := resultBytes(t, res); n > maxOutput {
			t.Fatalf("result is %d bytes, cap %d", n, maxOutput)
		}
	})
}
