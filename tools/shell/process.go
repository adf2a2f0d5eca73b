package shell

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pollInterval is how often a process group is probed while waiting for it to die.
const pollInterval = 10 * time.Millisecond

// group is one command with everything it started (see family). Every signal goes to the
// whole of it, so children a command forked, and those that left its process group, are
// stopped with it.
type group struct {
	fam   *family
	grace time.Duration
	after afterFunc // arms the SIGKILL that follows SIGTERM

	mu       sync.Mutex
	termSent bool
	gone     bool
	stopKill func() // disarms it; nil until armed
}

// terminate sends SIGTERM to the command's processes and, when some are still alive after
// the grace period, SIGKILL. It is idempotent.
func (g *group) terminate() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.termSent || g.gone {
		return
	}
	g.termSent = true
	g.fam.signal(syscall.SIGTERM)
	g.stopKill = g.after(g.grace, g.forceKill)
}

// forceKill sends SIGKILL to the command's processes unless they are known to be gone.
func (g *group) forceKill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.gone && g.fam.alive() {
		g.fam.signal(syscall.SIGKILL)
	}
}

// markGone records that the command has no live process, so no later signal can reach a
// process group that reuses its id.
func (g *group) markGone() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gone = true
	if g.stopKill != nil {
		g.stopKill()
	}
}

// process is one running command in its own process group, with captured output.
type process struct {
	cmd    *exec.Cmd
	group  *group
	stdout *collector
	stderr *collector
	pipes  [2]*os.File // read ends of stdout and stderr
	grace  time.Duration
	guard  *guard

	readers sync.WaitGroup
	exited  chan struct{} // closed when the command's own process has exited
	done    chan struct{} // closed when the group is gone and the output settled
	state   *os.ProcessState
	waitErr error
	// signalExit and reapOrphans: see spawnSpec.
	signalExit, reapOrphans bool
}

// spawnSpec describes a command to start.
type spawnSpec struct {
	argv   []string
	dir    string
	env    []string
	stdout *collector
	stderr *collector
	grace  time.Duration
	after  afterFunc // arms the kill after the grace period; nil is time.AfterFunc
	marker string    // markerVar=value, added to env
	cg     *cgroup   // the command's cgroup, or nil
	guard  *guard    // told about the process group, or nil
	// signalExit says argv is a supervisor (bubblewrap) that reports a command killed by
	// signal n as exit status 128+n, as a shell's $? does; exit turns that back into the
	// signal's name.
	signalExit bool
	// reapOrphans says to reap this process's orphaned zombies once the command settles.
	reapOrphans bool
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
	cmd.Env = append(slices.Clip(s.env), s.marker)
	cmd.Stdout = outW
	cmd.Stderr = errW
	// The direct child is killed when its parent dies, even by SIGKILL.
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.cg != nil {
		// Born in its own cgroup (clone3 with CLONE_INTO_CGROUP): nothing it forks,
		// however early, is ever outside it.
		attr.UseCgroupFD, attr.CgroupFD = true, s.cg.fd
	}
	cmd.SysProcAttr = attr
	p := &process{
		cmd:    cmd,
		stdout: s.stdout,
		stderr: s.stderr,
		pipes:  [2]*os.File{outR, errR},
		grace:  s.grace,
		guard:  s.guard,
		exited: make(chan struct{}),
		done:   make(chan struct{}),

		signalExit:  s.signalExit,
		reapOrphans: s.reapOrphans,
	}
	started := make(chan error, 1)
	// The parent-death signal fires when the OS thread that forked the child exits, not
	// when the process does, and the Go runtime ends a thread when a goroutine locked to it
	// returns. So the goroutine that starts the command locks its thread and keeps it until
	// the command has been waited for: the thread, and with it the death signal's trigger,
	// lives exactly as long as the command (or the whole process) does.
	go func() {
		runtime.LockOSThread()
		err := cmd.Start()
		// The child holds its own copies of the write ends; ours must go for EOF to arrive.
		outW.Close()
		errW.Close()
		if err != nil {
			runtime.UnlockOSThread()
			started <- err
			return
		}
		pid := cmd.Process.Pid
		after := s.after
		if after == nil {
			after = realAfterFunc
		}
		p.group = &group{fam: &family{leader: pid, pgid: pid, marker: s.marker, cg: s.cg, start: startTime(pid)}, grace: s.grace, after: after}
		if p.guard != nil {
			p.guard.track(pid, true)
		}
		p.readers.Add(2)
		go p.copy(s.stdout, outR)
		go p.copy(s.stderr, errR)
		started <- nil
		p.waitErr = cmd.Wait()
		runtime.UnlockOSThread()
		p.state = cmd.ProcessState
		close(p.exited)
		p.settle()
	}()
	if err := <-started; err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	return p, nil
}

func (p *process) copy(dst *collector, src *os.File) {
	defer p.readers.Done()
	_, _ = io.Copy(dst, src)
}

// settle runs once the command's own process has exited: it stops whatever the command
// left running (in its group, its cgroup or carrying its marker), waits for all of it to
// be gone, reaps what was re-parented to this process, lets the output drain, and closes
// done.
func (p *process) settle() {
	fam := p.group.fam
	if fam.alive() {
		p.group.terminate()
		// SIGKILL follows SIGTERM after the grace period; a process that survives even
		// that (uninterruptible sleep) is waited for a little longer, then given up on.
		deadline := time.Now().Add(2*p.grace + time.Second)
		for fam.alive() && time.Now().Before(deadline) {
			time.Sleep(pollInterval)
		}
	}
	p.group.markGone()
	fam.reap()
	if p.reapOrphans {
		reapOrphans()
	}
	if p.guard != nil {
		p.guard.track(fam.pgid, false)
	}
	if fam.cg != nil {
		fam.cg.remove()
	}

	// A process that could not be stopped may still hold the pipes: bound the drain.
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
	if p.signalExit && c > 128 && c < 128+65 {
		return nil, signalName(syscall.Signal(c - 128))
	}
	return &c, ""
}

// signalName returns the conventional name of a signal, such as "SIGTERM".
func signalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return "SIG" + strconv.Itoa(int(s))
}
