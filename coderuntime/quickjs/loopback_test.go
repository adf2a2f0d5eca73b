package quickjs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/dsh-go/dsh/internal/cputime"
	"github.com/go-json-experiment/json"
)

// loopback is a host that the worker reaches without a pipe: it answers each binding call
// the moment the worker writes it, with the call's own arguments, into the input the worker
// reads next. The worker runs as a worker process does (reading its replies itself), on
// the caller's goroutine, so a benchmark over it measures the worker's side of a binding
// call alone: no hand-off, no host session, no other process.
type loopback struct {
	in      bytes.Buffer // frames waiting for the worker
	pending []byte       // a partial line written by the worker
	calls   int
	idles   []int64 // the calls the worker's idle frames named, in order
	done    []byte  // the done frame
	err     error   // the first frame the loopback could not answer
}

// newLoopback returns a loopback whose input starts with the start frame of program,
// bound to one namespace "tools" with the given names.
func newLoopback(t testing.TB, program string, names ...string) *loopback {
	t.Helper()
	start, err := json.Marshal(startFrame{
		Type:       "start",
		Program:    program,
		Namespaces: []wireNS{{Global: "tools", Names: names}},
		Limits: startLimits{
			ComputeMs:      float64(time.Hour / time.Millisecond),
			MaxOutputBytes: 1 << 20,
			MaxHeapBytes:   256 << 20,
			MaxFrameBytes:  1 << 20,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	l := &loopback{}
	l.in.Write(start)
	l.in.WriteByte('\n')
	return l
}

func (l *loopback) Read(p []byte) (int, error) {
	if l.in.Len() == 0 {
		return 0, io.EOF
	}
	return l.in.Read(p)
}

// wait reports the input readable while it holds a frame; an empty input is a host that
// has nothing more to say, which for a worker waiting on it is a closed input.
func (l *loopback) wait(time.Duration) (bool, error) {
	if l.in.Len() == 0 {
		return false, errors.New("loopback: the worker waits for a reply no call asked for")
	}
	return true, nil
}

func (l *loopback) Write(p []byte) (int, error) {
	l.pending = append(l.pending, p...)
	for {
		i := bytes.IndexByte(l.pending, '\n')
		if i < 0 {
			break
		}
		l.frame(l.pending[:i])
		l.pending = l.pending[i+1:]
	}
	if len(l.pending) == 0 {
		l.pending = l.pending[:0:0]
	}
	return len(p), nil
}

// frame answers one worker frame.
func (l *loopback) frame(line []byte) {
	switch {
	case bytes.HasPrefix(line, []byte(`{"type":"ready"}`)), bytes.HasPrefix(line, []byte(`{"type":"log"`)):
	case bytes.HasPrefix(line, []byte(`{"type":"done"`)):
		l.done = bytes.Clone(line)
	case bytes.HasPrefix(line, []byte(idleHead)):
		f, ok := scanIdle(line)
		if !ok && l.err == nil {
			l.err = fmt.Errorf("loopback: malformed idle frame %q", line)
		}
		l.idles = append(l.idles, f.id)
	default:
		f, ok := scanCall(line)
		if !ok {
			if l.err == nil {
				l.err = fmt.Errorf("loopback: unexpected frame %q", line)
			}
			return
		}
		l.calls++
		b := l.in.AvailableBuffer()
		b = append(b, replyHead...)
		b = strconv.AppendInt(b, f.id, 10)
		b = append(b, replyValue...)
		b = append(b, f.args...)
		b = append(b, "}\n"...)
		l.in.Write(b)
	}
}

// runLoopback runs program in a fresh worker against a loopback host and returns the done
// frame and the number of binding calls.
func runLoopback(t testing.TB, program string, names ...string) (string, int) {
	t.Helper()
	l := newLoopback(t, program, names...)
	if code := runWorker(l, l, true, time.Now); code != 0 {
		t.Fatalf("worker exit status %d", code)
	}
	if l.err != nil {
		t.Fatal(l.err)
	}
	return string(l.done), l.calls
}

func TestLoopback(t *testing.T) {
	done, calls := runLoopback(t, `let n = 0; for (let i = 0; i < 50; i++) { const r = await tools.echo({ text: "x" + i }); n += r.text.length; } return n`, "echo")
	if want := `{"type":"done","value":140}`; done != want || calls != 50 {
		t.Fatalf("done %s after %d calls, want %s after 50", done, calls, want)
	}
}

// BenchmarkWorkerCall is the worker's side of one binding call, the scenario's echo of
// { text: "x" } (an op is a call: the program makes b.N calls in one run, so the VM's
// set-up is spread over them). With -cpuprofile it profiles the worker alone.
func BenchmarkWorkerCall(b *testing.B) {
	for _, bc := range []struct{ name, call string }{
		{"object", `const r = await tools.echo({ text: "x" }); n += r.text.length;`},
		{"number", `n += await tools.echo(1);`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			defer cputime.PerOp(b, "cpu-ns/op", 1)()
			program := fmt.Sprintf(`let n = 0; for (let i = 0; i < %d; i++) { %s } return n`, b.N, bc.call)
			b.ResetTimer()
			done, calls := runLoopback(b, program, "echo")
			b.StopTimer()
			if want := fmt.Sprintf(`{"type":"done","value":%d}`, b.N); done != want || calls != b.N {
				b.Fatalf("done %s after %d calls, want %s after %d", done, calls, want, b.N)
			}
		})
	}
}
