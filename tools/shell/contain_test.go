package shell

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-go/dsh/internal/testwait"
)

// escapes are commands that leave something behind them in the ways a command can: running
// in its group, double-forked, in a new session, under nohup, in a new session with a
// scrubbed environment (found through the cgroup only), and a re-parented process in a new
// session that has already exited (a zombie to reap, found through the cgroup only).
func escapes(marker string) map[string]string {
	return map[string]string{
		"background":             "sleep " + marker + " & echo started",
		"double fork":            "(sleep " + marker + " &) ; echo started",
		"setsid":                 "setsid sleep " + marker + " </dev/null >/dev/null 2>&1 & echo started",
		"nohup":                  "nohup sleep " + marker + " >/dev/null 2>&1 & echo started",
		"setsid, env scrubbed":   "setsid env -i /bin/sleep " + marker + " </dev/null >/dev/null 2>&1 & echo started",
		"setsid, holding stdout": "setsid sleep " + marker + " & echo started",
		"setsid, exits at once":  "(setsid sh -c 'exit 3' &); sleep " + marker + " & echo started",
	}
}

// waitNoProcess waits, up to the test's deadline, until no live process has marker
// in its command line, and fails listing the survivors otherwise.
func waitNoProcess(t testing.TB, marker string) {
	t.Helper()
	testwait.Until(t, "no process with "+marker, func() bool { return len(processesWith(marker)) == 0 })
	assertNoProcess(t, marker)
}

// ownZombies returns this process's children that have exited and not been reaped.
func ownZombies() []int {
	entries, _ := readProc()
	var out []int
	for _, e := range entries {
		if e.ppid == os.Getpid() && !e.live() {
			out = append(out, e.pid)
		}
	}
	return out
}

// describe lists processes with their /proc/PID/stat lines.
func describe(pids []int) string {
	var b strings.Builder
	for _, pid := range pids {
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		b.WriteString("\n" + strings.TrimSpace(string(stat)))
	}
	return b.String()
}

// TestNothingOutlivesTheCall: whatever a command leaves running — in its group,
// double-forked, in a new session, under nohup — is gone when its call returns, and
// nothing re-parented to this process is left a zombie. With the sandbox, with a cgroup
// per command, and with neither (found by process group and environment marker).
func TestNothingOutlivesTheCall(t *testing.T) {
	configs := map[string]Config{
		"none, cgroups":    {},
		"none, no cgroups": {DisableCgroups: true},
		"bwrap":            {Sandbox: SandboxBwrap},
	}
	for cname, cfg := range configs {
		t.Run(cname, func(t *testing.T) {
			if cfg.Sandbox == SandboxBwrap {
				requireBwrap(t)
			}
			reg, tools := setup(t, cfg)
			if cname == "none, cgroups" && tools.Runner.cgroups == nil {
				t.Fatalf("cgroup v2 is not writable on this host (%s): this case needs it", tools.Runner.cgroupErr)
			}
			for name := range escapes("") {
				if cname == "none, no cgroups" && (name == "setsid, env scrubbed" || name == "setsid, exits at once") {
					// What only a cgroup or the sandbox can find: a process that left the
					// group and scrubbed its environment, or left the group and exited
					// before the command ended (see TestScrubbedEscapeNeedsCgroup).
					continue
				}
				t.Run(name, func(t *testing.T) {
					marker := uniqueSleep(t)
					command := escapes(marker)[name]
					f := foreground(t, call(t, reg, "bash", bashArgs(command, "")))
					if f.Stdout.Text != "started\n" || f.ExitCode == nil || *f.ExitCode != 0 {
						t.Errorf("value = %+v", f)
					}
					// The call returns once all of it is gone, or after a bounded wait for
					// what ignores SIGKILL for a while; allow a loaded machine that much.
					waitNoProcess(t, marker)
					if z := ownZombies(); len(z) > 0 {
						t.Errorf("zombies left: %s", describe(z))
					}
				})
			}
		})
	}
}

// TestScrubbedEscapeNeedsCgroup documents the limit of containment without cgroups or a
// sandbox: a process that leaves the process group and scrubs its environment cannot be
// told apart from others, so it outlives the call (the test then kills it itself).
func TestScrubbedEscapeNeedsCgroup(t *testing.T) {
	reg, _ := setup(t, Config{DisableCgroups: true})
	marker := uniqueSleep(t)
	// The command returns once the escaped process runs sleep, with an empty environment.
	command := "setsid env -i /bin/sleep " + marker + " </dev/null >/dev/null 2>&1 & pid=$!; until [ \"$(cat /proc/$pid/comm)\" = sleep ]; do :; done; echo started"
	f := foreground(t, call(t, reg, "bash", bashArgs(command, "")))
	if f.Stdout.Text != "started\n" {
		t.Errorf("value = %+v", f)
	}
	pids := processesWith(marker)
	if len(pids) != 1 {
		t.Fatalf("want the escaped process alive, got %v", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitNoProcess(t, marker)
}

// TestOrphansAreReaped: an orphan re-parented to this process that no command claims (it
// left the group and scrubbed its environment, without cgroups) and dies later is reaped
// when the next command settles, and again at Close; a child os/exec started and has not
// waited for yet is left to os/exec, whose Wait still reports its exit status.
func TestOrphansAreReaped(t *testing.T) {
	r, err := NewRunner(Config{Root: t.TempDir(), SpillDir: t.TempDir(), Grace: testGrace, DisableCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.reapOrphans {
		t.Fatal("this process holds no pidfd for the guard process: orphans cannot be told from os/exec's children here")
	}
	escape := func() int {
		t.Helper()
		marker := uniqueSleep(t)
		command := "setsid env -i /bin/sleep " + marker + " </dev/null >/dev/null 2>&1 & pid=$!; until [ \"$(cat /proc/$pid/comm)\" = sleep ]; do :; done; echo $pid"
		res, err := r.Run(t.Context(), Request{Command: command})
		if err != nil {
			t.Fatal(err)
		}
		pid := atoi(t, res.Stdout.Text)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		testwait.Until(t, "the escaped process to be a zombie", func() bool { return slices.Contains(ownZombies(), pid) })
		return pid
	}
	// A child of os/exec's, exited and not yet waited for.
	child := exec.Command("/bin/sh", "-c", "exit 7")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the os/exec child to exit", func() bool { return slices.Contains(ownZombies(), child.Process.Pid) })

	orphan := escape()
	if _, err := r.Run(t.Context(), Request{Command: "true"}); err != nil {
		t.Fatal(err)
	}
	if z := ownZombies(); slices.Contains(z, orphan) {
		t.Errorf("the orphan %d is still a zombie after the next command", orphan)
	}
	if z := ownZombies(); !slices.Contains(z, child.Process.Pid) {
		t.Errorf("os/exec's child %d was reaped by the runner (zombies: %v)", child.Process.Pid, z)
	}
	orphan = escape()
	r.Close()
	if z := ownZombies(); slices.Contains(z, orphan) {
		t.Errorf("the orphan %d is still a zombie after Close", orphan)
	}
	if err := child.Wait(); err == nil || child.ProcessState == nil || child.ProcessState.ExitCode() != 7 {
		t.Errorf("os/exec's Wait = %v, state %v; want exit status 7", err, child.ProcessState)
	}
}

// TestBackgroundJobsAreContained: killing a background job ends what it started outside
// its group too.
func TestBackgroundJobsAreContained(t *testing.T) {
	reg, _ := setup(t, Config{})
	marker := uniqueSleep(t)
	id := startJob(t, reg, nil, "setsid sleep "+marker+" </dev/null >/dev/null 2>&1 & sleep "+marker)
	// The shell (whose command line holds the marker too) and the two sleeps, both past
	// their exec (setsid may fork first: its own process holds the marker for a moment).
	testwait.Until(t, "the shell and 2 sleeps with "+marker, func() bool {
		pids := processesWith(marker)
		sleeps := 0
		for _, pid := range pids {
			if cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && bytes.HasPrefix(cmdline, []byte("sleep\x00")) {
				sleeps++
			}
		}
		return len(pids) == 3 && sleeps == 2
	})
	call(t, reg, "job_kill", `{"job_id":"`+id+`"}`)
	got := text(t, call(t, reg, "job_output", `{"job_id":"`+id+`","wait":true}`))
	if !strings.Contains(got, "[status: killed") {
		t.Errorf("job output = %q", got)
	}
	assertNoProcess(t, marker)
}

// TestCommandCgroup: where cgroup v2 is writable each command runs in its own cgroup, which
// is removed when the command ends; the runner's cgroup goes with Close.
func TestCommandCgroup(t *testing.T) {
	r, err := NewRunner(Config{Root: t.TempDir(), SpillDir: t.TempDir(), Grace: testGrace})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.cgroups == nil {
		t.Fatalf("cgroup v2 is not writable on this host (%s)", r.cgroupErr)
	}
	res, err := r.Run(t.Context(), Request{Command: "cat /proc/self/cgroup"})
	if err != nil {
		t.Fatal(err)
	}
	var path string
	for line := range strings.SplitSeq(res.Stdout.Text, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path = p
		}
	}
	if filepath.Base(path) != "cmd-1" || filepath.Base(filepath.Dir(path)) != filepath.Base(r.cgroups.dir) {
		t.Fatalf("the command ran in cgroup %q, want .../%s/cmd-1:\n%s", path, filepath.Base(r.cgroups.dir), res.Stdout.Text)
	}
	if _, err := os.Stat(filepath.Join(r.cgroups.dir, "cmd-1")); !os.IsNotExist(err) {
		t.Errorf("the command's cgroup is still there: %v", err)
	}
	r.Close()
	if _, err := os.Stat(r.cgroups.dir); !os.IsNotExist(err) {
		t.Errorf("the runner's cgroup is still there after Close: %v", err)
	}
	if _, err := r.Run(t.Context(), Request{Command: "true"}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("run after Close: %v", err)
	}
}

// TestLimits: the process and memory limits reach the command. On a host whose cgroup v2
// offers the pids and memory controllers they are the cgroup's pids.max and memory.max;
// elsewhere (as on a cgroup v1/v2 hybrid) they are RLIMIT_NPROC and RLIMIT_AS, and a
// command that needs more memory than allowed fails.
func TestLimits(t *testing.T) {
	for _, cgroups := range []bool{true, false} {
		t.Run("cgroups="+strconv.FormatBool(cgroups), func(t *testing.T) {
			r, err := NewRunner(Config{Root: t.TempDir(), SpillDir: t.TempDir(), Grace: testGrace,
				MaxProcesses: 321, MaxMemoryBytes: 96 << 20, DisableCgroups: !cgroups})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			t.Log(r.containment())
			run := func(command string) *RunResult {
				t.Helper()
				res, err := r.Run(t.Context(), Request{Command: command})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			if r.cgroups != nil && r.cgroups.pids {
				if got := run("cat /sys/fs/cgroup/$(sed -n 's/^0:://p' /proc/self/cgroup)/pids.max 2>/dev/null || cat /sys/fs/cgroup/unified/$(sed -n 's/^0:://p' /proc/self/cgroup)/pids.max").Stdout.Text; got != "321\n" {
					t.Errorf("pids.max = %q", got)
				}
			} else if got := run("ulimit -u").Stdout.Text; got != "321\n" {
				t.Errorf("ulimit -u = %q", got)
			}
			if r.cgroups == nil || !r.cgroups.memory {
				if got := run("ulimit -v").Stdout.Text; got != strconv.Itoa(96<<10)+"\n" {
					t.Errorf("ulimit -v = %q", got)
				}
			}
			// Either way, a command that wants more than allowed cannot have it.
			res := run("dd if=/dev/zero of=/dev/null bs=200M count=1")
			if res.ExitCode == nil || *res.ExitCode == 0 {
				t.Errorf("dd with a 200M buffer under a 96M limit: %+v, stderr %q", res.ExitCode, res.Stderr.Text)
			}
			if res := run("dd if=/dev/zero of=/dev/null bs=1M count=1 2>/dev/null && echo fine"); res.Stdout.Text != "fine\n" {
				t.Errorf("a small command fails under the limits: %q %q", res.Stdout.Text, res.Stderr.Text)
			}
		})
	}
	t.Run("no limits", func(t *testing.T) {
		r, err := NewRunner(Config{Root: t.TempDir(), SpillDir: t.TempDir(), Grace: testGrace, MaxProcesses: -1, MaxMemoryBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		res, err := r.Run(t.Context(), Request{Command: "ulimit -v"})
		if err != nil || res.Stdout.Text != "unlimited\n" {
			t.Errorf("ulimit -v = %q, %v", res.Stdout.Text, err)
		}
	})
}

// TestGuardKillsOnRelease: the guard, released as it is when the host process dies, kills
// every process carrying the runner's marker, including one that left the process group
// and the cgroup is not needed for.
func TestGuardKillsOnRelease(t *testing.T) {
	r, err := NewRunner(Config{Root: t.TempDir(), SpillDir: t.TempDir(), Grace: testGrace, DisableCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	marker := uniqueSleep(t)
	p, err := r.Start(Request{Command: "setsid sleep " + marker + " </dev/null >/dev/null 2>&1 & sleep " + marker})
	if err != nil {
		t.Fatal(err)
	}
	// The shell (whose command line holds the marker too) and the two sleeps, both past
	// their exec (setsid may fork first: its own process holds the marker for a moment).
	testwait.Until(t, "the shell and 2 sleeps with "+marker, func() bool {
		pids := processesWith(marker)
		sleeps := 0
		for _, pid := range pids {
			if cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && bytes.HasPrefix(cmdline, []byte("sleep\x00")) {
				sleeps++
			}
		}
		return len(pids) == 3 && sleeps == 2
	})
	r.guard.close() // what the host's death does: the guard's pipe reaches end of file
	testwait.Recv(t, p.Done(), "the command to end after the guard was released")
	assertNoProcess(t, marker)
}

func TestParseStatFull(t *testing.T) {
	tests := []struct {
		in   string
		want procEntry
		ok   bool
	}{
		{"12 (sleep) S 5 12 12 0 -1", procEntry{pid: 12, ppid: 5, pgrp: 12, state: 'S'}, true},
		{"7 (a) b) (c) Z 1 3 3", procEntry{pid: 7, ppid: 1, pgrp: 3, state: 'Z'}, true},
		{"7 (x) S 1", procEntry{}, false},
		{"x (x) S 1 2 3", procEntry{}, false},
		{"7 (x) S one 2 3", procEntry{}, false},
		{"", procEntry{}, false},
	}
	for _, tt := range tests {
		got, ok := parseStatFull([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseStatFull(%q) = %+v, %v", tt.in, got, ok)
		}
	}
}

func TestReadGitdir(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ content, want string }{
		{"gitdir: /repo/.git/worktrees/x\n", "/repo/.git/worktrees/x"},
		{"gitdir: ../modules/sub\n", filepath.Join(filepath.Dir(dir), "modules/sub")},
		{"gitdir:\n", ""},
		{"not a git file\n", ""},
		{strings.Repeat("x", 5000), ""},
	}
	for _, tt := range tests {
		p := filepath.Join(dir, ".git")
		if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := readGitdir(p); got != tt.want {
			t.Errorf("readGitdir(%q) = %q, want %q", tt.content, got, tt.want)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/sys/fs/cgroup`: "/sys/fs/cgroup", `/a\040b`: "/a b", `/a\`: `/a\`, `/a\09`: `/a\09`} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestNoCgroupsFallback: where the runner cannot have a cgroup (here: a parent directory
// that is not in the cgroup v2 hierarchy) it says why, applies the limits by rlimit, and
// still stops what a command left behind.
func TestNoCgroupsFallback(t *testing.T) {
	parent := t.TempDir()
	reg, tools := setup(t, Config{CgroupParent: parent, MaxProcesses: 222})
	r := tools.Runner
	if r.cgroups != nil || !strings.Contains(r.cgroupErr, "is not in the cgroup v2 hierarchy mounted at") {
		t.Fatalf("cgroups %v, reason %q", r.cgroups, r.cgroupErr)
	}
	if got := r.containment(); !strings.Contains(got, "no cgroups (cgroup directory "+filepath.Join(parent, "dsh-shell-"+r.id)) || !strings.Contains(got, "limits by RLIMIT_NPROC, RLIMIT_AS") {
		t.Errorf("containment = %q", got)
	}
	marker := uniqueSleep(t)
	f := foreground(t, call(t, reg, "bash", bashArgs("ulimit -u; setsid sleep "+marker+" </dev/null >/dev/null 2>&1 &", "")))
	if f.Stdout.Text != "222\n" {
		t.Errorf("value = %+v", f)
	}
	assertNoProcess(t, marker)
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("the runner wrote into %s: %v", parent, entries)
	}
}

// TestLimitPrefixFailure: when the shell cannot apply a limit the command does not run.
func TestLimitPrefixFailure(t *testing.T) {
	for _, tt := range []struct {
		lim  limits
		flag string
		want string
	}{
		{limits{procs: 5}, "-Z", ""},
		{limits{memory: 1 << 30}, "-u", ""},
		{limits{}, "-u", "ran\n"},
	} {
		prefix := limitPrefix(tt.lim, tt.flag)
		if tt.want == "" {
			prefix = strings.Replace(prefix, "ulimit -v", "ulimit -Z", 1) // an option no shell has
		}
		out, err := exec.Command("/bin/bash", "-c", prefix+"echo ran").Output()
		var code int
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if string(out) != tt.want || (tt.want == "" && code != 126) {
			t.Errorf("%+v %s: out %q, exit %d (%v)", tt.lim, tt.flag, out, code, err)
		}
	}
}
