package starlark

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
		{Config{MaxOutputBytes: -5}, "config.maxOutputBytes must be a positive number, got -5"},
		{Config{MaxOutputBytes: 3}, "config.maxOutputBytes must be a safe integer of at least 4, got 3"},
		{Config{MaxOutputBytes: 1 << 53}, "config.maxOutputBytes must be a safe integer of at least 4, got 9007199254740992"},
		{Config{MaxWallMs: 2147483648}, "config.maxWallMs must be at most 2147483647 (Node clamps a longer setTimeout delay to 1ms), got 2147483648"},
		{Config{MaxWallMs: 1e22}, "config.maxWallMs must be at most 2147483647 (Node clamps a longer setTimeout delay to 1ms), got 1e+22"},
		{Config{MaxCallDepth: -1}, "config.maxCallDepth must be a positive number, got -1"},
		{Config{MaxCallDepth: 100001}, "config.maxCallDepth must be at most 100000, got 100001"},
		{Config{MaxHeapMB: -0.5}, "config.maxHeapMb must be a positive number, got -0.5"},
		{Config{MaxHeapMB: 1<<20 + 1}, "config.maxHeapMb must be at most 1048576, got 1048577"},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg)
		if err == nil || err.Error() != tt.want {
			t.Errorf("New(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
	}
	for _, ok := range []Config{{MaxWallMs: 2147483647}, {MaxOutputBytes: 4}, {ComputeMs: 0.5}, {MaxSteps: 1}, {MaxCallDepth: 100000}} {
		if _, err := New(ok); err != nil {
			t.Errorf("New(%+v) = %v", ok, err)
		}
	}
	rt, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{ComputeMs: 60000, MaxWallMs: 600000, MaxOutputBytes: 67108864, MaxCallDepth: 10000, MaxHeapMB: 512}
	if diff := cmp.Diff(want, rt.cfg); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestDescriptors(t *testing.T) {
	rt := newRuntime(t, Config{})
	if rt.Language() != "python" || rt.Isolation() != "in-process (starlark)" {
		t.Errorf("descriptors: %s %s", rt.Language(), rt.Isolation())
	}
}

func TestPrograms(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	tests := []struct {
		name    string
		program string
		value   string // compact JSON; "" for no value
		logs    []string
	}{
		{"arithmetic", "return 1 + 1", "2", nil},
		{"empty program", "", "", nil},
		{"only comments", "# nothing\n\n   # at all\n", "", nil},
		{"no return", "x = 1", "", nil},
		{"return None", "return None", "", nil},
		{"None inside", "return [None, {'a': None}]", `[null,{"a":null}]`, nil},
		{"dict order kept", `return {"b": 1, "a": 2, "c": {"z": 1, "y": 2}}`, `{"b":1,"a":2,"c":{"z":1,"y":2}}`, nil},
		{"tuple is an array", "return (1, 'two', [3])", `[1,"two",[3]]`, nil},
		{"float", "return 2.5 * 2, 1 / 4", `[5,0.25]`, nil},
		{"exact big int", "return 1 << 60", "1152921504606847000", nil},
		{"unicode", `return "h\u00e9llo €😀"`, `"héllo €😀"`, nil},
		{"while and break", "n = 0\nwhile True:\n    n += 1\n    if n == 10:\n        break\nreturn n", "10", nil},
		{"top-level for and if", "t = 0\nfor i in range(5):\n    if i % 2 == 0:\n        t += i\nreturn t", "6", nil},
		{"return inside a loop", "for i in range(10):\n    if i == 3:\n        return i\nreturn -1", "3", nil},
		{"set", "return sorted(set([3, 1, 3, 2]))", "[1,2,3]", nil},
		{"recursion", "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nreturn fib(15)", "610", nil},
		{"closure over program locals", "base = 10\ndef add(x):\n    return base + x\nreturn add(5)", "15", nil},
		{"program locals reassign", "x = 1\nx = 2\nreturn x", "2", nil},
		{"line continuation", "x = 1 + \\\n    2\nreturn x", "3", nil},
		{"brackets span lines", "x = [\n  1,\n    2,\n]\nreturn x", "[1,2]", nil},
		{"lambda", "f = lambda x: x * 2\nreturn f(4)", "8", nil},
		{"comprehension", "return [x * x for x in range(4) if x]", "[1,4,9]", nil},
		{"string methods", `return "a,b".split(",") + ["X".lower(), "{}-{}".format(1, 2), "%s=%d" % ("k", 3)]`, `["a","b","x","1-2","k=3"]`, nil},
		{"print", `print("hello", 1, None, True, [1, "x"], {"k": 2.5})`, "", []string{`hello 1 None True [1, "x"] {"k": 2.5}`}},
		{"print per call", "for i in range(3):\n    print('line', i)", "", []string{"line 0", "line 1", "line 2"}},
		{"print sep end flush", `print("a", "b", sep="-", end="!", flush=True)`, "", []string{"a-b!"}},
		{"print end newline trimmed once", `print("a\n")`, "", []string{"a\n"}},
		{"print nothing", `print()`, "", []string{""}},
		{"print None sep", `print("a", "b", sep=None, end=None)`, "", []string{"a b"}},
		{"sum", "return sum([1, 2, 3]), sum([0.5, 0.25], 1), sum([], start=7)", "[6,1.75,7]", nil},
		{"math", "return math.floor(2.7), math.pow(2, 10), math.sqrt(16)", "[2,1024,4]", nil},
		{"json", `s = json.dumps({"a": [1, 2.5, None]})
return s, json.loads('{"x": [1, 2.5, "y", null, true]}'), json.dumps([1], indent=2), json.dumps({"k": 1}, indent="\t")`,
			`["{\"a\":[1,2.5,null]}",{"x":[1,2.5,"y",null,true]},"[\n  1\n]","{\n\t\"k\": 1\n}"]`, nil},
		{"imports of predeclared modules", "import asyncio\nimport json, math\nif True:\n    import math  # fine\nreturn json.loads('1')", "1", nil},
		{"gather", "return asyncio.gather(1, 'a', [2])", `[1,"a",[2]]`, nil},
		{"gather return_exceptions False", "return asyncio.gather(1, return_exceptions=False)", `[1]`, nil},
		{"async def and await", "async def double(x):\n    return x * 2\nreturn await double(await double(1))", "4", nil},
		{"await in expression", "x = [await (1), 2]\nreturn x", "[1,2]", nil},
		{"await inside strings and comments is kept", "# await this\ns = 'await x'\nt = \"\"\"\nawait y\"\"\"\nreturn [s, t, r'await\\'', b'await' != None]", `["await x","\nawait y","await\\'",true]`, nil},
		{"attribute named await is kept", "d = {'await': 1}\nreturn d['await']", "1", nil},
		{"indented program", "    x = 1\n    if x:\n        x += 1\n    return x\n", "2", nil},
		{"indented program keeps string continuation lines", "    s = '''a\n  b\n    c'''\n    return s\n", `"a\n  b\n    c"`, nil},
		{"tab-indented program", "\tx = [1,\n2]\n\tif x:\n\t\treturn x\n", "[1,2]", nil},
		{"tab blocks", "if True:\n\tx = 1\nreturn x", "1", nil},
		{"CRLF line ends", "x = 1\r\nif x:\r\n    x = 2\r\nreturn x\r\n", "2", nil},
		{"CR line ends", "x = 1\rreturn x\r", "1", nil},
		{"error class bound", "return str(ToolCallError), ToolCallError.__name__, ToolCallError.member_name_property", `["<error class ToolCallError>","ToolCallError","toolName"]`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, rt, tt.program, tools(nil))
			if tt.value == "" {
				if res.Error != nil || res.HasValue {
					t.Fatalf("want no value, got %+v", res)
				}
			} else {
				wantValue(t, res, tt.value)
			}
			if tt.logs == nil {
				tt.logs = []string{}
			}
			if diff := cmp.Diff(tt.logs, res.Logs); diff != "" {
				t.Errorf("logs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBindings(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	var calls []string
	var mu sync.Mutex
	echo := func(name string) coderuntime.Func {
		return func(_ context.Context, args any) (any, error) {
			mu.Lock()
			calls = append(calls, name)
			mu.Unlock()
			return args, nil
		}
	}
	ns := []coderuntime.Namespace{
		{Global: "tools", ErrorClass: toolCallError(), Functions: map[string]coderuntime.Func{
			"echo": echo("echo"), "my-tool": echo("my-tool"), "__proto__": echo("__proto__"),
			"constructor": echo("constructor"), "": echo(""), "def": echo("def"), "_private": echo("_private"),
			"ünï": echo("ünï"),
		}},
		{Global: "other", Functions: map[string]coderuntime.Func{"ping": func(context.Context, any) (any, error) { return "pong", nil }}},
	}
	tests := []struct{ program, want string }{
		{`return await tools.echo({"a": 1})`, `{"a":1}`},
		{`return await tools["my-tool"]([1, 2])`, `[1,2]`},
		{`return tools["__proto__"]("p"), tools.__proto__("q"), tools.constructor(1), tools[""](None), tools["def"](True)`, `["p","q",1,null,true]`},
		{`return tools._private(0), tools["ünï"]("u")`, `[0,"u"]`},
		{`return tools.echo(args={"k": "v"})`, `{"k":"v"}`},
		{`return other.ping({})`, `"pong"`},
		{`return "echo" in tools, "nope" in tools, "my-tool" in tools`, `[true,false,true]`},
		{`return dir(tools)`, `["","__proto__","_private","constructor","def","echo","my-tool","ünï"]`},
		{`return hasattr(tools, "echo"), hasattr(tools, "nope"), getattr(tools, "nope", 7)`, `[true,false,7]`},
		{`return type(tools), type(tools.echo), str(tools.echo), str(tools)`, `["namespace","binding","<binding \"tools.echo\">","<namespace tools>"]`},
	}
	for _, tt := range tests {
		t.Run(tt.program, func(t *testing.T) {
			wantValue(t, run(t, rt, tt.program, ns), tt.want)
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) == 0 {
		t.Error("no binding was called")
	}
}

func TestBindingCallsRunInProgramOrder(t *testing.T) {
	rt := newRuntime(t, Config{})
	var order []float64
	res := run(t, rt, `
results = asyncio.gather(*[tools.record(i) for i in range(5)])
return results`, tools(map[string]coderuntime.Func{"record": func(_ context.Context, args any) (any, error) {
		order = append(order, args.(float64))
		return args.(float64) * 10, nil
	}}))
	wantValue(t, res, "[0,10,20,30,40]")
	if diff := cmp.Diff([]float64{0, 1, 2, 3, 4}, order); diff != "" {
		t.Errorf("call order (-want +got):\n%s", diff)
	}
}

// Starlark binding calls are sequential; they are numbered in that order all the same.
func TestBindingCallsCarryProgramOrder(t *testing.T) {
	rt := newRuntime(t, Config{})
	var seqs []uint64
	res := run(t, rt, `
for i in range(3):
    tools.record(i)
return [tools.record(3), tools.other(4)]`, tools(map[string]coderuntime.Func{
		"record": func(ctx context.Context, args any) (any, error) {
			n, ok := coderuntime.CallSeq(ctx)
			if !ok {
				return nil, errors.New("no sequence number")
			}
			seqs = append(seqs, n)
			return float64(n), nil
		},
		"other": func(ctx context.Context, args any) (any, error) {
			n, _ := coderuntime.CallSeq(ctx)
			seqs = append(seqs, n)
			return float64(n), nil
		},
	}))
	wantValue(t, res, "[3,4]")
	if diff := cmp.Diff([]uint64{0, 1, 2, 3, 4}, seqs); diff != "" {
		t.Errorf("sequence numbers (-want +got):\n%s", diff)
	}
}

func TestBindingFailures(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	fns := map[string]coderuntime.Func{
		"fail":     func(context.Context, any) (any, error) { return nil, errors.New("no such file: x.txt") },
		"empty":    func(context.Context, any) (any, error) { return nil, errors.New("") },
		"panics":   func(context.Context, any) (any, error) { panic("kaboom") },
		"nan":      func(context.Context, any) (any, error) { return math.NaN(), nil },
		"chan":     func(context.Context, any) (any, error) { return make(chan int), nil },
		"negzero":  func(context.Context, any) (any, error) { return math.Copysign(0, -1), nil },
		"goodmap":  func(context.Context, any) (any, error) { return map[string]any{"b": 1, "a": []any{true}}, nil },
		"exotic-1": func(context.Context, any) (any, error) { return nil, errors.New("exotic failed") },
	}
	tests := []struct {
		name, program, want string
		bindings            []coderuntime.Namespace
	}{
		{"host error", "x = 1\nawait tools.fail({})\nreturn x", "Traceback (most recent call last):\n  program.star:2:17: in <program>\nToolCallError: fail: no such file: x.txt", nil},
		{"empty message", "tools.empty({})", "Traceback (most recent call last):\n  program.star:1:12: in <program>\nToolCallError: empty: ", nil},
		{"panic", "tools.panics({})", "Traceback (most recent call last):\n  program.star:1:13: in <program>\nToolCallError: panics: binding panicked: kaboom", nil},
		{"NaN result", "tools.nan({})", "Traceback (most recent call last):\n  program.star:1:10: in <program>\nToolCallError: nan: binding resolution must be lossless JSON", nil},
		{"channel result", "tools.chan({})", "Traceback (most recent call last):\n  program.star:1:11: in <program>\nToolCallError: chan: binding resolution must be lossless JSON", nil},
		{"-0 result", "tools.negzero({})", "Traceback (most recent call last):\n  program.star:1:14: in <program>\nToolCallError: negzero: binding resolution must be lossless JSON", nil},
		{"exotic name", `tools["exotic-1"]({})`, "Traceback (most recent call last):\n  program.star:1:18: in <program>\nToolCallError: exotic-1: exotic failed", nil},
		{"in a nested function", "def helper(p):\n    return await tools.fail({'path': p})\n\nhelper('a')",
			"Traceback (most recent call last):\n  program.star:4:7: in <program>\n  program.star:2:28: in helper\nToolCallError: fail: no such file: x.txt", nil},
		{"namespace without error class", "plain.fail({})", "Traceback (most recent call last):\n  program.star:1:11: in <program>\nError: fail: no such file: x.txt",
			[]coderuntime.Namespace{{Global: "plain", Functions: fns}}},
		{"custom error class", "mine.fail({})", "Traceback (most recent call last):\n  program.star:1:10: in <program>\nMineError: fail: no such file: x.txt",
			[]coderuntime.Namespace{{Global: "mine", Functions: fns, ErrorClass: &coderuntime.ErrorClass{Name: "MineError", MemberNameProperty: "fn"}}}},
		{"unknown attribute", "tools.nope({})", "Traceback (most recent call last):\n  program.star:1:6: in <program>\nError: unknown binding \"tools.nope\"", nil},
		{"unknown subscript", `tools["nope"]({})`, "Traceback (most recent call last):\n  program.star:1:6: in <program>\nError: key \"nope\" not in namespace", nil},
		{"too many arguments", "tools.fail({}, {})", "Traceback (most recent call last):\n  program.star:1:11: in <program>\nError in fail: tools.fail takes one argument (the arguments dict), got 2 positional and 0 keyword arguments", nil},
		{"unknown keyword", "tools.fail(path='x')", "Traceback (most recent call last):\n  program.star:1:11: in <program>\nError in fail: tools.fail takes one argument (the arguments dict), got 0 positional and 1 keyword arguments", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.bindings
			if b == nil {
				b = tools(fns)
			}
			wantFailure(t, run(t, rt, tt.program, b), coderuntime.FailureException, tt.want)
		})
	}
	wantValue(t, run(t, rt, "return tools.goodmap({})", tools(fns)), `{"a":[true],"b":1}`)
}

func TestBindingArgumentsMustBeLossless(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	var called atomic.Int32
	bindings := tools(map[string]coderuntime.Func{"spy": func(context.Context, any) (any, error) { called.Add(1); return nil, nil }})
	for _, args := range []string{
		"", "lambda: 1", "{1: 2}", "float('nan')", "float('inf')", "-0.0", "(1 << 64) + 1", "set([1])",
		"b'bytes'", "range(3)", "tools", "tools.spy", "[1, [2, lambda: 3]]", "{'a': {'b': set()}}",
		"'€'[:1]", "cyclic", "{'k': cyclic}", "ToolCallError",
	} {
		t.Run(args, func(t *testing.T) {
			program := "cyclic = [1]\ncyclic.append(cyclic)\ntools.spy(" + args + ")"
			res := run(t, rt, program, bindings)
			if res.Error == nil || res.Error.Kind != coderuntime.FailureException ||
				!strings.HasSuffix(res.Error.Message, "\nToolCallError: spy: binding arguments must be lossless JSON") {
				t.Fatalf("%+v", res.Error)
			}
		})
	}
	if n := called.Load(); n != 0 {
		t.Errorf("the binding was called %d times with non-lossless arguments", n)
	}
	// Shared (acyclic) references and big ints a float64 holds exactly are fine.
	res := run(t, rt, "shared = [1]\nreturn tools.echo([shared, shared, {'s': shared}, 1 << 62, -(1 << 53) - 2])", tools(map[string]coderuntime.Func{
		"echo": func(_ context.Context, args any) (any, error) { return args, nil },
	}))
	wantValue(t, res, `[[1],[1],{"s":[1]},4611686018427388000,-9007199254740994]`)
}

func TestBindingValuesCrossLosslessly(t *testing.T) {
	rt := newRuntime(t, Config{})
	payload, err := jsonv.ParseString(`{"z":1,"a":[1.5,-2,null,true,false,"s",{"n":{}},[]],"big":1e20,"neg":-9007199254740992,"tiny":5e-324,"u":"€\u0000\n"}`)
	if err != nil {
		t.Fatal(err)
	}
	var got any
	res := run(t, rt, `
v = tools.give({})
types = [type(v["z"]), type(v["a"][0]), type(v["big"]), type(v["neg"]), type(v["tiny"])]
tools.take(v)
return {"types": types, "keys": list(v.keys())}`, tools(map[string]coderuntime.Func{
		"give": func(context.Context, any) (any, error) { return payload, nil },
		"take": func(_ context.Context, args any) (any, error) { got = args; return nil, nil },
	}))
	wantValue(t, res, `{"types":["int","float","float","int","float"],"keys":["z","a","big","neg","tiny","u"]}`)
	if !jsonv.Equal(got, payload) || jsonOf(t, got) != jsonOf(t, payload) {
		t.Errorf("round trip changed the value:\n got %s\nwant %s", jsonOf(t, got), jsonOf(t, payload))
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	const invalid = "program completion must be lossless JSON"
	for _, program := range []string{
		"return lambda: 1", "return tools", "return tools.echo", "return set()", "return float('nan')", "return -0.0",
		"return {1: 'a'}", "return b'x'", "return range(2)", "return '€'[:1]", "return (1 << 64) + 1",
		"x = []\nx.append(x)\nreturn x", "d = {}\nd['d'] = [d]\nreturn d", "return [1, {'f': len}]", "return ToolCallError",
	} {
		t.Run(program, func(t *testing.T) {
			wantFailure(t, run(t, rt, program, tools(map[string]coderuntime.Func{"echo": func(context.Context, any) (any, error) { return nil, nil }})), coderuntime.FailureInvalidOutput, invalid)
		})
	}
	// Deep nesting is converted without recursion.
	res := run(t, rt, "x = 1\nfor i in range(5000):\n    x = [x]\nreturn x", nil)
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	depth := 0
	for v := res.Value; ; depth++ {
		a, ok := v.([]any)
		if !ok {
			break
		}
		v = a[0]
	}
	if depth != 5000 {
		t.Errorf("depth = %d", depth)
	}
}

func TestSyntaxErrors(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	tests := []struct{ program, want string }{
		{"x = (1", "program.star:1:7: got end of file, want ')'"},
		{"try:\n    x = 1\nexcept Exception:\n    pass", "program.star:1:1: got try, want primary expression\nStarlark has no try/except: a failed tool call stops the program."},
		{"import os", "program.star:1:1: got import, want primary expression\nStarlark has no import: asyncio, json and math are predeclared (`import asyncio`, `import json` and `import math` are accepted and do nothing); nothing else can be imported."},
		{"import json as j", "program.star:1:1: got import, want primary expression\nStarlark has no import: asyncio, json and math are predeclared (`import asyncio`, `import json` and `import math` are accepted and do nothing); nothing else can be imported."},
		{"from asyncio import gather", "program.star:1:1: got from, want primary expression\nStarlark has no import: asyncio, json and math are predeclared (`import asyncio`, `import json` and `import math` are accepted and do nothing); nothing else can be imported."},
		{"class A:\n    pass", "program.star:1:1: got class, want primary expression\nStarlark has no classes: use dicts, lists and functions."},
		{"x = 1\nraise ValueError('x')", "program.star:2:1: got raise, want primary expression\nStarlark has no raise: call fail(\"message\") to stop the program with an error."},
		{"x = None\ny = x is None", "program.star:2:9: got is, want newline\nStarlark has no `is` operator: compare with == (x == None)."},
		{"x = 2 ** 8", "program.star:1:9: got '**', want newline\nStarlark has no ** operator and no {**d} unpacking: use math.pow(x, y) and dict(a, **b)."},
		{"x: int = 1", "program.star:1:3: got ':', want newline\nStarlark has no type annotations: write `x = 1` and `def f(x):`."},
		{"x = f'{}'", "program.star:1:7: f-string: empty expression not allowed"},
		{"y = 1\nx = await F'{y!x}'", "program.star:2:13: f-string: invalid conversion character: expected 's', 'r', or 'a'"},
		{"x = f'{1 +}'", "program.star:1:11: got ')', want primary expression"},
		{"return undefined_name", "program.star:1:8: undefined: undefined_name"},
		{"return round(2.5)", "program.star:1:8: undefined: round\nPython's round is not available in Starlark: use math.round(x), math.floor(x) or int(x)."},
		{"return isinstance(1, int)", "program.star:1:8: undefined: isinstance\nPython's isinstance is not available in Starlark: compare type(x) == \"int\" (or \"float\", \"string\", \"list\", \"dict\", \"tuple\", \"bool\", \"NoneType\")."},
		{"return eval('1')", "program.star:1:8: undefined: eval\nPython's eval is not available in Starlark."},
		{"x = re.compile('a')", "program.star:1:5: undefined: re\nStarlark has no import: only asyncio, json and math are predeclared."},
		{"return a + b", "program.star:1:8: undefined: a\nprogram.star:1:12: undefined: b"},
		{"if True:\nx = 1", "program.star:2:2: got identifier, want indent"},
		{"x = 1\n  y = 2", "program.star:2:3: got indent, want primary expression"},
		// Positions are those of the program as written, before `await` and the common
		// indentation were removed.
		{"    x = await   await ( ]", "program.star:1:25: got ']', want primary expression"},
	}
	for _, tt := range tests {
		t.Run(tt.program, func(t *testing.T) {
			var called atomic.Bool
			res := run(t, rt, tt.program, tools(map[string]coderuntime.Func{"x": func(context.Context, any) (any, error) {
				called.Store(true)
				return nil, nil
			}}))
			wantFailure(t, res, coderuntime.FailureException, tt.want)
			if called.Load() {
				t.Error("a program that does not compile ran")
			}
		})
	}
}

func TestRuntimeErrors(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{MaxCallDepth: 200})
	tests := []struct{ program, want string }{
		{"x = 1\nreturn len(x)", "Traceback (most recent call last):\n  program.star:2:11: in <program>\nError in len: len: value of type int has no len"},
		{"fail('custom failure')", "Traceback (most recent call last):\n  program.star:1:5: in <program>\nError in fail: fail: custom failure"},
		{"    x = {}\n    return await   x['missing']", "Traceback (most recent call last):\n  program.star:2:21: in <program>\nError: key \"missing\" not in dict"},
		{"def f(n):\n    return 1 // n\nf(0)", "Traceback (most recent call last):\n  program.star:3:2: in <program>\n  program.star:2:14: in f\nError: floored division by zero"},
		{"json.x = 1", "Traceback (most recent call last):\n  program.star:1:5: in <program>\nError: can't assign to .x field of module"},
	}
	for _, tt := range tests {
		t.Run(tt.program, func(t *testing.T) {
			res := run(t, rt, tt.program, nil)
			if res.Error == nil || res.Error.Kind != coderuntime.FailureException || res.Error.Message != tt.want {
				t.Fatalf("failure = %+v\nwant exception: %s", res.Error, tt.want)
			}
		})
	}
}

func TestCallDepth(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{MaxCallDepth: 300})
	wantValue(t, run(t, rt, "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\nreturn depth(250)", nil), "250")

	res := run(t, rt, "def down(n):\n    return down(n + 1)\ndown(0)", nil)
	if res.Error == nil || res.Error.Kind != coderuntime.FailureException {
		t.Fatalf("%+v", res.Error)
	}
	msg := res.Error.Message
	if !strings.HasPrefix(msg, "Traceback (most recent call last):\n  program.star:3:5: in <program>\n  program.star:2:16: in down\n") ||
		!strings.HasSuffix(msg, "\nError: maximum call depth exceeded (300 frames)") || !strings.Contains(msg, " more frames ...\n") ||
		strings.Count(msg, "\n") != 12 {
		t.Errorf("message:\n%s", msg)
	}

	// The limit is exact: the program body is one frame, each call another.
	const depth = "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\nreturn depth(%d)"
	small := newRuntime(t, Config{MaxCallDepth: 10})
	wantValue(t, run(t, small, fmt.Sprintf(depth, 8), nil), "8")
	res = run(t, small, fmt.Sprintf(depth, 9), nil)
	if res.Error == nil || !strings.HasSuffix(res.Error.Message, "Error: maximum call depth exceeded (10 frames)") {
		t.Errorf("%+v", res.Error)
	}

	// Starlark's default depth is deep enough for ordinary recursive programs.
	deep := newRuntime(t, Config{})
	wantValue(t, run(t, deep, "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\nreturn depth(5000)", nil), "5000")
	// A built-in calling back into a function cannot sneak past the limit.
	res = run(t, rt, "def key(x):\n    return sorted([1, 2], key=key)\nsorted([1, 2], key=key)", nil)
	if res.Error == nil || !strings.HasSuffix(res.Error.Message, "Error: maximum call depth exceeded (300 frames)") {
		t.Errorf("%+v", res.Error)
	}
}

func TestOutputLedger(t *testing.T) {
	t.Parallel()
	limited := func(t *testing.T, res coderuntime.Result) {
		if res.Error == nil || res.Error.Kind != coderuntime.FailureOutputLimit {
			t.Fatalf("%+v", res)
		}
	}
	cases := []struct {
		name    string
		max     int64
		program string
		check   func(t *testing.T, res coderuntime.Result)
	}{
		{"euro fits 7", 7, `return "€"`, func(t *testing.T, res coderuntime.Result) { wantValue(t, res, `"€"`) }},
		{"euro fails 6", 6, `return "€"`, limited},
		{"combined fits 11", 11, `print("abc"); return "xy"`, func(t *testing.T, res coderuntime.Result) {
			wantValue(t, res, `"xy"`)
			if diff := cmp.Diff([]string{"abc"}, res.Logs); diff != "" {
				t.Error(diff)
			}
		}},
		{"combined fails 10", 10, `print("abc"); return "xy"`, limited},
		{"exception message counts", 64, `fail("x" * 100)`, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 64 bytes")
		}},
		{"log spam", 300, "for i in range(1000):\n    print('spam line', i)\nreturn 1", func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 300 bytes")
			if len(res.Logs) == 0 || res.Logs[0] != "spam line 0" {
				t.Errorf("logs = %q", res.Logs)
			}
		}},
		{"oversized first log keeps a prefix", 96, `print("start-" + "😀\"\\\n" * 100)`, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 96 bytes")
			if len(res.Logs) != 1 || !strings.HasPrefix(res.Logs[0], "start-😀") {
				t.Errorf("logs = %q", res.Logs)
			}
		}},
		{"invalid UTF-8 log is counted as U+FFFD", 64, `print("€"[:1] + "€"[1:2])`, func(t *testing.T, res coderuntime.Result) {
			if res.Error != nil || len(res.Logs) != 1 || res.Logs[0] != "\uFFFD\uFFFD" {
				t.Errorf("%+v", res)
			}
		}},
		{"oversized return", 64, `return "y" * 10000`, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 64 bytes")
		}},
		{"big log flood", 1 << 20, "s = 'x' * (1 << 20)\nfor i in range(100):\n    print(s)\nreturn 1", func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 1048576 bytes")
			if len(res.Logs) != 1 || len(res.Logs[0]) < 1<<20-64 {
				t.Errorf("kept %d logs", len(res.Logs))
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRuntime(t, Config{MaxOutputBytes: tc.max})
			res := run(t, rt, tc.program, nil)
			tc.check(t, res)
			if n := resultBytes(t, res); n > int(tc.max) {
				t.Errorf("result is %d bytes, cap %d", n, tc.max)
			}
		})
	}
}

func TestOutputLimitStopsTheProgram(t *testing.T) {
	rt := newRuntime(t, Config{MaxOutputBytes: 50})
	var called atomic.Bool
	res := run(t, rt, "print('x' * 100)\ntools.spy({})\nreturn 1", tools(map[string]coderuntime.Func{
		"spy": func(context.Context, any) (any, error) { called.Store(true); return nil, nil },
	}))
	wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 50 bytes")
	if called.Load() {
		t.Error("the program went on after its output passed the cap")
	}
}

func TestOutputLimitBeforeRunning(t *testing.T) {
	rt := newRuntime(t, Config{MaxOutputBytes: 64})
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New(strings.Repeat("A", 1000)))
	wantFailure(t, runCtx(t, ctx, rt, "return 1", nil), coderuntime.FailureOutputLimit, "outer output exceeded 64 bytes")

	minimal := newRuntime(t, Config{MaxOutputBytes: 4})
	res := run(t, minimal, "class A: pass", nil)
	if res.Error == nil || res.Error.Kind != coderuntime.FailureOutputLimit || resultBytes(t, res) > 4 {
		t.Errorf("%+v", res)
	}
}

func TestAbort(t *testing.T) {
	t.Parallel()
	for _, program := range []string{
		"print('before')\nawait tools.started({})\nwhile True:\n    pass",
		"print('before')\nawait tools.started({})\nawait tools.block({})",
	} {
		t.Run(program, func(t *testing.T) {
			rt := newRuntime(t, Config{})
			ctx, cancel := context.WithCancelCause(context.Background())
			var blocked atomic.Bool
			res := runCtx(t, ctx, rt, program, tools(map[string]coderuntime.Func{
				"started": func(context.Context, any) (any, error) {
					go cancel(errors.New("user-cancel"))
					return nil, nil
				},
				"block": func(ctx context.Context, _ any) (any, error) {
					<-ctx.Done()
					if cause := context.Cause(ctx); cause == nil || cause.Error() != "user-cancel" {
						t.Errorf("binding context cause = %v", cause)
					}
					blocked.Store(true)
					return nil, ctx.Err()
				},
			}))
			wantFailure(t, res, coderuntime.FailureAbort, "user-cancel")
			if diff := cmp.Diff([]string{"before"}, res.Logs); diff != "" {
				t.Errorf("logs (-want +got):\n%s", diff)
			}
			if strings.Contains(program, "block") && !blocked.Load() {
				t.Error("Run returned before the in-flight binding call did")
			}
		})
	}
}

func TestPreAbortedDoesNotRun(t *testing.T) {
	rt := newRuntime(t, Config{})
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("too-late"))
	var called atomic.Bool
	res := runCtx(t, ctx, rt, "print('ran')\ntools.spy({})", tools(map[string]coderuntime.Func{
		"spy": func(context.Context, any) (any, error) { called.Store(true); return nil, nil },
	}))
	wantFailure(t, res, coderuntime.FailureAbort, "too-late")
	if called.Load() || len(res.Logs) != 0 {
		t.Error("a cancelled run ran")
	}
}

func TestComputeBudget(t *testing.T) {
	t.Parallel()
	programs := map[string]string{
		"while True":                 "while True:\n    pass",
		"hot loop after a call":      "tools.quick({})\nn = 0\nwhile True:\n    n += 1",
		"busy recursion":             "def spin(n):\n    for i in range(1000):\n        pass\n    return spin(n) if n < 0 else spin(n - 1) if n > 0 else spin(100)\nspin(100)",
		"loop in a comprehension":    "x = [i for i in range(1 << 40)]",
		"loop inside a builtin call": "def k(x):\n    while True:\n        pass\nsorted([1, 2], key=k)",
	}
	for name, program := range programs {
		t.Run(name, func(t *testing.T) {
			rt := newRuntime(t, Config{ComputeMs: 100, MaxWallMs: 60000, MaxCallDepth: 100000})
			res := run(t, rt, "print('start')\n"+program, tools(map[string]coderuntime.Func{
				"quick": func(context.Context, any) (any, error) { return nil, nil },
			}))
			wantFailure(t, res, coderuntime.FailureTimeout, "compute budget exhausted (100ms busy)")
			if diff := cmp.Diff([]string{"start"}, res.Logs); diff != "" {
				t.Errorf("logs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStepBudget(t *testing.T) {
	t.Parallel()
	for _, steps := range []uint64{1, 500, 5000} {
		rt := newRuntime(t, Config{MaxSteps: steps})
		wantFailure(t, run(t, rt, "while True:\n    pass", nil), coderuntime.FailureTimeout, fmt.Sprintf("compute budget exhausted (%d steps)", steps))
	}
	// The step count is deterministic: a program either fits or it does not, every time,
	// and the cap is exact.
	const program = "t = 0\nfor i in range(100):\n    t += i\nreturn t"
	fits := func(steps uint64) bool {
		res := run(t, newRuntime(t, Config{MaxSteps: steps}), program, nil)
		return res.Error == nil
	}
	lo, hi := uint64(1), uint64(100000)
	for lo < hi {
		if mid := (lo + hi) / 2; fits(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo < 100 || lo >= 100000 {
		t.Fatalf("the program needs %d steps", lo)
	}
	rt := newRuntime(t, Config{MaxSteps: lo})
	for range 3 {
		wantValue(t, run(t, rt, program, nil), "4950")
	}
	wantFailure(t, run(t, newRuntime(t, Config{MaxSteps: lo - 1}), program, nil), coderuntime.FailureTimeout,
		fmt.Sprintf("compute budget exhausted (%d steps)", lo-1))
}

// TestAwaitingIsNotBusy: time spent awaiting bindings does not count against the compute
// budget. Each binding call moves the run's clock ten minutes on, far past the 30 s
// budget; a run that counted the wait would fail.
func TestAwaitingIsNotBusy(t *testing.T) {
	clock := &testClock{}
	rt := newRuntime(t, Config{ComputeMs: 30000})
	rt.now = clock.now
	res := run(t, rt, "a = await tools.slow({})\nb = await tools.slow({})\n"+spinSteps+"return [a, b]", tools(map[string]coderuntime.Func{
		"slow": func(context.Context, any) (any, error) { clock.advance(10 * time.Minute); return "done", nil },
	}))
	wantValue(t, res, `["done","done"]`)
}

// spinSteps runs enough interpreter steps for the busy-time budget to be checked.
const spinSteps = "n = 0\nfor i in range(20000):\n    n += 1\n"

// TestBusyTimeIsMeasured is the control of TestAwaitingIsNotBusy: ten minutes that pass on
// the same clock while the program runs (the second reading after the binding call: the
// first ends the wait, the second is a busy-time check) exhaust the budget.
func TestBusyTimeIsMeasured(t *testing.T) {
	clock := &testClock{}
	rt := newRuntime(t, Config{ComputeMs: 30000})
	rt.now = clock.now
	res := run(t, rt, "await tools.next({})\n"+spinSteps+"return n", tools(map[string]coderuntime.Func{
		"next": func(context.Context, any) (any, error) { clock.jumpAfter(2, 10*time.Minute); return nil, nil },
	}))
	wantFailure(t, res, coderuntime.FailureTimeout, "compute budget exhausted (30000ms busy)")
}

func TestWallClock(t *testing.T) {
	t.Parallel()
	t.Run("binding that never answers", func(t *testing.T) {
		// The test reaches the ceiling itself once the binding is called: a real 200 ms
		// ceiling could pass on a loaded machine before the program got there.
		rt := newRuntime(t, Config{MaxWallMs: 200})
		wall := make(manualTimer, 1)
		rt.wallTimer = wall.start
		var returned atomic.Bool
		res := run(t, rt, "print('waiting')\nawait tools.never({})\nreturn 1", tools(map[string]coderuntime.Func{
			"never": func(ctx context.Context, _ any) (any, error) {
				wall.fire()
				<-ctx.Done()
				cause := context.Cause(ctx)
				if !errors.Is(cause, coderuntime.ErrRunSettled) || cause.Error() != "code run settled: wall-clock ceiling reached (200ms)" {
					t.Errorf("binding context cause = %v", cause)
				}
				returned.Store(true)
				return nil, ctx.Err()
			},
		}))
		wantFailure(t, res, coderuntime.FailureTimeout, "wall-clock ceiling reached (200ms)")
		if !returned.Load() {
			t.Error("Run returned before the in-flight binding call did")
		}
		if diff := cmp.Diff([]string{"waiting"}, res.Logs); diff != "" {
			t.Errorf("logs (-want +got):\n%s", diff)
		}
	})
	t.Run("busy loop", func(t *testing.T) {
		rt := newRuntime(t, Config{MaxWallMs: 100, ComputeMs: 60000})
		wantFailure(t, run(t, rt, "while True:\n    pass", nil), coderuntime.FailureTimeout, "wall-clock ceiling reached (100ms)")
	})
}

func TestHeapLimit(t *testing.T) {
	const exceeded = "worker error: heap limit exceeded (the program holds more than 16 MiB)"
	// spin runs enough steps after an allocation for a heap checkpoint to come.
	const spin = "\nn = 0\nfor i in range(20000):\n    n += 1\n"
	tests := []struct {
		name, program string
		fail          bool
	}{
		{"a growing global list", "hog = []\nwhile True:\n    hog.append('x' * 1000000 + str(len(hog)))", true},
		{"a local in a function", "def f():\n    hog = []\n    while True:\n        hog.append('x' * 100000 + str(len(hog)))\nf()", true},
		{"dict values", "d = {}\nwhile True:\n    d[len(d)] = 'y' * 500000", true},
		{"a captured variable", "def outer():\n    hog = []\n    def grow():\n        while True:\n            hog.append('z' * 300000 + str(len(hog)))\n    grow()\nouter()", true},
		{"one big string", "s = 'x' * (17 << 20)" + spin, true},
		{"many small values", "l = []\nwhile True:\n    l.append(list(range(20)))", true},
		{"below the limit", "s = 'x' * (12 << 20)" + spin + "return len(s)", false},
		{"a shared tuple is counted once", "t = ()\nfor i in range(60):\n    t = (t, t)" + spin + "return 1", false},
		{"a cycle ends the walk", "l = []\nl.append(l)\nd = {}\nd['self'] = d" + spin + "return 1", false},
		{"what is dropped is not counted", "for i in range(10):\n    s = 'x' * (4 << 20)" + spin + "return 1", false},
	}
	rt := newRuntime(t, Config{MaxHeapMB: 16, ComputeMs: 60000, MaxWallMs: 60000})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, rt, tt.program, nil)
			if tt.fail {
				wantFailure(t, res, coderuntime.FailureWorkerExit, exceeded)
			} else if res.Error != nil {
				t.Fatalf("run failed: %v", res.Error)
			}
		})
	}
	wantValue(t, run(t, rt, `return "alive"`, nil), `"alive"`)
	// Nothing of Node's process exists in Starlark.
	wantFailure(t, run(t, rt, "process.exit(1)", nil), coderuntime.FailureException, "program.star:1:1: undefined: process")
}

// TestHeapLimitIsPerProgram: two runs in progress at once, each holding less than the
// budget but together more, both complete: a run is charged for its own values only.
func TestHeapLimitIsPerProgram(t *testing.T) {
	rt := newRuntime(t, Config{MaxHeapMB: 16, ComputeMs: 60000, MaxWallMs: 60000})
	holding := make(chan struct{})
	release := make(chan struct{})
	first := make(chan coderuntime.Result, 1)
	go func() {
		first <- run(t, rt, "s = 'a' * (12 << 20)\nawait tools.hold({})\nn = 0\nfor i in range(20000):\n    n += 1\nreturn len(s)",
			tools(map[string]coderuntime.Func{"hold": func(ctx context.Context, _ any) (any, error) {
				close(holding)
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil, nil
			}}))
	}()
	<-holding
	wantValue(t, run(t, rt, "s = 'b' * (12 << 20)\nn = 0\nfor i in range(20000):\n    n += 1\nreturn len(s)", nil), "12582912")
	close(release)
	wantValue(t, <-first, "12582912")
}

func TestRunsAreIsolated(t *testing.T) {
	rt := newRuntime(t, Config{})
	wantValue(t, run(t, rt, "leak = 1\nreturn leak", nil), "1")
	res := run(t, rt, "return leak", nil)
	wantFailure(t, res, coderuntime.FailureException, "program.star:1:8: undefined: leak")
	// Predeclared modules are frozen and shared; a program cannot change them.
	res = run(t, rt, "asyncio.gather.x = 1", nil)
	if res.Error == nil || res.Error.Kind != coderuntime.FailureException {
		t.Errorf("%+v", res)
	}
	wantValue(t, run(t, rt, "return asyncio.gather(1)", nil), "[1]")
}

func TestBindingsShadowPredeclaredNames(t *testing.T) {
	rt := newRuntime(t, Config{})
	res := run(t, rt, "return json.dumps({})", []coderuntime.Namespace{{Global: "json", Functions: map[string]coderuntime.Func{
		"dumps": func(context.Context, any) (any, error) { return "binding", nil },
	}}})
	wantValue(t, res, `"binding"`)
}

func TestInvalidBindingsAreMisuse(t *testing.T) {
	rt := newRuntime(t, Config{})
	for _, tt := range []struct {
		ns   []coderuntime.Namespace
		want string
	}{
		{[]coderuntime.Namespace{{Global: "console"}}, `reserved binding global "console"`},
		{[]coderuntime.Namespace{{Global: "__dsh_main__"}}, `reserved binding global "__dsh_main__"`},
		{[]coderuntime.Namespace{{Global: "await"}}, `binding global "await" is not a usable identifier`},
		{[]coderuntime.Namespace{{Global: "a"}, {Global: "a"}}, `duplicate binding global "a"`},
	} {
		_, err := rt.Run(context.Background(), coderuntime.Request{Program: "return 1", Bindings: tt.ns})
		if err == nil || err.Error() != tt.want || !errors.Is(err, coderuntime.ErrInvalidBinding) {
			t.Errorf("Run = %v, want %s", err, tt.want)
		}
	}
}

func TestCloseAbortsInFlightRuns(t *testing.T) {
	for _, program := range []string{
		"await tools.started({})\nwhile True:\n    pass",
		"await tools.started({})\nawait tools.wait({})",
	} {
		t.Run(program, func(t *testing.T) {
			rt, err := New(Config{})
			if err != nil {
				t.Fatal(err)
			}
			// Close comes once the program runs and, if it calls wait, once that call is
			// in flight: bindings run on the program's goroutine, so started returning
			// does not mean wait was called yet.
			started, waiting := make(chan struct{}), make(chan struct{})
			ready := started
			if strings.Contains(program, "tools.wait") {
				ready = waiting
			}
			done := make(chan coderuntime.Result)
			var bindingReturned atomic.Bool
			go func() {
				res, _ := rt.Run(context.Background(), coderuntime.Request{
					Program: program,
					Bindings: tools(map[string]coderuntime.Func{
						"started": func(context.Context, any) (any, error) { close(started); return nil, nil },
						"wait": func(ctx context.Context, _ any) (any, error) {
							close(waiting)
							<-ctx.Done()
							bindingReturned.Store(true)
							return nil, nil
						},
					}),
				})
				done <- res
			}()
			testwait.Recv(t, ready, "the program to run")
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(program, "tools.wait") && !bindingReturned.Load() {
				t.Error("Close returned before the in-flight binding call did")
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
	const n = 8
	all := testwait.Barrier(t, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := rt.Run(context.Background(), coderuntime.Request{
				Program: fmt.Sprintf("print('run %d')\nreturn await tools.id(%d)", i, i),
				Bindings: tools(map[string]coderuntime.Func{"id": func(ctx context.Context, a any) (any, error) {
					return a, all(ctx)
				}}),
			})
			if err != nil || res.Error != nil || jsonOf(t, res.Value) != fmt.Sprint(i) || len(res.Logs) != 1 || res.Logs[0] != fmt.Sprintf("run %d", i) {
				t.Errorf("run %d: %+v %v", i, res, err)
			}
		}()
	}
	wg.Wait()
}
