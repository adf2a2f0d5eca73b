package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/jsonv"
)

// roEnv is a workspace plus a read-only directory outside it holding out.txt.
func roEnv(t *testing.T, cfg Config) (*env, string) {
	t.Helper()
	ro := t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "out.txt"), []byte("one\ntwo\nthree\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.ReadOnlyRoots = append(cfg.ReadOnlyRoots, ro)
	return newEnv(t, cfg), ro
}

func TestReadOnlyRootRead(t *testing.T) {
	e, ro := roEnv(t, Config{})
	p := filepath.Join(ro, "out.txt")
	res := e.call("read", fmt.Sprintf(`{"file_path":%q,"offset":2,"limit":1}`, p))
	mustOK(t, res)
	want := "<path>" + p + "</path>\n<type>file</type>\n<content>\n2: two\n\n(Showing lines 2-2 of 3. Use offset=3 to continue.)\n</content>"
	if got := text(t, res); got != want {
		t.Errorf("read =\n%s\nwant\n%s", got, want)
	}
	// A relative spelling that lexically lands in the read-only root works too.
	rel, err := filepath.Rel(e.dir, p)
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, e.call("read", fmt.Sprintf(`{"file_path":%q}`, rel)))
	// A missing file there is FS_NOT_FOUND, not a denial.
	wantErr(t, e.call("read", fmt.Sprintf(`{"file_path":%q}`, filepath.Join(ro, "gone.txt"))), CodeNotFound, "not found")
	// The workspace still works, and paths outside both roots are refused as before.
	e.put("a.txt", "a\n")
	mustOK(t, e.call("read", `{"file_path":"a.txt"}`))
	out := outside(t)
	wantErr(t, e.call("read", fmt.Sprintf(`{"file_path":%q}`, filepath.Join(out, "secret.txt"))), CodeSandboxDenied,
		fmt.Sprintf("the path is outside the workspace %q", e.dir))
}

func TestReadOnlyRootRefusesMutation(t *testing.T) {
	for _, noObs := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoObservation=%v", noObs), func(t *testing.T) {
			e, ro := roEnv(t, Config{NoObservation: noObs})
			existing := filepath.Join(ro, "out.txt")
			mustOK(t, e.call("read", fmt.Sprintf(`{"file_path":%q}`, existing))) // reading does not authorize
			for _, p := range []string{existing, filepath.Join(ro, "new.txt"), filepath.Join(ro, "sub", "new.txt")} {
				msg := fmt.Sprintf("%q: the path is in the read-only directory %q", p, ro)
				wantErr(t, e.call("write", fmt.Sprintf(`{"file_path":%q,"content":"pwned"}`, p)), CodeSandboxDenied, "cannot write "+msg)
				wantErr(t, e.call("edit", fmt.Sprintf(`{"file_path":%q,"old_string":"one","new_string":"pwned"}`, p)), CodeSandboxDenied, "cannot edit "+msg)
			}
			if b, _ := os.ReadFile(existing); string(b) != "one\ntwo\nthree\n" {
				t.Errorf("the read-only file changed: %q", b)
			}
			entries, _ := os.ReadDir(ro)
			if len(entries) != 1 {
				t.Errorf("the read-only directory holds %d entries, want only out.txt", len(entries))
			}
		})
	}
}

func TestReadOnlyRootSymlinks(t *testing.T) {
	e, ro := roEnv(t, Config{})
	out := outside(t)
	e.put("ws.txt", "in the workspace\n")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(out, "secret.txt"), filepath.Join(ro, "to-outside")))
	must(os.Symlink(e.path("ws.txt"), filepath.Join(ro, "to-workspace")))
	must(os.Symlink("out.txt", filepath.Join(ro, "inside")))
	must(os.Symlink(filepath.Join(ro, "out.txt"), e.path("to-ro")))

	// Links may not leave the read-only root, not even into the workspace.
	for _, name := range []string{"to-outside", "to-workspace"} {
		p := filepath.Join(ro, name)
		wantErr(t, e.call("read", fmt.Sprintf(`{"file_path":%q}`, p)), CodeSandboxDenied,
			fmt.Sprintf("the symbolic link %q points outside the read-only directory %q", p, ro))
	}
	// A link inside it is followed; the envelope shows the path as spelled.
	res := e.call("read", fmt.Sprintf(`{"file_path":%q}`, filepath.Join(ro, "inside")))
	mustOK(t, res)
	if !strings.Contains(text(t, res), "1: one") {
		t.Errorf("read through the inner link = %q", text(t, res))
	}
	// A workspace link into the read-only root is an escape of the workspace.
	wantErr(t, e.call("read", `{"file_path":"to-ro"}`), CodeSandboxDenied, "points outside the workspace")
	wantErr(t, e.call("write", `{"file_path":"to-ro","content":"x"}`), CodeSandboxDenied, "points outside the workspace")
}

// TestReadOnlyRootNested covers a read-only directory inside the workspace (it stays
// read-only, even through a link) and a workspace inside a read-only directory (it stays
// writable).
func TestReadOnlyRootNested(t *testing.T) {
	t.Run("read-only inside workspace", func(t *testing.T) {
		dir := t.TempDir()
		spill := filepath.Join(dir, "spill")
		if err := os.MkdirAll(spill, 0o700); err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, Config{Root: dir, ReadOnlyRoots: []string{spill}, NoObservation: true})
		e.dir = dir
		e.put("spill/log.txt", "log\n")
		if err := os.Symlink("spill/log.txt", e.path("alias")); err != nil {
			t.Fatal(err)
		}
		mustOK(t, e.call("read", `{"file_path":"spill/log.txt"}`))
		mustOK(t, e.call("read", `{"file_path":"alias"}`))
		for _, p := range []string{"spill/log.txt", "spill/new.txt", e.path("spill/log.txt")} {
			wantErr(t, e.call("write", fmt.Sprintf(`{"file_path":%q,"content":"x"}`, p)), CodeSandboxDenied,
				fmt.Sprintf("is in the read-only directory %q", spill))
		}
		wantErr(t, e.call("write", `{"file_path":"alias","content":"x"}`), CodeSandboxDenied,
			fmt.Sprintf("cannot write %q: the path is in the read-only directory %q", e.path("alias"), spill))
		wantErr(t, e.call("edit", `{"file_path":"alias","old_string":"log","new_string":"x"}`), CodeSandboxDenied, "read-only directory")
		if got := e.get("spill/log.txt"); got != "log\n" {
			t.Errorf("the read-only file changed: %q", got)
		}
		mustOK(t, e.call("write", `{"file_path":"spilled.txt","content":"x"}`)) // a sibling is writable
	})
	t.Run("workspace inside read-only", func(t *testing.T) {
		parent := t.TempDir()
		ws := filepath.Join(parent, "ws")
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(parent, "beside.txt"), []byte("beside\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, Config{Root: ws, ReadOnlyRoots: []string{parent}})
		e.dir = ws
		mustOK(t, e.call("write", `{"file_path":"new.txt","content":"x"}`))
		mustOK(t, e.call("read", `{"file_path":"../beside.txt"}`))
		wantErr(t, e.call("write", `{"file_path":"../beside.txt","content":"x"}`), CodeSandboxDenied, "read-only directory")
	})
}

// TestReadOnlyRootObservations checks that a read-only read is not mistaken for a read of
// the workspace file with the same root-relative name.
func TestReadOnlyRootObservations(t *testing.T) {
	e, ro := roEnv(t, Config{})
	e.put("out.txt", "one\n")
	mustOK(t, e.call("read", fmt.Sprintf(`{"file_path":%q}`, filepath.Join(ro, "out.txt"))))
	wantErr(t, e.call("edit", `{"file_path":"out.txt","old_string":"one","new_string":"two"}`), CodeNotObserved, "edit requires reading")
	wantErr(t, e.call("write", `{"file_path":"out.txt","content":"two"}`), CodeNotObserved, "without reading it first")
	if e.tools.obs.ownerCount() != 0 || len(e.tools.obs.direct) != 0 {
		t.Errorf("observations recorded: %d owners, %v", e.tools.obs.ownerCount(), e.tools.obs.direct)
	}
}

func TestReadOnlyRootConfig(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := New(Config{Root: t.TempDir(), ReadOnlyRoots: []string{missing}}); err == nil || !strings.Contains(err.Error(), "read-only root") {
		t.Errorf("New with a missing read-only root: %v", err)
	}
	// The read tool says where else it reads only when there is somewhere else.
	plain := newEnv(t, Config{})
	withRO, _ := roEnv(t, Config{})
	for _, c := range []struct {
		e    *env
		want string
	}{
		{plain, "or an absolute path inside it."},
		{withRO, "or in a read-only directory, such as a saved full output a tool result named."},
	} {
		def := c.e.tools.Read()
		b, err := jsonv.Marshal(def.Parameters)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.want) {
			t.Errorf("read schema %s lacks %q", b, c.want)
		}
	}
	if g := withRO.tools.Guidance()[0]; !strings.Contains(g, "read that file with its absolute path") {
		t.Errorf("guidance = %q", g)
	}
}

// FuzzResolveRoots checks the read-only invariant over arbitrary paths: a write target never
// lies in a read-only root (by its canonical location), and every target lies inside the
// root that resolved it.
func FuzzResolveRoots(f *testing.F) {
	base := f.TempDir()
	ws := filepath.Join(base, "ws")
	ro := filepath.Join(base, "ro")
	for _, d := range []string{ws + "/spill/sub", ws + "/a", ro + "/d"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for name, target := range map[string]string{
		ws + "/to-spill":     "spill/sub",
		ws + "/a/up":         "..",
		ws + "/abs-ro":       ro,
		ws + "/spill/to-ws":  "../a",
		ro + "/d/up":         "..",
		ro + "/to-ws":        ws,
		ro + "/d/to-nothing": "missing",
	} {
		if err := os.Symlink(target, name); err != nil {
			f.Fatal(err)
		}
	}
	tools, err := New(Config{Root: ws, ReadOnlyRoots: []string{ro, ws + "/spill"}, NoObservation: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { tools.Close() })
	for _, s := range []string{"a/x", "spill/x", "to-spill/x", "a/up/spill/x", "abs-ro/d", ro + "/d/up/d/x", ro + "/to-ws/x",
		"../ro/x", "spill/to-ws/x", "../ro/d/to-nothing", ws + "/spill/sub/../../a/x", "", "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		for _, op := range []string{"read", "write"} {
			target, err := tools.resolve(op, p)
			if err != nil {
				if te := asCoded(err); te == nil || !strings.HasPrefix(te.Code, "FS_") {
					t.Fatalf("resolve(%s, %q): uncoded error %v", op, p, err)
				}
				continue
			}
			real := filepath.Join(target.ws.real, filepath.FromSlash(target.Rel))
			if _, ok := target.ws.within(real); !ok {
				t.Fatalf("resolve(%s, %q) = %s: outside its root %s", op, p, real, target.ws.real)
			}
			if op == "write" {
				if target.ws.readOnly {
					t.Fatalf("resolve(write, %q) resolved in the read-only root %s", p, target.ws.dir)
				}
				for _, r := range []string{ro, ws + "/spill"} {
					if _, in := (&Workspace{dir: r, real: r}).within(real); in {
						t.Fatalf("resolve(write, %q) = %s: inside the read-only root %s", p, real, r)
					}
				}
			}
		}
	})
}
