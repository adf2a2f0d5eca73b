package codemode_test

import (
	"strings"
	"testing"

	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/jsonv"
)

// js parses JSON text into a jsonv value, failing the test on error.
func js(tb testing.TB, text string) any {
	tb.Helper()
	v, err := jsonv.ParseString(text)
	if err != nil {
		tb.Fatalf("parse %s: %v", text, err)
	}
	return v
}

func TestTypeScriptTypeConstructs(t *testing.T) {
	cases := []struct{ schema, want string }{
		{`{"type":"string"}`, `string`},
		{`{"type":"number"}`, `number`},
		{`{"type":"integer"}`, `number`},
		{`{"type":"boolean"}`, `boolean`},
		{`{"type":"null"}`, `null`},
		{`{"type":"string","enum":["a","b"]}`, `"a" | "b"`},
		{`{"type":"number","enum":[1,2]}`, `1 | 2`},
		{`{"type":"integer","const":2}`, `2`},
		{`{"type":"boolean","const":true}`, `true`},
		{`{"type":"null","const":null}`, `null`},
		{`{"type":"string","enum":["a","b"],"const":"a"}`, `"a"`},
		{`{"type":"number","const":1e21}`, `1e+21`},
		{`{"type":"string","const":"say \"hi\"\n"}`, `"say \"hi\"\n"`},
		{`{"oneOf":[{"type":"string"},{"type":"null"}]}`, `string | null`},
		{`{"type":"array","items":{"type":"number"}}`, `number[]`},
		{`{"type":"array","items":{"type":"string","enum":["x","y"]}}`, `("x" | "y")[]`},
		{`{"type":"array","items":{"type":"string","const":"a|b"}}`, `("a|b")[]`},
		{`{"type":"array","items":{"type":"string","enum":["only"]}}`, `"only"[]`},
		{`{"type":"array","items":{"oneOf":[{"type":"string"},{"type":"null"}]}}`, `(string | null)[]`},
		{`{"type":"array","items":{"type":"array","items":{"type":"boolean"}}}`, `boolean[][]`},
		{`{"type":"array","items":{"type":"object"}}`, `Record<string, JsonValue>[]`},
		{`{"type":"array","items":{"type":"object","properties":{"a":{"type":"string"}}}}`, "({\n  a?: string;\n} & Record<string, JsonValue>)[]"},
		{`{"type":"array","items":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}}`, "{\n  a?: string;\n}[]"},
		{`{"type":"array","items":{"type":"object","properties":{"a":{"type":"string","description":"x & y"}},"additionalProperties":false}}`, "({\n  /** x & y */\n  a?: string;\n})[]"},
		{`{"type":"array"}`, `JsonValue[]`},
		{`{"type":"object"}`, `Record<string, JsonValue>`},
		{`{"type":"object","additionalProperties":false}`, `Record<string, never>`},
		{`{"type":"object","properties":{}}`, `Record<string, JsonValue>`},
		{`{"type":"object","properties":{},"additionalProperties":false}`, `Record<string, never>`},
		{`{"type":"object","additionalProperties":false,"properties":{"id":{"type":"integer"},"label":{"type":"string"}},"required":["id"]}`, "{\n  id: number;\n  label?: string;\n}"},
		{`{"type":"object","additionalProperties":false,"properties":{"my-key":{"type":"string"},"$ok":{"type":"string"},"9x":{"type":"string"},"__proto__":{"type":"string"}}}`,
			"{\n  \"my-key\"?: string;\n  $ok?: string;\n  \"9x\"?: string;\n  __proto__?: string;\n}"},
		{`{}`, `JsonValue`},
		{`{"description":"annotation only"}`, `JsonValue`},
	}
	for _, c := range cases {
		if got := codemode.TypeScriptType(js(t, c.schema), 0); got != c.want {
			t.Errorf("TypeScriptType(%s) =\n%s\nwant\n%s", c.schema, got, c.want)
		}
	}
}

func TestTypeScriptTypeNestedObjects(t *testing.T) {
	s := js(t, `{"type":"object","properties":{
		"path":{"type":"string","description":"Absolute file path"},
		"limit":{"type":"number"},
		"opts":{"type":"object","additionalProperties":true,"properties":{"deep":{"type":"boolean"}},"required":["deep"]}
	},"required":["path"]}`)
	want := strings.Join([]string{
		"{",
		"  /** Absolute file path */",
		"  path: string;",
		"  limit?: number;",
		"  opts?: {",
		"    deep: boolean;",
		"  } & Record<string, JsonValue>;",
		"} & Record<string, JsonValue>",
	}, "\n")
	if got := codemode.TypeScriptType(s, 0); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// The indent parameter shifts every nested line.
	if got := codemode.TypeScriptType(s, 1); !strings.Contains(got, "\n    /** Absolute file path */\n    path: string;") || !strings.HasSuffix(got, "\n  } & Record<string, JsonValue>") {
		t.Errorf("indent 1:\n%s", got)
	}
}

func TestTypeScriptTypeIsTotal(t *testing.T) {
	unknown := []any{
		nil, 42.0, "string-schema", []any{},
		js(t, `{"oneOf":[]}`),
		js(t, `{"oneOf":[{"type":"string"}]}`),
		js(t, `{"$ref":"#/defs/x"}`),
		js(t, `{"type":"object","properties":7}`),
		js(t, `{"type":"object","properties":{"bad":{"$ref":"x"}},"required":["bad"]}`),
		js(t, `{"type":"string","enum":[1,2]}`),
		js(t, `{"type":"string","enum":[]}`),
		js(t, `{"type":"object","properties":{"a":{"type":"string"}},"required":[7]}`),
		js(t, `{"type":"object","properties":{"weird":42}}`),
		js(t, `{"type":["string","null"]}`),
		js(t, `{"type":"string","minLength":1}`),
		map[string]any{"type": make(chan int)}, // not JSON at all
	}
	for _, s := range unknown {
		if got := codemode.TypeScriptType(s, 0); got != "unknown" {
			t.Errorf("TypeScriptType(%v) = %q, want unknown", s, got)
		}
	}
	// A Go value that snapshots to a supported schema is accepted.
	if got := codemode.TypeScriptType(map[string]any{"type": "array", "items": map[string]any{"type": "integer"}}, 0); got != "number[]" {
		t.Errorf("Go map schema = %q", got)
	}
}

func TestTypeScriptTypeDocs(t *testing.T) {
	s := js(t, `{"type":"object","additionalProperties":false,"properties":{
		"glob":{"type":"string","description":"a pattern like packages/*/tool-*/ over here"},
		"multi":{"type":"string","description":"  first line\n\tsecond\u00a0line\u2028third  "},
		"blank":{"type":"string","description":"   "},
		"empty":{"type":"string","description":""}
	}}`)
	got := codemode.TypeScriptType(s, 0)
	for _, want := range []string{
		`/** a pattern like packages/*\/tool-*\/ over here */`,
		"/** first line second line third */",
		"  /**  */\n  blank?: string;", // whitespace-only collapses to nothing but still documents
		"  multi?: string;\n  /**  */\n  blank?: string;\n  empty?: string;",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "tool-*/ over") {
		t.Errorf("comment closer not escaped:\n%s", got)
	}
}

func TestTypeScriptTypeDeep(t *testing.T) {
	const depth = 5000
	var s any = js(t, `{"type":"string"}`)
	for range depth {
		s = jsonv.NewObject(jsonv.Member{Name: "oneOf", Value: []any{s, js(t, `{"type":"null"}`)}})
	}
	got := codemode.TypeScriptType(s, 0)
	if !strings.HasPrefix(got, "string | null") || len(got) != len("string")+depth*len(" | null") {
		t.Errorf("deep union: len %d, prefix %q", len(got), got[:20])
	}
	// Nested arrays render in linear time and size. An item type holding "|" is
	// parenthesized, and so is every array around it, whose text holds the "|" too.
	var a any = js(t, `{"type":"string","enum":["x","y"]}`)
	var plain any = js(t, `{"type":"string"}`)
	for range depth {
		a = jsonv.NewObject(jsonv.Member{Name: "type", Value: "array"}, jsonv.Member{Name: "items", Value: a})
		plain = jsonv.NewObject(jsonv.Member{Name: "type", Value: "array"}, jsonv.Member{Name: "items", Value: plain})
	}
	if got, want := codemode.TypeScriptType(a, 0), strings.Repeat("(", depth)+`"x" | "y"`+strings.Repeat(")[]", depth); got != want {
		t.Errorf("deep union arrays: len %d, want %d", len(got), len(want))
	}
	if got, want := codemode.TypeScriptType(plain, 0), "string"+strings.Repeat("[]", depth); got != want {
		t.Errorf("deep plain arrays: len %d, want %d", len(got), len(want))
	}
}

func sdkTool(tb testing.TB, name, desc, params, output string) codemode.SDKTool {
	return codemode.SDKTool{Name: name, Description: desc, Parameters: js(tb, params), Output: js(tb, output)}
}

func TestRenderTypeScript(t *testing.T) {
	bash := sdkTool(t, "bash", "Run a shell command.",
		`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`,
		`{"type":"object","additionalProperties":false,"properties":{"exitCode":{"type":"integer"}},"required":["exitCode"]}`)
	exotic := sdkTool(t, "my-mcp.tool", "Exotic name.", `{"type":"object","properties":{}}`, `{"type":"array","items":{"type":"string"}}`)
	text := codemode.RenderTypeScript([]codemode.SDKTool{exotic, bash})
	for _, want := range []string{
		"## Writing code for run_code\n",
		"interface ToolArgsMap {",
		"interface ToolOutputMap {",
		"type ToolName = keyof ToolOutputMap",
		"declare class ToolCallError extends Error {\n  readonly name: \"ToolCallError\";\n  readonly toolName: ToolName;\n}",
		"declare const tools: {\n  [K in ToolName]: (args: ToolArgsMap[K]) => Promise<ToolOutputMap[K]>;\n}\n```",
		"```ts\ntype JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }\n\n",
		"  /** Run a shell command. */\n  bash: {\n    command: string;\n  } & Record<string, JsonValue>;\n",
		"  /** Exotic name. */\n  \"my-mcp.tool\": Record<string, JsonValue>;\n}",
		"  bash: {\n    exitCode: number;\n  };\n",
		"  \"my-mcp.tool\": string[];\n}",
		// The instruction phrases the model relies on.
		"two required arguments", "`code`", "`description`", "erasable syntax only",
		"`await tools.name(args)`", "`await tools[\"my-tool\"](args)`", "lossless JSON",
		"rejects with `ToolCallError`", "`toolName`", "MAY overlap under `Promise.all`",
		"run alone, in the order the program submitted them", "attached after the run",
		"The available tools:\n\n```ts\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q", want)
		}
	}
	if strings.Index(text, "bash:") > strings.Index(text, `"my-mcp.tool":`) {
		t.Error("tools are not in name order")
	}
	if codemode.RenderTypeScript([]codemode.SDKTool{bash, exotic}) != text {
		t.Error("output depends on the input order")
	}
	empty := codemode.RenderTypeScript(nil)
	if !strings.Contains(empty, "interface ToolArgsMap {}\n\ninterface ToolOutputMap {}\n\ntype ToolName") {
		t.Errorf("empty SDK:\n%s", empty)
	}
}
