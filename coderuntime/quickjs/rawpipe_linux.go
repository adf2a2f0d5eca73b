//go:build linux

package quickjs

import (
	"io"
	"os"
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
}

// newRawPipe wraps f, which must be pollable (a pipe from os.Pipe, or a descriptor made
// non-blocking before os.NewFile); otherwise f is returned as it is.
func newRawPipe(f *os.File) io.ReadWriteCloser {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	return &rawPipe{f: f, rc: rc}
}

func (p *rawPipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := p.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait until readable
			}
			n, errno = int(r), e
			return true
		}
	})
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

func (p *rawPipe) Write(b []byte) (int, error) {
	written := 0
	var errno syscall.Errno
	err := p.rc.Write(func(fd uintptr) bool {
		for written < len(b) {
			rest := b[written:]
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
			switch e {
			case 0:
				written += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until writable
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil: // the file was closed
		return written, &os.PathError{Op: "write", Path: p.f.Name(), Err: err}
	case errno != 0:
		return written, &os.PathError{Op: "write", Path: p.f.Name(), Err: errno}
	}
	return written, nil
}

func (p *rawPipe) Close() error { return p.f.Close() }
