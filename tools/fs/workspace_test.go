package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// outside creates a directory next to no workspace, holding secret.txt.
func outside(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// allOps runs read, write and edit on p and expects FS_SANDBOX_DENIED with every fragment.
func allOps(t *testing.T, e *env, p string, fragments ...string) {
	t.Helper()
	for _, op := range []struct{ name, args string }{
		{"read", fmt.Sprintf(`{"file_path":%q}`, p)},
		{"write", fmt.Sprintf(`{"file_path":%q,"content":"pwned"}`, p)},
		{"edit", fmt.Sprintf(`{"file_path":%q,"old_string":"secret","new_string":"pwned"}`, p)},
	} {
		res := e.call(op.name, op.args)
		wantErr(t, res, CodeSandboxDenied, append([]string{"cannot " + op.name + " "}, fragments...)...)
	}
}

func TestContainmentLexical(t *testing.T) {
	e := newEnv(t, Config{})
	out := outside(t)
	secret := filepath.Join(out, "secret.txt")
	rel, err := filepath.Rel(e.dir, secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{secret, rel, "../x", "a/../../x", "/etc/passwd", "./../" + filepath.Base(e.dir) + "x/y"} {
		t.Run(p, func(t *testing.T) {
			display := p
			if !filepath.IsAbs(p) {
				display = filepath.Join(e.dir, p)
			}
			allOps(t, e, p, fmt.Sprintf("%q: the path is outside the workspace %q", filepath.Clean(display), e.dir))
		})
	}
	if b, _ := os.ReadFile(secret); string(b) != "secret\n" {
		t.Fatalf("the outside file changed: %q", b)
	}
	// Inside spellings work, absolute or relative, with "..", resolved lexically.
	e.put("in/a.txt", "ok\n")
	for _, p := range []string{e.path("in/a.txt"), "in/../in/a.txt", "./in/a.txt", e.dir + "/in/./a.txt"} {
		res := e.call("read", fmt.Sprintf(`{"file_path":%q}`, p))
		mustOK(t, res)
		if !strings.HasPrefix(text(t, res), "<path>"+filepath.Clean(func() string {
			if filepath.IsAbs(p) {
				return p
			}
			return filepath.Join(e.dir, p)
		}())+"</path>") {
			t.Errorf("%s: envelope path in %q", p, text(t, res))
		}
	}
}

func TestContainmentSymlinks(t *testing.T) {
	e := newEnv(t, Config{})
	out := outside(t)
	secret := filepath.Join(out, "secret.txt")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(secret, e.path("abs-out")))
	must(os.Symlink(out, e.path("dir-out")))
	must(os.MkdirAll(e.path("deep/er"), 0o755))
	must(os.Symlink("../../../"+filepath.Base(out)+"/secret.txt", e.path("deep/er/rel-out")))
	must(os.Symlink(filepath.Join(out, "missing.txt"), e.path("dangling-out")))
	must(os.Symlink("deep/er/rel-out", e.path("chain-out")))

	for _, tt := range []struct{ path, link string }{
		{"abs-out", "abs-out"},
		{"dir-out/secret.txt", "dir-out"},
		{"dir-out/new.txt", "dir-out"},
		{"deep/er/rel-out", "deep/er/rel-out"},
		{"dangling-out", "dangling-out"},
		{"chain-out", "deep/er/rel-out"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			allOps(t, e, tt.path, fmt.Sprintf("the symbolic link %q points outside the workspace %q", e.path(tt.link), e.dir))
		})
	}
	if b, _ := os.ReadFile(secret); string(b) != "secret\n" {
		t.Fatalf("the outside file changed: %q", b)
	}
	for _, name := range []string{"missing.txt", "new.txt"} {
		if _, err := os.Stat(filepath.Join(out, name)); !os.IsNotExist(err) {
			t.Fatalf("a denied write created %s outside the workspace", name)
		}
	}
}

func TestSymlinksInside(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("real/file.txt", "hello\n")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("real", e.path("alias")))                   // a directory link
	must(os.Symlink(e.path("real/file.txt"), e.path("abs-in"))) // an absolute link inside
	must(os.Symlink("alias/file.txt", e.path("chain")))         // a link to a link
	must(os.Symlink("real/created.txt", e.path("dangling-in"))) // a dangling link inside
	must(os.Symlink("loop-b", e.path("loop-a")))
	must(os.Symlink("loop-a", e.path("loop-b")))

	for _, p := range []string{"alias/file.txt", "abs-in", "chain"} {
		res := e.call("read", fmt.Sprintf(`{"file_path":%q}`, p))
		mustOK(t, res)
		if !strings.Contains(text(t, res), "1: hello") {
			t.Errorf("%s: %q", p, text(t, res))
		}
	}
	// All spellings share the canonical observation: read one, edit another.
	mustOK(t, e.call("edit", `{"file_path":"real/file.txt","old_string":"hello","new_string":"hi"}`))
	if e.get("real/file.txt") != "hi\n" {
		t.Errorf("file = %q", e.get("real/file.txt"))
	}
	// Writing through a dangling link inside creates its target.
	mustOK(t, e.call("write", `{"file_path":"dangling-in","content":"made\n"}`))
	if e.get("real/created.txt") != "made\n" {
		t.Errorf("created = %q", e.get("real/created.txt"))
	}
	wantErr(t, e.call("read", `{"file_path":"loop-a"}`), CodeIOError, "too many levels of symbolic links")
}

func TestHardLinks(t *testing.T) {
	e := newEnv(t, Config{})
	out := outside(t)
	secret := filepath.Join(out, "secret.txt")
	if err := os.Link(secret, e.path("hard.txt")); err != nil {
		t.Skipf("cannot make a hard link across these directories: %v", err)
	}
	// Reading is allowed: the bytes are reachable through the workspace entry.
	mustOK(t, e.call("read", `{"file_path":"hard.txt"}`))
	msg := fmt.Sprintf("the file has 2 hard links, and another link may lie outside the workspace %q", e.dir)
	wantErr(t, e.call("write", `{"file_path":"hard.txt","content":"pwned"}`), CodeSandboxDenied, "cannot write ", msg)
	wantErr(t, e.call("edit", `{"file_path":"hard.txt","old_string":"secret","new_string":"pwned"}`), CodeSandboxDenied, "cannot edit ", msg)
	if b, _ := os.ReadFile(secret); string(b) != "secret\n" {
		t.Fatalf("the outside file changed: %q", b)
	}
	// Unconditional mode refuses too.
	e2 := newEnv(t, Config{Root: e.dir, NoObservation: true})
	wantErr(t, e2.call("write", `{"file_path":"hard.txt","content":"pwned"}`), CodeSandboxDenied, msg)
	wantErr(t, e2.call("edit", `{"file_path":"hard.txt","old_string":"secret","new_string":"pwned"}`), CodeSandboxDenied, msg)
}

func TestParentNotDirectory(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("file.txt", "x\n")
	want := fmt.Sprintf("cannot resolve %q: a parent path segment is not a directory", e.path("file.txt/child"))
	wantErr(t, e.call("read", `{"file_path":"file.txt/child"}`), CodeNotFound, want)
	wantErr(t, e.call("write", `{"file_path":"file.txt/child","content":"x"}`), CodeNotFound, want)
}

func TestRootSpellings(t *testing.T) {
	real := t.TempDir()
	linkParent := t.TempDir()
	link := filepath.Join(linkParent, "ws")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, Config{Root: link})
	if err := os.WriteFile(filepath.Join(real, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a.txt", filepath.Join(link, "a.txt"), filepath.Join(real, "a.txt")} {
		res := e.call("read", fmt.Sprintf(`{"file_path":%q}`, p))
		mustOK(t, res)
	}
	// The configured spelling is the display root.
	res := e.call("read", `{"file_path":"a.txt"}`)
	if !strings.HasPrefix(text(t, res), "<path>"+filepath.Join(link, "a.txt")+"</path>") {
		t.Errorf("text = %q", text(t, res))
	}
}

// TestRootDefendsSwappedDirectory swaps a resolved directory for a link to the outside before
// the write publishes: os.Root refuses to follow it.
func TestRootDefendsSwappedDirectory(t *testing.T) {
	e := newEnv(t, Config{NoObservation: true})
	out := outside(t)
	e.put("sub/f.txt", "x\n")
	target, err := e.tools.ws.Resolve("write", "sub/f.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(e.path("sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, e.path("sub")); err != nil {
		t.Fatal(err)
	}
	_, err = e.tools.writeAtomic(t.Context(), "write", target.Path, target.Rel, []byte("pwned"), 0, false, false)
	var te = asCoded(err)
	if te == nil || te.Code != CodeSandboxDenied {
		t.Fatalf("err = %v, want FS_SANDBOX_DENIED", err)
	}
	if _, err := os.Stat(filepath.Join(out, "f.txt")); !os.IsNotExist(err) {
		t.Fatal("the write escaped through the swapped directory")
	}
	_, _, err = e.tools.openFile("read", target)
	if te := asCoded(err); te == nil || te.Code != CodeSandboxDenied {
		t.Fatalf("open err = %v, want FS_SANDBOX_DENIED", err)
	}
}

func TestOpenWorkspaceErrors(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	for _, dir := range []string{"", "  ", f, filepath.Join(t.TempDir(), "missing")} {
		if ws, err := OpenWorkspace(dir); err == nil {
			ws.Close()
			t.Errorf("OpenWorkspace(%q) succeeded", dir)
		}
	}
	if _, err := New(Config{Root: t.TempDir(), ReadLimit: -1}); err == nil || !strings.Contains(err.Error(), "ReadLimit must be a positive integer") {
		t.Errorf("New with a negative ReadLimit: %v", err)
	}
}
