package codemode_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/coderuntime/quickjs"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/tool"
)

// quickjsEnv is a code-mode registry running programs on the real QuickJS backend, in
// process or in a worker subprocess (this test binary).
func quickjsEnv(t *testing.T, inProcess bool) *env {
	t.Helper()
	cfg := quickjs.Config{InProcess: inProcess}
	if !inProcess {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cfg.WorkerCommand = []string{exe, quickjs.WorkerArg}
	}
	rt, err := quickjs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	reg, err := tool.NewRegistry(tool.Config{Mode: tool.ModeCode})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{reg: reg, log: &recLog{}}
	undo, err := codemode.Install(reg, rt, codemode.Config{Log: e.log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(undo)
	e.agent = reg.NewScope("agent", nil)
	e.echo(t, "echo")
	def, err := tool.New("fail", "Always fails.", func(context.Context, *tool.Call, struct{}) (string, error) {
		return "", &tool.Error{Name: "FsError", Code: "FS_NOT_FOUND", Message: "deliberate failure"}
	})
	e.register(t, def, err)
	e.register(t, &tool.Definition{
		Name: "my-tool", Description: "Exotic name.", Parameters: js(t, `{"type":"object","properties":{"mode":{"type":"string","enum":["fast","slow"]}},"required":["mode"]}`),
		Output:          tool.Output{Schema: js(t, `{"type":"object","properties":{"mode":{"type":"string"},"n":{"type":"number"}}}`), Render: tool.DefaultRender},
		ConcurrencySafe: func(any) bool { return true },
		Execute: func(_ context.Context, call *tool.Call) (any, error) {
			args := call.Args()
			return obj("mode", member(args, "mode"), "n", 1.5), nil
		},
	}, nil)
	return e
}

func member(v any, name string) any {
	o, _ := v.(interface{ Get(string) (any, bool) })
	if o == nil {
		return nil
	}
	x, _ := o.Get(name)
	return x
}

func TestQuickJSEndToEnd(t *testing.T) {
	for _, mode := range []struct {
		name      string
		inProcess bool
	}{{"in-process", true}, {"subprocess", false}} {
		t.Run(mode.name, func(t *testing.T) {
			e := quickjsEnv(t, mode.inProcess)
			program := `
const a: string = await tools.echo({ value: "one" });
console.log(a);
const [b, c] = await Promise.all([tools.echo({ value: "two" }), tools["my-tool"]({ mode: "fast" })]);
let caught = "";
try {
  await tools.fail({});
} catch (e) {
  if (e instanceof ToolCallError) caught = e.toolName + ": " + e.message;
}
let bad = "";
try {
  await tools.echo({ value: 1 } as unknown as { value: string });
} catch (e) {
  bad = (e as Error).message;
}
return { b, c, caught, bad };`
			res := e.run(context.Background(), e.agent, program)
			want := `{"logs":["echo:one"],"result":{"b":"echo:two","c":{"mode":"fast","n":1.5},"caught":"fail: deliberate failure","bad":"invalid arguments: \"value\" must be a string"}}`
			if got := value(t, res); got != want {
				t.Errorf("value =\n%s\nwant\n%s", got, want)
			}
			want4 := []string{"call-1:code:1", "call-1:code:2", "call-1:code:3", "call-1:code:4", "call-1:code:5"}
			if starts, settles := e.log.ids("start"), e.log.ids("settle"); !slices.Equal(starts, want4) || !slices.Equal(settles, want4) {
				t.Errorf("starts %v settles %v", starts, settles)
			}
		})
	}
}

func TestQuickJSFailures(t *testing.T) {
	e := quickjsEnv(t, true)
	cases := []struct{ program, want string }{
		{`console.log("before"); throw new Error("boom");`, "code run failed (exception): Error: boom"},
		{`enum Color { Red }`, "code run failed (exception): "},
		{`await tools.echo(undefined as never);`, "code run failed (exception): "},
	}
	for _, c := range cases {
		res := e.run(context.Background(), e.agent, c.program)
		if !res.IsError || !strings.HasPrefix(res.Error.Message, c.want) || res.Error.Info == nil || res.Error.Info.Code != tool.CodeCodeRunFailed {
			t.Errorf("%q: %+v", c.program, res.Error)
		}
	}
	res := e.run(context.Background(), e.agent, `console.log("before"); throw new Error("boom");`)
	if !strings.HasSuffix(res.Error.Message, "\nCaptured output:\nbefore") {
		t.Errorf("captured output missing: %q", res.Error.Message)
	}
	// The worker refuses arguments that are not lossless JSON before the host sees them.
	res = e.run(context.Background(), e.agent, `try { await tools.echo(undefined as never) } catch (e) { return (e as Error).name + ": " + (e as Error).message }`)
	if got := value(t, res); !strings.Contains(got, "ToolCallError: ") || !strings.Contains(got, "lossless JSON") {
		t.Errorf("undefined arguments: %s", got)
	}
	if n := len(e.log.ids("start")); n != 0 {
		t.Errorf("%d sub-calls started", n)
	}
}

func TestQuickJSCancellation(t *testing.T) {
	e := quickjsEnv(t, true)
	g := e.gated(t, "slow", false)
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan *tool.Result, 1)
	go func() {
		done <- e.run(ctx, e.agent, `const a = tools.slow({ id: "first" }); const b = tools.slow({ id: "second" }); return [await a, await b];`)
	}()
	waitFor(t, "the first call", func() bool { return g.pending() == 1 })
	cancel(errors.New("user-cancel"))
	res := testwait.Recv(t, done, "a value on done")
	if !res.IsError || res.Error.Message != "code run failed (abort): user-cancel" {
		t.Errorf("result %+v", res.Error)
	}
	order, _, aborted := g.snapshot()
	if !slices.Equal(order, []string{"start:first", "end:first"}) || aborted != 1 {
		t.Errorf("slow: %v aborted %d", order, aborted)
	}
	if starts, settles := e.log.ids("start"), e.log.ids("settle"); !slices.Equal(starts, []string{"call-1:code:1"}) || !slices.Equal(settles, starts) {
		t.Errorf("starts %v settles %v", starts, settles)
	}
}
