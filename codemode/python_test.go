package codemode_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/jsonv"
)

func TestPythonTypeConstructs(t *testing.T) {
	cases := []struct{ schema, want string }{
		{`{"type":"string"}`, `str`},
		{`{"type":"number"}`, `float`},
		{`{"type":"integer"}`, `int`},
		{`{"type":"boolean"}`, `bool`},
		{`{"type":"null"}`, `None`},
		{`{"type":"null","const":null}`, `None`},
		{`{"type":"string","enum":["a","b"]}`, `Literal["a", "b"]`},
		{`{"type":"string","const":"fixed"}`, `Literal["fixed"]`},
		{`{"type":"boolean","const":true}`, `Literal[True]`},
		{`{"type":"boolean","enum":[false]}`, `Literal[False]`},
		{`{"type":"number","const":1.5}`, `Literal[1.5]`},
		{`{"type":"number","const":1e-7}`, `Literal[1e-7]`},
		{`{"type":"integer","const":9007199254740991}`, `Literal[9007199254740991]`},
		{`{"type":"integer","const":1152921504606846976}`, `Literal[1152921504606846976]`},
		{`{"type":"integer","enum":[1152921504606846976,-1152921504606846976]}`, `Literal[1152921504606846976, -1152921504606846976]`},
		{`{"type":"integer","const":1e21}`, `Literal[1000000000000000000000]`},
		{`{"type":"number","const":1e21}`, `Literal[1000000000000000000000]`},
		{`{"type":"string","const":"a\u0000b"}`, `Literal["a\u0000b"]`},
		{`{"type":"string","const":"say \"hi\"\n"}`, `Literal["say \"hi\"\n"]`},
		{`{"type":"string","const":"ends\\"}`, `Literal["ends\\"]`},
		{`{"type":"string","const":"a\u2028b"}`, "Literal[\"a\u2028b\"]"},
		{`{"type":"string","const":"a\u0085b"}`, "Literal[\"a\u0085b\"]"},
		{`{"oneOf":[{"type":"string"},{"type":"null"}]}`, `str | None`},
		{`{"type":"array","items":{"type":"number"}}`, `list[float]`},
		{`{"type":"array","items":{"type":"string","enum":["x","y"]}}`, `list[Literal["x", "y"]]`},
		{`{"type":"array","items":{"oneOf":[{"type":"string"},{"type":"null"}]}}`, `list[str | None]`},
		{`{"type":"array"}`, `list[Any]`},
		{`{}`, `Any`},
		{`{"type":"object"}`, `dict[str, Any]`},
		{`{"type":"object","properties":{}}`, `dict[str, Any]`},
		{`{"type":"object","properties":{"x":{"type":"string"}}}`, `dict[str, Any]`},
		{`{"oneOf":[{"type":"object","additionalProperties":false,"properties":{"ok":{"type":"boolean"}},"required":["ok"]},{"type":"string"}]}`, `dict[str, Any] | str`},
		{`{"type":"array","items":{"oneOf":[{"type":"object","properties":{"ok":{"type":"boolean"}}},{"type":"string"}]}}`, `list[dict[str, Any] | str]`},
		// Unsupported schemas degrade to Any.
		{`{"oneOf":[]}`, `Any`},
		{`{"oneOf":7}`, `Any`},
		{`{"$ref":"#/defs/x"}`, `Any`},
		{`{"type":"object","properties":7}`, `Any`},
		{`{"type":"string","enum":[1,2]}`, `Any`},
		{`{"type":"string","enum":[]}`, `Any`},
		{`null`, `Any`},
		{`42`, `Any`},
	}
	for _, c := range cases {
		if got := codemode.PythonType(js(t, c.schema)); got != c.want {
			t.Errorf("PythonType(%s) = %s, want %s", c.schema, got, c.want)
		}
	}
}

func nest(inner any, depth int, wrap func(any) any) any {
	for range depth {
		inner = wrap(inner)
	}
	return inner
}

func arrayOf(items any) any {
	return jsonv.NewObject(jsonv.Member{Name: "type", Value: "array"}, jsonv.Member{Name: "items", Value: items})
}

func TestPythonTypeListNestingCap(t *testing.T) {
	str := js(t, `{"type":"string"}`)
	if got, want := codemode.PythonType(nest(str, 20000, arrayOf)), strings.Repeat("list[", 180)+"Any"+strings.Repeat("]", 180); got != want {
		t.Errorf("20000-deep list: len %d, want %d", len(got), len(want))
	}
	if got, want := codemode.PythonType(nest(str, 179, arrayOf)), strings.Repeat("list[", 179)+"str"+strings.Repeat("]", 179); got != want {
		t.Errorf("179-deep list: %s", got)
	}
	// A field annotation restarts the count at 1 (reserving NotRequired[).
	text := codemode.RenderPython([]codemode.SDKTool{{
		Name: "deep_field", Description: "Deep array under a field.",
		Parameters: jsonv.NewObject(
			jsonv.Member{Name: "type", Value: "object"},
			jsonv.Member{Name: "additionalProperties", Value: false},
			jsonv.Member{Name: "properties", Value: jsonv.NewObject(jsonv.Member{Name: "rows", Value: nest(str, 179, arrayOf)})},
			jsonv.Member{Name: "required", Value: []any{"rows"}},
		),
		Output: str,
	}})
	if want := "    rows: " + strings.Repeat("list[", 179) + "str" + strings.Repeat("]", 179) + "\n"; !strings.Contains(text, want) {
		t.Error("179-deep field chain not exact")
	}
	// The argument annotation of an array-rooted schema starts at 0.
	lit := js(t, `{"type":"string","const":"x"}`)
	text = codemode.RenderPython([]codemode.SDKTool{{Name: "rooted", Parameters: nest(lit, 180, arrayOf), Output: str}})
	if want := "async def rooted(self, args: " + strings.Repeat("list[", 180) + `Literal["x"]` + strings.Repeat("]", 180) + ") -> str: ..."; !strings.Contains(text, want) {
		t.Error("180-deep argument chain not exact")
	}
	text = codemode.RenderPython([]codemode.SDKTool{{Name: "rooted", Parameters: nest(lit, 181, arrayOf), Output: str}})
	if want := "async def rooted(self, args: " + strings.Repeat("list[", 180) + "Any" + strings.Repeat("]", 180) + ") -> str: ..."; !strings.Contains(text, want) {
		t.Error("181-deep argument chain not capped")
	}
}

func TestPythonTypeDeepUnion(t *testing.T) {
	const depth = 20000
	null := js(t, `{"type":"null"}`)
	s := nest(js(t, `{"type":"string"}`), depth, func(in any) any {
		return jsonv.NewObject(jsonv.Member{Name: "oneOf", Value: []any{in, null}})
	})
	got := codemode.PythonType(s)
	if !strings.HasPrefix(got, "str | None") || len(got) != len("str")+depth*len(" | None") {
		t.Errorf("deep union: len %d", len(got))
	}
}

var classDecl = regexp.MustCompile(`(?m)^class (\S+)\(TypedDict\):$`)

func longestClass(text string) int {
	n := 0
	for _, m := range classDecl.FindAllStringSubmatch(text, -1) {
		n = max(n, len([]rune(m[1])))
	}
	return n
}

func str(tb testing.TB) any { return js(tb, `{"type":"string"}`) }

func TestRenderPythonMethodsAndSubscripts(t *testing.T) {
	bash := sdkTool(t, "bash", "Run a shell command.", `{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`, `{"type":"string"}`)
	exotic := sdkTool(t, "my-mcp.tool", "Exotic name.", `{"type":"object","properties":{}}`, `{"type":"string"}`)
	reserved := sdkTool(t, "class", "Uses a reserved Python word.", `{"type":"object","properties":{}}`, `{"type":"string"}`)
	text := codemode.RenderPython([]codemode.SDKTool{exotic, bash, reserved})
	for _, want := range []string{
		"## Writing code for run_code\n",
		"```python\nfrom typing import Any, Protocol, TypedDict\n\nclass ToolCallError(Exception):\n    toolName: str\n\n",
		"class BashArgs(TypedDict):\n    command: str\n    # Additional keys beyond those declared are allowed.\n\n",
		"class Tools(Protocol):\n    async def bash(self, args: BashArgs) -> str:\n        \"\"\"Run a shell command.\"\"\"\n",
		"    # tools[\"class\"](args: dict[str, Any]) -> str\n    #   Uses a reserved Python word.\n",
		"    # tools[\"my-mcp.tool\"](args: dict[str, Any]) -> str\n    #   Exotic name.\n\ntools: Tools\n```",
		// The instruction phrases: both arguments, the binding boundary, Starlark by name.
		"two required arguments", "`code`", "`description`", "Starlark", "top-level `await`",
		"exactly two of the names declared below are bound: `tools` and `ToolCallError`",
		"never `FooArgs(field=1)`", "raises `ToolCallError`", "`toolName`", "lossless JSON",
		"`await tools[\"my-tool\"](args)`", "attached after the run", "The available tools:\n\n```python\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q", want)
		}
	}
	// Without NotRequired anywhere it is not imported: only what ran is.
	if strings.Contains(text, "NotRequired[") {
		t.Error("unexpected NotRequired field")
	}
	if codemode.RenderPython([]codemode.SDKTool{reserved, bash, exotic}) != text {
		t.Error("output depends on the input order")
	}
}

func TestRenderPythonImportsOnlyWhatIsUsed(t *testing.T) {
	search := sdkTool(t, "search", "Search for text.", `{"type":"object","additionalProperties":false,"properties":{
		"query":{"type":"string","description":"What to search for."},
		"limit":{"type":"number","description":"Max results."}},"required":["query"]}`, `{"type":"string"}`)
	text := codemode.RenderPython([]codemode.SDKTool{search})
	for _, want := range []string{
		"from typing import NotRequired, Protocol, TypedDict\n",
		"class SearchArgs(TypedDict):\n    # What to search for.\n    query: str\n    # Max results.\n    limit: NotRequired[float]\n\n",
		"async def search(self, args: SearchArgs) -> str:",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
	mode := sdkTool(t, "mode_tool", "Pick a mode.", `{"type":"object","additionalProperties":false,"properties":{"mode":{"type":"string","enum":["fast","slow"]}},"required":["mode"]}`, `{"type":"string"}`)
	text = codemode.RenderPython([]codemode.SDKTool{mode})
	if !strings.Contains(text, "from typing import Literal, Protocol, TypedDict\n") || !strings.Contains(text, "class ModeToolArgs(TypedDict):\n    mode: Literal[\"fast\", \"slow\"]\n") {
		t.Errorf("enum field:\n%s", text)
	}
	empty := codemode.RenderPython(nil)
	if !strings.Contains(empty, "from typing import Protocol\n") || !strings.Contains(empty, "class Tools(Protocol):\n    pass\n\ntools: Tools") {
		t.Errorf("empty SDK:\n%s", empty)
	}
}

func TestRenderPythonClasses(t *testing.T) {
	cases := []struct {
		name    string
		tool    codemode.SDKTool
		want    []string
		wantNot []string
		ordered []string // substrings that must appear in this order
	}{
		{
			name: "nested classes precede their users",
			tool: sdkTool(t, "workflow", "Run a workflow.", `{"type":"object","properties":{"meta":{"type":"object","additionalProperties":false,"description":"Identity block.",
				"properties":{"name":{"type":"string","description":"Short name."},"phases":{"type":"array","items":{"type":"object","additionalProperties":false,
				"properties":{"title":{"type":"string","description":"Phase title."}},"required":["title"]}}},"required":["name"]}},"required":["meta"]}`, `{"type":"string"}`),
			want:    []string{"    # Identity block.\n    meta: WorkflowArgsMeta\n", "    phases: NotRequired[list[WorkflowArgsMetaPhases]]\n"},
			ordered: []string{"class WorkflowArgsMetaPhases(TypedDict):", "class WorkflowArgsMeta(TypedDict):", "class WorkflowArgs(TypedDict):", "class Tools(Protocol):"},
		},
		{
			name: "oneOf object branches are numbered",
			tool: sdkTool(t, "act", "Union output.", `{"type":"object","additionalProperties":false,"properties":{}}`, `{"oneOf":[
				{"type":"object","additionalProperties":false,"properties":{"ok":{"type":"boolean"}},"required":["ok"]},
				{"type":"object","additionalProperties":false,"properties":{"err":{"type":"string"}},"required":["err"]}]}`),
			want:    []string{"class ActArgs(TypedDict):\n    pass\n", "-> ActOutput1 | ActOutput2"},
			ordered: []string{"class ActOutput1(TypedDict):", "class ActOutput2(TypedDict):", "class Tools(Protocol):"},
		},
		{
			name: "a name that camel-cases to a digit takes the Tool prefix",
			tool: codemode.SDKTool{Name: "1st-tool", Description: "Hostile-shape probe.", Parameters: js(t, `{"type":"object","properties":{"field":{"type":"string","description":42}}}`), Output: js(t, `{"type":"object","additionalProperties":false,"properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)},
			want: []string{"# tools[\"1st-tool\"](args: Any) -> Tool1stToolOutput", "class Tool1stToolOutput(TypedDict):\n    ok: bool\n"},
		},
		{
			name:    "soft keywords stay fields",
			tool:    sdkTool(t, "search", "Soft keywords.", `{"type":"object","additionalProperties":false,"properties":{"match":{"type":"string"},"case":{"type":"boolean"},"type":{"type":"string"},"_":{"type":"string"},"__dunder__":{"type":"string"}},"required":["match"]}`, `{"type":"string"}`),
			want:    []string{"    match: str\n    case: NotRequired[bool]\n    type: NotRequired[str]\n    _: NotRequired[str]\n    __dunder__: NotRequired[str]\n"},
			wantNot: []string{"dict[str, Any]"},
		},
		{
			name:    "an illegal field name degrades the whole object",
			tool:    sdkTool(t, "weird_fields", "Has an illegal field name.", `{"type":"object","properties":{"a-b":{"type":"string"},"ok":{"type":"string"}}}`, `{"type":"string"}`),
			want:    []string{"async def weird_fields(self, args: dict[str, Any]) -> str:"},
			wantNot: []string{"WeirdFieldsArgs"},
		},
		{
			name: "keywords, __debug__ and mangled names degrade",
			tool: sdkTool(t, "kw", "", `{"type":"object","properties":{"x":{"type":"object","properties":{"lambda":{"type":"string"}}},"y":{"type":"object","properties":{"__debug__":{"type":"string"}}},"z":{"type":"object","properties":{"__token":{"type":"string"}}}}}`, `{"type":"string"}`),
			want: []string{"    x: NotRequired[dict[str, Any]]\n    y: NotRequired[dict[str, Any]]\n    z: NotRequired[dict[str, Any]]\n", "async def kw(self, args: KwArgs) -> str: ..."},
		},
		{
			name: "colliding bases take counters",
			tool: sdkTool(t, "foo", "Sibling objects.", `{"type":"object","additionalProperties":false,"properties":{
				"phase":{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}},
				"phase2":{"type":"object","additionalProperties":false,"properties":{"b":{"type":"string"}}},
				"Phase":{"type":"object","additionalProperties":false,"properties":{"c":{"type":"string"}}}},"required":["phase","phase2","Phase"]}`, `{"type":"string"}`),
			want: []string{"class FooArgsPhase(TypedDict):", "class FooArgsPhase2(TypedDict):", "class FooArgsPhase3(TypedDict):", "    Phase: FooArgsPhase3\n"},
		},
		{
			name:    "closed empty object declares an empty class",
			tool:    sdkTool(t, "closed", "", `{"type":"object","additionalProperties":false,"properties":{"inner":{"type":"object","additionalProperties":false}},"required":["inner"]}`, `{"type":"string"}`),
			want:    []string{"class ClosedArgsInner(TypedDict):\n    pass\n", "    inner: ClosedArgsInner\n"},
			wantNot: []string{"dict[str, Any]"},
		},
		{
			name: "open and closed objects",
			tool: sdkTool(t, "openness", "", `{"type":"object","additionalProperties":false,"properties":{
				"open":{"type":"object","additionalProperties":true,"properties":{"x":{"type":"string"}},"required":["x"]},
				"closedEmpty":{"type":"object","additionalProperties":false,"properties":{}}},"required":["open","closedEmpty"]}`, `{"type":"string"}`),
			want: []string{
				"class OpennessArgsOpen(TypedDict):\n    x: str\n    # Additional keys beyond those declared are allowed.\n\n",
				"class OpennessArgsClosedEmpty(TypedDict):\n    pass\n\n",
				"class OpennessArgs(TypedDict):\n    open: OpennessArgsOpen\n    closedEmpty: OpennessArgsClosedEmpty\n\n",
				"async def openness(self, args: OpennessArgs) -> str: ...",
			},
		},
		{
			name: "a reserved tool name still names its classes",
			tool: sdkTool(t, "class", "Reserved word tool.", `{"type":"object","additionalProperties":false,"properties":{"value":{"type":"string"}},"required":["value"]}`, `{"type":"string"}`),
			want: []string{"class ClassArgs(TypedDict):", "# tools[\"class\"](args: ClassArgs) -> str"},
		},
		{
			name: "underscore-leading tools are subscripted",
			tool: sdkTool(t, "__proto__", "Proto.", `{"type":"object","additionalProperties":false,"properties":{"v":{"type":"string"}}}`, `{"type":"string"}`),
			want: []string{"class ProtoArgs(TypedDict):", "    pass\n    # tools[\"__proto__\"](args: ProtoArgs) -> str\n    #   Proto.\n"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := codemode.RenderPython([]codemode.SDKTool{c.tool})
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("missing %q in\n%s", w, text)
				}
			}
			for _, w := range c.wantNot {
				if strings.Contains(text, w) {
					t.Errorf("unexpected %q in\n%s", w, text)
				}
			}
			last := -1
			for _, w := range c.ordered {
				i := strings.Index(text, w)
				if i <= last {
					t.Errorf("%q out of order in\n%s", w, text)
				}
				last = i
			}
		})
	}
}

func TestRenderPythonCollidingToolBases(t *testing.T) {
	a := sdkTool(t, "my-tool", "Dash form.", `{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`, `{"type":"string"}`)
	b := sdkTool(t, "my.tool", "Dot form.", `{"type":"object","properties":{"y":{"type":"string"}},"required":["y"]}`, `{"type":"string"}`)
	text := codemode.RenderPython([]codemode.SDKTool{a, b})
	if !strings.Contains(text, "class MyToolArgs(TypedDict):\n    x: str") || !strings.Contains(text, "class MyToolArgs2(TypedDict):\n    y: str") {
		t.Errorf("colliding bases:\n%s", text)
	}
}

func TestRenderPythonDocsAndOrder(t *testing.T) {
	noArgs := `{"type":"object","properties":{}}`
	text := codemode.RenderPython([]codemode.SDKTool{
		sdkTool(t, "z", "Last by name.", noArgs, `{"type":"string"}`),
		sdkTool(t, "a-tool", "First by name.", noArgs, `{"type":"string"}`),
		sdkTool(t, "quote", `ends with "quote" and \ backslash\`, noArgs, `{"type":"string"}`),
		sdkTool(t, "ctl", "bell\u0007 and C1 \u0085 and\ttab", noArgs, `{"type":"string"}`),
	})
	if strings.Index(text, `# tools["a-tool"]`) > strings.Index(text, "async def z") {
		t.Error("subscript entries are not interleaved by name")
	}
	if strings.Contains(text, "    pass\n") {
		t.Error("pass emitted although methods exist")
	}
	for _, want := range []string{
		`        """ends with \"quote\" and \\ backslash\\"""`,
		`        """bell\\x07 and C1 \\x85 and tab"""`,
		"    async def z(self, args: dict[str, Any]) -> str:\n        \"\"\"Last by name.\"\"\"",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
	// A whitespace-only description is no description.
	plain := codemode.RenderPython([]codemode.SDKTool{sdkTool(t, "plain", "", noArgs, `{"type":"string"}`), sdkTool(t, "weird-name", "", noArgs, `{"type":"string"}`)})
	blank := codemode.RenderPython([]codemode.SDKTool{sdkTool(t, "plain", " \t\n ", noArgs, `{"type":"string"}`), sdkTool(t, "weird-name", "   ", noArgs, `{"type":"string"}`)})
	if plain != blank || !strings.Contains(plain, "async def plain(self, args: dict[str, Any]) -> str: ...") || strings.Contains(plain, "    #   ") {
		t.Errorf("blank descriptions:\n%s", blank)
	}
	only := codemode.RenderPython([]codemode.SDKTool{sdkTool(t, "my-exotic.tool", "", noArgs, `{"type":"string"}`)})
	if !strings.Contains(only, "class Tools(Protocol):\n    pass\n    # tools[\"my-exotic.tool\"](args: dict[str, Any]) -> str\n\ntools: Tools") {
		t.Errorf("subscript-only:\n%s", only)
	}
}

func TestRenderPythonUnicodeNames(t *testing.T) {
	q := `{"type":"object","additionalProperties":false,"properties":{"q":{"type":"string"}},"required":["q"]}`
	cases := []struct {
		name    string
		tools   []codemode.SDKTool
		want    []string
		wantNot []string
	}{
		{
			name: "non-ASCII identifiers are bare",
			tools: []codemode.SDKTool{sdkTool(t, "搜索", "Unicode identifiers.", `{"type":"object","additionalProperties":false,"properties":{
				"路径":{"type":"string"},"opts":{"type":"object","additionalProperties":false,"properties":{"深度":{"type":"number"}}}},"required":["路径"]}`, `{"type":"string"}`)},
			want:    []string{"async def 搜索(self, args: 搜索Args) -> str:", "class 搜索Args(TypedDict):\n    路径: str\n", "class 搜索ArgsOpts(TypedDict):\n    深度: NotRequired[float]\n"},
			wantNot: []string{"dict[str, Any]"},
		},
		{
			name:    "a field that NFKC-normalizes to another spelling degrades",
			tools:   []codemode.SDKTool{sdkTool(t, "ligature", "", `{"type":"object","additionalProperties":false,"properties":{"ﬁeld":{"type":"string"}}}`, `{"type":"string"}`)},
			want:    []string{"async def ligature(self, args: dict[str, Any]) -> str: ..."},
			wantNot: []string{"ﬁeld:", "field:"},
		},
		{
			name:    "a tool that NFKC-normalizes is subscripted, with a full upper-case mapping",
			tools:   []codemode.SDKTool{sdkTool(t, "路径", "", q, `{"type":"string"}`), sdkTool(t, "ﬁnd", "", q, `{"type":"string"}`)},
			want:    []string{"async def 路径(self, args: 路径Args) -> str: ...", "# tools[\"ﬁnd\"](args: FIndArgs) -> str", "class FIndArgs(TypedDict):"},
			wantNot: []string{"async def ﬁnd", "async def find"},
		},
		{
			name: "ZWNJ continues but does not start an identifier",
			tools: []codemode.SDKTool{
				sdkTool(t, "ping", "", `{"type":"object","additionalProperties":false,"properties":{"a\u200cb":{"type":"string"}}}`, `{"type":"string"}`),
				sdkTool(t, "\u200cb", "", `{"type":"object","additionalProperties":false,"properties":{"a\u200cb":{"type":"string"}}}`, `{"type":"string"}`),
			},
			want:    []string{"async def ping(self, args: PingArgs) -> str:", "    a\u200cb: NotRequired[str]", "# tools[\"\u200cb\"](args: Tool\u200cbArgs) -> str", "class Tool\u200cbArgs(TypedDict):"},
			wantNot: []string{"async def \u200cb"},
		},
		{
			name:    "the Tool prefix composes with a combining head",
			tools:   []codemode.SDKTool{sdkTool(t, "\u0301abc", "", q, `{"type":"string"}`)},
			want:    []string{"class Too\u013aabcArgs(TypedDict):", "# tools[\"\u0301abc\"](args: Too\u013aabcArgs) -> str"},
			wantNot: []string{"Tool\u0301"},
		},
		{
			name: "class-name joins are normalized",
			tools: []codemode.SDKTool{sdkTool(t, "x", "", `{"type":"object","additionalProperties":false,"required":["\uac00\u1100"],"properties":{
				"\uac00\u1100":{"type":"object","additionalProperties":false,"required":["\u1161x"],"properties":{
					"\u1161x":{"type":"object","additionalProperties":false,"properties":{"q":{"type":"string"}}}}}}}`, `{"type":"string"}`)},
			want:    []string{"class XArgs\uac00\uac00x(TypedDict):", "    \u1161x: XArgs\uac00\uac00x", "class XArgs\uac00\u1100(TypedDict):"},
			wantNot: []string{"\u1100\u1161"},
		},
		{
			name: "a fold collision takes a counter",
			tools: []codemode.SDKTool{sdkTool(t, "x", "", `{"type":"object","additionalProperties":false,"required":["\uac00","\u1100"],"properties":{
				"\uac00":{"type":"object","additionalProperties":false,"required":["q"],"properties":{"q":{"type":"string"}}},
				"\u1100":{"type":"object","additionalProperties":false,"required":["\u1161"],"properties":{
					"\u1161":{"type":"object","additionalProperties":false,"required":["q"],"properties":{"q":{"type":"string"}}}}}}}`, `{"type":"string"}`)},
			want: []string{"class XArgs\uac00(TypedDict):", "class XArgs\uac002(TypedDict):", "    \u1161: XArgs\uac002"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := codemode.RenderPython(c.tools)
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("missing %q in\n%s", w, text)
				}
			}
			for _, w := range c.wantNot {
				if strings.Contains(text, w) {
					t.Errorf("unexpected %q in\n%s", w, text)
				}
			}
		})
	}
}

func TestRenderPythonClassNameCaps(t *testing.T) {
	// A surrogate pair is never split by the 120-unit cap.
	ahsa := "\U00010330"
	className := func(pad string) string {
		text := codemode.RenderPython([]codemode.SDKTool{sdkTool(t, pad+strings.Repeat(ahsa, 200), "", `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}}`, `{"type":"string"}`)})
		m := classDecl.FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no class in\n%s", text)
		}
		return m[1]
	}
	if got := className(""); got != strings.Repeat(ahsa, 60) {
		t.Errorf("unpadded: %d runes", len([]rune(got)))
	}
	if got := className("x"); got != "X"+strings.Repeat(ahsa, 59) {
		t.Errorf("padded: %d runes", len([]rune(got)))
	}
	// A deep single-field chain keeps names bounded and the text linear.
	const depth = 4000
	var s any = str(t)
	for range depth {
		s = jsonv.NewObject(jsonv.Member{Name: "type", Value: "object"}, jsonv.Member{Name: "additionalProperties", Value: false},
			jsonv.Member{Name: "properties", Value: jsonv.NewObject(jsonv.Member{Name: "inner", Value: s})}, jsonv.Member{Name: "required", Value: []any{"inner"}})
	}
	text := codemode.RenderPython([]codemode.SDKTool{{Name: "deep", Parameters: s, Output: str(t)}})
	if n := longestClass(text); n > 140 {
		t.Errorf("longest class name %d", n)
	}
	if len(text) > depth*400 {
		t.Errorf("text is %d bytes", len(text))
	}
	// A deep oneOf chain with an object at every level keeps names bounded too.
	closedEmpty := js(t, `{"type":"object","additionalProperties":false,"properties":{}}`)
	var chain any = closedEmpty
	for range 5000 {
		chain = jsonv.NewObject(jsonv.Member{Name: "oneOf", Value: []any{chain, closedEmpty}})
	}
	text = codemode.RenderPython([]codemode.SDKTool{{Name: "deep", Parameters: jsonv.NewObject(
		jsonv.Member{Name: "type", Value: "object"}, jsonv.Member{Name: "additionalProperties", Value: false},
		jsonv.Member{Name: "properties", Value: jsonv.NewObject(jsonv.Member{Name: "root", Value: chain})}, jsonv.Member{Name: "required", Value: []any{"root"}},
	), Output: str(t)}})
	if n := longestClass(text); n > 140 {
		t.Errorf("deep oneOf chain: longest class name %d", n)
	}
	if n := strings.Count(text, "(TypedDict):\n    pass\n"); n != 5001+0 {
		t.Errorf("deep oneOf chain: %d empty classes, want 5001", n)
	}
	long := codemode.RenderPython([]codemode.SDKTool{sdkTool(t, "x_"+strings.Repeat("a", 200), "", `{"type":"object","additionalProperties":false,"properties":{"f":{"type":"string"}},"required":["f"]}`, `{"type":"string"}`)})
	if n := longestClass(long); n != 120 {
		t.Errorf("long tool name: class name of %d", n)
	}
}
