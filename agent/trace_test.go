package agent

import (
	"context"

	"sync"
	"testing"

	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

type turnKey struct{}

// recordingTracer marks each turn's context and records how the turns ended.
type recordingTracer struct {
	mu    sync.Mutex
	infos []TurnInfo
	ends  []session.EndReason
	errs  []error
}

func (r *recordingTracer) StartTurn(ctx context.Context, info TurnInfo) (context.Context, func(TurnResult, error)) {
	r.mu.Lock()
	r.infos = append(r.infos, info)
	r.mu.Unlock()
	return context.WithValue(ctx, turnKey{}, info.Turn), func(res TurnResult, err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ends = append(r.ends, res.Reason)
		r.errs = append(r.errs, err)
	}
}

// TestTurnTracer: the tracer's context is the turn's — tool calls run under it — and its
// end hears how each turn ended, failed turns included.
func TestTurnTracer(t *testing.T) {
	f := newFixture(t)
	var seen []any
	f.reg.Global().OnPreExecute(func(ctx context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		seen = append(seen, ctx.Value(turnKey{}))
		return next()
	})
	tr := &recordingTracer{}
	a, _ := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("echo:c1:hi")},
		{Text: "done"},
		{Error: "broken"},
	}, Config{Tracer: tr})
	if _, err := a.Run(t.Context(), "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(t.Context(), "second"); err == nil {
		t.Fatal("the scripted failure did not fail the turn")
	}
	if len(seen) != 1 || seen[0] != 1 {
		t.Errorf("the tool call saw turn context %v, want [1]", seen)
	}
	if len(tr.infos) != 2 || tr.infos[0] != (TurnInfo{Turn: 1, Model: "script", Provider: "script"}) || tr.infos[1].Turn != 2 {
		t.Errorf("turns started %+v", tr.infos)
	}
	if len(tr.ends) != 2 || tr.ends[0].Kind != session.EndCompleted || tr.ends[1].Kind != session.EndError || tr.errs[0] != nil || tr.errs[1] == nil {
		t.Errorf("turns ended %+v with %v", tr.ends, tr.errs)
	}
}

// nilTracer returns neither a context nor an end.
type nilTracer struct{ started int }

func (n *nilTracer) StartTurn(context.Context, TurnInfo) (context.Context, func(TurnResult, error)) {
	n.started++
	return nil, nil
}

// TestTurnTracerNil: a tracer returning no context and no end leaves the turn as it was.
func TestTurnTracerNil(t *testing.T) {
	f := newFixture(t)
	tr := &nilTracer{}
	a, _ := f.agent(t, []script.Reply{{Text: "done"}}, Config{Tracer: tr})
	res, err := a.Run(t.Context(), "hi")
	if err != nil || res.Text() != "done" || tr.started != 1 {
		t.Fatalf("turn %+v, %v; started %d", res, err, tr.started)
	}
}
