package shell

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/tool"
)

// liveSink collects the live output of calls and signals when a text has arrived.
type liveSink struct {
	mu     sync.Mutex
	got    map[string]string // "callID stream" → bytes
	want   string
	arrive chan struct{}
	once   sync.Once
}

func (s *liveSink) progress(callID, stream string, p []byte) {
	s.mu.Lock()
	k := callID + " " + stream
	s.got[k] += string(p)
	ok := strings.Contains(s.got[k], s.want)
	s.mu.Unlock()
	if ok {
		s.once.Do(func() { close(s.arrive) })
	}
}

// A running command's output reaches the Progress of the context while it runs, and a
// cancelled command's result keeps the output so far with a cancelled marker (Ctrl-C used
// to throw it away).
func TestLiveOutputAndPartialOutputOnCancel(t *testing.T) {
	reg, _ := setup(t, Config{})
	sink := &liveSink{got: map[string]string{}, want: "step 2", arrive: make(chan struct{})}
	ctx, cancel := context.WithCancel(tool.WithProgress(context.Background(), sink.progress))
	defer cancel()
	done := make(chan *tool.Result, 1)
	go func() {
		done <- callCtx(ctx, reg, nil, "bash", `{"command":"echo step 1; echo warn >&2; echo step 2; exec sleep 60","description":"d"}`)
	}()
	select {
	case <-sink.arrive: // the output arrived while the command still runs
	case res := <-done:
		t.Fatalf("the command ended before its output was streamed: %+v", res)
	case <-testwait.Context(t).Done():
		t.Fatal("gave up waiting for the live output")
	}
	cancel()
	res := testwait.Recv(t, done, "the cancelled call's result")
	if !res.IsError || res.Error == nil || res.Error.Info == nil || res.Error.Info.Code != tool.CodeAborted {
		t.Fatalf("result %+v", res)
	}
	msg := res.Error.Message
	for _, w := range []string{"tool call aborted", "stdout so far:\nstep 1\nstep 2", "stderr so far:\nwarn", "[cancelled: the command was stopped]"} {
		if !strings.Contains(msg, w) {
			t.Errorf("the aborted result lacks %q:\n%s", w, msg)
		}
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if got := sink.got["call-1 stdout"]; got != "step 1\nstep 2\n" {
		t.Errorf("live stdout %q", got)
	}
	if got := sink.got["call-1 stderr"]; got != "warn\n" {
		t.Errorf("live stderr %q", got)
	}
}

// Without output a cancelled command keeps the plain abort message.
func TestCancelWithoutOutput(t *testing.T) {
	reg, _ := setup(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan *tool.Result, 1)
	ctx = tool.WithProgress(ctx, func(string, string, []byte) {})
	go func() {
		close(started)
		done <- callCtx(ctx, reg, nil, "bash", `{"command":"exec sleep 60","description":"d"}`)
	}()
	testwait.Recv(t, started, "the call's goroutine to start")
	cancel()
	res := testwait.Recv(t, done, "the cancelled call's result")
	if !res.IsError || strings.Contains(res.Error.Message, "so far") || strings.Contains(res.Error.Message, "[cancelled") {
		t.Fatalf("result %+v", res.Error)
	}
}
