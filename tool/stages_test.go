package tool_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// TestStageKinds pins docs/behaviour.md §4.9: which failures reach post-execute. Each origin runs through
// the staged API; the table records whether Prepare leaves a dispatch to do and how many
// times post-execute ran.
func TestStageKinds(t *testing.T) {
	type setup struct {
		reg   *tool.Registry
		agent *tool.Scope
		ctx   context.Context
		name  string
		args  any
	}
	cancelled := func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	pre := func(f func() (tool.PreDecision, error)) func(s *setup) {
		return func(s *setup) {
			s.reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				return f()
			})
		}
	}
	wrapper := func(f func() (*tool.Result, error)) func(s *setup) {
		return func(s *setup) {
			s.reg.WrapExecute(func(context.Context, *tool.Execution, func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
				return f()
			})
		}
	}
	approver := func(out tool.ApprovalOutcome, err error) func(s *setup) {
		return func(s *setup) {
			s.agent = s.reg.NewScope("agent", nil)
			pre(func() (tool.PreDecision, error) { return tool.Ask(""), nil })(s)
			s.reg.SetApprover(tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.ApprovalOutcome, error) { return out, err }))
		}
	}
	tests := []struct {
		origin   string
		setup    func(s *setup)
		dispatch bool   // Prepare leaves a dispatch to do
		posts    int    // post-execute invocations
		code     string // the final error code ("" for none, "-" for a success)
		message  string
	}{
		{"success", nil, true, 1, "-", ""},
		{"args not lossless", func(s *setup) { s.args = map[string]any{"f": func() {}} }, false, 0, "", "tool execution arguments must be losslessly JSON-serializable"},
		{"code mode collapse", func(s *setup) {
			s.agent = s.reg.NewScope("coder", nil)
			if _, err := s.agent.PresentAs(tool.ModeCode); err != nil {
				panic(err)
			}
		}, false, 0, tool.CodeUnknownTool, "unknown tool \"t\": only `run_code` is callable directly — call `t` from inside a `run_code` program instead"},
		{"pre-aborted", func(s *setup) { s.ctx = cancelled() }, false, 0, tool.CodeAbortedBeforeDispatch, "tool call aborted before dispatch"},
		{"pre-execute throws", pre(func() (tool.PreDecision, error) { return tool.PreDecision{}, errors.New("pre broke") }), false, 0, "", "pre broke"},
		{"approval throws", approver("", errors.New("approval broke")), false, 0, "", "approval broke"},
		{"guard throws", func(s *setup) { s.reg.Guard(func(*tool.Execution) string { panic("guard broke") }) }, false, 0, tool.CodeToolPanic, `tool "t": a guard panicked: guard broke`},
		{"pre-execute deny", pre(func() (tool.PreDecision, error) { return tool.Deny("denied"), nil }), false, 1, "", "denied"},
		{"guard reason", func(s *setup) { s.reg.Guard(func(*tool.Execution) string { return "guarded" }) }, false, 1, "", "guarded"},
		{"approval non-grant", approver(tool.ApprovalRejected, nil), false, 1, "", `the user rejected tool "t"`},
		{"caller cancelled during pre-execute", func(s *setup) {
			ctx, cancel := context.WithCancel(context.Background())
			s.ctx = ctx
			pre(func() (tool.PreDecision, error) { cancel(); return tool.Allow(), nil })(s)
		}, false, 1, tool.CodeAbortedBeforeDispatch, "tool call aborted before dispatch"},
		{"unknown tool", func(s *setup) { s.name = "nope" }, true, 1, tool.CodeUnknownTool, `unknown tool "nope"`},
		{"body throws", func(s *setup) { s.name = "boom" }, true, 1, "", "exploded"},
		{"invalid args", func(s *setup) { s.name = "typed"; s.args = js(nil, `{"n":"x"}`) }, true, 1, tool.CodeInvalidArgs, `invalid arguments: "n" must be an integer`},
		{"invalid output", func(s *setup) { s.name = "lossy" }, true, 1, tool.CodeInvalidToolOutput, `tool "lossy" returned invalid output: value is not lossless JSON`},
		{"wrapper short-circuit success", wrapper(func() (*tool.Result, error) { return &tool.Result{Value: "short"}, nil }), true, 1, "-", ""},
		{"wrapper short-circuit failure", wrapper(func() (*tool.Result, error) { return tool.Denied("wrapped"), nil }), true, 1, "", "wrapped"},
		{"timeout (wrapper-authored failure)", wrapper(func() (*tool.Result, error) {
			return tool.Fail(tool.NewError("ToolTimeoutError", tool.CodeToolTimeout, "tool call timed out after 10ms")), nil
		}), true, 1, tool.CodeToolTimeout, "tool call timed out after 10ms"},
		{"wrapper throws", wrapper(func() (*tool.Result, error) { return nil, errors.New("wrapper broke") }), true, 0, "", "wrapper broke"},
		{"post-execute throws", func(s *setup) {
			s.reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				return tool.PostDecision{}, errors.New("post broke")
			})
		}, true, 1, "", "post broke"},
	}
	for _, tt := range tests {
		t.Run(tt.origin, func(t *testing.T) {
			s := &setup{reg: newReg(t), ctx: context.Background(), name: "t", args: &jsonv.Object{}}
			register(t, s.reg, strTool("t", "ok"))
			register(t, s.reg, bodyTool("boom", func(context.Context, *tool.Call) (any, error) { return nil, errors.New("exploded") }))
			register(t, s.reg, bodyTool("lossy", func(context.Context, *tool.Call) (any, error) { return func() {}, nil }))
			type in struct {
				N int `json:"n"`
			}
			register(t, s.reg, tool.Must(tool.New("typed", "d", func(context.Context, *tool.Call, in) (string, error) { return "", nil })))
			var posts, results counter
			s.reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				posts.inc("post")
				return next()
			}, tool.Prepend())
			s.reg.OnResult(func(context.Context, *tool.Execution, *tool.Result) error { results.inc("r"); return nil })
			if tt.setup != nil {
				tt.setup(s)
			}
			inv := s.reg.Prepare(s.ctx, tool.Input{CallID: "c", Name: s.name, Args: s.args, Agent: s.agent})
			if inv.NeedsDispatch() != tt.dispatch {
				t.Fatalf("NeedsDispatch = %v, want %v", inv.NeedsDispatch(), tt.dispatch)
			}
			if inv.NeedsDispatch() {
				inv.Dispatch()
				if inv.NeedsDispatch() {
					t.Fatal("NeedsDispatch after Dispatch")
				}
			}
			res := inv.Finalize()
			checkInvariants(t, res)
			if posts.get("post") != tt.posts || results.get("r") != 1 {
				t.Errorf("post-execute ran %d times (want %d), result listeners %d", posts.get("post"), tt.posts, results.get("r"))
			}
			switch tt.code {
			case "-":
				if res.IsError {
					t.Errorf("result = %s, want a success", resultJSON(t, res))
				}
			case "":
				if !res.IsError || res.Error.Info != nil || res.Error.Message != tt.message {
					t.Errorf("result = %s, want an uncoded failure %q", resultJSON(t, res), tt.message)
				}
			default:
				if !res.IsError || res.Error.Info == nil || res.Error.Info.Code != tt.code || res.Error.Message != tt.message {
					t.Errorf("result = %s, want %s %q", resultJSON(t, res), tt.code, tt.message)
				}
			}
			if inv.Execution().CallID() != "c" {
				t.Error("Execution() identity")
			}
		})
	}
}

// TestStagedOverlap: dispatches of several invocations overlap while pre-execute runs in
// Prepare order and post-execute and the result listeners run in Finalize order.
func TestStagedOverlap(t *testing.T) {
	const n = 4
	reg := newReg(t)
	var started sync.WaitGroup
	started.Add(n)
	release := make([]chan struct{}, n)
	for i := range release {
		release[i] = make(chan struct{})
	}
	register(t, reg, bodyTool("t", func(_ context.Context, call *tool.Call) (any, error) {
		var i int
		fmt.Sscanf(call.CallID(), "c%d", &i)
		started.Done()
		started.Wait() // every body is running at once, or this never returns
		<-release[i]
		return call.CallID(), nil
	}))
	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	reg.OnPreExecute(func(_ context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		note("pre:" + exec.CallID())
		return next()
	})
	reg.OnPostExecute(func(_ context.Context, exec *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		note("post:" + exec.CallID())
		return next()
	})
	reg.OnResult(func(_ context.Context, exec *tool.Execution, _ *tool.Result) error {
		note("result:" + exec.CallID())
		return nil
	})
	invs := make([]*tool.Invocation, n)
	for i := range invs {
		invs[i] = reg.Prepare(context.Background(), tool.Input{CallID: fmt.Sprintf("c%d", i), Name: "t", Args: &jsonv.Object{}})
	}
	dispatched := make([]chan struct{}, n)
	for i, inv := range invs {
		dispatched[i] = make(chan struct{})
		go func() {
			defer close(dispatched[i])
			inv.Dispatch()
		}()
	}
	// Release the bodies in reverse order; commit in model order.
	for i := n - 1; i >= 0; i-- {
		close(release[i])
		<-dispatched[i]
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("pre:c%d", i))
	}
	for i, inv := range invs {
		res := inv.Finalize()
		if res.Value != fmt.Sprintf("c%d", i) {
			t.Errorf("invocation %d: %s", i, resultJSON(t, res))
		}
		want = append(want, fmt.Sprintf("post:c%d", i), fmt.Sprintf("result:c%d", i))
	}
	if !slices.Equal(order, want) {
		t.Errorf("order = %v\nwant %v", order, want)
	}
}

func TestStagedMisuse(t *testing.T) {
	reg := newReg(t)
	register(t, reg, strTool("t", "ok"))
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	inv := reg.Prepare(context.Background(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}})
	mustPanic("Finalize before Dispatch", func() { inv.Finalize() })
	inv.Dispatch()
	mustPanic("second Dispatch", inv.Dispatch)
	inv.Finalize()
	mustPanic("second Finalize", func() { inv.Finalize() })
	denied := newReg(t)
	denied.Guard(func(*tool.Execution) string { return "no" })
	inv = denied.Prepare(context.Background(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}})
	mustPanic("Dispatch without need", inv.Dispatch)
}

func TestAbortedBeforeDispatch(t *testing.T) {
	wantJSON(t, tool.AbortedBeforeDispatch(), abortedBeforeJSON)
	a, b := tool.AbortedBeforeDispatch(), tool.AbortedBeforeDispatch()
	a.Content[0] = content.Text("mutated")
	if firstText(b) != "Error: tool call aborted before dispatch" {
		t.Error("AbortedBeforeDispatch results share memory")
	}
}

// TestConcurrentUse runs calls from several goroutines while tools, restrictions, guards,
// hooks and modes change underneath; under -race this checks the registry is safe for
// concurrent use, and every call still ends in exactly one well-formed result.
func TestConcurrentUse(t *testing.T) {
	reg := newReg(t)
	register(t, reg, strTool("stable", "ok"))
	agent := reg.NewScope("agent", nil)
	var results counter
	reg.OnResult(func(context.Context, *tool.Execution, *tool.Result) error { results.inc("r"); return nil })
	const workers, calls = 4, 50
	var wg sync.WaitGroup
	all := make(chan *tool.Result, workers*calls)
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				all <- reg.Execute(context.Background(), tool.Input{CallID: fmt.Sprintf("%d-%d", w, i), Name: "stable", Args: &jsonv.Object{}, Agent: agent})
				reg.ExecutionMode(tool.Input{Name: "stable", Args: &jsonv.Object{}, Agent: agent})
			}
		})
	}
	wg.Go(func() {
		for i := range calls {
			undo, err := agent.Register(strTool(fmt.Sprintf("tmp%d", i), ""))
			if err != nil {
				t.Error(err)
				return
			}
			lift, err := agent.Restrict(tool.Filter{Deny: []string{}})
			if err != nil {
				t.Error(err)
				return
			}
			g := reg.Guard(func(*tool.Execution) string {
				if i%7 == 0 {
					return "churn"
				}
				return ""
			})
			h := agent.OnPreExecute(func(_ context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				return next()
			})
			restore, err := agent.PresentAs(tool.ModeBoth)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = reg.Schemas(agent)
			_ = reg.Names(agent)
			restore()
			h()
			g()
			lift()
			undo()
		}
	})
	wg.Wait()
	close(all)
	for res := range all {
		checkInvariants(t, res)
		if res.IsError && res.Error.Message != "churn" {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	}
	if results.get("r") != workers*calls {
		t.Errorf("%d results for %d calls", results.get("r"), workers*calls)
	}
}
