//go:build linux

package quickjs

import (
	"io"
	"os"
	"sync"
	"syscall"
	"unsafe"
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
	p.readFn, p.writeFn = p.readRaw, p.writeRaw
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
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: p.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// readRaw is one attempt to read into rbuf; it reports false to wait until readable.
func (p *rawPipe) readRaw(fd uintptr) bool {
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p.rbuf[0])), uintptr(len(p.rbuf)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
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
