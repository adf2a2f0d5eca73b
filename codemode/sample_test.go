package codemode_test

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/tool"
)

// A varied tool set for the SDK snapshots and the TypeScript type-check: typed tools whose
// schemas are inferred from Go structs, and raw schemas with oneOf, enum, const, nesting,
// open and closed objects and exotic names.

type readIn struct {
	FilePath string `json:"file_path" jsonschema:"Absolute or workspace-relative path of the file"`
	Offset   int    `json:"offset,omitempty" jsonschema:"First line to read, 1-based"`
	Limit    int    `json:"limit,omitempty" jsonschema:"How many lines to read"`
}

type readOut struct {
	Content    string `json:"content"`
	TotalLines int    `json:"totalLines"`
	Truncated  bool   `json:"truncated"`
}

type grepIn struct {
	Pattern    string   `json:"pattern" jsonschema:"A regular expression"`
	Paths      []string `json:"paths,omitempty"`
	IgnoreCase *bool    `json:"ignore_case,omitempty"`
}

type grepMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

type grepOut struct {
	Matches []grepMatch    `json:"matches"`
	Extra   map[string]any `json:"extra,omitempty"`
}

type writeIn struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Meta    any    `json:"meta,omitempty" jsonschema:"Free-form JSON stored with the file"`
}

type writeOut struct {
	Bytes   int     `json:"bytes"`
	Created *string `json:"created"`
}

// sampleDefinitions returns the sample tools; raw ones use the given JSON schemas.
func sampleDefinitions(tb testing.TB) []*tool.Definition {
	tb.Helper()
	read, err := tool.New("read", "Read a text file.\nReturns numbered lines.", func(context.Context, *tool.Call, readIn) (readOut, error) {
		return readOut{Content: "x", TotalLines: 1}, nil
	}, tool.ConcurrencySafe())
	if err != nil {
		tb.Fatal(err)
	}
	grep, err := tool.New("grep", "Search files for a pattern.", func(context.Context, *tool.Call, grepIn) (grepOut, error) {
		return grepOut{}, nil
	}, tool.ConcurrencySafe())
	if err != nil {
		tb.Fatal(err)
	}
	// write is strict: its inferred argument object is closed, the others' are open.
	write, err := tool.New("write", "Write a file. Comment closers */ stay inside the doc.", func(context.Context, *tool.Call, writeIn) (writeOut, error) {
		return writeOut{}, nil
	}, tool.Strict())
	if err != nil {
		tb.Fatal(err)
	}
	defs := []*tool.Definition{read, grep, write}
	raw := func(name, desc, params, output string) {
		defs = append(defs, &tool.Definition{
			Name: name, Description: desc, Parameters: js(tb, params),
			Output:  tool.Output{Schema: js(tb, output), Render: tool.DefaultRender},
			Execute: func(context.Context, *tool.Call) (any, error) { return nil, nil },
		})
	}
	raw("my-tool", "A tool with a dash in its name.",
		`{"type":"object","properties":{"mode":{"type":"string","enum":["fast","slow"],"description":"How hard to try"},"level":{"type":"integer","const":3}},"required":["mode"]}`,
		`{"oneOf":[{"type":"string"},{"type":"null"}]}`)
	raw("__proto__", "A prototype-colliding name.", `{"type":"object","properties":{}}`, `{"type":"boolean"}`)
	raw("class", "A Python keyword.", `{"type":"object","additionalProperties":false}`,
		`{"type":"array","items":{"oneOf":[{"type":"number"},{"type":"string"}]}}`)
	raw("路径", "A Unicode name.", `{"type":"object","properties":{"深度":{"type":"number"}}}`, `{}`)
	raw("mcp__srv__lookup", "Look something up on an MCP server.", `{"type":"object","additionalProperties":false,"properties":{
		"query":{"oneOf":[
			{"type":"object","additionalProperties":false,"properties":{"id":{"type":"integer"}},"required":["id"]},
			{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string"},"fuzzy":{"type":"boolean"}},"required":["name"]}],
			"description":"By id, or by name"},
		"fields":{"type":"array","items":{"type":"string","enum":["title","body","tags"]}},
		"filter":{"type":"object","properties":{"tag":{"type":"string"},"since":{"oneOf":[{"type":"string"},{"type":"number"}]}}},
		"raw-options":{"type":"object"}
	},"required":["query"]}`, `{"type":"object","properties":{
		"hits":{"type":"array","items":{"type":"object","additionalProperties":false,"properties":{"id":{"type":"integer"},"title":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},"required":["id","title"]}},
		"next":{"oneOf":[{"type":"string"},{"type":"null"}]},
		"meta":{"description":"Server-specific data"}
	},"required":["hits"]}`)
	return defs
}

// sampleRegistry registers the sample tools in the given order (indexes into
// sampleDefinitions) under a code-mode registry with a fake runtime of language lang.
func sampleRegistry(tb testing.TB, lang string, order []int) *tool.Registry {
	tb.Helper()
	reg, err := tool.NewRegistry(tool.Config{Mode: tool.ModeCode})
	if err != nil {
		tb.Fatal(err)
	}
	defs := sampleDefinitions(tb)
	if order == nil {
		for i := range defs {
			order = append(order, i)
		}
	}
	for _, i := range order {
		if _, err := reg.Register(defs[i]); err != nil {
			tb.Fatal(err)
		}
	}
	reg.SetCodeRunner(mustRunner(tb, reg, &fakeRuntime{lang: lang}))
	return reg
}
