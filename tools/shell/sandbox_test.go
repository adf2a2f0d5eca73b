package shell

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// requireBwrap fails (never skips) when bubblewrap is missing, saying how to install it.
func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := findBwrap(""); err != nil {
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

// TestBwrapNotFromPATH: a bwrap planted first in $PATH is never run; the sandbox uses the
// system's bubblewrap from its fixed path.
func TestBwrapNotFromPATH(t *testing.T) {
	requireBwrap(t)
	bin := t.TempDir()
	ran := filepath.Join(t.TempDir(), "planted-bwrap-ran")
	planted := "#!/bin/sh\necho ran >> " + ran + "\nexit 0\n"
	if err := os.WriteFile(filepath.Join(bin, "bwrap"), []byte(planted), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, mode := range []string{SandboxBwrap, SandboxAuto} {
		t.Run(mode, func(t *testing.T) {
			reg, tools := setup(t, Config{Sandbox: mode})
			if got, _ := tools.Runner.Sandbox(); got != SandboxBwrap {
				t.Fatalf("sandbox = %q", got)
			}
			if tools.Runner.bwrap == filepath.Join(bin, "bwrap") || !filepath.IsAbs(tools.Runner.bwrap) {
				t.Errorf("bwrap = %q", tools.Runner.bwrap)
			}
			f := foreground(t, call(t, reg, "bash", bashArgs("echo inside", "")))
			if f.Stdout.Text != "inside\n" || f.Sandbox == nil {
				t.Errorf("value = %+v", f)
			}
			if _, err := os.Stat(ran); !os.IsNotExist(err) {
				t.Errorf("the bwrap planted in PATH ran (%v)", err)
			}
		})
	}
}

// fakeBwrap writes a stand-in bwrap that passes the probe (whose command is ":") when
// probeOK, and otherwise fails the way a host without user namespaces makes the real one
// fail.
func fakeBwrap(t *testing.T, probeOK bool) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bwrap")
	script := "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"
	if probeOK {
		script = "#!/bin/sh\nfor a; do last=$a; done\n[ \"$last\" = : ] && exit 0\n" + script[len("#!/bin/sh\n"):]
	}
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBwrapRunnerFailure: when bubblewrap cannot build the sandbox the command did not run,
// and the call fails instead of reporting an ordinary exit.
func TestBwrapRunnerFailure(t *testing.T) {
	reg, _ := setup(t, Config{Sandbox: SandboxBwrap, Bwrap: fakeBwrap(t, true)})
	res := call(t, reg, "bash", bashArgs("echo should not run", ""))
	want := `Error: sandbox mode "workspace-write" is requested but bubblewrap could not build the sandbox; refusing to run the command unconfined. Runner failure: bwrap: setting up uid map: Permission denied`
	if !res.IsError || text(t, res) != want || code(res) != "SANDBOX_UNAVAILABLE" || res.Error.Info.Name != "SandboxUnavailableError" {
		t.Errorf("result = %q (%s)", text(t, res), code(res))
	}
}

// TestSandboxAuto: auto uses bubblewrap where it works, and otherwise runs commands without
// a sandbox after saying so exactly once; bwrap refuses to start in the same situation.
func TestSandboxAuto(t *testing.T) {
	requireBwrap(t)
	t.Run("bubblewrap works", func(t *testing.T) {
		var notices []string
		reg, tools := setup(t, Config{Sandbox: SandboxAuto, Notice: func(s string) { notices = append(notices, s) }})
		mode, fallback := tools.Runner.Sandbox()
		if mode != SandboxBwrap || fallback != "" || len(notices) != 0 {
			t.Errorf("sandbox %q, fallback %q, notices %q", mode, fallback, notices)
		}
		if f := foreground(t, call(t, reg, "bash", bashArgs("echo x > /etc/dsh-auto-probe", ""))); f.Sandbox == nil || !f.Sandbox.Denied {
			t.Errorf("value = %+v", f)
		}
	})
	for _, tt := range []struct{ name, bwrap, reason string }{
		{"bubblewrap is missing", "/nonexistent/bwrap", "needs bubblewrap, which is not installed at /nonexistent/bwrap"},
		{"bubblewrap cannot build the sandbox", fakeBwrap(t, false), "bwrap: setting up uid map: Permission denied"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var notices []string
			reg, tools := setup(t, Config{Sandbox: SandboxAuto, Bwrap: tt.bwrap, Notice: func(s string) { notices = append(notices, s) }})
			mode, fallback := tools.Runner.Sandbox()
			if mode != SandboxNone || !strings.Contains(fallback, tt.reason) {
				t.Errorf("sandbox %q, fallback %q", mode, fallback)
			}
			if len(notices) != 1 || !strings.HasPrefix(notices[0], "shell sandbox: bubblewrap is not usable here, so commands run without a sandbox (") || !strings.Contains(notices[0], tt.reason) {
				t.Errorf("notices = %q", notices)
			}
			for range 2 {
				if f := foreground(t, call(t, reg, "bash", bashArgs("echo ran", ""))); f.Stdout.Text != "ran\n" || f.Sandbox != nil {
					t.Errorf("value = %+v", f)
				}
			}
			if len(notices) != 1 {
				t.Errorf("notices = %q", notices)
			}
			_, err := NewRunner(Config{Root: t.TempDir(), Sandbox: SandboxBwrap, Bwrap: tt.bwrap})
			if err == nil || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("sandbox bwrap: err = %v", err)
			}
		})
	}
}

// TestBwrapProtectedPaths: read-only paths stay read-only inside the writable workspace,
// whether they are directories, a ".git" file naming its git directory, or a symbolic
// link; nothing is written to them, and the rest of the workspace stays writable.
func TestBwrapProtectedPaths(t *testing.T) {
	requireBwrap(t)
	mkdir := func(t *testing.T, p string) {
		t.Helper()
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile := func(t *testing.T, p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		prepare func(t *testing.T, root string) (protected []string, targets []string)
	}{
		{"a .git directory and .dsh", func(t *testing.T, root string) ([]string, []string) {
			mkdir(t, filepath.Join(root, ".git", "hooks"))
			mkdir(t, filepath.Join(root, ".dsh"))
			writeFile(t, filepath.Join(root, ".dsh", "config.yaml"), "model: x\n")
			return []string{filepath.Join(root, ".git"), filepath.Join(root, ".dsh")},
				[]string{".git/hooks/pre-commit", ".git/config", ".dsh/config.yaml"}
		}},
		{"a .git file naming its git directory", func(t *testing.T, root string) ([]string, []string) {
			mkdir(t, filepath.Join(root, "gitdirs", "wt", "hooks"))
			writeFile(t, filepath.Join(root, ".git"), "gitdir: gitdirs/wt\n")
			return []string{filepath.Join(root, ".git")}, []string{".git", "gitdirs/wt/hooks/pre-commit"}
		}},
		{"a .git symbolic link", func(t *testing.T, root string) ([]string, []string) {
			mkdir(t, filepath.Join(root, "real-git", "hooks"))
			if err := os.Symlink("real-git", filepath.Join(root, ".git")); err != nil {
				t.Fatal(err)
			}
			return []string{filepath.Join(root, ".git")}, []string{".git/hooks/pre-commit", "real-git/hooks/pre-commit"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			protected, targets := tt.prepare(t, root)
			// A protected path that does not exist is skipped, and one outside the
			// workspace is read-only anyway.
			protected = append(protected, filepath.Join(root, "absent"), "/etc")
			reg, _ := setup(t, Config{Root: root, Sandbox: SandboxBwrap, ReadOnlyPaths: protected})
			for _, target := range targets {
				before, _ := os.ReadFile(filepath.Join(root, target))
				res := call(t, reg, "bash", bashArgs("echo planted >> "+target, ""))
				f := foreground(t, res)
				if f.ExitCode == nil || *f.ExitCode == 0 || f.Sandbox == nil || !f.Sandbox.Denied {
					t.Errorf("writing %s: %q", target, text(t, res))
				}
				after, _ := os.ReadFile(filepath.Join(root, target))
				if string(after) != string(before) {
					t.Errorf("%s changed: %q", target, after)
				}
			}
			f := foreground(t, call(t, reg, "bash", bashArgs("echo ok > free.txt && cat free.txt", "")))
			if f.Stdout.Text != "ok\n" {
				t.Errorf("the rest of the workspace is not writable: %+v", f)
			}
		})
	}
}

// TestBashDescriptionNamesProtectedPaths: the model is told which paths inside the
// workspace stay read-only under the sandbox, and nothing about them without it.
func TestBashDescriptionNamesProtectedPaths(t *testing.T) {
	requireBwrap(t)
	root := t.TempDir()
	protected := []string{filepath.Join(root, ".git"), filepath.Join(root, ".dsh"), "/elsewhere/.dsh"}
	_, tools := setup(t, Config{Root: root, Sandbox: SandboxBwrap, ReadOnlyPaths: protected})
	if d := tools.Bash.Description; !strings.Contains(d, " Inside the workspace these stay read-only: .git, .dsh.") {
		t.Errorf("description = %q", d)
	}
	_, tools = setup(t, Config{Root: root, ReadOnlyPaths: protected})
	if d := tools.Bash.Description; strings.Contains(d, "read-only") {
		t.Errorf("description = %q", d)
	}
}

// TestBwrapReportsSignals: bubblewrap reports a command killed by signal n as exit status
// 128+n; the runner reports the signal, as it does without the sandbox, and an ordinary
// exit status as it is.
func TestBwrapReportsSignals(t *testing.T) {
	for _, mode := range []string{SandboxNone, SandboxBwrap} {
		t.Run(mode, func(t *testing.T) {
			r, err := NewRunner(Config{Root: t.TempDir(), Sandbox: mode})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			for _, tt := range []struct {
				command string
				code    int // -1: ended by the signal
				signal  string
			}{
				{"kill -TERM $$", -1, "SIGTERM"},
				{"kill -KILL $$", -1, "SIGKILL"},
				{"exit 3", 3, ""},
				{"exit 200", 200, ""}, // above 128+64: no signal has that number
			} {
				res, err := r.Run(t.Context(), Request{Command: tt.command})
				if err != nil {
					t.Fatal(err)
				}
				code := -1
				if res.ExitCode != nil {
					code = *res.ExitCode
				}
				if code != tt.code || res.Signal != tt.signal {
					t.Errorf("%s: exit %d, signal %q; want %d, %q", tt.command, code, res.Signal, tt.code, tt.signal)
				}
			}
		})
	}
}
