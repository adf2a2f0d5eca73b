//go:build linux

package quickjs

import (
	"io"
	"os"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// directPipe is the worker process's input, a non-blocking pipe read with raw system calls
// and waited for on the calling thread (ppoll), outside the Go poller. The worker reads its
// replies on the goroutine that runs the program, so a reply costs a ppoll and a read
// instead of a failed read, two epoll waits and a read, and the program resumes on the
// thread that read the reply without a pass through the scheduler.
//
// A raw wait holds the worker's only P, which nothing else needs while the program waits
// for a reply (its output is flushed first). It lasts at most rawWaitMax; a longer wait (a
// slow binding, an idle pooled worker waiting for its program) goes on as an ordinary
// blocking system call that releases the P, so the runtime's monitor neither preempts the
// waiting thread nor stays awake for it.
type directPipe struct {
	fd   int
	name string
}

// rawWaitMax bounds a wait that holds the P; it stays well below the 10 ms after which the
// runtime's monitor preempts a goroutine that keeps its P.
const rawWaitMax = 2 * time.Millisecond

// newDirectPipe returns the pipe on descriptor fd, which must be non-blocking.
func newDirectPipe(fd int, name string) *directPipe {
	return &directPipe{fd: fd, name: name}
}

// Read reads what the pipe holds, waiting until it holds something; it returns io.EOF at
// the end of the input.
func (p *directPipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, err := rawRead(p.fd, b)
		switch err {
		case nil:
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		case unix.EINTR:
		case unix.EAGAIN:
			if _, err := p.wait(-1); err != nil {
				return 0, err
			}
		default:
			return 0, &os.PathError{Op: "read", Path: p.name, Err: err}
		}
	}
}

// wait blocks until the pipe is readable or closed (true), or until timeout has passed
// (false; a negative timeout never passes).
func (p *directPipe) wait(timeout time.Duration) (bool, error) {
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	now := time.Now()
	var deadline time.Time
	if timeout >= 0 {
		deadline = now.Add(timeout)
	}
	rawUntil := now.Add(rawWaitMax)
	for ; ; now = time.Now() {
		left := time.Duration(-1)
		if !deadline.IsZero() {
			left = max(deadline.Sub(now), 0)
		}
		raw := now.Before(rawUntil)
		d := left
		if raw && (d < 0 || d > rawUntil.Sub(now)) {
			d = rawUntil.Sub(now)
		}
		var ts *unix.Timespec
		if d >= 0 {
			t := unix.NsecToTimespec(int64(d))
			ts = &t
		}
		var n int
		var err error
		if raw {
			n, err = rawPpoll(fds, ts)
		} else {
			n, err = unix.Ppoll(fds, ts, nil)
		}
		switch {
		case err == unix.EINTR:
			// A signal, perhaps the runtime's preemption request: let it act.
			runtime.Gosched()
		case err != nil:
			return false, &os.PathError{Op: "ppoll", Path: p.name, Err: err}
		case n > 0:
			return true, nil
		case !deadline.IsZero() && !time.Now().Before(deadline):
			return false, nil
		}
	}
}

// rawPpoll is ppoll(2) without telling the Go runtime about the system call, so the P stays
// with this thread and the runtime's monitor is not woken to take it.
func rawPpoll(fds []unix.PollFd, ts *unix.Timespec) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)),
		uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	if e != 0 {
		return int(r), e
	}
	return int(r), nil
}

// rawRead is read(2) without telling the Go runtime: a read of a non-blocking pipe never
// blocks.
func rawRead(fd int, b []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
