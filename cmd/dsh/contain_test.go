package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/jsonv"
)

// uniqueMarker returns a sleep duration no other process is likely to run, so that the
// processes a test started can be found in /proc by their command line.
func uniqueMarker() string {
	return "900." + strconv.Itoa(os.Getpid()%1000) + strconv.FormatInt(time.Now().UnixNano()%1_000_000, 10)
}

// sleepers returns the live processes running exactly "sleep <marker>".
func sleepers(marker string) []int {
	want := []byte("sleep\x00" + marker + "\x00")
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		cmdline, err := os.ReadFile(dir + "/cmdline")
		if err != nil || !bytes.Equal(cmdline, want) && !bytes.HasSuffix(cmdline, append([]byte("/"), want...)) {
			continue
		}
		stat, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(dir))
		out = append(out, pid)
	}
	return out
}

// waitSleepers waits until exactly n processes run "sleep <marker>", within the test's
// deadline. Processes appear and go without an event to wait on, so /proc is read until
// the count is right.
func waitSleepers(t *testing.T, marker string, n int) {
	t.Helper()
	testwait.Until(t, fmt.Sprintf("%d processes running sleep %s", n, marker), func() bool { return len(sleepers(marker)) == n })
}

// runnerCgroups returns the cgroups the shell runner of dsh process pid created (under this
// process's cgroup v2, on a pure or a hybrid hierarchy).
func runnerCgroups(t *testing.T, pid int) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var rel string
	for line := range strings.SplitSeq(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel = p
		}
	}
	var out []string
	for _, mount := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		m, _ := filepath.Glob(filepath.Join(mount, rel, "dsh-shell-"+strconv.Itoa(pid)+"-*"))
		out = append(out, m...)
	}
	return out
}

// escapeCommand leaves four sleeps behind in the ways a command can — one in a new
// session, one double-forked, one under nohup, one in the command's group — then runs
// rest.
func escapeCommand(marker, rest string) string {
	return "setsid sleep " + marker + " </dev/null >/dev/null 2>&1 & (sleep " + marker + " &); nohup sleep " + marker +
		" >/dev/null 2>&1 & sleep " + marker + " & " + rest
}

// bashScript is a scripted session whose one tool call runs command, then finishes.
func bashScript(t *testing.T, command string) string {
	t.Helper()
	quoted, err := jsonv.Marshal(command)
	if err != nil {
		t.Fatal(err)
	}
	return `{"toolCalls":[{"id":"b1","name":"bash","arguments":{"command":` + string(quoted) + `,"description":"Leave processes behind"}}]}` + "\n" + `{"text":"done"}` + "\n"
}

// TestNothingOutlivesDsh drives the dsh binary with a scripted model whose command leaves
// processes behind (new session, double fork, nohup, background) and counts the survivors:
// after the call ends normally, and after SIGHUP, SIGINT, SIGTERM and SIGKILL of "dsh run"
// while the command runs — with shell.sandbox none and bwrap. Only the dsh process is
// signalled, never its process group.
func TestNothingOutlivesDsh(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Fatal("this test needs bubblewrap at /usr/bin/bwrap: run scripts/test-deps.sh")
	}
	type scenario struct {
		name   string
		signal syscall.Signal // 0: the call ends by itself
	}
	scenarios := []scenario{{"call end", 0}, {"SIGHUP", syscall.SIGHUP}, {"SIGINT", syscall.SIGINT}, {"SIGTERM", syscall.SIGTERM}, {"SIGKILL", syscall.SIGKILL}}
	for _, sandbox := range []string{"none", "bwrap"} {
		for _, sc := range scenarios {
			t.Run(sandbox+"/"+sc.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
				defer cancel()
				dir, ws, home := t.TempDir(), t.TempDir(), t.TempDir()
				marker := uniqueMarker()
				rest := "echo started"
				if sc.signal != 0 {
					rest = "echo ready > ready; sleep " + marker // the foreground part: a fifth sleep
				}
				script := filepath.Join(dir, "script.jsonl")
				if err := os.WriteFile(script, []byte(bashScript(t, escapeCommand(marker, rest))), 0o644); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(exe, "run", "--script", script, "leave processes behind")
				cmd.Dir = ws
				cmd.Env = append(os.Environ(), "DSH_TEST_AS_DSH=1", "DSH_HOME="+home, "DSH_SPILL_DIR="+dir, "NO_COLOR=1", "DSH_SHELL_SANDBOX="+sandbox)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				// dsh in its own group, as a shell would start it; only its pid is signalled.
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				exited := make(chan error, 1)
				go func() { exited <- cmd.Wait() }()
				defer func() {
					// Whatever happened, leave nothing behind.
					cmd.Process.Kill()
					<-exited
					for _, pid := range sleepers(marker) {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}()

				if sc.signal != 0 {
					testwait.Until(t, "the command to be ready (or dsh to end)", func() bool {
						_, err := os.Stat(filepath.Join(ws, "ready"))
						return err == nil || len(exited) > 0
					})
					if len(exited) > 0 {
						t.Fatalf("dsh ended before the command was ready: %v\n%s", <-exited, stderr.String())
					}
					waitSleepers(t, marker, 5)
					t.Logf("the runner's cgroups: %v", runnerCgroups(t, cmd.Process.Pid))
					if err := cmd.Process.Signal(sc.signal); err != nil {
						t.Fatal(err)
					}
				}
				var werr error
				select {
				case werr = <-exited:
					exited <- werr // for the deferred clean-up
				case <-ctx.Done():
					t.Fatalf("dsh did not end\n%s", stderr.String())
				}
				code := cmd.ProcessState.ExitCode()
				switch sc.signal {
				case 0:
					if code != 0 || !strings.Contains(stderr.String(), "started") {
						t.Fatalf("dsh run: %v\n%s", werr, stderr.String())
					}
					// The call returned only once everything it started was gone.
					if n := sleepers(marker); len(n) != 0 {
						t.Fatalf("%d processes survived the call: %v\n%s", len(n), n, stderr.String())
					}
				case syscall.SIGKILL:
					// The host cannot act any more: the death signal, the guard and (with
					// bwrap) the PID namespace must, within the test's deadline (far less
					// than the sleeps would last).
					waitSleepers(t, marker, 0)
				default:
					if code != 130 {
						t.Errorf("exit status %d after %v, want 130\n%s", code, sc.signal, stderr.String())
					}
					if n := sleepers(marker); len(n) != 0 {
						t.Fatalf("%d processes survived %v of dsh: %v\n%s", len(n), sc.signal, n, stderr.String())
					}
				}
				// However dsh ended, its shell runner's cgroup is removed (by dsh, or by the
				// guard once dsh is gone).
				testwait.Until(t, "the runner's cgroups to be removed", func() bool { return len(runnerCgroups(t, cmd.Process.Pid)) == 0 })
				if sandbox == "bwrap" && strings.Contains(stderr.String(), "without a sandbox") {
					t.Errorf("the sandbox was not used:\n%s", stderr.String())
				}
				t.Log(fmt.Sprintf("exit status %d", code))
			})
		}
	}
}

// TestShellProtectedPaths: under the sandbox, a command run through "dsh call" cannot
// plant a git hook, rewrite the project's dsh configuration or write into the dsh home,
// while the rest of the workspace stays writable.
func TestShellProtectedPaths(t *testing.T) {
	s := newSandbox(t)
	s.env["DSH_SHELL_SANDBOX"] = "bwrap"
	s.write(".git/hooks/README", "hooks\n")
	s.write(".dsh/config.yaml", "maxSteps: 5\n")
	for _, target := range []string{".git/hooks/pre-commit", ".git/config", ".dsh/config.yaml"} {
		args := `{"command":"echo planted >> ` + target + `","description":"Plant a file"}`
		r := s.dsh("call", "bash", args)
		mustContain(t, "dsh call output", r.stdout+r.stderr, "[sandbox: file access denied under workspace-write mode]")
		if data, _ := os.ReadFile(filepath.Join(s.ws, target)); strings.Contains(string(data), "planted") {
			t.Errorf("%s was written: %q", target, data)
		}
	}
	if err := os.MkdirAll(s.home, 0o755); err != nil {
		t.Fatal(err)
	}
	r := s.dsh("call", "bash", `{"command":"echo planted > `+filepath.Join(s.home, "config.yaml")+` || true","description":"Write the dsh home"}`)
	if _, err := os.Stat(filepath.Join(s.home, "config.yaml")); err == nil {
		t.Errorf("the dsh home was written:\n%s%s", r.stdout, r.stderr)
	}
	r = s.dsh("call", "bash", `{"command":"echo free > free.txt","description":"Write the workspace"}`).want(t, 0)
	if data, err := os.ReadFile(filepath.Join(s.ws, "free.txt")); err != nil || string(data) != "free\n" {
		t.Errorf("free.txt = %q, %v\n%s%s", data, err, r.stdout, r.stderr)
	}
}

// TestBwrapNeverFromPATH: a bwrap planted first in $PATH is never what runs a command,
// whether the sandbox is required (bwrap) or chosen where it works (auto): dsh takes
// bubblewrap from its fixed system paths only.
func TestBwrapNeverFromPATH(t *testing.T) {
	bin := buildDsh(t)
	for _, mode := range []string{"bwrap", "auto"} {
		t.Run(mode, func(t *testing.T) {
			s := newSandbox(t)
			planted := t.TempDir()
			ran := filepath.Join(t.TempDir(), "the planted bwrap ran")
			script := "#!/bin/sh\n: > '" + ran + "'\nexec /usr/bin/bwrap \"$@\"\n"
			if err := os.WriteFile(filepath.Join(planted, "bwrap"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(t.Context(), bin, "call", "--json", "--sandbox", mode, "bash", `{"command":"echo from the sandbox","description":"d"}`)
			cmd.Dir = s.ws
			cmd.Env = append(os.Environ(), "DSH_HOME="+s.home, "PATH="+planted+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("dsh call: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), `"isError":false`) || !strings.Contains(string(out), "from the sandbox") {
				t.Errorf("the command did not run:\n%s", out)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Errorf("dsh ran the bwrap planted in PATH (%s)", planted)
			}
		})
	}
}
