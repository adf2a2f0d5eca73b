package shell_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/dsh-go/dsh/tool"
	"github.com/dsh-go/dsh/tools/shell"
)

func ExampleInstall() {
	root, err := os.MkdirTemp("", "workspace-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)

	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		panic(err)
	}
	undo, err := shell.Install(reg, shell.Config{Root: root})
	if err != nil {
		panic(err)
	}
	defer undo() // the session ends: every background job is killed

	res := reg.Execute(context.Background(), tool.Input{
		CallID: "call-1",
		Name:   "bash",
		Args:   tool.ParseArguments(`{"command":"echo hello; echo oops >&2; exit 2","description":"Say hello and fail"}`),
	})
	fmt.Println(res.IsError)
	fmt.Println(res.Content[0].Text)
	// Output:
	// false
	// hello
	// [stderr]
	// oops
	// [exit code: 2]
}

func ExampleRunner_Run() {
	root, err := os.MkdirTemp("", "workspace-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)

	r, err := shell.NewRunner(shell.Config{Root: root})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	res, err := r.Run(context.Background(), shell.Request{Command: "sleep 5", Timeout: 50 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.TimedOut, res.Signal)
	// Output:
	// true SIGTERM
}
