package starlark_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/coderuntime/starlark"
	"github.com/dsh-go/dsh/jsonv"
)

func ExampleRuntime_Run() {
	rt, err := starlark.New(starlark.Config{ComputeMs: 5000})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	bindings := []coderuntime.Namespace{{
		Global: "tools",
		Functions: map[string]coderuntime.Func{
			"list": func(ctx context.Context, args any) (any, error) {
				return []any{"a.go", "b.go", "README.md"}, nil
			},
			"read": func(ctx context.Context, args any) (any, error) {
				path, _ := args.(*jsonv.Object).Get("path")
				return nil, errors.New("no such file: " + path.(string))
			},
		},
		ErrorClass: &coderuntime.ErrorClass{Name: "ToolCallError", MemberNameProperty: "toolName"},
	}}

	res, err := rt.Run(context.Background(), coderuntime.Request{
		Program: `
files = await tools.list({"dir": "src"})
print("found", len(files), "files")
return [f for f in files if f.endswith(".go")]
`,
		Bindings: bindings,
	})
	if err != nil {
		panic(err)
	}
	value, _ := jsonv.Marshal(res.Value)
	fmt.Println(strings.Join(res.Logs, "\n"))
	fmt.Println(string(value), res.Error)

	// Starlark cannot catch a failed call: it ends the run with a traceback.
	res, _ = rt.Run(context.Background(), coderuntime.Request{
		Program:  `print("reading")` + "\n" + `text = await tools.read({"path": "missing.txt"})`,
		Bindings: bindings,
	})
	fmt.Println(res.Logs, res.Error.Kind)
	fmt.Println(res.Error.Message)
	// Output:
	// found 3 files
	// ["a.go","b.go"] <nil>
	// [reading] exception
	// Traceback (most recent call last):
	//   program.star:2:24: in <program>
	// ToolCallError: read: no such file: missing.txt
}

func ExampleRuntime_Run_budget() {
	// MaxSteps is a deterministic compute budget; ComputeMs bounds busy time.
	rt, err := starlark.New(starlark.Config{MaxSteps: 10000})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	res, _ := rt.Run(context.Background(), coderuntime.Request{Program: "print('spinning')\nwhile True:\n    pass"})
	fmt.Println(res.Logs, res.Error.Kind, res.Error.Message)
	// Output:
	// [spinning] timeout compute budget exhausted (10000 steps)
}

func ExampleRuntime_Run_syntaxHint() {
	rt, err := starlark.New(starlark.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	res, _ := rt.Run(context.Background(), coderuntime.Request{Program: "try:\n    x = 1\nexcept Exception:\n    x = 2"})
	fmt.Println(res.Error.Message)
	// Output:
	// program.star:1:1: got try, want primary expression
	// Starlark has no try/except: a failed tool call stops the program.
}
