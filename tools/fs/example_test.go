package fs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-go/dsh/tool"
	"github.com/dsh-go/dsh/tools/fs"
)

// Example installs the file tools on a registry and drives them the way an agent does: an
// edit is refused until the file is read, then applied; paths outside the workspace are
// refused.
func Example() {
	dir, err := os.MkdirTemp("", "workspace")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		panic(err)
	}

	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		panic(err)
	}
	undo, err := fs.Install(reg, fs.Config{Root: dir})
	if err != nil {
		panic(err)
	}
	defer undo()

	n := 0
	run := func(name, args string) string {
		n++
		res := reg.Execute(context.Background(), tool.Input{CallID: fmt.Sprint("call-", n), Name: name, Args: tool.ParseArguments(args)})
		out := strings.ReplaceAll(res.Content[0].Text, dir, "<root>")
		if res.IsError && res.Error.Info != nil {
			out = res.Error.Info.Code + " " + out
		}
		return out
	}

	fmt.Println(run("edit", `{"file_path":"notes.txt","old_string":"beta","new_string":"gamma"}`))
	fmt.Println(run("read", `{"file_path":"notes.txt"}`))
	fmt.Println(run("edit", `{"file_path":"notes.txt","old_string":"beta","new_string":"gamma"}`))
	fmt.Println(strings.HasPrefix(run("read", `{"file_path":"../elsewhere.txt"}`), fs.CodeSandboxDenied))
	// Output:
	// FS_NOT_OBSERVED Error: edit requires reading "<root>/notes.txt" first — read the file, then retry
	// <path><root>/notes.txt</path>
	// <type>file</type>
	// <content>
	// 1: alpha
	// 2: beta
	//
	// (End of file - total 2 lines)
	// </content>
	// The file <root>/notes.txt has been updated successfully.
	// true
}

// ExampleWorkspace_Resolve shows a path through a symbolic link resolved to its canonical
// location inside the workspace, and a link leading out refused.
func ExampleWorkspace_Resolve() {
	dir, err := os.MkdirTemp("", "workspace")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	os.Symlink("src", filepath.Join(dir, "code"))
	os.Symlink("/etc", filepath.Join(dir, "etc"))

	ws, err := fs.OpenWorkspace(dir)
	if err != nil {
		panic(err)
	}
	defer ws.Close()

	t, err := ws.Resolve("read", "code/main.go")
	fmt.Println(strings.TrimPrefix(t.Path, dir), t.Rel, err)
	_, err = ws.Resolve("read", "etc/passwd")
	fmt.Println(strings.ReplaceAll(err.Error(), dir, "<root>"))
	// Output:
	// /code/main.go src/main.go <nil>
	// cannot read "<root>/etc/passwd": the symbolic link "<root>/etc" points outside the workspace "<root>"
}

// ExampleConfig_readOnlyRoots lets the model read a full output that another tool saved
// outside the workspace, while writes there stay refused.
func ExampleConfig_readOnlyRoots() {
	dir, err := os.MkdirTemp("", "workspace")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	spill, err := os.MkdirTemp("", "spill")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(spill)
	saved := filepath.Join(spill, "bash.txt")
	if err := os.WriteFile(saved, []byte("line 1\nline 2\n"), 0o600); err != nil {
		panic(err)
	}

	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		panic(err)
	}
	undo, err := fs.Install(reg, fs.Config{Root: dir, ReadOnlyRoots: []string{spill}})
	if err != nil {
		panic(err)
	}
	defer undo()

	for i, c := range []struct{ name, args string }{
		{"read", fmt.Sprintf(`{"file_path":%q,"offset":2}`, saved)},
		{"write", fmt.Sprintf(`{"file_path":%q,"content":"x"}`, saved)},
	} {
		res := reg.Execute(context.Background(), tool.Input{CallID: fmt.Sprint("call-", i), Name: c.name, Args: tool.ParseArguments(c.args)})
		fmt.Println(strings.ReplaceAll(res.Content[0].Text, spill, "<spill>"))
	}
	// Output:
	// <path><spill>/bash.txt</path>
	// <type>file</type>
	// <content>
	// 2: line 2
	//
	// (End of file - total 2 lines)
	// </content>
	// Error: cannot write "<spill>/bash.txt": the path is in the read-only directory "<spill>"
}

// ExampleTools_Protected shows the protected paths: writes into .git are refused with
// FS_PROTECTED_PATH unless the user opened that part of it.
func ExampleTools_Protected() {
	dir, err := os.MkdirTemp("", "workspace")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	dir, _ = filepath.EvalSymlinks(dir)
	home := filepath.Join(dir, "home")

	tools, err := fs.New(fs.Config{Root: dir, Home: home, OpenProtected: []string{".git/hooks"}})
	if err != nil {
		panic(err)
	}
	defer tools.Close()
	for _, p := range tools.Protected() {
		fmt.Println("protected:", strings.ReplaceAll(p, dir, "<root>"))
	}
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		panic(err)
	}
	if _, err := tools.Register(reg.Global()); err != nil {
		panic(err)
	}
	for _, p := range []string{".git/config", ".git/hooks/pre-commit"} {
		res := reg.Execute(context.Background(), tool.Input{CallID: p, Name: "write",
			Args: tool.ParseArguments(`{"file_path":"` + p + `","content":"x\n"}`)})
		if res.IsError {
			fmt.Println(p, res.Error.Info.Code)
		} else {
			fmt.Println(p, "written")
		}
	}
	// Output:
	// protected: <root>/.git
	// protected: <root>/.dsh
	// protected: <root>/home
	// .git/config FS_PROTECTED_PATH
	// .git/hooks/pre-commit written
}
