package durable_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/tool"
)

// TestEachSessionHasItsOwnScope runs two sessions on one host: the stages in the workflow
// (pre-execute) and in the tool activity (around-execute) see the same agent scope for a
// session's calls, and another scope for the other session's.
func TestEachSessionHasItsOwnScope(t *testing.T) {
	f := newFixture(t, []script.Reply{
		{ToolCalls: []script.ToolCall{{ID: "a", Name: "echo", Arguments: `{"text":"one"}`}}},
		{Text: "done"},
		{ToolCalls: []script.ToolCall{{ID: "a", Name: "echo", Arguments: `{"text":"two"}`}}},
		{Text: "done"},
	}, nil)
	var mu sync.Mutex
	seen := map[string][]*tool.Scope{} // by stage
	record := func(stage string, s *tool.Scope) {
		mu.Lock()
		seen[stage] = append(seen[stage], s)
		mu.Unlock()
	}
	f.reg.OnPreExecute(func(ctx context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		record("pre", exec.Agent())
		return next()
	})
	f.reg.WrapExecute(func(ctx context.Context, exec *tool.Execution, next func(ctx context.Context) (*tool.Result, error)) (*tool.Result, error) {
		record("around", exec.Agent())
		return next(ctx)
	})
	for _, id := range []string{"s-one", "s-two"} {
		e := env(t, f)
		tc := sendTurn(e, "go", time.Second, e.CancelWorkflow)
		in := input()
		in.SessionID = id
		e.ExecuteWorkflow(durable.WorkflowName, in)
		if !tc.done || tc.err != nil || len(tc.res.Calls) != 1 || tc.res.Calls[0].IsError {
			t.Fatalf("session %s: turn %+v", id, tc)
		}
	}
	pre, around := seen["pre"], seen["around"]
	if len(around) != 2 || len(pre) < 2 {
		t.Fatalf("stages ran %d (pre) and %d (around) times", len(pre), len(around))
	}
	// Prepare may run more than once for a call; its last run is the one that admitted it.
	first, second := around[0], around[1]
	if first == nil || second == nil || first == second {
		t.Fatalf("the sessions' calls ran in scopes %v and %v, want two", first, second)
	}
	if first.Name() != "durable:s-one" || second.Name() != "durable:s-two" {
		t.Errorf("scopes %q and %q", first.Name(), second.Name())
	}
	var fromFirst, fromSecond bool
	for _, s := range pre {
		fromFirst = fromFirst || s == first
		fromSecond = fromSecond || s == second
		if s != first && s != second {
			t.Errorf("a pre-execute hook saw scope %q", s.Name())
		}
	}
	if !fromFirst || !fromSecond {
		t.Errorf("the workflow's stages did not see the activities' scopes")
	}
}
