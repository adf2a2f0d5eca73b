package fs

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/testwait"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

func TestEditSuccess(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("a.txt", "alpha\nbeta\ngamma\n")
	p := e.path("a.txt")
	mustOK(t, e.call("read", `{"file_path":"a.txt"}`))
	res := e.call("edit", `{"file_path":"a.txt","old_string":"beta","new_string":"BETA"}`)
	mustOK(t, res)
	if got, want := text(t, res), "The file "+p+" has been updated successfully."; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	b, _ := jsonv.Marshal(res.Value)
	if want := fmt.Sprintf(`{"path":%q,"before":"alpha\nbeta\ngamma\n","after":"alpha\nBETA\ngamma\n"}`, p); string(b) != want {
		t.Errorf("value = %s, want %s", b, want)
	}
	b, _ = jsonv.Marshal(res.Meta)
	if want := `{"diffs":[{"path":"a.txt","oldText":"alpha\nbeta\ngamma","newText":"alpha\nBETA\ngamma"}]}`; string(b) != want {
		t.Errorf("meta = %s, want %s", b, want)
	}
	if e.get("a.txt") != "alpha\nBETA\ngamma\n" {
		t.Errorf("file = %q", e.get("a.txt"))
	}
	// The edit is an observation: edit again without reading.
	res = e.call("edit", `{"file_path":"a.txt","old_string":"a","new_string":"A","replace_all":true}`)
	mustOK(t, res)
	if got, want := text(t, res), "The file "+p+" has been updated. All occurrences were successfully replaced."; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	if e.get("a.txt") != "AlphA\nBETA\ngAmmA\n" {
		t.Errorf("file = %q", e.get("a.txt"))
	}
	// Deleting text with an empty new_string.
	mustOK(t, e.call("edit", `{"file_path":"a.txt","old_string":"BETA\n","new_string":""}`))
	if e.get("a.txt") != "AlphA\ngAmmA\n" {
		t.Errorf("file = %q", e.get("a.txt"))
	}
	noTemps(t, e.dir)
}

func TestEditErrors(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("a.txt", "x y x\n")
	p := e.path("a.txt")
	tests := []struct {
		name, args, code, msg string
		read                  bool
	}{
		{"blank path", `{"file_path":"","old_string":"a","new_string":"b"}`, "", "file_path must be a non-empty string", false},
		{"empty old", `{"file_path":"a.txt","old_string":"","new_string":"b"}`, "", "old_string must be a non-empty string", false},
		{"equal", `{"file_path":"a.txt","old_string":"x","new_string":"x"}`, "", "old_string and new_string must differ", false},
		{"missing new", `{"file_path":"a.txt","old_string":"x"}`, tool.CodeInvalidArgs, `invalid arguments: missing required property "new_string"`, false},
		{"bad replace_all", `{"file_path":"a.txt","old_string":"x","new_string":"z","replace_all":"yes"}`, tool.CodeInvalidArgs, `invalid arguments: "replace_all" must be a boolean`, false},
		{"not observed", `{"file_path":"a.txt","old_string":"y","new_string":"z"}`, CodeNotObserved, fmt.Sprintf(`edit requires reading %q first — read the file, then retry`, p), false},
		{"not found", `{"file_path":"a.txt","old_string":"nope","new_string":"z"}`, CodeEditNotFound, fmt.Sprintf(`old_string was not found in %q`, p), true},
		{"ambiguous", `{"file_path":"a.txt","old_string":"x","new_string":"z"}`, CodeAmbiguousEdit, fmt.Sprintf(`old_string matched 2 times in %q; provide a more specific old_string or set replace_all to true`, p), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.read {
				mustOK(t, e.call("read", `{"file_path":"a.txt"}`))
			}
			res := e.call("edit", tt.args)
			wantErr(t, res, tt.code)
			if res.Error.Message != tt.msg {
				t.Errorf("message = %q, want %q", res.Error.Message, tt.msg)
			}
			if e.get("a.txt") != "x y x\n" {
				t.Fatal("a failed edit changed the file")
			}
		})
	}
}

func TestEditStale(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.path("a.txt")
	stale := fmt.Sprintf(`cannot edit %q: file changed since it was read — re-read the file, then retry`, p)
	edit := `{"file_path":"a.txt","old_string":"one","new_string":"ONE"}`

	t.Run("rewritten in place, same size", func(t *testing.T) {
		e.put("a.txt", "one two\n")
		mustOK(t, e.call("read", `{"file_path":"a.txt"}`))
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("one TWO\n"), 0)
		f.Close()
		res := e.call("edit", edit)
		wantErr(t, res, CodeStaleVersion)
		if res.Error.Message != stale {
			t.Errorf("message = %q, want %q", res.Error.Message, stale)
		}
	})
	t.Run("replaced by rename, same size", func(t *testing.T) {
		e.put("a.txt", "one two\n")
		mustOK(t, e.call("read", `{"file_path":"a.txt"}`))
		e.put("other", "one 222\n")
		if err := os.Rename(e.path("other"), p); err != nil {
			t.Fatal(err)
		}
		wantErr(t, e.call("edit", edit), CodeStaleVersion, "file changed since it was read")
	})
	t.Run("deleted", func(t *testing.T) {
		e.put("a.txt", "one two\n")
		mustOK(t, e.call("read", `{"file_path":"a.txt"}`))
		os.Remove(p)
		wantErr(t, e.call("edit", edit), CodeStaleVersion, "file changed since it was read")
	})
	t.Run("same metadata, other content", func(t *testing.T) {
		// A rewrite within one timestamp tick keeps size, inode and times; the content hash
		// still tells. Simulate it by tampering with the recorded hash.
		e.put("a.txt", "one two\n")
		mustOK(t, e.call("read", `{"file_path":"a.txt"}`))
		target, _ := e.tools.ws.Resolve("edit", "a.txt")
		ob, _ := e.tools.obs.get(nil, target.Rel)
		ob.v.sum++
		e.tools.obs.set(nil, target.Rel, ob)
		wantErr(t, e.call("edit", edit), CodeStaleVersion)
		ob.v.sum--
		e.tools.obs.set(nil, target.Rel, ob)
		mustOK(t, e.call("edit", edit))
	})
	t.Run("after re-read", func(t *testing.T) {
		e.put("a.txt", "one two\n")
		mustOK(t, e.call("read", `{"file_path":"a.txt"}`))
		e.put("a.txt", "one three\n")
		wantErr(t, e.call("edit", edit), CodeStaleVersion)
		mustOK(t, e.call("read", `{"file_path":"a.txt"}`))
		mustOK(t, e.call("edit", edit))
		if e.get("a.txt") != "ONE three\n" {
			t.Errorf("file = %q", e.get("a.txt"))
		}
	})
}

func TestEditObservationsPerAgent(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("a.txt", "one\n")
	alice := e.reg.NewScope("alice", nil)
	bob := e.reg.NewScope("bob", nil)
	edit := `{"file_path":"a.txt","old_string":"one","new_string":"two"}`
	mustOK(t, e.callAs(alice, "read", `{"file_path":"a.txt"}`))
	wantErr(t, e.callAs(bob, "edit", edit), CodeNotObserved)
	wantErr(t, e.call("edit", edit), CodeNotObserved) // the direct owner is another owner
	mustOK(t, e.callAs(alice, "edit", edit))
	// Alice's edit made Bob's earlier read stale.
	mustOK(t, e.callAs(bob, "read", `{"file_path":"a.txt"}`))
	mustOK(t, e.callAs(alice, "edit", `{"file_path":"a.txt","old_string":"two","new_string":"three"}`))
	wantErr(t, e.callAs(bob, "edit", `{"file_path":"a.txt","old_string":"three","new_string":"four"}`), CodeStaleVersion)
}

func TestObservationsFreedWithScope(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("a.txt", "one\n")
	func() {
		s := e.reg.NewScope("short-lived", nil)
		mustOK(t, e.callAs(s, "read", `{"file_path":"a.txt"}`))
	}()
	if e.tools.obs.ownerCount() != 1 {
		t.Fatalf("owners = %d, want 1", e.tools.obs.ownerCount())
	}
	// Cleanups run on a runtime goroutine after a collection: collect until the owner is
	// gone, for as long as the test may run.
	testwait.Until(t, "the collected scope's owner to be dropped", func() bool {
		runtime.GC()
		return e.tools.obs.ownerCount() == 0
	})
}

func TestEditLineEndingsAndBOM(t *testing.T) {
	e := newEnv(t, Config{NoObservation: true})
	tests := []struct {
		name, data, old, new, want, before string
	}{
		{"crlf kept", "a\r\nb\r\nc\r\n", "b", "B", "a\r\nB\r\nc\r\n", "a\nb\nc\n"},
		{"crlf old_string", "a\r\nb\r\nc\r\n", "a\r\nb", "x\r\ny", "x\r\ny\r\nc\r\n", "a\nb\nc\n"},
		{"lf new_string into crlf file", "a\r\nb\r\n", "b", "b\nc", "a\r\nb\r\nc\r\n", "a\nb\n"},
		{"mostly lf: stray crlf becomes lf", "a\nb\nc\r\n", "a", "A", "A\nb\nc\n", "a\nb\nc\n"},
		{"bom kept", "\uFEFFhello\n", "hello", "bye", "\uFEFFbye\n", "hello\n"},
		{"lone cr", "a\rb\n", "a\rb", "c", "c\n", "a\rb\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.put("f.txt", tt.data)
			res := e.call("edit", fmt.Sprintf(`{"file_path":"f.txt","old_string":%q,"new_string":%q}`, tt.old, tt.new))
			mustOK(t, res)
			if got := e.get("f.txt"); got != tt.want {
				t.Errorf("file = %q, want %q", got, tt.want)
			}
			if b, _ := res.Value.(*jsonv.Object).Get("before"); b != tt.before {
				t.Errorf("before = %q, want %q", b, tt.before)
			}
		})
	}
}

func TestEditNotText(t *testing.T) {
	e := newEnv(t, Config{NoObservation: true})
	p := e.path("f")
	for data, msg := range map[string]string{
		strings.Repeat("a", 10000) + "\x00": "binary file", // anywhere, unlike read's sample
		"ok \xff":                           "invalid UTF-8 text",
	} {
		e.put("f", data)
		wantErr(t, e.call("edit", `{"file_path":"f","old_string":"a","new_string":"b"}`), CodeNotText, fmt.Sprintf("cannot edit %q: %s", p, msg))
	}
	if err := os.Mkdir(e.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	wantErr(t, e.call("edit", `{"file_path":"d","old_string":"a","new_string":"b"}`), CodeNotRegularFile, fmt.Sprintf("cannot edit %q: not a regular file", e.path("d")))
	// Without the policy a missing file is stale, as in the reference provider.
	wantErr(t, e.call("edit", `{"file_path":"gone","old_string":"a","new_string":"b"}`), CodeStaleVersion, "file changed since it was read")
}

func TestEditTooLarge(t *testing.T) {
	e := newEnv(t, Config{NoObservation: true})
	e.tools.editMax = 16
	e.put("big", strings.Repeat("a", 17))
	wantErr(t, e.call("edit", `{"file_path":"big","old_string":"a","new_string":"b","replace_all":true}`), CodeTooLarge, "17 bytes exceeds the 16-byte limit")
	e.put("ok", strings.Repeat("a", 16))
	mustOK(t, e.call("edit", `{"file_path":"ok","old_string":"a","new_string":"b","replace_all":true}`))
}

func TestEditKeepsMode(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("run.sh", "echo one\n")
	os.Chmod(e.path("run.sh"), 0o751)
	mustOK(t, e.call("read", `{"file_path":"run.sh"}`))
	mustOK(t, e.call("edit", `{"file_path":"run.sh","old_string":"one","new_string":"two"}`))
	fi, _ := os.Stat(e.path("run.sh"))
	if fi.Mode().Perm() != 0o751 {
		t.Errorf("mode = %v, want 0751", fi.Mode().Perm())
	}
}

func TestReplaceLiteral(t *testing.T) {
	tests := []struct {
		content, old, new string
		all               bool
		want, code        string
	}{
		{"abc", "b", "X", false, "aXc", ""},
		{"aaa", "aa", "b", true, "ba", ""},  // non-overlapping, left to right
		{"aaa", "aa", "b", false, "ba", ""}, // one non-overlapping match
		{"aaaa", "aa", "b", false, "", CodeAmbiguousEdit},
		{"abc", "d", "X", true, "", CodeEditNotFound},
		{"a\nb", "a\r\nb", "c\r\nd", false, "c\nd", ""},
		{"x", "\r\n", "y", false, "", CodeEditNotFound},
	}
	for _, tt := range tests {
		got, err := replaceLiteral(tt.content, tt.old, tt.new, tt.all, "/f")
		code := ""
		var te *tool.Error
		if asToolError(err, &te) {
			code = te.Code
		}
		if got != tt.want || code != tt.code {
			t.Errorf("replaceLiteral(%q, %q, %q, %v) = %q, %q; want %q, %q", tt.content, tt.old, tt.new, tt.all, got, code, tt.want, tt.code)
		}
	}
}
