package quickjs

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/jsonv"
	"pgregory.net/rapid"
)

// echoTools is one binding that returns its arguments, so a program can send a value
// through the prelude's encoder and get back what the host received.
func echoTools() []coderuntime.Namespace {
	return tools(map[string]coderuntime.Func{"echo": func(_ context.Context, args any) (any, error) {
		return args, nil
	}})
}

// TestEncodeCyclesAndSharing pins the encoder's cycle check on both sides of the depth
// at which it stops scanning its stack and keeps a set of the open containers: a cycle is
// refused at any depth, also back to a container opened before the set was made, and a
// container reached twice without a cycle (shared, or a sibling after its twin closed) is
// fine.
func TestEncodeCyclesAndSharing(t *testing.T) {
	rt := newRuntime(t, Config{InProcess: true})
	// nest(d) builds an object d levels deep; leaf is the innermost object.
	const nest = `function nest(d) { const root = {}; let leaf = root; const path = [root]; for (let i = 0; i < d; i++) { leaf = leaf.c = {}; path.push(leaf); } return [root, leaf, path]; }`
	tests := []struct {
		name, program, want string // want "" means refused as not lossless
	}{
		{"cycle to the root, shallow", `const [r, l] = nest(2); l.back = r; return await tools.echo(r)`, ""},
		{"cycle to the root, deep", `const [r, l] = nest(12); l.back = r; return await tools.echo(r)`, ""},
		{"cycle to a middle container, deep", `const [r, l, p] = nest(12); l.back = p[5]; return await tools.echo(r)`, ""},
		{"cycle to itself, deep", `const [r, l] = nest(12); l.self = l; return await tools.echo(r)`, ""},
		{"array cycle, deep", `const [r, l] = nest(10); l.a = [1, [2]]; l.a[1].push(l.a); return await tools.echo(r)`, ""},
		{"shared, shallow", `const s = { x: 1 }; return await tools.echo([s, s, { s }])`, `[{"x":1},{"x":1},{"s":{"x":1}}]`},
		{"shared, deep", `const [r, l] = nest(12); const s = [1]; l.a = s; l.b = { s }; return (await tools.echo(r)).c.c.c.c.c.c.c.c.c.c.c.c`, `{"a":[1],"b":{"s":[1]}}`},
		{"deep container closed, then reached again", `const [r, l, p] = nest(12); p[10].twin = p[11]; return Object.keys((await tools.echo(r)).c.c.c.c.c.c.c.c.c.c)`, `["c","twin"]`},
		{"primitives", `return await tools.echo(["s", 1.5, -1, true, false, null, 0])`, `["s",1.5,-1,true,false,null,0]`},
		{"a string", `return await tools.echo("line\n\t\"q\"")`, `"line\n\t\"q\""`},
		{"a number", `return await tools.echo(2 ** 53)`, `9007199254740992`},
		{"false", `return await tools.echo(false)`, `false`},
		{"null", `return await tools.echo(null)`, `null`},
		{"-0", `return await tools.echo(-0)`, ""},
		{"NaN", `return await tools.echo(NaN)`, ""},
		{"Infinity", `return await tools.echo(-Infinity)`, ""},
		{"undefined", `return await tools.echo(undefined)`, ""},
		{"a symbol", `return await tools.echo(Symbol("s"))`, ""},
		{"a bigint", `return await tools.echo(1n)`, ""},
		{"a function", `return await tools.echo(() => 1)`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A refusal is caught and returned as its message.
			program := nest + "\ntry {\n" + tc.program + "\n} catch (e) { return 'refused: ' + e.message }"
			want := tc.want
			if want == "" {
				want = `"refused: binding arguments must be lossless JSON"`
			}
			wantValue(t, run(t, rt, program, echoTools()), want)
		})
	}
}

// TestEncodeRoundTrip is a property: any JSON value, nested up to well past the depth at
// which the encoder changes its cycle check, reaches a binding as it was written.
func TestEncodeRoundTrip(t *testing.T) {
	rt := newRuntime(t, Config{InProcess: true})
	var value func(depth int) *rapid.Generator[any]
	value = func(depth int) *rapid.Generator[any] {
		scalars := []*rapid.Generator[any]{
			rapid.Just[any](nil),
			rapid.Map(rapid.Bool(), func(b bool) any { return b }),
			rapid.Map(rapid.IntRange(-1e6, 1e6), func(n int) any { return float64(n) }),
			// Any finite number but -0 (not lossless): a number's text is its string.
			rapid.Map(rapid.Float64().Filter(func(f float64) bool {
				return !math.IsInf(f, 0) && !math.IsNaN(f) && (f != 0 || !math.Signbit(f))
			}), func(f float64) any { return f }),
			rapid.Map(rapid.String(), func(s string) any { return strings.ToValidUTF8(s, "?") }),
		}
		if depth == 0 {
			return rapid.OneOf(scalars...)
		}
		inner := value(depth - 1)
		return rapid.OneOf(append(scalars,
			rapid.Map(rapid.SliceOfN(inner, 0, 3), func(s []any) any { return s }),
			rapid.Map(rapid.MapOfN(rapid.StringMatching(`[a-z]{1,4}`), inner, 0, 3), func(m map[string]any) any { return m }),
		)...)
	}
	rapid.Check(t, func(rt2 *rapid.T) {
		// Several values a run: a run makes a fresh VM, which costs more than the calls.
		vs := rapid.SliceOfN(value(rapid.IntRange(0, 14).Draw(rt2, "depth")), 1, 8).Draw(rt2, "values")
		literal, err := json.Marshal(vs)
		if err != nil {
			rt2.Fatal(err)
		}
		res := run(t, rt, "const out = []; for (const v of "+string(literal)+") out.push(await tools.echo(v)); return out", echoTools())
		if res.Error != nil {
			rt2.Fatalf("run of %s failed: %+v", literal, res.Error)
		}
		parsed, err := jsonv.Parse(literal)
		if err != nil {
			rt2.Fatal(err)
		}
		if got, want := jsonOf(t, res.Value), jsonOf(t, parsed); got != want {
			rt2.Fatalf("echo of %s = %s", want, got)
		}
	})
}

// TestBindingCallsReachNoProgramAccessor pins that a binding call's bookkeeping (the
// encoder's open containers, the calls in flight by id) writes nothing a program's
// accessor on Object.prototype or Array.prototype can see, also when a getter of an
// argument makes a binding call of its own in the middle of the encoding, and when calls
// are in flight at once.
func TestBindingCallsReachNoProgramAccessor(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		res := run(t, rt, `
			const hits = [];
			for (const proto of [Object.prototype, Array.prototype]) {
				for (let i = 0; i < 40; i++) {
					Object.defineProperty(proto, String(i), {
						get() { hits.push('get ' + i); return undefined },
						set(v) { hits.push('set ' + i) },
						configurable: true,
					});
				}
			}
			let inner;
			const arg = { a: [1, [2, { b: 3 }]], get c() { inner = tools.echo({ nested: [4] }); return 'c' } };
			const outer = await tools.echo(arg);
			const all = await Promise.all([inner, tools.echo([5]), tools.echo('six'), tools.echo(7)]);
			return { outer, all, hits: hits.length };
		`, echoTools())
		wantValue(t, res, `{"outer":{"a":[1,[2,{"b":3}]],"c":"c"},"all":[{"nested":[4]},[5],"six",7],"hits":0}`)
	})
}
