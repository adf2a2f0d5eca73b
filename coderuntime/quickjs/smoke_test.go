package quickjs

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/dsh-go/dsh/coderuntime"
)

func TestMain(m *testing.M) {
	if IsWorker(os.Args[1:]) {
		os.Exit(WorkerMain())
	}
	os.Exit(m.Run())
}

func TestSmoke(t *testing.T) {
	for _, inproc := range []bool{false, true} {
		rt, err := New(Config{InProcess: inproc})
		if err != nil {
			t.Fatal(err)
		}
		res, err := rt.Run(context.Background(), coderuntime.Request{
			Program: `const x: number = await tools.echo({a: 1}); console.log("hi", {a: [1,2]}); return {x}`,
			Bindings: []coderuntime.Namespace{{Global: "tools", Functions: map[string]coderuntime.Func{
				"echo": func(ctx context.Context, args any) (any, error) { return 42.0, nil },
			}, ErrorClass: &coderuntime.ErrorClass{Name: "ToolCallError", MemberNameProperty: "toolName"}}},
		})
		fmt.Printf("%v %+v %v %+v\n", inproc, res, err, res.Error)
		rt.Close()
	}
}
