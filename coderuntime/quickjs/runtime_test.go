package quickjs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/google/go-cmp/cmp"
)

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{ComputeMs: -1}, "config.computeMs must be a positive number, got -1"},
		{Config{ComputeMs: math.NaN()}, "config.computeMs must be a positive number, got NaN"},
		{Config{MaxWallMs: math.Inf(1)}, "config.maxWallMs must be a positive number, got Infinity"},
		{Config{MaxHeapMB: -0.5}, "config.maxHeapMb must be a positive number, got -0.5"},
		{Config{MaxOutputBytes: -5}, "config.maxOutputBytes must be a positive number, got -5"},
		{Config{MaxOutputBytes: 3}, "config.maxOutputBytes must be a safe integer of at least 4, got 3"},
		{Config{MaxOutputBytes: 1 << 53}, "config.maxOutputBytes must be a safe integer of at least 4, got 9007199254740992"},
		{Config{MaxWallMs: 2147483648}, "config.maxWallMs must be at most 2147483647 (Node clamps a longer setTimeout delay to 1ms), got 2147483648"},
		{Config{MaxWallMs: 1e22}, "config.maxWallMs must be at most 2147483647 (Node clamps a longer setTimeout delay to 1ms), got 1e+22"},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg)
		if err == nil || err.Error() != tt.want {
			t.Errorf("New(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
	}
	for _, ok := range []Config{{MaxWallMs: 2147483647}, {MaxOutputBytes: 4}, {ComputeMs: 0.5}, {InProcess: true}} {
		if _, err := New(ok); err != nil {
			t.Errorf("New(%+v) = %v", ok, err)
		}
	}
	rt, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{ComputeMs: 60000, MaxWallMs: 600000, MaxOutputBytes: 67108864, MaxHeapMB: 512}
	if diff := cmp.Diff(want, rt.cfg, cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "WorkerCommand" }, cmp.Ignore())); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if len(rt.command) != 2 || rt.command[1] != WorkerArg {
		t.Errorf("default worker command = %q", rt.command)
	}
}

func TestDescriptors(t *testing.T) {
	rt := newRuntime(t, Config{})
	in := newRuntime(t, Config{InProcess: true})
	if rt.Language() != "typescript" || rt.Isolation() != "process" || in.Isolation() != "in-process" {
		t.Errorf("descriptors: %s %s %s", rt.Language(), rt.Isolation(), in.Isolation())
	}
	if !IsWorker([]string{WorkerArg}) || IsWorker(nil) || IsWorker([]string{"run", WorkerArg}) {
		t.Error("IsWorker")
	}
}

// Both modes run the same engine; the behaviour tests run against each.
func forEachMode(t *testing.T, cfg Config, f func(t *testing.T, rt *Runtime)) {
	modes := []struct {
		name      string
		inProcess bool
		pool      int
	}{
		{"process", false, 0},
		{"pool", false, 1}, // worker processes started ahead of their runs
		{"in-process", true, 0},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			c := cfg
			c.InProcess, c.Pool = m.inProcess, m.pool
			f(t, newRuntime(t, c))
		})
	}
}

func TestProgramsAndConsole(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		res := run(t, rt, `
			interface Point { x: number; y: number }
			const p: Point = { x: 1, y: 2 } as Point;
			console.log('point', p);
			console.warn('careful');
			console.info(1, -0, 2n, true, null, undefined, Symbol('s'));
			console.error([1, 'two', [3, [4, [5, [6, [7]]]]]], { 'a-b': "it's" });
			console.debug(function named() {}, class K {}, new Map([[1, 'a']]), new Set([1]), /re/g);
			console.log(Object.create(null), new (class Foo { x = 1 })(), [1, , 3], { get g() { return 1 } });
			const self: any = { name: 'self' }; self.me = self; console.log(self);
			console.log(new Array(150).fill(0).length, 'x'.repeat(3));
			return p.x + p.y;
		`, nil)
		wantValue(t, res, "3")
		want := []string{
			"point { x: 1, y: 2 }",
			"careful",
			"1 -0 2n true null undefined Symbol(s)",
			"[ 1, 'two', [ 3, [ 4, [ 5, [ 6, [Array] ] ] ] ] ] { 'a-b': 'it\\'s' }",
			"[Function: named] [class K] Map(1) { 1 => 'a' } Set(1) { 1 } /re/g",
			"[Object: null prototype] {} Foo { x: 1 } [ 1, <1 empty item>, 3 ] { g: [Getter] }",
			"{ name: 'self', me: [Circular] }",
			"150 xxx",
		}
		if diff := cmp.Diff(want, res.Logs); diff != "" {
			t.Errorf("logs (-want +got):\n%s", diff)
		}
	})
}

func TestConsoleLongValuesBreakLines(t *testing.T) {
	rt := newRuntime(t, Config{InProcess: true})
	res := run(t, rt, `console.log({ alpha: 'a'.repeat(30), beta: 'b'.repeat(30), gamma: [1, 2] }); console.log(new Array(120).fill(1))`, nil)
	if len(res.Logs) != 2 {
		t.Fatalf("logs = %q", res.Logs)
	}
	if want := "{\n  alpha: '" + strings.Repeat("a", 30) + "',\n  beta: '" + strings.Repeat("b", 30) + "',\n  gamma: [ 1, 2 ]\n}"; res.Logs[0] != want {
		t.Errorf("log = %q, want %q", res.Logs[0], want)
	}
	if !strings.HasSuffix(res.Logs[1], "... 20 more items\n]") {
		t.Errorf("array log = %q", res.Logs[1])
	}
}

func TestBindings(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		var mu sync.Mutex
		var calls []string
		res := run(t, rt, `
			const first = await tools.echo({ n: 1, s: '€', nested: [true, null, { k: 1.5 }] });
			let caught = {};
			try { await tools.fail({}) } catch (error) {
				caught = { isTyped: error instanceof ToolCallError, isError: error instanceof Error,
					name: error.name, toolName: error.toolName, message: error.message };
			}
			const proto = [await tools['__proto__']({}), await tools['constructor']({}), typeof tools['hasOwnProperty'], Object.getPrototypeOf(tools)];
			return { first, caught, proto, keys: Object.keys(tools) };
		`, tools(map[string]coderuntime.Func{
			"echo": func(ctx context.Context, args any) (any, error) {
				mu.Lock()
				calls = append(calls, jsonOf(t, args))
				mu.Unlock()
				return jsonv.NewObject(jsonv.Member{Name: "echoed", Value: args}), nil
			},
			"fail":        func(context.Context, any) (any, error) { return nil, errors.New("nope") },
			"__proto__":   func(context.Context, any) (any, error) { return "proto-ok", nil },
			"constructor": func(context.Context, any) (any, error) { return "ctor-ok", nil },
		}))
		wantValue(t, res, `{"first":{"echoed":{"n":1,"s":"€","nested":[true,null,{"k":1.5}]}},`+
			`"caught":{"isTyped":true,"isError":true,"name":"ToolCallError","toolName":"fail","message":"nope"},`+
			`"proto":["proto-ok","ctor-ok","undefined",null],"keys":["__proto__","constructor","echo","fail"]}`)
		if diff := cmp.Diff([]string{`{"n":1,"s":"€","nested":[true,null,{"k":1.5}]}`}, calls); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
	})
}

func TestBindingErrorClassPerNamespace(t *testing.T) {
	rt := newRuntime(t, Config{})
	res := run(t, rt, `
		const out = [];
		try { await helpers.fail({}) } catch (e) { out.push([e instanceof HelperCallError, e instanceof ToolCallError, e.name, e.helperName, e.message]) }
		try { await plain.fail({}) } catch (e) { out.push([e instanceof Error, e.name, e.message]) }
		return out;
	`, []coderuntime.Namespace{
		{Global: "helpers", Functions: map[string]coderuntime.Func{"fail": func(context.Context, any) (any, error) { return nil, errors.New("helper nope") }},
			ErrorClass: &coderuntime.ErrorClass{Name: "HelperCallError", MemberNameProperty: "helperName"}},
		{Global: "plain", Functions: map[string]coderuntime.Func{"fail": func(context.Context, any) (any, error) { return nil, errors.New("plain nope") }}},
		{Global: "other", Functions: map[string]coderuntime.Func{},
			ErrorClass: &coderuntime.ErrorClass{Name: "ToolCallError", MemberNameProperty: "toolName"}},
	})
	wantValue(t, res, `[[true,false,"HelperCallError","fail","helper nope"],[true,"Error","plain nope"]]`)
}

func TestBindingValuesCrossLosslessly(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		res := run(t, rt, `
			let value = 'leaf';
			for (let depth = 0; depth < 3000; depth++) value = [value];
			const back = await tools.echo(value);
			let d = 0, cur = back;
			while (Array.isArray(cur)) { cur = cur[0]; d++; }
			const nums = await tools.echo([0.1, 1e21, 1e-7, -5, 123456789012345680000]);
			return { d, cur, nums, s: await tools.echo('"\u2028\u0001') };
		`, tools(map[string]coderuntime.Func{"echo": func(_ context.Context, args any) (any, error) { return args, nil }}))
		wantValue(t, res, `{"d":3000,"cur":"leaf","nums":[0.1,1e+21,1e-7,-5,123456789012345680000],"s":`+jsonOf(t, "\"\u2028\x01")+`}`)
	})
}

func TestBindingArgumentsMustBeLossless(t *testing.T) {
	var calls atomic.Int32
	rt := newRuntime(t, Config{})
	res := run(t, rt, `
		const decorated = [1]; Object.defineProperty(decorated, 'extra', { value: true });
		const sparse = [1, , 3];
		const cycle: any = {}; cycle.self = cycle;
		class C { x = 1 }
		const values = [undefined, new Date(0), decorated, sparse, cycle, () => 1, -0, NaN, Infinity, 1n,
			Symbol('s'), new C(), { a: undefined }, [undefined], { [Symbol('k')]: 1 }, new Map(),
			Object.defineProperty({}, 'hidden', { value: 1, enumerable: false }),
			{ get boom() { throw new Error('getter exploded') } }];
		const failures = [];
		for (const value of values) {
			try { await tools.never(value); failures.push('called') } catch (e) {
				failures.push(e instanceof ToolCallError && e.toolName === 'never' ? e.message : 'untyped ' + e);
			}
		}
		const shared = { k: 1 };
		const ok = await tools.count({ a: shared, b: shared, n: null });
		return { failures, ok };
	`, tools(map[string]coderuntime.Func{
		"never": func(context.Context, any) (any, error) { calls.Add(1); return nil, nil },
		"count": func(_ context.Context, args any) (any, error) { return jsonOf(t, args), nil },
	}))
	if calls.Load() != 0 {
		t.Errorf("the host binding was called %d times", calls.Load())
	}
	want := strings.Repeat(`"binding arguments must be lossless JSON",`, 18)
	wantValue(t, res, `{"failures":[`+want[:len(want)-1]+`],"ok":"{\"a\":{\"k\":1},\"b\":{\"k\":1},\"n\":null}"}`)
}

func TestBindingResolutionMustBeLossless(t *testing.T) {
	rt := newRuntime(t, Config{})
	bad := map[string]any{
		"nan":     math.NaN(),
		"negzero": math.Copysign(0, -1),
		"func":    func() {},
		"chan":    make(chan int),
	}
	fns := map[string]coderuntime.Func{}
	for name, v := range bad {
		fns[name] = func(context.Context, any) (any, error) { return v, nil }
	}
	fns["panics"] = func(context.Context, any) (any, error) { panic("kaboom") }
	fns["gomap"] = func(context.Context, any) (any, error) { return map[string]any{"b": 2, "a": []any{1, "x"}}, nil }
	res := run(t, rt, `
		const out: Record<string, string> = {};
		for (const name of ['nan', 'negzero', 'func', 'chan', 'panics']) {
			try { await tools[name]({}); out[name] = 'resolved' } catch (e) { out[name] = e.name + ': ' + e.message }
		}
		out.gomap = JSON.stringify(await tools.gomap({}));
		return out;
	`, tools(fns))
	lossy := `"ToolCallError: binding resolution must be lossless JSON"`
	wantValue(t, res, `{"nan":`+lossy+`,"negzero":`+lossy+`,"func":`+lossy+`,"chan":`+lossy+
		`,"panics":"ToolCallError: binding panicked: kaboom","gomap":"{\"a\":[1,\"x\"],\"b\":2}"}`)
}

func TestBoundaryIntrinsicsSurviveMutation(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		res := run(t, rt, `
			const arrayPrototype = Array.prototype;
			const objectPrototype = Object.prototype;
			Array.isArray = () => false;
			arrayPrototype.push = arrayPrototype.pop = arrayPrototype.join = () => { throw new Error('mutated array method') };
			Object.defineProperty(arrayPrototype, '0', { set() { throw new Error('index setter') }, configurable: true });
			Object.keys = Object.getPrototypeOf = () => { throw new Error('mutated object method') };
			Object.hasOwn = () => false;
			Object.is = () => true;
			objectPrototype.propertyIsEnumerable = () => false;
			objectPrototype.get = () => undefined;
			objectPrototype.toJSON = () => 'hijacked';
			arrayPrototype.toJSON = () => 'hijacked';
			Number.isFinite = () => false;
			Reflect.apply = Reflect.ownKeys = () => { throw new Error('mutated reflect method') };
			JSON.stringify = JSON.parse = () => { throw new Error('mutated JSON') };
			Promise.prototype.then = () => { throw new Error('mutated then') };
			Function.prototype.toString = () => 'mutated';
			String.prototype.split = String.prototype.slice = () => { throw new Error('mutated string') };
			globalThis.Error = globalThis.Object = globalThis.Array = globalThis.Map = globalThis.Set = globalThis.Reflect = undefined;
			const echoed = await tools.echo({ request: ['€', 1] });
			let failure;
			try { await tools.fail({}) } catch (error) {
				failure = { typed: error instanceof ToolCallError, name: error.name, toolName: error.toolName, message: error.message };
			}
			console.log({ a: [1] });
			return { echoed, failure, completion: { ok: true, amount: 42 } };
		`, tools(map[string]coderuntime.Func{
			"echo": func(_ context.Context, args any) (any, error) { return args, nil },
			"fail": func(context.Context, any) (any, error) { return nil, errors.New("nope") },
		}))
		wantValue(t, res, `{"echoed":{"request":["€",1]},"failure":{"typed":true,"name":"ToolCallError","toolName":"fail","message":"nope"},"completion":{"ok":true,"amount":42}}`)
		if diff := cmp.Diff([]string{"{ a: [ 1 ] }"}, res.Logs); diff != "" {
			t.Errorf("logs (-want +got):\n%s", diff)
		}
	})
}

func TestCompletion(t *testing.T) {
	rt := newRuntime(t, Config{InProcess: true})
	tests := []struct {
		program string
		value   string // "" = no value
		fail    string
	}{
		{"const x = 1", "", ""},
		{"return undefined", "", ""},
		{"return null", "null", ""},
		{"return 'str'", `"str"`, ""},
		{"return { a: [1, { b: null }], 'k\"': -1.5e-9 }", `{"a":[1,{"b":null}],"k\"":-1.5e-9}`, ""},
		{"return Object.assign(Object.create(null), { z: 1, a: 2 })", `{"z":1,"a":2}`, ""},
		{"return new Array(50000).fill(7).length", "50000", ""},
		{"return { f: () => 1 }", "", "program completion must be lossless JSON"},
		{"return -0", "", "program completion must be lossless JSON"},
		{"return [1, , 2]", "", "program completion must be lossless JSON"},
		{"return new Date(0)", "", "program completion must be lossless JSON"},
		{"return 1n", "", "program completion must be lossless JSON"},
		{"const c: any = []; c.push(c); return c", "", "program completion must be lossless JSON"},
		{"return { get g() { throw new Error('x') } }", "", "program completion must be lossless JSON"},
		{"return '\\ud800'", "", "program completion must be lossless JSON"},
		{"await null; return await Promise.resolve(5)", "5", ""},
		{"return await new Promise(r => setTimeout(() => r('timer'), 5))", `"timer"`, ""},
		{"let n = 0; const id = setInterval(() => { n++ }, 1); await new Promise<void>(r => { const check = () => n >= 3 ? r() : setTimeout(check, 1); check() }); clearInterval(id); const m = n; await new Promise(r => setTimeout(r, 10)); return m === n", "true", ""},
		{"let hit = false; const id = setTimeout(() => { hit = true }, 1); clearTimeout(id); await new Promise(r => setTimeout(r, 10)); return hit", "false", ""},
		{"let x = 0; queueMicrotask(() => { x = 1 }); await null; return x", "1", ""},
	}
	for _, tt := range tests {
		res := run(t, rt, tt.program, nil)
		switch {
		case tt.fail != "":
			wantFailure(t, res, coderuntime.FailureInvalidOutput, tt.fail)
		case tt.value == "":
			if res.Error != nil || res.HasValue {
				t.Errorf("%s: %+v, want no value", tt.program, res)
			}
		default:
			if res.Error != nil {
				t.Errorf("%s: %v", tt.program, res.Error)
				continue
			}
			if got := jsonOf(t, res.Value); got != tt.value {
				t.Errorf("%s = %s, want %s", tt.program, got, tt.value)
			}
		}
	}
}

// noComputeBudget keeps the compute budget out of tests about other limits: busy time is
// wall time spent inside JavaScript, so on a saturated machine a deep recursion or a heap
// hog can take a minute before its own limit ends it.
const noComputeBudget = 600000

func TestExceptions(t *testing.T) {
	forEachMode(t, Config{ComputeMs: noComputeBudget}, func(t *testing.T, rt *Runtime) {
		res := run(t, rt, "console.log('before');\n\n// The stack names the lines as written.\nfunction boom(): never { throw new Error('kaboom') }\n  boom()", nil)
		if res.Error == nil || res.Error.Kind != coderuntime.FailureException {
			t.Fatalf("result %+v", res)
		}
		if want := "Error: kaboom\n    at boom (program.ts:4:36)\n    at anonymous (program.ts:5:3)"; res.Error.Message != want {
			t.Errorf("message = %q, want %q", res.Error.Message, want)
		}
		if diff := cmp.Diff([]string{"before"}, res.Logs); diff != "" {
			t.Errorf("logs (-want +got):\n%s", diff)
		}
		wantFailure(t, run(t, rt, `throw "raw"`, nil), coderuntime.FailureException, "raw")
		wantFailure(t, run(t, rt, `throw { toString() { throw 1 } }`, nil), coderuntime.FailureException, "program threw an unrenderable value")
		wantFailure(t, run(t, rt, `setTimeout(() => { throw 'in a timer' }, 1); await new Promise(() => {})`, nil), coderuntime.FailureException, "in a timer")
		res = run(t, rt, `null.x`, nil)
		if res.Error == nil || !strings.HasPrefix(res.Error.Message, "TypeError: cannot read property 'x' of null") {
			t.Errorf("TypeError: %+v", res.Error)
		}
		res = run(t, rt, `function r(n: number): number { return r(n + 1) } r(0)`, nil)
		if res.Error == nil || res.Error.Kind != coderuntime.FailureException || !strings.HasPrefix(res.Error.Message, "InternalError: stack overflow\n") {
			t.Errorf("recursion: %+v", res.Error)
		} else if frames := strings.Count(res.Error.Message, "\n    at "); frames != 10 {
			t.Errorf("recursion stack has %d frames, want 10", frames)
		}
	})
}

func TestStripFailuresDoNotSpawn(t *testing.T) {
	rt := newRuntime(t, Config{})
	spawned := spawnCounter(rt)
	res := run(t, rt, "enum E { A }\nreturn E.A", nil)
	wantFailure(t, res, coderuntime.FailureException,
		"TypeScript enum declarations are not supported (line 1, column 1): only erasable type syntax is allowed; use a union of literal types or a plain object instead")
	res = run(t, rt, "return 1 +", nil)
	wantFailure(t, res, coderuntime.FailureException, "SyntaxError: Unexpected end of the program (line 1, column 11)")
	if n := spawned(); n != 0 {
		t.Errorf("%d workers spawned for programs that do not strip", n)
	}
	// A syntax error only QuickJS sees (esbuild accepts using declarations) is an exception too.
	res = run(t, rt, "using x = null", nil)
	if res.Error == nil || res.Error.Kind != coderuntime.FailureException || !strings.HasPrefix(res.Error.Message, "SyntaxError") {
		t.Errorf("using: %+v", res.Error)
	}
}

func TestOutputLedger(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		max     int64
		program string
		check   func(t *testing.T, res coderuntime.Result)
	}{
		{"euro fits 7", 7, `return "€"`, func(t *testing.T, res coderuntime.Result) { wantValue(t, res, `"€"`) }},
		{"euro fails 6", 6, `return "€"`, func(t *testing.T, res coderuntime.Result) {
			if res.Error == nil || res.Error.Kind != coderuntime.FailureOutputLimit {
				t.Fatalf("%+v", res)
			}
		}},
		{"combined fits 11", 11, `console.log("abc"); return "xy"`, func(t *testing.T, res coderuntime.Result) {
			wantValue(t, res, `"xy"`)
			if diff := cmp.Diff([]string{"abc"}, res.Logs); diff != "" {
				t.Error(diff)
			}
		}},
		{"combined fails 10", 10, `console.log("abc"); return "xy"`, func(t *testing.T, res coderuntime.Result) {
			if res.Error == nil || res.Error.Kind != coderuntime.FailureOutputLimit {
				t.Fatalf("%+v", res)
			}
		}},
		{"exception fits 11", 11, `console.log("abc"); throw "xy"`, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureException, "xy")
		}},
		{"exception fails 10", 10, `console.log("abc"); throw "xy"`, func(t *testing.T, res coderuntime.Result) {
			if res.Error == nil || res.Error.Kind != coderuntime.FailureOutputLimit {
				t.Fatalf("%+v", res)
			}
		}},
		{"log spam", 300, `for (let i = 0; i < 1000; i++) console.log("spam line", i); return 1`, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 300 bytes")
			if len(res.Logs) == 0 || res.Logs[0] != "spam line 0" {
				t.Errorf("logs = %q", res.Logs)
			}
		}},
		{"oversized first log keeps a prefix", 96, "console.log(`start-${`😀\"\\\\\\n`.repeat(100)}`); return null", func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 96 bytes")
			if len(res.Logs) != 1 || !strings.HasPrefix(res.Logs[0], "start-😀") {
				t.Errorf("logs = %q", res.Logs)
			}
		}},
		{"oversized return", 64, `return "y".repeat(10000)`, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 64 bytes")
		}},
		{"giant thrown stack", 64, `throw new Error("x".repeat(1000000))`, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 64 bytes")
			if len(res.Logs) != 0 {
				t.Errorf("logs = %q", res.Logs)
			}
		}},
		{"100 MB log flood", 1 << 20, `const s = "x".repeat(1 << 20); for (let i = 0; i < 100; i++) console.log(s); return 1`, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 1048576 bytes")
			if len(res.Logs) != 1 || len(res.Logs[0]) < 1<<20-64 {
				t.Errorf("kept %d logs", len(res.Logs))
			}
		}},
	}
	for _, tc := range cases {
		for _, inProcess := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/inprocess=%v", tc.name, inProcess), func(t *testing.T) {
				rt := newRuntime(t, Config{MaxOutputBytes: tc.max, InProcess: inProcess})
				res := run(t, rt, tc.program, nil)
				tc.check(t, res)
				if n := resultBytes(t, res); n > int(tc.max) {
					t.Errorf("result is %d bytes, cap %d", n, tc.max)
				}
			})
		}
	}
}

func TestOutputLimitBeforeWorker(t *testing.T) {
	rt := newRuntime(t, Config{MaxOutputBytes: 64})
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New(strings.Repeat("A", 1000)))
	res := runCtx(t, ctx, rt, "return 1", nil)
	wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 64 bytes")

	minimal := newRuntime(t, Config{MaxOutputBytes: 4})
	res = run(t, minimal, "enum E { A }\nreturn 1", nil)
	if res.Error == nil || res.Error.Kind != coderuntime.FailureOutputLimit || resultBytes(t, res) > 4 {
		t.Errorf("%+v", res)
	}
}

func TestAbort(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		ctx, cancel := context.WithCancelCause(testwait.Context(t))
		defer cancel(nil)
		started := make(chan struct{})
		go func() {
			// The program has streamed its log and is about to spin; whenever the
			// cancellation lands from here on, the run ends as aborted.
			select {
			case <-started:
				cancel(errors.New("user-cancel"))
			case <-ctx.Done():
			}
		}()
		res := runCtx(t, ctx, rt, `console.log('before'); await tools.started({}); for (;;) {}`, tools(map[string]coderuntime.Func{
			"started": func(context.Context, any) (any, error) { close(started); return nil, nil },
		}))
		wantFailure(t, res, coderuntime.FailureAbort, "user-cancel")
		// Output streamed before the kill survives it.
		if diff := cmp.Diff([]string{"before"}, res.Logs); diff != "" {
			t.Errorf("logs (-want +got):\n%s", diff)
		}
	})
}

func TestPreAbortedDoesNotSpawn(t *testing.T) {
	rt := newRuntime(t, Config{})
	spawned := spawnCounter(rt)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("too-late"))
	wantFailure(t, runCtx(t, ctx, rt, "return 1", nil), coderuntime.FailureAbort, "too-late")
	if spawned() != 0 {
		t.Error("a worker was spawned for a cancelled run")
	}
}

func TestComputeBudget(t *testing.T) {
	const budget = "compute budget exhausted (200ms busy)"
	programs := map[string]string{
		"hot loop behind a pending decoy call": `void tools.slow({}); for (;;) {}`,
		"runaway regular expression":           `/(a+)+$/.test('a'.repeat(40) + 'b')`,
		"loop in finally":                      `try { for (;;) {} } finally { for (;;) {} }`,
		"self-feeding microtasks":              `const f = () => Promise.resolve().then(f); f(); await new Promise(() => {})`,
		"hot timer":                            `setInterval(() => { const end = Date.now() + 20; while (Date.now() < end) {} }, 1); await new Promise(() => {})`,
	}
	for name, program := range programs {
		t.Run(name, func(t *testing.T) {
			forEachMode(t, Config{ComputeMs: 200, MaxWallMs: 30000}, func(t *testing.T, rt *Runtime) {
				res := run(t, rt, "console.log('start');\n"+program, tools(map[string]coderuntime.Func{
					"slow": func(ctx context.Context, _ any) (any, error) { <-ctx.Done(); return nil, ctx.Err() },
				}))
				wantFailure(t, res, coderuntime.FailureTimeout, budget)
				if diff := cmp.Diff([]string{"start"}, res.Logs); diff != "" {
					t.Errorf("logs (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// busyClock is the clock an in-process worker measures its busy time with: real time plus
// an offset the test moves. The worker reads it twice per call into JavaScript, on entry
// and on return, so an even number of readings means the worker is not inside JavaScript.
type busyClock struct {
	mu     sync.Mutex
	offset time.Duration
	reads  int
	// jumpAt, when positive, adds jump to the offset at that reading.
	jumpAt int
	jump   time.Duration
}

func (c *busyClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	if c.reads == c.jumpAt {
		c.offset += c.jump
	}
	return time.Now().Add(c.offset)
}

// idle reports whether the worker is outside JavaScript (has returned from every call in).
func (c *busyClock) idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads > 0 && c.reads%2 == 0
}

func (c *busyClock) advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// TestAwaitingIsNotBusy: time spent awaiting bindings does not count against the compute
// budget. While the program awaits, the test moves the worker's clock ten minutes on, far
// past the 30 s budget; a run that counted the wait would fail. The busy-time clock is a
// seam of in-process runs; a worker process runs the same accounting code.
func TestAwaitingIsNotBusy(t *testing.T) {
	clock := &busyClock{}
	rt := newRuntime(t, Config{ComputeMs: 30000, InProcess: true})
	rt.busyClock = clock.now
	rt.wallTimer = neverTimer
	calls := 0
	res := run(t, rt, `const a = await tools.slow({}); const b = await tools.slow({}); return [a, b]`, tools(map[string]coderuntime.Func{
		"slow": func(context.Context, any) (any, error) {
			testwait.Until(t, "the worker to return from JavaScript", clock.idle)
			clock.advance(10 * time.Minute)
			calls++
			return fmt.Sprintf("slow-%d", calls), nil
		},
	}))
	wantValue(t, res, `["slow-1","slow-2"]`)
}

// TestBusyTimeIsMeasured is the control of TestAwaitingIsNotBusy: ten minutes that pass on
// the same clock while the worker is inside JavaScript exhaust the budget.
func TestBusyTimeIsMeasured(t *testing.T) {
	clock := &busyClock{jumpAt: 2, jump: 10 * time.Minute}
	rt := newRuntime(t, Config{ComputeMs: 30000, InProcess: true})
	rt.busyClock = clock.now
	rt.wallTimer = neverTimer
	res := run(t, rt, `await tools.next({}); return 1`, tools(map[string]coderuntime.Func{
		"next": func(context.Context, any) (any, error) { return nil, nil },
	}))
	wantFailure(t, res, coderuntime.FailureTimeout, "compute budget exhausted (30000ms busy)")
}

// TestWallClock: the wall-clock ceiling ends a run that waits for something that never
// comes. The test reaches the ceiling itself, once the program is parked, so a loaded
// machine cannot make the ceiling fire before the program got there; TestHostilePeer's
// "silent" scenario checks the real timer.
func TestWallClock(t *testing.T) {
	tests := []struct {
		name    string
		program string
	}{
		{"binding that never answers", `await tools.never({}); return 1`},
		{"promise that never settles", `await tools.parked({}); await new Promise(() => {}); return 1`},
		{"long timer", `setTimeout(() => {}, 5); await tools.parked({}); await new Promise(r => setTimeout(r, 100000)); return 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachMode(t, Config{ComputeMs: 30000, MaxWallMs: 1234}, func(t *testing.T, rt *Runtime) {
				wall := newManualTimer()
				rt.wallTimer = wall.start
				var called, returned atomic.Bool
				res := run(t, rt, tt.program, tools(map[string]coderuntime.Func{
					"parked": func(context.Context, any) (any, error) { wall.fire(); return nil, nil },
					"never": func(ctx context.Context, _ any) (any, error) {
						called.Store(true)
						wall.fire()
						<-ctx.Done()
						if !errors.Is(context.Cause(ctx), coderuntime.ErrRunSettled) {
							t.Errorf("binding context cause = %v", context.Cause(ctx))
						}
						returned.Store(true)
						return nil, ctx.Err()
					},
				}))
				wantFailure(t, res, coderuntime.FailureTimeout, "wall-clock ceiling reached (1234ms)")
				if called.Load() != strings.Contains(tt.program, "never") {
					t.Errorf("the never-answering binding called: %v", called.Load())
				}
				if called.Load() && !returned.Load() {
					t.Error("Run returned before the in-flight binding call did")
				}
				if diff := cmp.Diff([]time.Duration{1234 * time.Millisecond}, wall.durations()); diff != "" {
					t.Errorf("wall timer (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestHeapLimit(t *testing.T) {
	forEachMode(t, Config{MaxHeapMB: 8, ComputeMs: noComputeBudget}, func(t *testing.T, rt *Runtime) {
		for _, program := range []string{
			`const hog = []; for (;;) hog.push(new Array(1e6).fill(1));`,
			`const hog = []; for (;;) hog.push({ a: [1, 2, 3] });`,
			`let s = 'x'; for (;;) s = s + s;`,
			`setTimeout(() => { const hog = []; for (;;) hog.push('x'.repeat(1e5) + hog.length) }, 1); await new Promise(() => {})`,
		} {
			res := run(t, rt, program, nil)
			// The heap limit ends the run like a dead worker, and the host stays healthy.
			if res.Error == nil || (res.Error.Message != "worker error: JavaScript heap out of memory (limit 8 MiB)" &&
				!strings.HasPrefix(res.Error.Message, "InternalError: string too long")) {
				t.Errorf("%s: %+v", program, res.Error)
			}
		}
		wantValue(t, run(t, rt, `return "alive"`, nil), `"alive"`)
	})
}

func TestRunsAreIsolated(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		run(t, rt, `globalThis.leak = "value"; Array.prototype.extra = 1; return 1`, nil)
		wantValue(t, run(t, rt, `return [typeof globalThis.leak, typeof [].extra]`, nil), `["undefined","undefined"]`)
	})
}

func TestWorkerHasEmptyEnvironment(t *testing.T) {
	rt := newRuntime(t, Config{})
	wantValue(t, run(t, rt, `return [typeof require, typeof std, typeof os, typeof fetch, typeof Buffer]`, nil),
		`["undefined","undefined","undefined","undefined","undefined"]`)
	// Of Node's process, only stdout, stderr, env (empty) and exit exist.
	wantValue(t, run(t, rt, `return [Object.keys(process).sort(), Object.keys(process.env), process.env.HOME === undefined,
		typeof process.argv, typeof process.cwd, typeof process.stdin, Object.keys(process.stdout)]`, nil),
		`[["env","exit","stderr","stdout"],[],true,"undefined","undefined","undefined",["write"]]`)
}

// TestProcess checks the Node process surface: stream writes are log entries exactly as
// written, and process.exit ends the run as a worker that exited with that code.
func TestProcess(t *testing.T) {
	tests := []struct {
		name    string
		program string
		logs    []string
		value   string // the completion's JSON, "" when the run fails
		kind    coderuntime.FailureKind
		message string
	}{
		{name: "writes are entries in order with console output",
			program: `console.log('a'); process.stdout.write('raw-out\n'); process.stderr.write('err'); console.warn('b'); return 1`,
			logs:    []string{"a", "raw-out\n", "err", "b"}, value: `1`},
		{name: "a write is not split at newlines nor joined with the next",
			program: `process.stdout.write('x\ny'); process.stdout.write('z'); process.stdout.write('')`,
			logs:    []string{"x\ny", "z", ""}},
		{name: "non-string chunks are converted with String",
			program: `process.stdout.write(42); process.stdout.write({}); process.stdout.write([1, 2]); process.stdout.write(null); process.stdout.write()`,
			logs:    []string{"42", "[object Object]", "1,2", "null", "undefined"}},
		{name: "write returns true",
			program: `return [process.stdout.write('a'), process.stderr.write('b')]`,
			logs:    []string{"a", "b"}, value: `[true,true]`},
		{name: "the callback runs after the write, with null, in either position",
			program: `const got = [];
				await new Promise(r => process.stdout.write('one', e => { got.push(e); r(); }));
				await new Promise(r => process.stderr.write('two', 'utf8', e => { got.push(e); r(); }));
				process.stdout.write('three', 'utf8');
				return got`,
			logs: []string{"one", "two", "three"}, value: `[null,null]`},
		{name: "the callback is asynchronous",
			program: `const order = []; process.stdout.write('w', () => order.push('cb')); order.push('after'); await null; await null; return order`,
			logs:    []string{"w"}, value: `["after","cb"]`},
		{name: "env is an empty object the program may use",
			program: `process.env.X = '1'; return [typeof process.env, process.env.X, process.env.PATH === undefined]`,
			value:   `["object","1",true]`},
		{name: "exit with a code",
			program: `process.exit(7)`,
			logs:    []string{}, kind: coderuntime.FailureWorkerExit, message: "worker exited with code 7 before completing"},
		{name: "exit keeps the logs written before it and runs nothing after",
			program: `console.log('before'); process.exit(3); console.log('after'); return 1`,
			logs:    []string{"before"}, kind: coderuntime.FailureWorkerExit, message: "worker exited with code 3 before completing"},
		{name: "exit cannot be caught",
			program: `try { process.exit(1) } catch (e) { console.log('caught') } return 'continued'`,
			logs:    []string{}, kind: coderuntime.FailureWorkerExit, message: "worker exited with code 1 before completing"},
		{name: "exit without a code is code 0",
			program: `await null; process.exit()`,
			logs:    []string{}, kind: coderuntime.FailureWorkerExit, message: "worker exited with code 0 before completing"},
		{name: "exit from a timer",
			program: `setTimeout(() => process.exit(2), 1); await new Promise(() => {})`,
			logs:    []string{}, kind: coderuntime.FailureWorkerExit, message: "worker exited with code 2 before completing"},
		{name: "exit with an integer string and a negative code",
			program: `process.exit('-4')`,
			logs:    []string{}, kind: coderuntime.FailureWorkerExit, message: "worker exited with code -4 before completing"},
		{name: "exit with a fraction is a RangeError",
			program: `process.exit(1.5)`,
			logs:    []string{}, kind: coderuntime.FailureException, message: "RangeError: The value of \"code\" is out of range. It must be an integer. Received 1.5"},
		{name: "exit with a boolean is a TypeError the program may catch",
			program: `try { process.exit(true) } catch (e) { return String(e) }`,
			value:   `"TypeError: The \"code\" argument must be of type number. Received type boolean"`},
		{name: "a binding named process shadows it",
			program: `return typeof process.exit`,
			value:   `"undefined"`},
	}
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		for _, tt := range tests {
			var bindings []coderuntime.Namespace
			if tt.name == "a binding named process shadows it" {
				bindings = []coderuntime.Namespace{{Global: "process", Functions: map[string]coderuntime.Func{
					"other": func(context.Context, any) (any, error) { return nil, nil }}}}
			}
			res := run(t, rt, tt.program, bindings)
			if tt.value != "" {
				wantValue(t, res, tt.value)
			} else if tt.kind != "" {
				if res.Error == nil || res.Error.Kind != tt.kind || !strings.HasPrefix(res.Error.Message, tt.message) {
					t.Errorf("%s: failure = %+v, want %s: %q", tt.name, res.Error, tt.kind, tt.message)
				}
			} else if res.Error != nil || res.HasValue {
				t.Errorf("%s: result = %+v, want undefined", tt.name, res)
			}
			if tt.logs == nil {
				tt.logs = []string{}
			}
			if diff := cmp.Diff(tt.logs, res.Logs); diff != "" {
				t.Errorf("%s: logs (-want +got):\n%s", tt.name, diff)
			}
		}
	})
}

func TestBindingCallAfterSettleIsNotDispatched(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		var calls atomic.Int32
		res := run(t, rt, `
			(async () => { await null; await null; await null; tools.spy({}) })();
			setTimeout(() => tools.spy({}), 0);
			try { return 1 } finally {
				Promise.resolve().then(function again(): any { return Promise.resolve().then(again) });
				setInterval(() => { for (;;) {} }, 0);
			}
		`, tools(map[string]coderuntime.Func{"spy": func(context.Context, any) (any, error) { calls.Add(1); return nil, nil }}))
		wantValue(t, res, "1")
		if n := calls.Load(); n != 0 {
			t.Errorf("spy called %d times after the program settled", n)
		}
	})
}

func TestConcurrentBindingCalls(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		const n = 20
		var arrived sync.WaitGroup
		arrived.Add(n)
		all := make(chan struct{})
		go func() { arrived.Wait(); close(all) }()
		res := run(t, rt, `
			const ids = Array.from({ length: 20 }, (_, i) => i);
			const out = await Promise.all(ids.map(i => tools.barrier({ i })));
			return out.every((v, i) => v === i * 2);
		`, tools(map[string]coderuntime.Func{"barrier": func(ctx context.Context, args any) (any, error) {
			arrived.Done()
			// Every call is in flight at once, or this waits until the run ends.
			select {
			case <-all:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			i, _ := args.(*jsonv.Object).Get("i")
			return i.(float64) * 2, nil
		}}))
		wantValue(t, res, "true")
	})
}

// Binding calls run concurrently, but each carries its place in the program's call order.
func TestBindingCallsCarryProgramOrder(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		const n = 20
		var mu sync.Mutex
		seqs := make(map[float64]uint64, n)
		record := func(ctx context.Context, args any) (any, error) {
			seq, ok := coderuntime.CallSeq(ctx)
			if !ok {
				return nil, errors.New("no sequence number")
			}
			i, _ := args.(*jsonv.Object).Get("i")
			mu.Lock()
			defer mu.Unlock()
			if _, dup := seqs[i.(float64)]; dup {
				return nil, fmt.Errorf("call %v numbered twice", i)
			}
			seqs[i.(float64)] = seq
			return nil, nil
		}
		// A call the worker refuses (undefined arguments) never reaches the host and takes
		// no number; the calls of a second batch follow the first.
		res := run(t, rt, `
			const batch = (from: number) => Array.from({ length: 10 }, (_, k) => tools.record({ i: from + k }));
			const first = batch(0);
			let refused = "";
			try { await tools.record(undefined as never) } catch (e) { refused = (e as Error).message }
			await Promise.all([...first, ...batch(10)]);
			return refused;
		`, tools(map[string]coderuntime.Func{"record": record}))
		wantValue(t, res, `"binding arguments must be lossless JSON"`)
		mu.Lock()
		defer mu.Unlock()
		want := make(map[float64]uint64, n)
		for i := range n {
			want[float64(i)] = uint64(i)
		}
		if diff := cmp.Diff(want, seqs); diff != "" {
			t.Errorf("sequence numbers by argument (-want +got):\n%s", diff)
		}
	})
}

func TestInvalidBindingsAreMisuse(t *testing.T) {
	rt := newRuntime(t, Config{})
	_, err := rt.Run(context.Background(), coderuntime.Request{Program: "return 1", Bindings: []coderuntime.Namespace{{Global: "console"}}})
	if err == nil || err.Error() != `reserved binding global "console"` || !errors.Is(err, coderuntime.ErrInvalidBinding) {
		t.Errorf("Run = %v", err)
	}
	res := run(t, rt, `return typeof ToolCallError`, []coderuntime.Namespace{{Global: "ToolCallError", Functions: map[string]coderuntime.Func{}}})
	wantValue(t, res, `"object"`)
}

func TestCloseAbortsInFlightRuns(t *testing.T) {
	for _, inProcess := range []bool{false, true} {
		t.Run(fmt.Sprintf("inprocess=%v", inProcess), func(t *testing.T) {
			t.Parallel()
			cfg := Config{InProcess: inProcess}
			if !inProcess {
				cfg.WorkerCommand = []string{testExe(t), WorkerArg}
			}
			rt, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var pid atomic.Int64
			rt.onSpawn = func(p int) { pid.Store(int64(p)) }
			started := make(chan struct{})
			done := make(chan coderuntime.Result)
			var bindingReturned atomic.Bool
			go func() {
				res, _ := rt.Run(context.Background(), coderuntime.Request{
					Program: `void tools.wait({}); await tools.started({}); for (;;) {}`,
					Bindings: tools(map[string]coderuntime.Func{
						"started": func(context.Context, any) (any, error) { close(started); return nil, nil },
						"wait": func(ctx context.Context, _ any) (any, error) {
							<-ctx.Done()
							bindingReturned.Store(true)
							return nil, nil
						},
					}),
				})
				done <- res
			}()
			testwait.Recv(t, started, "the program to start")
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
			// Close returned: the run is over, its worker and its binding calls have stopped.
			if !bindingReturned.Load() {
				t.Error("Close returned before the in-flight binding call did")
			}
			if p := pid.Load(); p != 0 {
				assertGone(t, int(p))
			}
			wantFailure(t, testwait.Recv(t, done, "the disposed run's result"), coderuntime.FailureAbort, "runtime disposed")
			if _, err := rt.Run(context.Background(), coderuntime.Request{Program: "return 1"}); !errors.Is(err, coderuntime.ErrDisposed) || err.Error() != "run() after disposal" {
				t.Errorf("Run after Close = %v", err)
			}
			if err := rt.Close(); err != nil {
				t.Errorf("second Close = %v", err)
			}
		})
	}
}

func TestConcurrentRuns(t *testing.T) {
	rt := newRuntime(t, Config{})
	var wg sync.WaitGroup
	// Every run's binding call waits until all of them are in flight: the runs overlap.
	const n = 6
	all := testwait.Barrier(t, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := rt.Run(context.Background(), coderuntime.Request{
				Program: fmt.Sprintf("console.log('run %d'); return await tools.id(%d)", i, i),
				Bindings: tools(map[string]coderuntime.Func{"id": func(ctx context.Context, a any) (any, error) {
					return a, all(ctx)
				}}),
			})
			if err != nil || res.Error != nil || jsonOf(t, res.Value) != fmt.Sprint(i) || len(res.Logs) != 1 {
				t.Errorf("run %d: %+v %v", i, res, err)
			}
		}()
	}
	wg.Wait()
}
