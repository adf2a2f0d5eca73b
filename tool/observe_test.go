package tool_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// recordingObserver records what a CallObserver sees, one log per call.
type recordingObserver struct {
	mu    sync.Mutex
	calls []*observedLog
}

type ctxKey struct{}

type observedLog struct {
	call      tool.ObservedCall
	decisions []string // "stage:decision:reason"
	finished  int
	res       *tool.Result
}

func (o *recordingObserver) CallStarted(ctx context.Context, c tool.ObservedCall) (context.Context, tool.CallTrace) {
	l := &observedLog{call: c}
	o.mu.Lock()
	o.calls = append(o.calls, l)
	o.mu.Unlock()
	return context.WithValue(ctx, ctxKey{}, c.CallID), l
}

func (l *observedLog) Decision(stage, decision, reason string) {
	l.decisions = append(l.decisions, stage+":"+decision+":"+reason)
}

func (l *observedLog) Finished(_ *tool.Execution, res *tool.Result) {
	l.finished++
	l.res = res
}

// TestObserveCalls: the observer sees each call start and finish once, the stages'
// decisions in order, and its context reaches hooks, body and listeners; after removal it
// sees nothing.
func TestObserveCalls(t *testing.T) {
	reg := newEchoRegistry(t)
	obs := &recordingObserver{}
	remove := reg.ObserveCalls(obs)
	var saw []string
	note := func(ctx context.Context, where string) {
		id, _ := ctx.Value(ctxKey{}).(string)
		saw = append(saw, where+"="+id)
	}
	reg.OnPreExecute(func(ctx context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		note(ctx, "pre")
		return tool.Ask("check"), nil
	})
	scope := reg.NewScope("agent", nil)
	defer scope.Close()
	reg.SetApprover(tool.ApproverFunc(func(ctx context.Context, _ tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
		note(ctx, "approver")
		return tool.ApprovalAllowedOnce, nil
	}))
	reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
		note(ctx, "wrapper")
		return next(ctx)
	})
	reg.Global().OnPostExecute(func(ctx context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		note(ctx, "post")
		return tool.PostDecision{ReplaceContent: true, Content: content.Texts("replaced")}, nil
	})
	reg.OnResult(func(ctx context.Context, _ *tool.Execution, _ *tool.Result) error {
		note(ctx, "listener")
		return nil
	})
	res := reg.Execute(t.Context(), tool.Input{CallID: "c1", Name: "echo", Args: tool.ParseArguments(`{"text":"hi"}`), Agent: scope})
	if res.IsError {
		t.Fatal(res.Error.Message)
	}
	if len(obs.calls) != 1 {
		t.Fatalf("observer saw %d calls, want 1", len(obs.calls))
	}
	l := obs.calls[0]
	if l.call != (tool.ObservedCall{CallID: "c1", RootCallID: "c1", Name: "echo"}) {
		t.Errorf("observed call %+v", l.call)
	}
	wantDecisions := []string{"pre_execute:ask:check", "approval:approved:", "post_execute:replace_content:"}
	if !slices.Equal(l.decisions, wantDecisions) {
		t.Errorf("decisions %v, want %v", l.decisions, wantDecisions)
	}
	if l.finished != 1 || l.res.Content[0].Text != "replaced" {
		t.Errorf("finished %d times with %+v", l.finished, l.res)
	}
	l.res.Content[0].Text = "changed by the observer"
	if res.Content[0].Text != "replaced" {
		t.Error("the observer's result aliases the caller's")
	}
	wantSaw := []string{"pre=c1", "approver=c1", "wrapper=c1", "post=c1", "listener=c1"}
	if !slices.Equal(saw, wantSaw) {
		t.Errorf("contexts %v, want %v", saw, wantSaw)
	}

	remove()
	reg.Execute(t.Context(), tool.Input{CallID: "c2", Name: "echo", Args: tool.ParseArguments(`{"text":"hi"}`), Agent: scope})
	if len(obs.calls) != 1 {
		t.Errorf("a removed observer saw %d calls", len(obs.calls))
	}
}

// TestObserveCallsFinalAtPrepare: calls that end in Prepare (invalid arguments, unknown
// tool, cancelled before dispatch) are observed too, each finished once.
func TestObserveCallsFinalAtPrepare(t *testing.T) {
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		in   tool.Input
		code string
	}{
		{"unknown tool", t.Context(), tool.Input{CallID: "c1", Name: "nope", Args: tool.ParseArguments(`{}`)}, tool.CodeUnknownTool},
		{"invalid args", t.Context(), tool.Input{CallID: "c2", Name: "echo", Args: strings.Repeat("x", tool.DefaultMaxArgBytes+1)}, tool.CodeInvalidArgs},
		{"cancelled", cancelled, tool.Input{CallID: "c3", Name: "echo", Args: tool.ParseArguments(`{"text":"x"}`)}, tool.CodeAbortedBeforeDispatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := newEchoRegistry(t)
			obs := &recordingObserver{}
			reg.ObserveCalls(obs)
			res := reg.Execute(tc.ctx, tc.in)
			if !res.IsError || res.Error.Info == nil || res.Error.Info.Code != tc.code {
				t.Fatalf("result %+v, want %s", res.Error, tc.code)
			}
			if len(obs.calls) != 1 || obs.calls[0].finished != 1 || obs.calls[0].res.Error.Info.Code != tc.code {
				t.Errorf("observed %+v", obs.calls)
			}
		})
	}
}

// TestObserveCallsProperty: whatever the hooks, approver and guards decide, every call is
// finished exactly once with the result Execute returns, and the decisions follow the
// pipeline's order: pre-execute, then approval only after an ask, then a guard's denial,
// then post-execute.
func TestObserveCallsProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		reg := newEchoRegistry(t)
		obs := &recordingObserver{}
		reg.ObserveCalls(obs)
		scope := reg.NewScope("agent", nil)
		defer scope.Close()
		pre := rapid.SampledFrom([]string{"none", "allow", "deny", "ask"}).Draw(rt, "pre")
		approve := rapid.SampledFrom([]tool.ApprovalOutcome{tool.ApprovalAllowedOnce, tool.ApprovalRejected, tool.ApprovalCancelled}).Draw(rt, "approve")
		guard := rapid.Bool().Draw(rt, "guard")
		post := rapid.SampledFrom([]string{"none", "accept", "block"}).Draw(rt, "post")
		if pre != "none" {
			reg.OnPreExecute(func(_ context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				switch pre {
				case "deny":
					return tool.Deny("no"), nil
				case "ask":
					return tool.Ask("sure?"), nil
				}
				return next()
			})
		}
		reg.SetApprover(tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.ApprovalOutcome, error) { return approve, nil }))
		if guard {
			scope.Guard(func(*tool.Execution) string { return "guarded" })
		}
		if post != "none" {
			reg.Global().OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				if post == "block" {
					return tool.BlockWith(content.Texts("blocked")), nil
				}
				return next()
			})
		}
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "echo", Args: tool.ParseArguments(`{"text":"x"}`), Agent: scope})
		if len(obs.calls) != 1 || obs.calls[0].finished != 1 {
			rt.Fatalf("observed %d calls", len(obs.calls))
		}
		l := obs.calls[0]
		if l.res.IsError != res.IsError || !jsonv.Equal(l.res.JSON(), res.JSON()) {
			rt.Fatalf("observer got %v, Execute returned %v", l.res.JSON(), res.JSON())
		}
		order := map[string]int{tool.StagePreExecute: 0, tool.StageApproval: 1, tool.StageGuard: 2, tool.StagePostExecute: 3}
		last, asked := -1, false
		for _, d := range l.decisions {
			parts := strings.SplitN(d, ":", 3)
			stage, decision := parts[0], parts[1]
			if order[stage] <= last {
				rt.Fatalf("decisions out of order: %v", l.decisions)
			}
			last = order[stage]
			if stage == tool.StagePreExecute && decision == "ask" {
				asked = true
			}
			if stage == tool.StageApproval && !asked {
				rt.Fatalf("an approval without an ask: %v", l.decisions)
			}
		}
		hasPre := len(l.decisions) > 0 && strings.HasPrefix(l.decisions[0], tool.StagePreExecute+":")
		if hasPre != (pre != "none") {
			rt.Fatalf("with pre-execute hook %q the decisions are %v", pre, l.decisions)
		}
	})
}

// BenchmarkExecuteObserver measures the observation seam: no observer (the cost tracing
// off adds is one atomic load) against an observer that does nothing.
func BenchmarkExecuteObserver(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			reg := newEchoRegistry(b)
			if on {
				reg.ObserveCalls(nopObserver{})
			}
			args, _ := jsonv.ParseString(`{"text":"hello"}`)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if res := reg.Execute(ctx, tool.Input{CallID: "c1", Name: "echo", Args: args}); res.IsError {
					b.Fatal(res.Error.Message)
				}
			}
		})
	}
}

type nopObserver struct{}

func (nopObserver) CallStarted(ctx context.Context, _ tool.ObservedCall) (context.Context, tool.CallTrace) {
	return ctx, nopTrace{}
}

type nopTrace struct{}

func (nopTrace) Decision(string, string, string)        {}
func (nopTrace) Finished(*tool.Execution, *tool.Result) {}
