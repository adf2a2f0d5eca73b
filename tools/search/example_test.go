package search_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dsh-go/dsh/tool"
	"github.com/dsh-go/dsh/tools/search"
)

func ExampleInstall() {
	root, err := os.MkdirTemp("", "workspace-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n\nfunc main() { greet() }\n"), 0o644)
	os.WriteFile(filepath.Join(root, "greet.go"), []byte("package main\n\nfunc greet() {}\n"), 0o644)
	os.WriteFile(filepath.Join(root, "debug.log"), []byte("greet called\n"), 0o644)
	os.WriteFile(filepath.Join(root, ".gitignore"), []byte("*.log\n"), 0o644)

	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		panic(err)
	}
	undo, err := search.Install(reg, search.Config{Root: root})
	if err != nil {
		panic(err)
	}
	defer undo()

	res := reg.Execute(context.Background(), tool.Input{
		CallID: "call-1",
		Name:   "grep",
		Args:   tool.ParseArguments(`{"pattern":"greet\\(","include":"*.go"}`),
	})
	fmt.Println(res.Content[0].Text)
	// Output:
	// Found 2 matches
	//
	// greet.go
	// Line 3: func greet() {}
	//
	// main.go
	// Line 3: func main() { greet() }
}
