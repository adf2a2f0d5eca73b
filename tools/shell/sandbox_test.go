package shell

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// requireBwrap fails (never skips) when bubblewrap is missing, saying how to install it.
func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("the bwrap sandbox tests need bubblewrap, which is not installed: run `apt-get install -y bubblewrap` (Debian) and retry")
	}
}

func TestBwrapSandbox(t *testing.T) {
	requireBwrap(t)
	root := t.TempDir()
	reg, _ := setup(t, Config{Root: root, Sandbox: SandboxBwrap})
	// A host directory outside the workspace and outside /tmp (private in the sandbox).
	outsideDir, err := os.MkdirTemp("/var/tmp", "dsh-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outsideDir) })
	outside := filepath.Join(outsideDir, "escaped")

	t.Run("the workspace is writable", func(t *testing.T) {
		res := call(t, reg, "bash", bashArgs("echo data > inside.txt && cat inside.txt", ""))
		f := foreground(t, res)
		if text(t, res) != "data\n" || f.Sandbox == nil || f.Sandbox.Mode != "workspace-write" || f.Sandbox.Denied || f.Sandbox.Enforcement != "full" {
			t.Errorf("text %q, sandbox %+v", text(t, res), f.Sandbox)
		}
		if data, err := os.ReadFile(filepath.Join(root, "inside.txt")); err != nil || string(data) != "data\n" {
			t.Errorf("inside.txt = %q, %v", data, err)
		}
	})
	t.Run("the rest is read-only", func(t *testing.T) {
		res := call(t, reg, "bash", bashArgs("echo x > "+outside, ""))
		f := foreground(t, res)
		want := "[stderr]\n/bin/bash: line 1: " + outside + ": Read-only file system\n[sandbox: file access denied under workspace-write mode]\n[exit code: 1]"
		if got := text(t, res); got != want && !strings.HasSuffix(got, ": Read-only file system\n[sandbox: file access denied under workspace-write mode]\n[exit code: 1]") {
			t.Errorf("text = %q", got)
		}
		if f.Sandbox == nil || !f.Sandbox.Denied {
			t.Errorf("sandbox = %+v", f.Sandbox)
		}
		if _, err := os.Stat(outside); !os.IsNotExist(err) {
			t.Errorf("the command wrote outside the workspace: %v", err)
		}
	})
	t.Run("/tmp is private", func(t *testing.T) {
		name := "dsh-sandbox-" + strconv.Itoa(os.Getpid())
		res := call(t, reg, "bash", bashArgs("echo x > /tmp/"+name+" && cat /tmp/"+name, ""))
		if text(t, res) != "x\n" {
			t.Errorf("text = %q", text(t, res))
		}
		if _, err := os.Stat("/tmp/" + name); !os.IsNotExist(err) {
			os.Remove("/tmp/" + name)
			t.Errorf("the sandbox's /tmp leaked to the host")
		}
	})
	t.Run("there is no network", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		probe := "exec 3<>/dev/tcp/127.0.0.1/" + port + " && echo connected"
		res := call(t, reg, "bash", bashArgs(probe, ""))
		if strings.Contains(text(t, res), "connected") {
			t.Errorf("the sandbox reached the host's listener: %q", text(t, res))
		}
		// The same probe unsandboxed does connect, so the check above means something.
		open, _ := setup(t, Config{Root: root})
		if got := text(t, call(t, open, "bash", bashArgs(probe, ""))); got != "connected\n" {
			t.Errorf("unsandboxed probe = %q", got)
		}
	})
	t.Run("a timeout stops everything inside", func(t *testing.T) {
		sleep := uniqueSleep(t)
		res := call(t, reg, "bash", bashArgs("sleep "+sleep+" & sleep "+sleep, `"timeoutMs":300`))
		f := foreground(t, res)
		if !f.TimedOut {
			t.Errorf("value = %+v", f)
		}
		assertNoProcess(t, sleep)
	})
	t.Run("background jobs are sandboxed too", func(t *testing.T) {
		id := startJob(t, reg, nil, "echo x > "+outside)
		got := text(t, call(t, reg, "job_output", `{"job_id":"`+id+`","wait":true}`))
		if !strings.HasSuffix(got, ": Read-only file system\n[sandbox: file access denied under workspace-write mode]\n[status: completed, exit code: 1]") {
			t.Errorf("job output = %q", got)
		}
	})
}

func TestBwrapMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := NewRunner(Config{Root: t.TempDir(), Sandbox: SandboxBwrap, Shell: "/bin/sh"})
	if err == nil || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Errorf("err = %v", err)
	}
}

// TestBwrapRunnerFailure: when bubblewrap cannot build the sandbox the command did not run,
// and the call fails instead of reporting an ordinary exit (a stand-in bwrap fails the way
// a host without user namespaces makes the real one fail).
func TestBwrapRunnerFailure(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\nfor a; do last=$a; done\n[ \"$last\" = true ] && exit 0\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "bwrap"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	reg, _ := setup(t, Config{Sandbox: SandboxBwrap})
	res := call(t, reg, "bash", bashArgs("echo should not run", ""))
	want := `Error: sandbox mode "workspace-write" is requested but bubblewrap could not build the sandbox; refusing to run the command unconfined. Runner failure: bwrap: setting up uid map: Permission denied`
	if !res.IsError || text(t, res) != want || code(res) != "SANDBOX_UNAVAILABLE" || res.Error.Info.Name != "SandboxUnavailableError" {
		t.Errorf("result = %q (%s)", text(t, res), code(res))
	}
}
