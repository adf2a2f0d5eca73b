package tool_test

import (
	"context"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// TestReadOnlyHooksShareTheResult: hooks registered ReadOnly are handed the call's own
// result (every ReadOnly post-execute hook the same one, a ReadOnly listener the final
// result itself), hooks without it a private copy each.
func TestReadOnlyHooksShareTheResult(t *testing.T) {
	for _, tc := range []struct {
		name     string
		readOnly bool
	}{{"copies", false}, {"read-only", true}} {
		t.Run(tc.name, func(t *testing.T) {
			reg := newReg(t)
			register(t, reg, strTool("t", "out"))
			var opts []tool.HookOption
			if tc.readOnly {
				opts = append(opts, tool.ReadOnly())
			}
			var seen []*tool.Result
			for range 2 {
				reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
					seen = append(seen, res)
					return next()
				}, opts...)
			}
			var listened *tool.Result
			reg.OnResult(func(_ context.Context, _ *tool.Execution, res *tool.Result) error {
				listened = res
				return nil
			}, opts...)
			res := reg.Execute(t.Context(), tool.Input{CallID: "c1", Name: "t", Args: &jsonv.Object{}})
			wantJSON(t, res, `{"isError":false,"content":[{"type":"text","text":"out"}],"value":"out"}`)
			if len(seen) != 2 {
				t.Fatalf("%d post-execute hooks ran, want 2", len(seen))
			}
			if shared := seen[0] == seen[1]; shared != tc.readOnly {
				t.Errorf("post-execute hooks share one result: %v, want %v", shared, tc.readOnly)
			}
			if got := listened == res; got != tc.readOnly {
				t.Errorf("listener given the final result itself: %v, want %v", got, tc.readOnly)
			}
			for i, r := range append(seen, listened) {
				if got := firstText(r); got != "out" {
					t.Errorf("hook %d saw content %q, want %q", i, got, "out")
				}
			}
		})
	}
}

// TestReadOnlyAfterCopyingHook: a hook without ReadOnly that changes its copy before it
// calls next changes neither what a ReadOnly hook after it sees nor the final result.
func TestReadOnlyAfterCopyingHook(t *testing.T) {
	reg := newReg(t)
	register(t, reg, strTool("t", "out"))
	reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		res.Content[0].Text = "changed"
		res.Value = "changed"
		return next()
	})
	var saw string
	reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		saw = firstText(res)
		return next()
	}, tool.ReadOnly())
	res := reg.Execute(t.Context(), tool.Input{CallID: "c1", Name: "t", Args: &jsonv.Object{}})
	wantJSON(t, res, `{"isError":false,"content":[{"type":"text","text":"out"}],"value":"out"}`)
	if saw != "out" {
		t.Errorf("the ReadOnly hook saw %q, want %q", saw, "out")
	}
}

// TestReadOnlyWrappers: the body's result is handed to the around-execute wrappers without a
// copy only when every wrapper of the call is ReadOnly; one wrapper without it makes the
// chain copy, and what that wrapper does to its copy never reaches the result.
func TestReadOnlyWrappers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		outerRO    bool
		innerRO    bool
		wantShared bool
	}{
		{"both read-only", true, true, true},
		{"outer copies", false, true, false},
		{"inner copies", true, false, false},
		{"neither", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := newReg(t)
			var produced *tool.Result
			register(t, reg, strTool("t", "out"))
			var handed [2]*tool.Result
			wrap := func(i int, readOnly, change bool) {
				var opts []tool.HookOption
				if readOnly {
					opts = append(opts, tool.ReadOnly())
				}
				reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
					res, err := next(ctx)
					handed[i] = res
					if change && res != nil {
						res.Content[0].Text = "changed"
					}
					return res, err
				}, opts...)
			}
			wrap(0, tc.outerRO, !tc.outerRO)
			wrap(1, tc.innerRO, !tc.innerRO)
			reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				produced = res
				return next()
			}, tool.ReadOnly())
			res := reg.Execute(t.Context(), tool.Input{CallID: "c1", Name: "t", Args: &jsonv.Object{}})
			wantJSON(t, res, `{"isError":false,"content":[{"type":"text","text":"out"}],"value":"out"}`)
			if handed[0] != handed[1] {
				t.Fatalf("the wrappers saw different results")
			}
			if shared := handed[0] == produced; shared != tc.wantShared {
				t.Errorf("wrappers handed the body's result itself: %v, want %v", shared, tc.wantShared)
			}
		})
	}
}

// TestPropertyReadOnlyEqualsCopies: for any result a body produces and any chain of hooks
// that only read, registering the hooks ReadOnly changes neither what each hook sees nor
// the final result.
func TestPropertyReadOnlyEqualsCopies(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		value := jsonValue(3).Draw(t, "value")
		texts := rapid.SliceOfN(rapid.String(), 0, 3).Draw(t, "texts")
		fail := rapid.Bool().Draw(t, "fail")
		wrappers := rapid.IntRange(0, 2).Draw(t, "wrappers")
		posts := rapid.IntRange(0, 3).Draw(t, "posts")
		contexts := rapid.IntRange(0, 2).Draw(t, "contexts")
		run := func(readOnly bool) (seen []string, final string) {
			reg := newReg(t)
			var opts []tool.HookOption
			if readOnly {
				opts = append(opts, tool.ReadOnly())
			}
			def := bodyTool("t", func(context.Context, *tool.Call) (any, error) {
				if fail {
					return nil, &tool.Error{Name: "E", Code: "E", Message: "failed"}
				}
				return value, nil
			})
			def.Output.Render = func(_, v any) ([]content.Block, error) {
				var blocks []content.Block
				for _, s := range texts {
					blocks = append(blocks, content.Block{Type: content.TypeText, Text: s})
				}
				b, err := jsonv.Marshal(v)
				if err != nil {
					return nil, err
				}
				return append(blocks, content.Block{Type: content.TypeText, Text: string(b)}), nil
			}
			register(t, reg, def)
			see := func(where string, res *tool.Result) {
				seen = append(seen, where+" "+resultJSON(t, res))
			}
			for range wrappers {
				reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
					res, err := next(ctx)
					if err == nil {
						see("wrapper", res)
					}
					return res, err
				}, opts...)
			}
			for i := range posts {
				reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
					see("post", res)
					if i < contexts {
						return tool.Accept(msg("p", "context")), nil
					}
					return next()
				}, opts...)
			}
			reg.OnResult(func(_ context.Context, _ *tool.Execution, res *tool.Result) error {
				see("listener", res)
				return nil
			}, opts...)
			res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "t", Args: &jsonv.Object{}})
			checkInvariants(t, res)
			return seen, resultJSON(t, res)
		}
		seenCopies, finalCopies := run(false)
		seenShared, finalShared := run(true)
		if finalCopies != finalShared {
			t.Fatalf("final result differs:\ncopies:    %s\nread-only: %s", finalCopies, finalShared)
		}
		if len(seenCopies) != len(seenShared) {
			t.Fatalf("hooks ran %d times with copies, %d read-only", len(seenCopies), len(seenShared))
		}
		for i := range seenCopies {
			if seenCopies[i] != seenShared[i] {
				t.Fatalf("hook %d saw\ncopies:    %s\nread-only: %s", i, seenCopies[i], seenShared[i])
			}
		}
	})
}

// TestReadOnlyHooksAllocations: a typed call with one hook of each kind that takes a
// result (wrapper, post-execute hook, listener) registered ReadOnly makes none of the three
// copies — two allocations each for a one-block result — that the same hooks registered
// without it cost.
func TestReadOnlyHooksAllocations(t *testing.T) {
	allocs := func(opts ...tool.HookOption) float64 {
		reg := newEchoRegistry(t)
		reg.WrapExecute(func(ctx context.Context, exec *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			return next(ctx)
		}, opts...)
		reg.OnPostExecute(func(ctx context.Context, exec *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			return next()
		}, opts...)
		reg.OnResult(func(ctx context.Context, exec *tool.Execution, res *tool.Result) error { return nil }, opts...)
		args, _ := jsonv.ParseString(`{"text":"hello"}`)
		call := func() {
			if res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: args}); res.IsError {
				t.Fatal(res.Error.Message)
			}
		}
		call() // warm the registry's runners
		return testing.AllocsPerRun(200, call)
	}
	copies, readOnly := allocs(), allocs(tool.ReadOnly())
	t.Logf("allocations: %v with copies, %v ReadOnly", copies, readOnly)
	if copies-readOnly < 6 {
		t.Errorf("ReadOnly hooks make %v allocations, hooks given copies %v: want at least 6 fewer", readOnly, copies)
	}
}
