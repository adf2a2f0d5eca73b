//go:build linux

package quickjs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rawPipePair returns both ends of a fresh pipe wrapped as rawPipes.
func rawPipePair(t *testing.T) (r, w io.ReadWriteCloser) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r, w = newRawPipe(pr), newRawPipe(pw)
	if _, ok := r.(*rawPipe); !ok {
		t.Fatalf("newRawPipe(pipe) = %T, want *rawPipe", r)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// roundTrip writes 1 MiB, more than a pipe's buffer, into w on another goroutine, closes
// it, and checks that r reads exactly that, so the writer must wait for room and the
// reader for data.
func roundTrip(t *testing.T, r io.Reader, w io.WriteCloser) {
	t.Helper()
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	werr := make(chan error, 1)
	go func() {
		n, err := w.Write(want)
		if err == nil && n != len(want) {
			err = io.ErrShortWrite
		}
		w.Close()
		werr <- err
	}()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	if err := <-werr; err != nil {
		t.Fatalf("Write: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want the %d written", len(got), len(want))
	}
}

// TestRawPipe moves more than a pipe's buffer through raw reads and writes, so the writer
// must wait for room and the reader for data, and checks the end of the stream and the
// errors of closed ends.
func TestRawPipe(t *testing.T) {
	t.Run("round trip larger than the pipe buffer", func(t *testing.T) {
		r, w := rawPipePair(t)
		roundTrip(t, r, w)
	})
	t.Run("end of file and empty reads", func(t *testing.T) {
		r, w := rawPipePair(t)
		if n, err := r.Read(nil); n != 0 || err != nil {
			t.Errorf("Read(nil) = %d, %v", n, err)
		}
		w.Close()
		if n, err := r.Read(make([]byte, 8)); n != 0 || err != io.EOF {
			t.Errorf("Read after the writer closed = %d, %v; want 0, EOF", n, err)
		}
	})
	t.Run("read of a closed end", func(t *testing.T) {
		r, _ := rawPipePair(t)
		r.Close()
		if _, err := r.Read(make([]byte, 8)); err == nil || !strings.Contains(err.Error(), "read |0: use of closed file") {
			t.Errorf("Read after Close: %v, want a read error naming the pipe and the closed file", err)
		}
	})
	t.Run("write with the reader gone", func(t *testing.T) {
		r, w := rawPipePair(t)
		r.Close()
		if _, err := w.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
			t.Errorf("Write to a pipe without reader: %v, want EPIPE", err)
		}
		w.Close()
		if _, err := w.Write([]byte("x")); err == nil || !strings.Contains(err.Error(), "write |1: use of closed file") {
			t.Errorf("Write after Close: %v, want a write error naming the pipe and the closed file", err)
		}
	})
}

// BenchmarkPipeFrame writes a binding-call-sized frame into a pipe and reads it back, with
// the raw reads and writes the runtime uses and with plain os.File ones.
func BenchmarkPipeFrame(b *testing.B) {
	frame := []byte(`{"type":"call","id":1,"global":"tools","name":"echo","args":{"text":"x"}}` + "\n")
	for _, raw := range []bool{true, false} {
		name := "os.File"
		if raw {
			name = "rawPipe"
		}
		b.Run(name, func(b *testing.B) {
			pr, pw, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			defer pr.Close()
			defer pw.Close()
			var r io.Reader = pr
			var w io.Writer = pw
			if raw {
				r, w = newRawPipe(pr), newRawPipe(pw)
			}
			buf := make([]byte, len(frame))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.Write(frame); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(r, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestFrameReaderTryLine: over a pipe, tryLine returns the next complete line when it is
// buffered or the pipe holds it already, and reports false at once, without waiting, when
// the pipe holds no complete line; waitReadable tells an empty pipe from one that holds
// something or whose writer is gone.
func TestFrameReaderTryLine(t *testing.T) {
	r, w := rawPipePair(t)
	pipe := r.(*rawPipe)
	fr := newFrameReader(r, 1024)
	write := func(s string) {
		t.Helper()
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	want := func(line []byte, ok bool, wantLine string, wantOK bool) {
		t.Helper()
		if ok != wantOK || string(line) != wantLine {
			t.Fatalf("tryLine = %q, %v; want %q, %v", line, ok, wantLine, wantOK)
		}
	}
	write("a\n")
	if line, err := fr.next(); err != nil || string(line) != "a" {
		t.Fatalf("next = %q, %v", line, err)
	}
	line, ok := fr.tryLine(r)
	want(line, ok, "", false) // an empty pipe: no wait
	if pipe.waitReadable(time.Microsecond) {
		t.Fatal("waitReadable reports an empty pipe readable")
	}
	write("b\nc")
	if !pipe.waitReadable(time.Hour) {
		t.Fatal("waitReadable reports a pipe holding bytes not readable")
	}
	if fr.hasLine() {
		t.Fatal("hasLine before the pipe was read")
	}
	line, ok = fr.tryLine(r)
	want(line, ok, "b", true)
	fr.skipLine(line)
	line, ok = fr.tryLine(r)
	want(line, ok, "", false) // "c" has no newline yet
	write("\n")
	line, ok = fr.tryLine(r)
	want(line, ok, "c", true)
	if !fr.hasLine() {
		t.Fatal("hasLine after tryLine buffered a line")
	}
	fr.skipLine(line)
	// A read after tries waits again: it gets what is written later.
	got := make(chan string, 1)
	go func() {
		line, err := fr.next()
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(line)
	}()
	write("d\n")
	if s := <-got; s != "d" {
		t.Fatalf("next after tries = %q, want d", s)
	}
	// The writer gone: readable (at its end), and tryLine finds no line.
	w.Close()
	if !pipe.waitReadable(time.Hour) {
		t.Fatal("waitReadable reports a pipe whose writer closed not readable")
	}
	line, ok = fr.tryLine(r)
	want(line, ok, "", false)
	if _, err := fr.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("next at the end = %v, want EOF", err)
	}
}

// TestPrefixedReaderTries: a worker output with bytes read ahead tries its pipe after them.
func TestPrefixedReaderTries(t *testing.T) {
	r, w := rawPipePair(t)
	src := prefixedReader{io.MultiReader(strings.NewReader("p\nq"), r), r, r}
	fr := newFrameReader(src, 1024)
	line, ok := fr.tryLine(src)
	if !ok || string(line) != "p" {
		t.Fatalf("tryLine = %q, %v; want p", line, ok)
	}
	fr.skipLine(line)
	if line, ok = fr.tryLine(src); ok {
		t.Fatalf("tryLine = %q with nothing after the prefix", line)
	}
	if src.waitReadable(time.Microsecond) {
		t.Fatal("waitReadable reports an empty pipe readable")
	}
	w.Write([]byte("r\n"))
	if !src.waitReadable(time.Hour) {
		t.Fatal("waitReadable reports a pipe holding bytes not readable")
	}
	// The prefix's unterminated "q" and the pipe's "r" make one line.
	if line, ok = fr.tryLine(src); !ok || string(line) != "qr" {
		t.Fatalf("tryLine = %q, %v; want qr", line, ok)
	}
}
