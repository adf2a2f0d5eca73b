package quickjs

import (
	"bufio"
	"io"
	"testing"

	"github.com/dsh-go/dsh/internal/testwait"
)

// TestFrameWriterFlushTimer checks when the worker's frame writer sends what it buffered:
// a frame written with flush goes out at once and leaves no flush timer armed; a frame
// written without (console output) arms the timer, which sends it and disarms.
func TestFrameWriterFlushTimer(t *testing.T) {
	r, w := io.Pipe()
	fw := newFrameWriter(w)
	fw.start()
	lines := make(chan string)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	defer func() {
		fw.stop()
		w.Close()
		<-done
	}()
	armed := func() bool {
		fw.mu.Lock()
		defer fw.mu.Unlock()
		return fw.armed
	}

	fw.write([]byte(`{"type":"call","id":1`), true, '}')
	if got := testwait.Recv(t, lines, "the flushed call frame"); got != `{"type":"call","id":1}` {
		t.Fatalf("first frame %q", got)
	}
	if armed() {
		t.Fatal("a flushed frame armed the flush timer")
	}

	fw.write([]byte(`{"type":"log","text":"a"}`), false)
	fw.write([]byte(`{"type":"log","text":"b"}`), false)
	for _, want := range []string{`{"type":"log","text":"a"}`, `{"type":"log","text":"b"}`} {
		if got := testwait.Recv(t, lines, "a buffered log frame, sent by the flush timer"); got != want {
			t.Fatalf("frame %q, want %q", got, want)
		}
	}
	testwait.Until(t, "the flush timer to disarm after its flush", func() bool { return !armed() })
}
