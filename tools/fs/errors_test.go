package fs

import (
	"errors"
	iofs "io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/dsh-go/dsh/tool"
)

func TestIOErrorMapping(t *testing.T) {
	pe := func(err error) error { return &iofs.PathError{Op: "openat", Path: "x", Err: err} }
	tests := []struct {
		err       error
		code, msg string
	}{
		{pe(syscall.EACCES), CodePermissionDenied, `cannot read "/w/x": permission denied`},
		{pe(syscall.EPERM), CodePermissionDenied, `cannot read "/w/x": permission denied`},
		{pe(syscall.ENOENT), CodeNotFound, `cannot read "/w/x": not found`},
		{pe(syscall.ENOTDIR), CodeNotFound, `cannot read "/w/x": not found`},
		{pe(errors.New("path escapes from parent")), CodeSandboxDenied, `cannot read "/w/x": the path leads outside the workspace`},
		{pe(syscall.EIO), CodeIOError, `cannot read "/w/x": input/output error`},
		{&os.LinkError{Op: "linkat", Old: "a", New: "b", Err: syscall.EXDEV}, CodeIOError, `cannot read "/w/x": invalid cross-device link`},
	}
	for _, tt := range tests {
		te := asCoded(ioError("read", "/w/x", tt.err))
		if te == nil || te.Name != ErrorName || te.Code != tt.code || te.Message != tt.msg {
			t.Errorf("ioError(%v) = %+v, want %s %q", tt.err, te, tt.code, tt.msg)
			continue
		}
		if !errors.Is(te, tt.err) {
			t.Errorf("ioError(%v) does not wrap its cause", tt.err)
		}
	}
	// A coded error passes through.
	coded := fsError(CodeNotText, "x")
	if ioError("read", "p", coded) != error(coded) {
		t.Error("ioError rewrote a coded error")
	}
}

func TestRemediate(t *testing.T) {
	stale := fsError(CodeStaleVersion, "cannot edit %q: file changed since it was read", "/p")
	if got := remediate(stale).Error(); got != `cannot edit "/p": file changed since it was read — re-read the file, then retry` {
		t.Errorf("stale: %q", got)
	}
	if !errors.Is(remediate(stale), stale) {
		t.Error("the remediated error does not chain the original")
	}
	unobserved := fsError(CodeNotObserved, "edit requires reading %q first", "/p")
	if got := remediate(unobserved).Error(); got != `edit requires reading "/p" first — read the file, then retry` {
		t.Errorf("not observed: %q", got)
	}
	for _, err := range []error{fsError(CodeNotFound, "x"), errors.New("plain"), &tool.Error{Name: "Other", Code: CodeStaleVersion, Message: "m"}} {
		if remediate(err) != err {
			t.Errorf("remediate changed %v", err)
		}
	}
}

func TestPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every file; the mapping is covered by TestIOErrorMapping")
	}
	e := newEnv(t, Config{})
	e.put("locked.txt", "x\n")
	if err := os.Chmod(e.path("locked.txt"), 0); err != nil {
		t.Fatal(err)
	}
	wantErr(t, e.call("read", `{"file_path":"locked.txt"}`), CodePermissionDenied, "permission denied")
}
