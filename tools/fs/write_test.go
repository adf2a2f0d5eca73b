package fs

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// umask returns the process umask without changing it for long.
func umask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}

// noTemps fails if a temporary file of this package is left in dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), ".dsh-") {
			t.Errorf("temporary file %s left in %s", en.Name(), dir)
		}
	}
}

func TestWriteCreate(t *testing.T) {
	e := newEnv(t, Config{})
	res := e.call("write", `{"file_path":"dir/sub/new.txt","content":"hi\r\nthere"}`)
	mustOK(t, res)
	p := e.path("dir/sub/new.txt")
	if got, want := text(t, res), "<path>"+p+"</path>\n<type>file</type>\n<content>\nCreated file\n</content>"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	b, _ := jsonv.Marshal(res.Value)
	if want := fmt.Sprintf(`{"path":%q,"operation":"create","before":null,"after":"hi\nthere"}`, p); string(b) != want {
		t.Errorf("value = %s, want %s", b, want)
	}
	if b, _ := jsonv.Marshal(res.Meta); string(b) != `{"diffs":[]}` {
		t.Errorf("meta = %s", b)
	}
	if got := e.get("dir/sub/new.txt"); got != "hi\r\nthere" {
		t.Errorf("file = %q: the content must be stored as given", got)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := 0o666 &^ umask(); fi.Mode().Perm() != want {
		t.Errorf("new file mode = %v, want %v", fi.Mode().Perm(), want)
	}
	noTemps(t, e.path("dir/sub"))
	// An empty content writes an empty file.
	mustOK(t, e.call("write", `{"file_path":"empty.txt","content":""}`))
	if e.get("empty.txt") != "" {
		t.Error("empty write is not empty")
	}
}

func TestWriteRequiresReadToOverwrite(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("a.txt", "old\n")
	p := e.path("a.txt")
	res := e.call("write", `{"file_path":"a.txt","content":"new\n"}`)
	wantErr(t, res, CodeNotObserved)
	if want := fmt.Sprintf(`cannot overwrite existing %q without reading it first — read the file, then retry`, p); res.Error.Message != want {
		t.Errorf("message = %q, want %q", res.Error.Message, want)
	}
	if e.get("a.txt") != "old\n" {
		t.Fatal("a refused write changed the file")
	}
	mustOK(t, e.call("read", `{"file_path":"a.txt","limit":1}`)) // a window authorizes a full overwrite
	res = e.call("write", `{"file_path":"a.txt","content":"new\n"}`)
	mustOK(t, res)
	if !strings.Contains(text(t, res), "\nUpdated file\n") {
		t.Errorf("text = %q", text(t, res))
	}
	// The write itself is an observation: a second write needs no new read.
	mustOK(t, e.call("write", `{"file_path":"a.txt","content":"newer\n"}`))
	if e.get("a.txt") != "newer\n" {
		t.Errorf("file = %q", e.get("a.txt"))
	}
	noTemps(t, e.dir)
}

func TestWriteUpdateValueAndHunks(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("a.txt", "a\nb\nc\nOLD\nd\ne\nf\ng\nh\n")
	mustOK(t, e.call("read", `{"file_path":"a.txt"}`))
	res := e.call("write", `{"file_path":"a.txt","content":"a\nb\nc\nNEW\nd\ne\nf\ng\nh\n"}`)
	mustOK(t, res)
	b, _ := jsonv.Marshal(res.Value)
	if want := fmt.Sprintf(`{"path":%q,"operation":"update","before":"a\nb\nc\nOLD\nd\ne\nf\ng\nh\n","after":"a\nb\nc\nNEW\nd\ne\nf\ng\nh\n"}`, e.path("a.txt")); string(b) != want {
		t.Errorf("value = %s\nwant    %s", b, want)
	}
	b, _ = jsonv.Marshal(res.Meta)
	if want := `{"diffs":[{"path":"a.txt","oldText":"a\nb\nc\nOLD\nd\ne\nf","newText":"a\nb\nc\nNEW\nd\ne\nf"}]}`; string(b) != want {
		t.Errorf("meta = %s\nwant   %s", b, want)
	}
	// Identical content: no hunks.
	res = e.call("write", `{"file_path":"a.txt","content":"a\nb\nc\nNEW\nd\ne\nf\ng\nh\n"}`)
	mustOK(t, res)
	if b, _ := jsonv.Marshal(res.Meta); string(b) != `{"diffs":[]}` {
		t.Errorf("meta = %s", b)
	}
}

func TestWriteKeepsMode(t *testing.T) {
	e := newEnv(t, Config{})
	for _, mode := range []os.FileMode{0o600, 0o755, 0o640} {
		e.put("m.sh", "#!/bin/sh\n")
		if err := os.Chmod(e.path("m.sh"), mode); err != nil {
			t.Fatal(err)
		}
		mustOK(t, e.call("read", `{"file_path":"m.sh"}`))
		mustOK(t, e.call("write", `{"file_path":"m.sh","content":"#!/bin/sh\necho\n"}`))
		fi, err := os.Stat(e.path("m.sh"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("mode after write = %v, want %v", fi.Mode().Perm(), mode)
		}
	}
}

func TestWriteStale(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.path("a.txt")
	e.put("a.txt", "version 1\n")
	mustOK(t, e.call("read", `{"file_path":"a.txt"}`))
	e.put("a.txt", "version 2\n") // same size, written by someone else
	res := e.call("write", `{"file_path":"a.txt","content":"mine\n"}`)
	wantErr(t, res, CodeStaleVersion)
	if want := fmt.Sprintf(`cannot write %q: file changed since it was read — re-read the file, then retry`, p); res.Error.Message != want {
		t.Errorf("message = %q, want %q", res.Error.Message, want)
	}
	if e.get("a.txt") != "version 2\n" {
		t.Fatal("a stale write changed the file")
	}
	mustOK(t, e.call("read", `{"file_path":"a.txt"}`))
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	res = e.call("write", `{"file_path":"a.txt","content":"mine\n"}`)
	wantErr(t, res, CodeStaleVersion)
	if want := fmt.Sprintf(`cannot write %q: file no longer exists — re-read the file, then retry`, p); res.Error.Message != want {
		t.Errorf("message = %q, want %q", res.Error.Message, want)
	}
}

func TestWriteNotRegular(t *testing.T) {
	e := newEnv(t, Config{})
	if err := os.Mkdir(e.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	wantErr(t, e.call("write", `{"file_path":"d","content":"x"}`), CodeNotRegularFile, fmt.Sprintf(`cannot write %q: not a regular file`, e.path("d")))
	e.put("file", "x")
	wantErr(t, e.call("write", `{"file_path":"file/child","content":"x"}`), CodeNotFound, "a parent path segment is not a directory")
}

func TestWriteArgumentErrors(t *testing.T) {
	e := newEnv(t, Config{})
	wantErr(t, e.call("write", `{"file_path":"  ","content":"x"}`), "", "file_path must be a non-empty string")
	wantErr(t, e.call("write", `{"file_path":"a"}`), tool.CodeInvalidArgs, `missing required property "content"`)
	wantErr(t, e.call("write", `{"file_path":"a","content":1}`), tool.CodeInvalidArgs, `"content" must be a string`)
}

func TestWriteWithoutObservation(t *testing.T) {
	e := newEnv(t, Config{NoObservation: true})
	e.put("a.txt", "old\n")
	res := e.call("write", `{"file_path":"a.txt","content":"new\n"}`)
	mustOK(t, res)
	if e.get("a.txt") != "new\n" {
		t.Errorf("file = %q", e.get("a.txt"))
	}
	b, _ := jsonv.Marshal(res.Meta)
	if want := `{"diffs":[{"path":"a.txt","oldText":"old","newText":"new"}]}`; string(b) != want {
		t.Errorf("meta = %s, want %s", b, want)
	}
}

func TestWriteDiffBasis(t *testing.T) {
	e := newEnv(t, Config{NoObservation: true, DiffBasisMaxBytes: 8})
	e.put("big.txt", "0123456789\n")
	res := e.call("write", `{"file_path":"big.txt","content":"small"}`)
	mustOK(t, res)
	if v, _ := res.Value.(*jsonv.Object).Get("before"); v != nil {
		t.Errorf("before = %v, want null for an old side over the basis limit", v)
	}
	e.put("small.txt", "abc")
	res = e.call("write", `{"file_path":"small.txt","content":"0123456789"}`)
	mustOK(t, res)
	if v, _ := res.Value.(*jsonv.Object).Get("before"); v != nil {
		t.Errorf("before = %v, want null for a new side over the basis limit", v)
	}

	e = newEnv(t, Config{NoObservation: true})
	for name, data := range map[string]string{"bin": "a\x00b", "latin1": "caf\xe9"} {
		e.put(name, data)
		res := e.call("write", `{"file_path":"`+name+`","content":"text"}`)
		mustOK(t, res)
		if v, _ := res.Value.(*jsonv.Object).Get("before"); v != nil {
			t.Errorf("%s: before = %v, want null", name, v)
		}
		if b, _ := jsonv.Marshal(res.Meta); string(b) != `{"diffs":[]}` {
			t.Errorf("%s: meta = %s", name, b)
		}
	}
	e.put("crlf", "a\r\nb\r\n")
	res = e.call("write", `{"file_path":"crlf","content":"a\nc\n"}`)
	mustOK(t, res)
	if v, _ := res.Value.(*jsonv.Object).Get("before"); v != "a\nb\n" {
		t.Errorf("before = %q, want LF-normalized", v)
	}
}

// TestWriteCreateRace publishes a guarded create while another writer created the file in
// the meantime: the hard-link publication refuses to clobber it.
func TestWriteCreateRace(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("raced.txt", "theirs")
	_, err := e.tools.writeAtomic(context.Background(), "write", e.path("raced.txt"), "raced.txt", []byte("mine"), 0, false, true)
	var te *tool.Error
	if err == nil || !asToolError(err, &te) || te.Code != CodeNotObserved {
		t.Fatalf("err = %v, want FS_NOT_OBSERVED", err)
	}
	if e.get("raced.txt") != "theirs" {
		t.Fatal("the guarded create clobbered a concurrent file")
	}
	noTemps(t, e.dir)
}

func TestWriteAborted(t *testing.T) {
	e := newEnv(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.tools.writeAtomic(ctx, "write", e.path("x"), "x", []byte("x"), 0, false, false)
	var te *tool.Error
	if !asToolError(err, &te) || te.Code != CodeAborted || te.Message != "write aborted" {
		t.Fatalf("err = %v, want FS_ABORTED write aborted", err)
	}
	if _, err := os.Stat(e.path("x")); !os.IsNotExist(err) {
		t.Errorf("an aborted write created the file: %v", err)
	}
}

func TestWriteThroughSymlinkKeepsLink(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("real.txt", "one\n")
	if err := os.Symlink("real.txt", e.path("link.txt")); err != nil {
		t.Fatal(err)
	}
	mustOK(t, e.call("read", `{"file_path":"link.txt"}`))
	// The observation is keyed by the canonical file, so the real name is observed too.
	mustOK(t, e.call("write", `{"file_path":"real.txt","content":"two\n"}`))
	mustOK(t, e.call("write", `{"file_path":"link.txt","content":"three\n"}`))
	fi, err := os.Lstat(e.path("link.txt"))
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link.txt is no longer a symbolic link: %v %v", fi, err)
	}
	if e.get("real.txt") != "three\n" {
		t.Errorf("real.txt = %q", e.get("real.txt"))
	}
}
