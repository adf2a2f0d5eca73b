//go:build linux

package quickjs

import (
	"io"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawPipe reads and writes a non-blocking pipe through the Go poller, making each read and
// write a raw system call. A plain os.File read or write enters the runtime's system-call
// state, and in a process that was idle (every binding call makes the host and the worker
// idle in turn) that wakes the runtime's monitor thread, which then polls for a while: a
// thread woken and put back to sleep per frame, for nothing, because a read or write of a
// non-blocking pipe never blocks. When the pipe has nothing to read (or no room to write),
// the goroutine parks in the poller as with os.File.
type rawPipe struct {
	f  *os.File
	rc syscall.RawConn

	// The state of the read and of the write in progress, and the functions the poller
	// calls with the descriptor, made once so that a read or write allocates nothing.
	rmu    sync.Mutex
	rbuf   []byte
	rn     int
	rerrno syscall.Errno
	readFn func(fd uintptr) bool
	// try makes a read that finds the pipe empty fail with errNotReady instead of parking
	// (setTry). wait and ready are the state of waitReadable, waitFn its callback.
	try    bool
	wait   time.Duration
	ready  bool
	waitFn func(fd uintptr) bool

	wmu     sync.Mutex
	wbuf    []byte
	wn      int
	werrno  syscall.Errno
	writeFn func(fd uintptr) bool
}

// newRawPipe wraps f, which must be pollable (a pipe from os.Pipe, or a descriptor made
// non-blocking before os.NewFile); otherwise f is returned as it is.
func newRawPipe(f *os.File) io.ReadWriteCloser {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	p := &rawPipe{f: f, rc: rc}
	p.readFn, p.writeFn, p.waitFn = p.readRaw, p.writeRaw, p.pollRaw
	return p
}

func (p *rawPipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p.rmu.Lock()
	defer p.rmu.Unlock()
	p.rbuf, p.rn, p.rerrno = b, 0, 0
	err := p.rc.Read(p.readFn)
	n, errno := p.rn, p.rerrno
	p.rbuf = nil
	switch {
	case err != nil: // the file was closed
		return 0, &os.PathError{Op: "read", Path: p.f.Name(), Err: err}
	case errno == syscall.EAGAIN:
		return 0, errNotReady
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: p.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// setTry makes the reads that follow tries, which fail with errNotReady when the pipe
// holds nothing, or with on false, ordinary reads that wait in the poller again.
func (p *rawPipe) setTry(on bool) {
	p.rmu.Lock()
	p.try = on
	p.rmu.Unlock()
}

// waitReadable waits until the pipe holds something or is closed at its other end (true),
// or until d has passed (false), in a ppoll(2) that keeps the thread's P: it is meant for
// waits far shorter than the 10 ms after which the runtime's monitor preempts a goroutine
// that keeps its P, and a thread that keeps its P returns to it without waking another.
// A signal ends the wait early. The timeout is at least d, and the kernel may stretch it
// by its timer slack (50 µs by default).
func (p *rawPipe) waitReadable(d time.Duration) bool {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	p.wait, p.ready = d, false
	if err := p.rc.Read(p.waitFn); err != nil {
		return false
	}
	return p.ready
}

// pollRaw is waitReadable's one ppoll on the descriptor.
func (p *rawPipe) pollRaw(fd uintptr) bool {
	fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	ts := unix.NsecToTimespec(int64(p.wait))
	r, _, e := syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	p.ready = e == 0 && r > 0
	return true
}

// readRaw is one attempt to read into rbuf; it reports false to wait until readable.
func (p *rawPipe) readRaw(fd uintptr) bool {
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p.rbuf[0])), uintptr(len(p.rbuf)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			if p.try {
				p.rerrno = e
				return true
			}
			return false
		}
		p.rn, p.rerrno = int(r), e
		return true
	}
}

func (p *rawPipe) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.wbuf, p.wn, p.werrno = b, 0, 0
	err := p.rc.Write(p.writeFn)
	written, errno := p.wn, p.werrno
	p.wbuf = nil
	switch {
	case err != nil: // the file was closed
		return written, &os.PathError{Op: "write", Path: p.f.Name(), Err: err}
	case errno != 0:
		return written, &os.PathError{Op: "write", Path: p.f.Name(), Err: errno}
	}
	return written, nil
}

// writeRaw writes the rest of wbuf; it reports false to wait until writable.
func (p *rawPipe) writeRaw(fd uintptr) bool {
	for p.wn < len(p.wbuf) {
		rest := p.wbuf[p.wn:]
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
		switch e {
		case 0:
			p.wn += int(r)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			p.werrno = e
			return true
		}
	}
	return true
}

func (p *rawPipe) Close() error { return p.f.Close() }
