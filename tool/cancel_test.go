package tool_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

const (
	abortedJSON       = `{"isError":true,"error":{"message":"tool call aborted","info":{"name":"AbortError","code":"ABORTED"}},"content":[{"type":"text","text":"Error: tool call aborted"}]}`
	abortedBeforeJSON = `{"isError":true,"error":{"message":"tool call aborted before dispatch","info":{"name":"AbortError","code":"ABORTED_BEFORE_DISPATCH"}},"content":[{"type":"text","text":"Error: tool call aborted before dispatch"}]}`
)

// async runs f on its own goroutine and delivers its result.
func async(f func() *tool.Result) <-chan *tool.Result {
	ch := make(chan *tool.Result, 1)
	go func() { ch <- f() }()
	return ch
}

// phases counts the pipeline phases a call went through.
type phases struct{ pre, around, body, post, result atomic.Int32 }

func (p *phases) get() [5]int32 {
	return [5]int32{p.pre.Load(), p.around.Load(), p.body.Load(), p.post.Load(), p.result.Load()}
}

// countingReg returns a registry with a tool "t" whose body runs body (or returns "ok"),
// and hooks counting every phase.
func countingReg(t *testing.T, body func(ctx context.Context, call *tool.Call) (any, error)) (*tool.Registry, *phases) {
	t.Helper()
	reg := newReg(t)
	p := &phases{}
	register(t, reg, bodyTool("t", func(ctx context.Context, call *tool.Call) (any, error) {
		p.body.Add(1)
		if body == nil {
			return "ok", nil
		}
		return body(ctx, call)
	}))
	reg.OnPreExecute(func(_ context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		p.pre.Add(1)
		return next()
	})
	reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
		p.around.Add(1)
		return next(ctx)
	})
	reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		p.post.Add(1)
		return next()
	})
	reg.OnResult(func(context.Context, *tool.Execution, *tool.Result) error { p.result.Add(1); return nil })
	return reg, p
}

func execT(ctx context.Context, reg *tool.Registry, agent *tool.Scope) *tool.Result {
	return reg.Execute(ctx, tool.Input{CallID: "c", Name: "t", Args: js(nil, `{"nested":{"value":1}}`), Agent: agent})
}

// TestBodyContextIdentity: without a replacement the body runs under the caller's own
// context (docs/behaviour.md §4.6 step 2a, §7.1).
func TestBodyContextIdentity(t *testing.T) {
	for _, wrapped := range []bool{false, true} {
		var bodyCtx context.Context
		reg := newReg(t)
		register(t, reg, bodyTool("t", func(ctx context.Context, _ *tool.Call) (any, error) { bodyCtx = ctx; return "ok", nil }))
		if wrapped {
			reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
				return next(ctx)
			})
		}
		caller, cancel := context.WithCancel(context.Background())
		execT(caller, reg, nil)
		if bodyCtx != caller {
			t.Errorf("wrapped=%v: the body did not get the caller's context", wrapped)
		}
		cancel()
	}
}

// TestCancelPreAborted: before Execute, no phase runs; one result; the finalizer still runs.
func TestCancelPreAborted(t *testing.T) {
	reg, p := countingReg(t, nil)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("already cancelled"))
	var observedArgs string
	reg.OnResult(func(_ context.Context, exec *tool.Execution, _ *tool.Result) error {
		observedArgs = exec.ArgsJSON()
		return nil
	})
	wantJSON(t, execT(ctx, reg, nil), abortedBeforeJSON)
	if p.get() != [5]int32{0, 0, 0, 0, 1} {
		t.Errorf("phases = %v", p.get())
	}
	if observedArgs != `{"nested":{"value":1}}` {
		t.Errorf("the arguments were not snapshotted: %q", observedArgs)
	}
}

// TestCancelDuringPreExecute covers the three pre-execute rows of docs/behaviour.md §6.
func TestCancelDuringPreExecute(t *testing.T) {
	tests := []struct {
		name  string
		then  func(next func() (tool.PreDecision, error)) (tool.PreDecision, error)
		want  string
		posts int32
	}{
		{"then allows", func(next func() (tool.PreDecision, error)) (tool.PreDecision, error) { return next() }, abortedBeforeJSON, 1},
		{"then denies", func(func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			return tool.Deny("policy denied the call"), nil
		},
			`{"isError":true,"error":{"message":"policy denied the call"},"content":[{"type":"text","text":"Error: policy denied the call"}]}`, 1},
		{"then fails", func(func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			return tool.PreDecision{}, errors.New("gate interrupted")
		}, `{"isError":true,"error":{"message":"gate interrupted"},"content":[{"type":"text","text":"Error: gate interrupted"}]}`, 0},
		{"then guards deny", func(next func() (tool.PreDecision, error)) (tool.PreDecision, error) { return next() },
			`{"isError":true,"error":{"message":"guarded"},"content":[{"type":"text","text":"Error: guarded"}]}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, p := countingReg(t, nil)
			if tt.name == "then guards deny" {
				reg.Guard(func(*tool.Execution) string { return "guarded" })
			}
			entered, release := make(chan struct{}), make(chan struct{})
			reg.OnPreExecute(func(ctx context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				close(entered)
				<-release
				if ctx.Err() == nil {
					t.Error("the hook's context was not cancelled")
				}
				return tt.then(next)
			})
			ctx, cancel := context.WithCancel(context.Background())
			done := async(func() *tool.Result { return execT(ctx, reg, nil) })
			<-entered
			cancel()
			close(release)
			wantJSON(t, <-done, tt.want)
			if got := p.get(); got[1] != 0 || got[2] != 0 || got[3] != tt.posts || got[4] != 1 {
				t.Errorf("phases = %v", got)
			}
		})
	}
}

// TestCancelDuringApproval covers the approval rows of docs/behaviour.md §6.
func TestCancelDuringApproval(t *testing.T) {
	for _, outcome := range []tool.ApprovalOutcome{tool.ApprovalAllowedOnce, tool.ApprovalCancelled} {
		t.Run(string(outcome), func(t *testing.T) {
			reg, p := countingReg(t, nil)
			reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				return tool.Ask(""), nil
			})
			entered := make(chan struct{})
			reg.SetApprover(tool.ApproverFunc(func(ctx context.Context, _ tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
				close(entered)
				<-ctx.Done() // the approver observes the caller's cancellation
				return outcome, nil
			}))
			ctx, cancel := context.WithCancel(context.Background())
			done := async(func() *tool.Result { return execT(ctx, reg, reg.NewScope("agent", nil)) })
			<-entered
			cancel()
			wantJSON(t, <-done, abortedBeforeJSON)
			if got := p.get(); got[2] != 0 || got[3] != 1 || got[4] != 1 {
				t.Errorf("phases = %v", got)
			}
		})
	}
	t.Run("cancelled without a caller abort is a denial", func(t *testing.T) {
		reg, _ := countingReg(t, nil)
		reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			return tool.Ask(""), nil
		})
		reg.SetApprover(tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
			return tool.ApprovalCancelled, nil
		}))
		wantJSON(t, execT(context.Background(), reg, reg.NewScope("agent", nil)),
			`{"isError":true,"error":{"message":"approval for tool \"t\" was cancelled"},"content":[{"type":"text","text":"Error: approval for tool \"t\" was cancelled"}]}`)
	})
	t.Run("a rejection after a caller abort stays a rejection", func(t *testing.T) {
		reg, _ := countingReg(t, nil)
		reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			return tool.Ask(""), nil
		})
		entered := make(chan struct{})
		reg.SetApprover(tool.ApproverFunc(func(ctx context.Context, _ tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
			close(entered)
			<-ctx.Done()
			return tool.ApprovalRejected, nil
		}))
		ctx, cancel := context.WithCancel(context.Background())
		done := async(func() *tool.Result { return execT(ctx, reg, reg.NewScope("agent", nil)) })
		<-entered
		cancel()
		wantJSON(t, <-done, `{"isError":true,"error":{"message":"the user rejected tool \"t\""},"content":[{"type":"text","text":"Error: the user rejected tool \"t\""}]}`)
	})
}

// TestCancelDuringWrapper covers the around-wrapper rows of docs/behaviour.md §6.
func TestCancelDuringWrapper(t *testing.T) {
	t.Run("before next, with and without a replaced context", func(t *testing.T) {
		for _, replace := range []bool{false, true} {
			reg, p := countingReg(t, nil)
			entered, release := make(chan struct{}), make(chan struct{})
			replacement, stop := context.WithCancel(context.Background())
			reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
				close(entered)
				<-release
				if replace {
					return next(replacement)
				}
				return next(ctx)
			})
			ctx, cancel := context.WithCancel(context.Background())
			done := async(func() *tool.Result { return execT(ctx, reg, nil) })
			<-entered
			cancel()
			close(release)
			wantJSON(t, <-done, abortedBeforeJSON)
			if p.body.Load() != 0 || p.post.Load() != 1 {
				t.Errorf("replace=%v: phases %v", replace, p.get())
			}
			if replacement.Err() != nil {
				t.Error("the caller's cancellation reached the wrapper's own context")
			}
			stop()
		}
	})
	t.Run("an already-cancelled replacement", func(t *testing.T) {
		reg, p := countingReg(t, nil)
		reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			dead, cancel := context.WithCancelCause(ctx)
			cancel(errors.New("wrapper cancelled"))
			return next(dead)
		})
		wantJSON(t, execT(context.Background(), reg, nil), abortedBeforeJSON)
		if p.body.Load() != 0 {
			t.Error("the body ran")
		}
	})
	t.Run("short-circuit success after the caller aborted", func(t *testing.T) {
		reg, p := countingReg(t, nil)
		entered, release := make(chan struct{}), make(chan struct{})
		reg.WrapExecute(func(context.Context, *tool.Execution, func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			close(entered)
			<-release
			return &tool.Result{Value: "wrapper success", AdditionalContexts: []content.Message{msg("wrapper", "x")}}, nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := async(func() *tool.Result { return execT(ctx, reg, nil) })
		<-entered
		cancel()
		close(release)
		res := <-done
		if firstText(res) != "Error: tool call aborted before dispatch" || res.Error.Info.Code != tool.CodeAbortedBeforeDispatch ||
			!slices.Equal(plugins(res), []string{"wrapper"}) || p.body.Load() != 0 {
			t.Errorf("result = %s, phases %v", resultJSON(t, res), p.get())
		}
	})
	t.Run("wrapper fails after the caller aborted", func(t *testing.T) {
		reg, p := countingReg(t, nil)
		entered, release := make(chan struct{}), make(chan struct{})
		reg.WrapExecute(func(context.Context, *tool.Execution, func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			close(entered)
			<-release
			return nil, tool.NewError("HarnessError", "WRAPPER_FAILURE", "wrapper failed")
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := async(func() *tool.Result { return execT(ctx, reg, nil) })
		<-entered
		cancel()
		close(release)
		wantJSON(t, <-done, `{"isError":true,"error":{"message":"wrapper failed","info":{"name":"HarnessError","code":"WRAPPER_FAILURE"}},"content":[{"type":"text","text":"Error: wrapper failed"}]}`)
		if p.body.Load() != 0 || p.post.Load() != 0 {
			t.Errorf("phases = %v", p.get())
		}
	})
	t.Run("after the body succeeded, while the wrapper waits", func(t *testing.T) {
		reg, _ := countingReg(t, func(_ context.Context, call *tool.Call) (any, error) {
			call.DeferContext(msg("child", "completed child work"))
			return "body complete", nil
		})
		entered, release := make(chan struct{}), make(chan struct{})
		reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			res, err := next(ctx)
			close(entered)
			<-release
			return res, err
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := async(func() *tool.Result { return execT(ctx, reg, nil) })
		<-entered
		cancel()
		close(release)
		res := <-done
		if res.Error == nil || res.Error.Info.Code != tool.CodeAborted || !slices.Equal(plugins(res), []string{"child"}) {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
}

// TestCancelWhileBodyRuns covers the body rows of docs/behaviour.md §6 and the never-abandon rule.
func TestCancelWhileBodyRuns(t *testing.T) {
	t.Run("success after cancellation becomes ABORTED after the body returns", func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		var returned atomic.Bool
		reg, _ := countingReg(t, func(_ context.Context, call *tool.Call) (any, error) {
			call.DeferContext(msg("nested", "nested outcome"))
			close(entered)
			<-release // uncooperative: ignores ctx
			returned.Store(true)
			return "settled", nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := async(func() *tool.Result { return execT(ctx, reg, nil) })
		<-entered
		cancel()
		select {
		case res := <-done:
			t.Fatalf("Execute returned before the body did: %s", resultJSON(t, res))
		default:
		}
		close(release)
		res := <-done
		if !returned.Load() {
			t.Fatal("Execute returned before the body did")
		}
		if res.Error == nil || res.Error.Info.Code != tool.CodeAborted || !slices.Equal(plugins(res), []string{"nested"}) {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
	t.Run("the body's own error stands", func(t *testing.T) {
		entered := make(chan struct{})
		reg, _ := countingReg(t, func(ctx context.Context, _ *tool.Call) (any, error) {
			close(entered)
			<-ctx.Done()
			return nil, tool.NewError("HarnessError", "TOOL_FAILURE", "tool failed")
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := async(func() *tool.Result { return execT(ctx, reg, nil) })
		<-entered
		cancel()
		wantJSON(t, <-done, `{"isError":true,"error":{"message":"tool failed","info":{"name":"HarnessError","code":"TOOL_FAILURE"}},"content":[{"type":"text","text":"Error: tool failed"}]}`)
	})
	t.Run("an invalid output stands", func(t *testing.T) {
		entered := make(chan struct{})
		reg := newReg(t)
		d := strTool("t", "")
		d.Execute = func(ctx context.Context, _ *tool.Call) (any, error) {
			close(entered)
			<-ctx.Done()
			return 42.0, nil
		}
		register(t, reg, d)
		ctx, cancel := context.WithCancel(context.Background())
		done := async(func() *tool.Result { return execT(ctx, reg, nil) })
		<-entered
		cancel()
		if res := <-done; res.Error.Info.Code != tool.CodeInvalidToolOutput {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
	t.Run("the body sees a fused context", func(t *testing.T) {
		for _, who := range []string{"caller", "wrapper"} {
			entered := make(chan context.Context, 1)
			reg, _ := countingReg(t, func(ctx context.Context, _ *tool.Call) (any, error) {
				entered <- ctx
				<-ctx.Done()
				return "stopped", nil
			})
			replacement, cancelReplacement := context.WithCancelCause(context.Background())
			reg.WrapExecute(func(_ context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
				return next(replacement)
			})
			var postCtx context.Context
			reg.OnPostExecute(func(ctx context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				postCtx = ctx
				return next()
			})
			caller, cancelCaller := context.WithCancelCause(context.Background())
			done := async(func() *tool.Result { return execT(caller, reg, nil) })
			bodyCtx := <-entered
			if bodyCtx == caller || bodyCtx == replacement {
				t.Error("the body got the caller's or the wrapper's context itself")
			}
			cause := errors.New("cancelled by " + who)
			if who == "caller" {
				cancelCaller(cause)
			} else {
				cancelReplacement(cause)
			}
			res := <-done
			if res.Error == nil || res.Error.Info.Code != tool.CodeAborted {
				t.Errorf("%s: result = %s", who, resultJSON(t, res))
			}
			if !errors.Is(context.Cause(bodyCtx), cause) {
				t.Errorf("%s: body cause = %v", who, context.Cause(bodyCtx))
			}
			if who == "caller" && replacement.Err() != nil {
				t.Error("the caller's cancellation reached the wrapper's own context")
			}
			if postCtx != caller {
				t.Errorf("%s: post-execute did not see the caller's context", who)
			}
			cancelCaller(nil)
			cancelReplacement(nil)
		}
	})
	t.Run("a wrapper's own deadline wins over a later caller abort", func(t *testing.T) {
		entered := make(chan struct{})
		timeout := errors.New("timeout")
		reg, _ := countingReg(t, func(ctx context.Context, _ *tool.Call) (any, error) {
			close(entered)
			<-ctx.Done()
			return "stopped", nil
		})
		fired := make(chan struct{})
		reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			deadline, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			go func() { <-entered; cancel(timeout); close(fired) }()
			res, err := next(deadline)
			if errors.Is(context.Cause(deadline), timeout) {
				if res.Error == nil || res.Error.Info.Code != tool.CodeAborted {
					t.Errorf("the inner result of a wrapper-cancelled body = %+v", res)
				}
				return tool.Fail(tool.NewError("ToolTimeoutError", tool.CodeToolTimeout, "tool call timed out after 5ms")), nil
			}
			return res, err
		})
		postEntered, postRelease := make(chan struct{}), make(chan struct{})
		reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			close(postEntered)
			<-postRelease
			return next()
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := async(func() *tool.Result { return execT(ctx, reg, nil) })
		<-postEntered
		<-fired
		cancel()
		close(postRelease)
		wantJSON(t, <-done, `{"isError":true,"error":{"message":"tool call timed out after 5ms","info":{"name":"ToolTimeoutError","code":"TOOL_TIMEOUT"}},"content":[{"type":"text","text":"Error: tool call timed out after 5ms"}]}`)
	})
	t.Run("INVALID_ARGS stays after cancellation", func(t *testing.T) {
		reg := newReg(t)
		entered := make(chan struct{})
		type in struct {
			N int `json:"n"`
		}
		register(t, reg, tool.Must(tool.New("typed", "d", func(context.Context, *tool.Call, in) (string, error) { return "", nil })))
		ctx, cancel := context.WithCancel(context.Background())
		reg.OnPreExecute(func(_ context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			return next()
		})
		reg.WrapExecute(func(c context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			res, err := next(c)
			close(entered)
			cancel()
			return res, err
		})
		res := reg.Execute(ctx, tool.Input{CallID: "c", Name: "typed", Args: js(t, `{"n":"x"}`)})
		<-entered
		if res.Error == nil || res.Error.Info.Code != tool.CodeInvalidArgs {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
}

// TestCancelDuringPostExecute covers the post-execute rows of docs/behaviour.md §6.
func TestCancelDuringPostExecute(t *testing.T) {
	t.Run("a success becomes ABORTED with deferred and post contexts", func(t *testing.T) {
		reg, _ := countingReg(t, func(_ context.Context, call *tool.Call) (any, error) {
			call.DeferContext(msg("child", "x"))
			call.ConcludeTurn()
			return "body complete", nil
		})
		entered, release := make(chan struct{}), make(chan struct{})
		reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			d, err := next()
			close(entered)
			<-release
			d.AdditionalContexts = append(d.AdditionalContexts, msg("post", "y"))
			return d, err
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := async(func() *tool.Result { return execT(ctx, reg, nil) })
		<-entered
		cancel()
		close(release)
		res := <-done
		checkInvariants(t, res)
		if res.Error == nil || res.Error.Info.Code != tool.CodeAborted || !slices.Equal(plugins(res), []string{"child", "post"}) {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
	t.Run("a listener failure after the abort stands", func(t *testing.T) {
		reg, _ := countingReg(t, nil)
		entered, release := make(chan struct{}), make(chan struct{})
		reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			close(entered)
			<-release
			return tool.PostDecision{}, tool.NewError("HarnessError", "POST_FAILURE", "post-policy failed")
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := async(func() *tool.Result { return execT(ctx, reg, nil) })
		<-entered
		cancel()
		close(release)
		wantJSON(t, <-done, `{"isError":true,"error":{"message":"post-policy failed","info":{"name":"HarnessError","code":"POST_FAILURE"}},"content":[{"type":"text","text":"Error: post-policy failed"}]}`)
	})
	t.Run("a denial is never replaced", func(t *testing.T) {
		reg, _ := countingReg(t, nil)
		reg.Guard(func(*tool.Execution) string { return "guarded" })
		entered, release := make(chan struct{}), make(chan struct{})
		reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			close(entered)
			<-release
			return next()
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := async(func() *tool.Result { return execT(ctx, reg, nil) })
		<-entered
		cancel()
		close(release)
		wantJSON(t, <-done, `{"isError":true,"error":{"message":"guarded"},"content":[{"type":"text","text":"Error: guarded"}]}`)
	})
	t.Run("a value replacement after the abort becomes ABORTED", func(t *testing.T) {
		reg, _ := countingReg(t, nil)
		ctx, cancel := context.WithCancel(context.Background())
		reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			cancel()
			return tool.PostDecision{ReplaceValue: true, Value: "v"}, nil
		})
		if res := execT(ctx, reg, nil); res.Error == nil || res.Error.Info.Code != tool.CodeAborted {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
}

// TestNeverAbandonBody: a wrapper that runs next on another goroutine and returns early
// still has Execute wait for the body; a next called after the chain returned runs nothing.
func TestNeverAbandonBody(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var returned, late atomic.Bool
	var bodies atomic.Int32
	reg := newReg(t)
	register(t, reg, bodyTool("t", func(context.Context, *tool.Call) (any, error) {
		if bodies.Add(1) == 1 {
			close(entered)
			<-release
			returned.Store(true)
		}
		return "body", nil
	}))
	lateNext := make(chan func(context.Context) (*tool.Result, error), 1)
	reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
		go func() { _, _ = next(ctx) }() // abandoned by the wrapper, not by the registry
		<-entered
		lateNext <- next
		return &tool.Result{Value: "short-circuit"}, nil
	})
	done := async(func() *tool.Result {
		return reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}})
	})
	next := testwait.Recv(t, lateNext, "a value on lateNext")
	select {
	case res := <-done:
		t.Fatalf("Execute returned while a body ran: %s", resultJSON(t, res))
	default:
	}
	close(release)
	res := testwait.Recv(t, done, "a value on done")
	if !returned.Load() {
		t.Fatal("Execute returned while a body ran")
	}
	if firstText(res) != "short-circuit" {
		t.Errorf("result = %s", resultJSON(t, res))
	}
	if _, err := next(context.Background()); err == nil {
		late.Store(true)
	}
	if late.Load() || bodies.Load() != 1 {
		t.Errorf("a next called after the chain returned ran a body (bodies %d)", bodies.Load())
	}
}
