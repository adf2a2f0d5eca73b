package codemode_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/tool"
)

// A program that awaits each call before making the next one never needs the lane's
// driver: every call is a solo call, carried through the lane by its own binding call, and
// the events alternate start, settle.
func TestSequentialCallsStaySolo(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	echo := e.echo(t, "echo")
	var idle, handed atomic.Int32
	codemode.SetIdleHook(e.runner(), func(_, _ []string) { idle.Add(1) })
	codemode.SetHandedOverHook(e.runner(), func(string) { handed.Add(1) })
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		for _, v := range []string{"a", "b", "c"} {
			if got := p.message("echo", obj("value", v)); got != `"echo:`+v+`"` {
				t.Errorf("echo %s returned %s", v, got)
			}
		}
		return ok(nil)
	})
	value(t, e.run(context.Background(), e.agent, "p"))
	if got := echo.list(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("echo calls %v", got)
	}
	var kinds []string
	for _, ev := range e.log.all() {
		kinds = append(kinds, ev.kind+" "+ev.start.SubCallID+ev.settle.SubCallID)
	}
	want := []string{
		"start call-1:code:1", "settle call-1:code:1",
		"start call-1:code:2", "settle call-1:code:2",
		"start call-1:code:3", "settle call-1:code:3",
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	if n := idle.Load(); n != 0 {
		t.Errorf("the lane's driver went idle %d times for sequential calls", n)
	}
	if n := handed.Load(); n != 0 {
		t.Errorf("%d sequential calls left their commit to the driver", n)
	}
}

// A solo call whose dispatch settles while the driver is starting the next call leaves its
// commit to the driver: it commits only after that start is done, still before the later
// call, and the program receives its outcome all the same.
func TestSoloCallHandsCommitToDriver(t *testing.T) {
	e := newEnv(t, tool.ModeCode, codemode.Config{})
	g := e.gated(t, "safe_read", true)
	var handed atomic.Value
	codemode.SetHandedOverHook(e.runner(), func(id string) { handed.Store(id) })
	var mu sync.Mutex
	var stages []string
	add := func(s string) {
		mu.Lock()
		stages = append(stages, s)
		mu.Unlock()
	}
	preB := make(chan struct{})
	releaseB := make(chan struct{})
	e.reg.OnPreExecute(func(_ context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		if exec.CallID() == "call-1:code:2" {
			close(preB)
			<-releaseB
			add("pre-exit:" + exec.CallID())
		}
		return next()
	})
	e.reg.OnPostExecute(func(_ context.Context, exec *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		if exec.Name() == "safe_read" {
			add("post:" + exec.CallID())
		}
		return next()
	})
	var va, vb string
	e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
		a := p.spawn("safe_read", obj("id", "a")) // a solo call: the lane is empty
		waitFor(t, "a's body", func() bool { return g.pending() == 1 })
		b := p.spawn("safe_read", obj("id", "b")) // queued: a is in flight
		waitFor(t, "the driver to start b", func() bool {
			select {
			case <-preB:
				return true
			default:
				return false
			}
		})
		g.release("a")
		waitFor(t, "a to leave its commit to the driver", func() bool { return handed.Load() == "call-1:code:1" })
		close(releaseB)
		waitFor(t, "b's body", func() bool { return g.pending() == 1 })
		g.release("b")
		for _, c := range []struct {
			p   *pending
			out *string
		}{{a, &va}, {b, &vb}} {
			v, err := c.p.wait()
			if err != nil {
				t.Errorf("call failed: %v", err)
				continue
			}
			*c.out, _ = v.(string)
		}
		return ok(nil)
	})
	value(t, e.run(context.Background(), e.agent, "p"))
	if va != "safe_read:a" || vb != "safe_read:b" {
		t.Errorf("outcomes %q, %q", va, vb)
	}
	mu.Lock()
	got := slices.Clone(stages)
	mu.Unlock()
	if want := []string{"pre-exit:call-1:code:2", "post:call-1:code:1", "post:call-1:code:2"}; !slices.Equal(got, want) {
		t.Errorf("stages %v, want %v", got, want)
	}
	if starts, settles := e.log.ids("start"), e.log.ids("settle"); !slices.Equal(starts, []string{"call-1:code:1", "call-1:code:2"}) || !slices.Equal(settles, starts) {
		t.Errorf("starts %v settles %v", starts, settles)
	}
}
