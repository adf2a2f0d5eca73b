package shell_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// A sandboxed runner keeps protected paths read-only inside the writable workspace, and
// stops everything a command started when the command ends.
func ExampleRunner_Sandbox() {
	root, err := os.MkdirTemp("", "workspace-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	if err := os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755); err != nil {
		panic(err)
	}

	r, err := shell.NewRunner(shell.Config{
		Root:          root,
		Sandbox:       shell.SandboxBwrap,
		ReadOnlyPaths: []string{filepath.Join(root, ".git")},
	})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	mode, _ := r.Sandbox()
	fmt.Println("sandbox:", mode)

	res, err := r.Run(context.Background(), shell.Request{Command: "echo evil > .git/hooks/pre-commit; echo ok > notes.txt"})
	if err != nil {
		panic(err)
	}
	_, hookErr := os.Stat(filepath.Join(root, ".git", "hooks", "pre-commit"))
	notes, _ := os.ReadFile(filepath.Join(root, "notes.txt"))
	fmt.Println("hook planted:", hookErr == nil, "refused:", strings.Contains(res.Stderr.Text, "Read-only file system"))
	fmt.Print("notes: ", string(notes))
	// Output:
	// sandbox: bwrap
	// hook planted: false refused: true
	// notes: ok
}
