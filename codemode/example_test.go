package codemode_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// echoProgram is a stand-in for a code runtime (coderuntime/quickjs in a real deployment):
// its "program" calls tools.greet twice and prints the results.
type echoProgram struct{}

func (echoProgram) Language() string  { return "typescript" }
func (echoProgram) Isolation() string { return "example" }
func (echoProgram) Close() error      { return nil }

func (echoProgram) Run(ctx context.Context, req coderuntime.Request) (coderuntime.Result, error) {
	greet := req.Bindings[0].Functions["greet"]
	var logs []string
	for _, name := range []string{"Ada", "Grace"} {
		v, err := greet(ctx, jsonv.NewObject(jsonv.Member{Name: "name", Value: name}))
		if err != nil {
			return coderuntime.Result{}, err
		}
		logs = append(logs, v.(string))
	}
	return coderuntime.Result{Logs: logs, Value: float64(len(logs)), HasValue: true}, nil
}

type greetIn struct {
	Name string `json:"name" jsonschema:"Who to greet"`
}

func ExampleInstall() {
	reg, _ := tool.NewRegistry(tool.Config{Mode: tool.ModeCode})
	greet, _ := tool.New("greet", "Greet someone.", func(_ context.Context, _ *tool.Call, in greetIn) (string, error) {
		return "Hello, " + in.Name + "!", nil
	})
	reg.Register(greet)

	undo, err := codemode.Install(reg, echoProgram{}, codemode.Config{})
	if err != nil {
		panic(err)
	}
	defer undo()

	res := reg.Execute(context.Background(), tool.Input{
		CallID: "call-1",
		Name:   tool.RunCodeName,
		Args:   tool.ParseArguments(`{"code":"for (const n of ['Ada','Grace']) console.log(await tools.greet({name: n})); return 2","description":"Greet two people"}`),
	})
	fmt.Println(res.Content[0].Text)
	// Output:
	// Hello, Ada!
	// Hello, Grace!
	// 2
}

func ExampleRenderTypeScript() {
	sdk := codemode.RenderTypeScript([]codemode.SDKTool{{
		Name:        "greet",
		Description: "Greet someone.",
		Parameters:  mustParse(`{"type":"object","properties":{"name":{"type":"string"}}}`),
		Output:      mustParse(`{"type":"string"}`),
	}, {
		Name:        "read-file",
		Description: "Read a file.",
		Parameters:  mustParse(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`),
		Output:      mustParse(`{"type":"string"}`),
	}})
	_, code, _ := strings.Cut(sdk, "```ts\n")
	fmt.Println(code)
	// Output:
	// type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }
	//
	// interface ToolArgsMap {
	//   /** Greet someone. */
	//   greet: {
	//     name?: string;
	//   } & Record<string, JsonValue>;
	//   /** Read a file. */
	//   "read-file": {
	//     path: string;
	//   };
	// }
	//
	// interface ToolOutputMap {
	//   greet: string;
	//   "read-file": string;
	// }
	//
	// type ToolName = keyof ToolOutputMap
	//
	// declare class ToolCallError extends Error {
	//   readonly name: "ToolCallError";
	//   readonly toolName: ToolName;
	// }
	//
	// declare const tools: {
	//   [K in ToolName]: (args: ToolArgsMap[K]) => Promise<ToolOutputMap[K]>;
	// }
	// ```
}

func ExampleTypeScriptType() {
	fmt.Println(codemode.TypeScriptType(mustParse(`{"type":"array","items":{"type":"string","enum":["a","b"]}}`), 0))
	fmt.Println(codemode.TypeScriptType(mustParse(`{"type":"object","properties":{"id":{"type":"integer","description":"The id"}},"required":["id"]}`), 0))
	// Output:
	// ("a" | "b")[]
	// {
	//   /** The id */
	//   id: number;
	// } & Record<string, JsonValue>
}

func ExamplePythonType() {
	fmt.Println(codemode.PythonType(mustParse(`{"oneOf":[{"type":"array","items":{"type":"integer"}},{"type":"null"}]}`)))
	fmt.Println(codemode.PythonType(mustParse(`{"type":"string","enum":["fast","slow"]}`)))
	// Output:
	// list[int] | None
	// Literal["fast", "slow"]
}

func ExampleRenderPython() {
	sdk := codemode.RenderPython([]codemode.SDKTool{{
		Name:        "search",
		Description: "Search the workspace.",
		Parameters:  mustParse(`{"type":"object","additionalProperties":false,"properties":{"query":{"type":"string","description":"What to find"},"limit":{"type":"integer"}},"required":["query"]}`),
		Output:      mustParse(`{"type":"array","items":{"type":"string"}}`),
	}})
	_, code, _ := strings.Cut(sdk, "```python\n")
	fmt.Println(code)
	// Output:
	// from typing import NotRequired, Protocol, TypedDict
	//
	// class ToolCallError(Exception):
	//     toolName: str
	//
	// class SearchArgs(TypedDict):
	//     # What to find
	//     query: str
	//     limit: NotRequired[int]
	//
	// class Tools(Protocol):
	//     async def search(self, args: SearchArgs) -> list[str]:
	//         """Search the workspace."""
	//
	// tools: Tools
	// ```
}

func mustParse(s string) any {
	v, err := jsonv.ParseString(s)
	if err != nil {
		panic(err)
	}
	return v
}
