package quickjs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/coderuntime/quickjs"
	"github.com/dsh-go/dsh/jsonv"
)

func ExampleRuntime_Run() {
	// InProcess keeps the example self-contained; a real host uses worker processes
	// (the default), which requires routing quickjs.WorkerArg to quickjs.WorkerMain in main.
	rt, err := quickjs.New(quickjs.Config{InProcess: true, ComputeMs: 5000})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	res, err := rt.Run(context.Background(), coderuntime.Request{
		Program: `
			const files: string[] = await tools.list({ dir: "src" });
			console.log("found", files.length, "files");
			try {
				await tools.read({ path: "missing.txt" });
			} catch (e) {
				console.log(e instanceof ToolCallError, e.toolName, e.message);
			}
			return files.filter(f => f.endsWith(".go"));
		`,
		Bindings: []coderuntime.Namespace{{
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
		}},
	})
	if err != nil {
		panic(err)
	}
	value, _ := jsonv.Marshal(res.Value)
	fmt.Println(strings.Join(res.Logs, "\n"))
	fmt.Println(string(value), res.Error)
	// Output:
	// found 3 files
	// true read no such file: missing.txt
	// ["a.go","b.go"] <nil>
}

func ExampleRuntime_Run_failure() {
	rt, err := quickjs.New(quickjs.Config{InProcess: true, ComputeMs: 100})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	res, _ := rt.Run(context.Background(), coderuntime.Request{Program: `console.log("spinning"); for (;;) {}`})
	fmt.Println(res.Logs, res.Error.Kind, res.Error.Message)
	// Output:
	// [spinning] timeout compute budget exhausted (100ms busy)
}

func ExampleIsWorker() {
	// In func main of a program that embeds the worker-process backend:
	args := []string{quickjs.WorkerArg}
	if quickjs.IsWorker(args) {
		fmt.Println("run quickjs.WorkerMain() and exit with its status")
	}
	// Output:
	// run quickjs.WorkerMain() and exit with its status
}
