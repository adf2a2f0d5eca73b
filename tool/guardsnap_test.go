package tool_test

import (
	"context"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// TestGuardSnapshotsUnchanged: calls share the global guards' snapshot, so adding and
// removing guards while calls run must replace it, never change it under them (the race
// detector reports a change), and every call sees either the old or the new set.
func TestGuardSnapshotsUnchanged(t *testing.T) {
	reg := newReg(t)
	register(t, reg, strTool("t", "ran"))
	agent := reg.NewScope("agent", nil)
	defer agent.Close()
	reg.Guard(func(*tool.Execution) string { return "" }) // always there: calls share a snapshot
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for _, a := range []*tool.Scope{nil, agent} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				res := reg.Execute(ctx, tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}, Agent: a})
				if got := firstText(res); got != "ran" && got != "Error: denied" && ctx.Err() == nil {
					t.Errorf("call ended %q", got)
				}
			}
		}()
	}
	for range 200 {
		remove := reg.Guard(func(*tool.Execution) string { return "denied" })
		removeOwn := agent.Guard(func(*tool.Execution) string { return "" })
		if got := run(reg, "t", agent); got != "Error: denied" {
			t.Errorf("with the denying guard: %q", got)
		}
		remove()
		removeOwn()
		if got := run(reg, "t", agent); got != "ran" {
			t.Errorf("after removing it: %q", got)
		}
	}
	cancel()
	wg.Wait()
}
