package shell

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pollInterval is how often a process group is probed while waiting for it to die.
const pollInterval = 10 * time.Millisecond

// group is the process group of one command. Every signal goes to the whole group, so
// children a command forked are stopped with it.
type group struct {
	pgid  int
	grace time.Duration

	mu       sync.Mutex
	termSent bool
	gone     bool
	killer   *time.Timer
}

// terminate sends SIGTERM to the group and, when it is still alive after the grace period,
// SIGKILL. It is idempotent.
func (g *group) terminate() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.termSent || g.gone {
		return
	}
	g.termSent = true
	_ = syscall.Kill(-g.pgid, syscall.SIGTERM)
	g.killer = time.AfterFunc(g.grace, g.forceKill)
}

// forceKill sends SIGKILL to the group unless it is known to be gone.
func (g *group) forceKill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.gone && groupAlive(g.pgid) {
		_ = syscall.Kill(-g.pgid, syscall.SIGKILL)
	}
}

// markGone records that the group has no live member, so no later signal can reach a
// process group that reuses its id.
func (g *group) markGone() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gone = true
	if g.killer != nil {
		g.killer.Stop()
	}
}

// groupAlive reports whether process group pgid has a member that is not a zombie. A group
// of zombies counts as gone: it cannot run or hold files open, and an init process that
// does not reap orphans (as in some containers) would otherwise keep it "alive" forever.
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return false
	}
	live, ok := liveMembers(pgid)
	if !ok {
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	return live
}

// liveMembers scans /proc for a process of group pgid that is not a zombie. ok is false
// when /proc cannot be read.
func liveMembers(pgid int) (live, ok bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return false, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false, false
	}
	want := strconv.Itoa(pgid)
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		data, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue
		}
		state, pg, ok := parseStat(data)
		if ok && pg == want && state != 'Z' && state != 'X' {
			return true, true
		}
	}
	return false, true
}

// parseStat extracts the state and process group from /proc/<pid>/stat:
// "pid (comm) state ppid pgrp ...", where comm may contain spaces and parentheses.
func parseStat(data []byte) (state byte, pgrp string, ok bool) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, "", false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, "", false
	}
	return f[0][0], string(f[2]), true
}

// process is one running command in its own process group, with captured output.
type process struct {
	cmd    *exec.Cmd
	group  *group
	stdout *collector
	stderr *collector
	pipes  [2]*os.File // read ends of stdout and stderr
	grace  time.Duration

	readers sync.WaitGroup
	exited  chan struct{} // closed when the command's own process has exited
	done    chan struct{} // closed when the group is gone and the output settled
	state   *os.ProcessState
	waitErr error
}

// spawnSpec describes a command to start.
type spawnSpec struct {
	argv   []string
	dir    string
	env    []string
	stdout *collector
	stderr *collector
	grace  time.Duration
}

// spawn starts argv in a new process group with stdin from /dev/null and stdout and
// stderr captured. The returned process settles by itself; nothing is left running once
// done is closed.
func spawn(s spawnSpec) (*process, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Dir = s.dir
	cmd.Env = s.env
	cmd.Stdout = outW
	cmd.Stderr = errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	// The child holds its own copies of the write ends; ours must go for EOF to arrive.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	p := &process{
		cmd:    cmd,
		group:  &group{pgid: cmd.Process.Pid, grace: s.grace},
		stdout: s.stdout,
		stderr: s.stderr,
		pipes:  [2]*os.File{outR, errR},
		grace:  s.grace,
		exited: make(chan struct{}),
		done:   make(chan struct{}),
	}
	p.readers.Add(2)
	go p.copy(s.stdout, outR)
	go p.copy(s.stderr, errR)
	go p.lifecycle()
	return p, nil
}

func (p *process) copy(dst *collector, src *os.File) {
	defer p.readers.Done()
	_, _ = io.Copy(dst, src)
}

// lifecycle waits for the command, then stops whatever it left running in its group,
// waits for the group to be gone and the output to drain, and settles.
func (p *process) lifecycle() {
	p.waitErr = p.cmd.Wait()
	p.state = p.cmd.ProcessState
	close(p.exited)

	// Children the command left behind in its group are stopped with it.
	if groupAlive(p.group.pgid) {
		p.group.terminate()
	}
	// SIGKILL follows SIGTERM after the grace period; a process that survives even that
	// (uninterruptible sleep) is waited for a little longer, then given up on.
	deadline := time.Now().Add(2*p.grace + time.Second)
	for groupAlive(p.group.pgid) && time.Now().Before(deadline) {
		time.Sleep(pollInterval)
	}
	p.group.markGone()

	// A process that left the group (setsid) may still hold the pipes: bound the drain.
	drained := make(chan struct{})
	go func() {
		p.readers.Wait()
		close(drained)
	}()
	timer := time.NewTimer(p.grace)
	select {
	case <-drained:
		timer.Stop()
	case <-timer.C:
		p.pipes[0].Close()
		p.pipes[1].Close()
		<-drained
	}
	p.pipes[0].Close()
	p.pipes[1].Close()
	p.stdout.seal()
	p.stderr.seal()
	close(p.done)
}

// kill stops the whole group: SIGTERM, then SIGKILL after the grace period.
func (p *process) kill() { p.group.terminate() }

// exit returns the exit code, or the name of the signal that ended the command. It is valid
// once exited is closed.
func (p *process) exit() (code *int, signal string) {
	if p.state == nil {
		c := -1
		return &c, ""
	}
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return nil, signalName(ws.Signal())
	}
	c := p.state.ExitCode()
	return &c, ""
}

// signalName returns the conventional name of a signal, such as "SIGTERM".
func signalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return "SIG" + strconv.Itoa(int(s))
}
