//go:build linux

package quickjs

import (
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
)

// directPipePair returns a directPipe over the read end of a fresh non-blocking pipe and
// the write end as a file.
func directPipePair(t *testing.T) (*directPipe, *os.File) {
	t.Helper()
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	w := os.NewFile(uintptr(fds[1]), "pipe-w")
	t.Cleanup(func() { syscall.Close(fds[0]); w.Close() })
	return newDirectPipe(fds[0], "pipe-r"), w
}

// TestDirectPipe reads through a directPipe what a writer sends in more than one pipe's
// buffer, so the reader must wait between the chunks, and checks waits with and without
// data, the end of the input and the error of a closed descriptor.
func TestDirectPipe(t *testing.T) {
	t.Run("round trip larger than the pipe buffer", func(t *testing.T) {
		r, w := directPipePair(t)
		roundTrip(t, r, w)
	})
	t.Run("wait", func(t *testing.T) {
		r, w := directPipePair(t)
		// Nothing is written: the wait ends by its timeout, after the raw phase and the
		// ordinary blocking phase.
		if ready, err := r.wait(0); ready || err != nil {
			t.Errorf("wait(0) on an empty pipe = %v, %v; want false, nil", ready, err)
		}
		if ready, err := r.wait(3 * rawWaitMax); ready || err != nil {
			t.Errorf("wait(%v) on an empty pipe = %v, %v; want false, nil", 3*rawWaitMax, ready, err)
		}
		if _, err := w.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if ready, err := r.wait(-1); !ready || err != nil {
			t.Errorf("wait(-1) with data = %v, %v; want true, nil", ready, err)
		}
		b := make([]byte, 8)
		if n, err := r.Read(b); n != 1 || err != nil || b[0] != 'x' {
			t.Errorf("Read = %d, %v, %q", n, err, b[:n])
		}
		if n, err := r.Read(nil); n != 0 || err != nil {
			t.Errorf("Read(nil) = %d, %v", n, err)
		}
		w.Close()
		if ready, err := r.wait(-1); !ready || err != nil {
			t.Errorf("wait(-1) after the writer closed = %v, %v; want true, nil", ready, err)
		}
		if n, err := r.Read(b); n != 0 || err != io.EOF {
			t.Errorf("Read at the end = %d, %v; want 0, EOF", n, err)
		}
	})
	t.Run("a wait that outlasts the raw phase is woken by data", func(t *testing.T) {
		r, w := directPipePair(t)
		got := make(chan error, 1)
		go func() {
			b := make([]byte, 4)
			n, err := r.Read(b) // waits without a timeout
			if err == nil && string(b[:n]) != "late" {
				err = errors.New("read " + string(b[:n]))
			}
			got <- err
		}()
		// Whether the reader is still in its raw phase or already blocks, the write must
		// wake it.
		if _, err := w.Write([]byte("late")); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("bad descriptor", func(t *testing.T) {
		// -1 is never open, so no descriptor of another test is read by mistake.
		_, err := newDirectPipe(-1, "none").Read(make([]byte, 1))
		var pe *os.PathError
		if !errors.As(err, &pe) || pe.Err != syscall.EBADF || pe.Path != "none" {
			t.Fatalf("Read of a bad descriptor = %v, want EBADF for none", err)
		}
	})
}
