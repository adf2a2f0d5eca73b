package codemode_test

import (
	"strings"
	"testing"

	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/jsonv"
)

var schemaSeeds = []string{
	`{"type":"string"}`,
	`{"type":"object","properties":{"a":{"type":"string","description":"x */ y\n z"},"b-c":{"type":"array","items":{"oneOf":[{"type":"integer","enum":[1,2]},{"type":"null"}]}}},"required":["a"]}`,
	`{"type":"object","additionalProperties":false,"properties":{"ﬁeld":{"type":"object","properties":{"__x":{"type":"string"}}}}}`,
	`{"oneOf":[{"type":"object","additionalProperties":false,"properties":{"ok":{"type":"boolean","const":true}}},{"type":"string","const":"a\u0000\"b"}]}`,
	`{"type":"number","const":1e21,"description":"\u0085\u2028\u0007"}`,
	`{"type":"array"}`,
	`{}`,
	`{"oneOf":[]}`,
	`[1,2]`,
}

// FuzzTypeScriptType feeds arbitrary JSON (schemas from MCP servers are untrusted) to the
// TypeScript renderer: it never panics, is deterministic, renders every supported schema
// as something other than unknown, and a description can never close its JSDoc comment
// early.
func FuzzTypeScriptType(f *testing.F) {
	for _, s := range schemaSeeds {
		f.Add(s, "tool-name")
	}
	f.Fuzz(func(t *testing.T, text, name string) {
		v, err := jsonv.ParseString(text)
		if err != nil {
			return
		}
		got := codemode.TypeScriptType(v, 0)
		if got != codemode.TypeScriptType(v, 0) {
			t.Fatal("not deterministic")
		}
		if strings.Contains(got, "unknown") && got != "unknown" && !strings.Contains(text, "unknown") {
			t.Fatalf("partial unknown: %s", got)
		}
		sdk := codemode.RenderTypeScript([]codemode.SDKTool{{Name: name, Description: text, Parameters: v, Output: v}})
		for _, line := range strings.Split(sdk, "\n") {
			if i := strings.Index(line, "*/"); i >= 0 && !(strings.HasPrefix(strings.TrimLeft(line, " "), "/** ") && i == len(line)-2) {
				t.Fatalf("comment closer inside a line: %q", line)
			}
		}
	})
}

// FuzzPythonType feeds arbitrary JSON and tool names to the Python renderer: it never
// panics, is deterministic, and the code block holds no C0 control character but newlines
// (CPython refuses NUL anywhere in source; the others are escaped like NUL). DEL and the C1
// controls may appear raw, as in the reference: they are legal in strings and comments.
func FuzzPythonType(f *testing.F) {
	for _, s := range schemaSeeds {
		f.Add(s, "my-tool\u0000\u0085")
	}
	f.Fuzz(func(t *testing.T, text, name string) {
		v, err := jsonv.ParseString(text)
		if err != nil {
			return
		}
		if codemode.PythonType(v) != codemode.PythonType(v) {
			t.Fatal("not deterministic")
		}
		tools := []codemode.SDKTool{{Name: name, Description: text, Parameters: v, Output: v}}
		sdk := codemode.RenderPython(tools)
		if sdk != codemode.RenderPython(tools) {
			t.Fatal("not deterministic")
		}
		_, block, _ := strings.Cut(sdk, "```python\n")
		for _, r := range block {
			if r < 0x20 && r != '\n' {
				t.Fatalf("control character %U in\n%s", r, block)
			}
		}
	})
}
