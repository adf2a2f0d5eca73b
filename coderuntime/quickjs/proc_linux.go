//go:build linux

package quickjs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// stderrLimit bounds how much of a worker's standard error is kept.
const stderrLimit = 64 << 10

// osProcess is a worker subprocess.
type osProcess struct {
	in   *os.File // write end of the worker's stdin
	out  *os.File // read end of the worker's stdout
	pid  int
	exit chan exitStatus
	gone chan struct{} // closed once the process was reaped (after its status is in exit)

	mu      sync.Mutex
	waited  bool // the process was reaped: its pid may be reused, never signal it again
	killed  bool
	cpuBase time.Duration // CPU time spent before the worker was given its run (pool start-up)
	baseSet bool          // cpuBase was measured (when the worker was ready or taken)

	// Set by watchReady (pooled workers): the first line of output is read ahead to learn
	// when the worker has prepared; output reads wait for that and see a line that was not
	// the ready frame first.
	lookDone chan struct{} // closed when the look-ahead read has finished
	isReady  bool          // the first line was the ready frame
	prefix   []byte        // what the look-ahead read and did not consume
}

// startProcess starts argv as a worker: empty environment, working directory "/", its own
// process group, SIGKILL when the thread that started it dies, stdin/stdout as the
// protocol channel and standard error drained (the first 64 KiB go to stderr if set).
func startProcess(argv []string, stderr io.Writer, onSpawn func(int)) (workerProcess, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	p := &osProcess{in: inW, out: outR, exit: make(chan exitStatus, 1), gone: make(chan struct{})}
	started := make(chan error, 1)

	// Pdeathsig fires when the thread that forked the child exits, not the process, so the
	// goroutine that starts the worker keeps its thread locked until the worker is reaped.
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{}
		cmd.Dir = "/"
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		err := cmd.Start()
		inR.Close()
		outW.Close()
		errW.Close()
		if err != nil {
			errR.Close()
			close(p.gone)
			started <- err
			return
		}
		p.pid = cmd.Process.Pid
		started <- nil

		drained := make(chan struct{})
		go func() {
			defer close(drained)
			drainStderr(errR, stderr)
		}()
		werr := cmd.Wait()
		<-drained
		errR.Close()
		p.mu.Lock()
		p.waited = true
		p.mu.Unlock()
		p.exit <- statusOf(cmd.ProcessState, werr)
		close(p.gone)
	}()
	if err := <-started; err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	if onSpawn != nil {
		onSpawn(p.pid)
	}
	return p, nil
}

func statusOf(ps *os.ProcessState, err error) exitStatus {
	if ps == nil {
		if err == nil {
			err = errors.New("no exit status")
		}
		return exitStatus{err: err}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitStatus{signal: ws.Signal().String()}
	}
	return exitStatus{code: ps.ExitCode()}
}

// drainStderr copies up to stderrLimit bytes of r to w (if set) and discards the rest.
func drainStderr(r io.Reader, w io.Writer) {
	if w == nil {
		w = io.Discard
	}
	io.Copy(w, io.LimitReader(r, stderrLimit))
	io.Copy(io.Discard, r)
}

func (p *osProcess) stdin() io.WriteCloser { return newRawPipe(p.in) }

// stdout is the worker's output. For a worker whose readiness is watched it waits until
// the look-ahead read is over (the worker wrote its first line or its output ended).
func (p *osProcess) stdout() io.ReadCloser {
	if p.lookDone == nil {
		return newRawPipe(p.out)
	}
	<-p.lookDone
	if len(p.prefix) == 0 {
		return newRawPipe(p.out)
	}
	pipe := newRawPipe(p.out)
	return prefixedReader{io.MultiReader(bytes.NewReader(p.prefix), pipe), p.out, pipe}
}

// prefixedReader reads bytes read ahead before the rest of a file.
type prefixedReader struct {
	io.Reader
	io.Closer
	pipe io.Reader // the file's reader, which follows the bytes read ahead
}

// setTry and waitReadable are the pipe's (see tryReader); while bytes read ahead are left,
// a read takes them without waiting anyway.
func (r prefixedReader) setTry(on bool) {
	if t, ok := r.pipe.(tryReader); ok {
		t.setTry(on)
	}
}

func (r prefixedReader) waitReadable(d time.Duration) bool {
	if t, ok := r.pipe.(tryReader); ok {
		return t.waitReadable(d)
	}
	return false
}

// readyFrame is the line a worker writes once it has prepared (before it reads its start
// frame).
var readyFrame = []byte(`{"type":"ready"}`)

// watchReady starts reading the worker's first line, byte by byte so that nothing past
// it is consumed, and returns a channel closed when that read has finished; ready then
// reports whether the line was the ready frame. It must be called at most once, before
// any other read of the output. The read ends when the worker writes a line, exits, or is
// killed (kill closes the output).
func (p *osProcess) watchReady() <-chan struct{} {
	p.lookDone = make(chan struct{})
	go func() {
		defer close(p.lookDone)
		var b [1]byte
		for len(p.prefix) <= len(readyFrame) {
			n, err := p.out.Read(b[:])
			if n == 1 {
				p.prefix = append(p.prefix, b[0])
				if b[0] == '\n' {
					break
				}
			}
			if err != nil {
				return
			}
		}
		if bytes.Equal(bytes.TrimSuffix(p.prefix, []byte("\n")), readyFrame) {
			p.prefix, p.isReady = nil, true
			// The worker now waits for its start frame: what it spent so far is start-up.
			// Reading it here, while the worker is idle, keeps the read off its run.
			p.markStartUp()
		}
	}()
	return p.lookDone
}

// ready reports whether the worker announced it had prepared; valid once the channel of
// watchReady is closed.
func (p *osProcess) ready() bool               { return p.isReady }
func (p *osProcess) exited() <-chan exitStatus { return p.exit }
func (p *osProcess) reaped() <-chan struct{}   { return p.gone }
func (p *osProcess) id() int                   { return p.pid }

// kill sends SIGKILL to the worker's process group and closes both pipes, so that
// nothing waits for the process to be reaped.
func (p *osProcess) kill() {
	p.mu.Lock()
	if !p.waited && !p.killed {
		p.killed = true
		syscall.Kill(-p.pid, syscall.SIGKILL)
	}
	p.mu.Unlock()
	p.in.Close()
	p.out.Close()
}

// cpuTime reads the worker's user plus system time from /proc/<pid>/stat.
func (p *osProcess) cpuTime() (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waited {
		return 0, false
	}
	cpu, ok := readStatCPU(p.pid)
	return cpu - p.cpuBase, ok
}

// readStatCPU reads the user plus system time of process pid from /proc/<pid>/stat.
func readStatCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	return parseStatCPU(b)
}

// startRun marks the moment the worker is given its run: the CPU time it spent starting
// up until now (while idle in a pool) is not charged to the run's compute backstop. A
// worker that announced it had prepared had its start-up measured then (see watchReady).
func (p *osProcess) startRun() { p.markStartUp() }

// markStartUp records the worker's CPU time so far as start-up, not charged to its run:
// once, either when it announced it had prepared (ready, while idle) or when a run took it
// (whichever comes first).
func (p *osProcess) markStartUp() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.baseSet || p.waited {
		return
	}
	p.baseSet = true
	if cpu, ok := readStatCPU(p.pid); ok {
		p.cpuBase = cpu
	}
}

// parseStatCPU extracts utime+stime from a /proc/<pid>/stat line. The kernel reports them
// in USER_HZ ticks, which is 100 per second on Linux.
func parseStatCPU(b []byte) (time.Duration, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is the state (field 3); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(string(fields[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(fields[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * (time.Second / 100), true
}

// setDataLimit lowers this process's RLIMIT_DATA to n bytes.
func setDataLimit(n int64) error {
	lim := syscall.Rlimit{Cur: uint64(n), Max: uint64(n)}
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_DATA, &cur); err == nil && cur.Max < lim.Max {
		lim.Cur, lim.Max = min(lim.Cur, cur.Max), cur.Max
	}
	return syscall.Setrlimit(syscall.RLIMIT_DATA, &lim)
}

// workerInput is the worker process's standard input, made non-blocking: a directPipe,
// which the program's goroutine reads and waits for itself (see directPipe). A descriptor
// that cannot be made non-blocking is used as it is.
func workerInput() io.Reader {
	if err := syscall.SetNonblock(0, true); err != nil {
		return os.Stdin
	}
	return newDirectPipe(0, os.Stdin.Name())
}

// workerOutput is the worker process's standard output, made non-blocking and written with
// raw system calls through the Go poller (rawPipe), so that no write wakes the runtime's
// monitor thread. A descriptor that cannot be made non-blocking is used as it is.
func workerOutput() io.Writer { return workerPipe(1, os.Stdout) }

func workerPipe(fd int, std *os.File) io.ReadWriter {
	if err := syscall.SetNonblock(fd, true); err != nil {
		return std
	}
	return newRawPipe(os.NewFile(uintptr(fd), std.Name()))
}
