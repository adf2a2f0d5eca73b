package tool_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

type badArgs struct {
	Path  string   `json:"path"`
	Count int      `json:"count,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Any   any      `json:"any,omitempty"`
}

// nested returns depth levels of arrays around a 1.
func nested(depth int) string {
	return strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth)
}

// TestBadInput runs the hostile inputs of the issue through the full pipeline: each ends in
// the specified failure result, the process never crashes, and every call is reported once.
func TestBadInput(t *testing.T) {
	logs := &logCapture{}
	reg := newReg(t, tool.Config{Logger: slog.New(logs)})
	register(t, reg, tool.Must(tool.New("typed", "d", func(_ context.Context, call *tool.Call, in badArgs) (string, error) {
		call.DeferContext(msg("body", "ran"))
		return in.Path, nil
	}, tool.Strict())))
	var results counter
	reg.OnResult(func(_ context.Context, exec *tool.Execution, _ *tool.Result) error {
		results.inc(exec.CallID())
		return nil
	})
	const mustBeObject = `invalid arguments: "arguments" must be an object`
	big := strings.Repeat("x", 10<<20)
	tests := []struct {
		name string
		args any // raw argument text (string, parsed with ParseArguments) or a Go value
		code string
		msg  string // exact message, or a prefix ending in "…"
	}{
		{"unparseable text", `{"path": "x"`, tool.CodeInvalidArgs, mustBeObject},
		{"wrong types", `{"path": 1, "count": "two", "tags": [1]}`, tool.CodeInvalidArgs,
			`invalid arguments: "path" must be a string; "count" must be an integer; "tags[0]" must be a string`},
		{"missing required", `{"count": 1}`, tool.CodeInvalidArgs, `invalid arguments: missing required property "path"`},
		{"extra fields on a closed object", `{"path": "x", "extra": 1}`, tool.CodeInvalidArgs,
			`invalid arguments: "extra" is not a declared property (additionalProperties: false)`},
		{"10,000-deep nesting in an extra field", `{"path":"x","extra":` + nested(9998) + `}`, tool.CodeInvalidArgs,
			`invalid arguments: "extra" is not a declared property (additionalProperties: false)`},
		{"nesting past the parser's limit", `{"path":"x","any":` + nested(10000) + `}`, tool.CodeInvalidArgs, mustBeObject},
		{"10 MB of arguments", `{"path":"` + big + `","extra":true}`, tool.CodeInvalidArgs,
			`invalid arguments: they are 10485784 bytes of JSON, over the limit of 1048576 bytes for one call; pass less at a time (for example, write a large file in parts)`},
		{"10 MB of unparsed text", big, tool.CodeInvalidArgs,
			`invalid arguments: they are 10485760 bytes of JSON, over the limit of 1048576 bytes for one call; pass less at a time (for example, write a large file in parts)`},
		{"NUL in a path", `{"path": "a.txt\u0000.png"}`, tool.CodeInvalidArgs, `invalid arguments: "path" contains a NUL byte, which no file path may hold`},
		{"NUL in a list of paths", `{"path": "x", "paths": ["a", "b\u0000"]}`, tool.CodeInvalidArgs, `invalid arguments: "paths[1]" contains a NUL byte, which no file path may hold`},
		{"NUL in a Go value's path", map[string]any{"file_path": "a\x00b"}, tool.CodeInvalidArgs, `invalid arguments: "file_path" contains a NUL byte, which no file path may hold`},
		{"duplicate keys", `{"path": "a", "path": "b"}`, tool.CodeInvalidArgs, mustBeObject},
		// The unparsed text stays the raw string, which is not lossless itself.
		{"invalid UTF-8 text", "{\"path\": \"\xff\"}", "", "tool execution arguments must be losslessly JSON-serializable"},
		{"overflowing number", `{"path": "x", "count": 1e400}`, tool.CodeInvalidArgs, mustBeObject},
		{"negative zero", `{"path": "x", "count": -0}`, tool.CodeInvalidArgs, mustBeObject},
		{"invalid UTF-8 Go value", map[string]any{"path": "\xff"}, "", "tool execution arguments must be losslessly JSON-serializable"},
		{"function Go value", map[string]any{"path": func() {}}, "", "tool execution arguments must be losslessly JSON-serializable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if s, ok := args.(string); ok {
				args = reg.ParseArguments(s)
			}
			res := reg.Execute(context.Background(), tool.Input{CallID: tt.name, Name: "typed", Args: args})
			checkInvariants(t, res)
			if !res.IsError || !strings.HasPrefix(res.Error.Message, tt.msg) || len(res.Error.Message) > len(tt.msg)+200 && tt.code != "" {
				t.Fatalf("result = %.500s", resultJSON(t, res))
			}
			if res.Error.Message != tt.msg {
				t.Errorf("message = %.300q, want %q", res.Error.Message, tt.msg)
			}
			gotCode := ""
			if res.Error.Info != nil {
				gotCode = res.Error.Info.Code
			}
			if gotCode != tt.code {
				t.Errorf("code = %q, want %q", gotCode, tt.code)
			}
			if results.get(tt.name) != 1 {
				t.Errorf("%d result notifications", results.get(tt.name))
			}
		})
	}
	t.Run("10 MB of valid arguments under a raised cap", func(t *testing.T) {
		reg := newReg(t, tool.Config{MaxArgBytes: 11 << 20})
		register(t, reg, bodyTool("len", func(_ context.Context, call *tool.Call) (any, error) {
			p, _ := call.Args().(*jsonv.Object).Get("path")
			return float64(len(p.(string))), nil
		}))
		res := reg.Execute(context.Background(), tool.Input{CallID: "big", Name: "len", Args: reg.ParseArguments(`{"path":"` + big + `"}`)})
		if res.IsError || res.Value != float64(len(big)) {
			t.Fatalf("result = %.300s", resultJSON(t, res))
		}
		if reg.MaxArgBytes() != 11<<20 {
			t.Errorf("MaxArgBytes = %d", reg.MaxArgBytes())
		}
	})
	t.Run("10,000-deep nesting in an open field", func(t *testing.T) {
		res := reg.Execute(context.Background(), tool.Input{CallID: "deep-any", Name: "typed", Args: tool.ParseArguments(`{"path":"x","any":` + nested(9998) + `}`)})
		// Either outcome is acceptable as long as it is a result, never a crash: the decoder
		// may refuse the depth (INVALID_ARGS) or accept it.
		if res.IsError && res.Error.Info.Code != tool.CodeInvalidArgs {
			t.Fatalf("result = %.300s", resultJSON(t, res))
		}
		if !res.IsError && res.Value != "x" {
			t.Fatalf("result = %.300s", resultJSON(t, res))
		}
	})
	t.Run("a raw tool echoing 10,000-deep arguments", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, bodyTool("id", func(_ context.Context, call *tool.Call) (any, error) { return call.Args(), nil }))
		args := tool.ParseArguments(`{"a":` + nested(9998) + `}`)
		if _, ok := args.(string); ok {
			t.Fatal("9,999 levels did not parse")
		}
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "id", Args: args})
		if res.IsError || !jsonv.Equal(res.Value, args) {
			t.Fatalf("result = %.300s", firstText(res))
		}
	})
	if len(logs.messages()) != 0 {
		t.Errorf("unexpected warnings: %q", logs.messages())
	}
}

// TestHostileCode: a body, hook, guard, finalizer or listener that panics or returns garbage
// ends the call in a failure result (listeners: in a warning); nothing crashes, nothing is
// lost.
func TestHostileCode(t *testing.T) {
	type setup func(reg *tool.Registry)
	panicking := "hostile code panicked"
	tests := []struct {
		name  string
		body  func(context.Context, *tool.Call) (any, error)
		setup setup
		msg   string
		code  string
	}{
		{"body panics", func(context.Context, *tool.Call) (any, error) { panic(panicking) }, nil, `tool "t": the body panicked: ` + panicking, tool.CodeToolPanic},
		{"body panics with nil", func(context.Context, *tool.Call) (any, error) { panic(nil) }, nil,
			`tool "t": the body panicked: panic called with nil argument`, tool.CodeToolPanic},
		{"body returns a channel", func(context.Context, *tool.Call) (any, error) { return make(chan int), nil }, nil,
			`tool "t" returned invalid output: value is not lossless JSON`, tool.CodeInvalidToolOutput},
		{"body returns a cycle", func(context.Context, *tool.Call) (any, error) {
			a := []any{nil}
			a[0] = a
			return a, nil
		}, nil, `tool "t" returned invalid output: value is not lossless JSON`, tool.CodeInvalidToolOutput},
		{"pre-execute panics", nil, func(reg *tool.Registry) {
			reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				panic(panicking)
			})
		}, `tool "t": a pre-execute hook panicked: ` + panicking, tool.CodeToolPanic},
		{"guard panics", nil, func(reg *tool.Registry) {
			reg.Guard(func(*tool.Execution) string { panic(panicking) })
		}, `tool "t": a guard panicked: ` + panicking, tool.CodeToolPanic},
		{"approver panics", nil, func(reg *tool.Registry) {
			reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				return tool.Ask(""), nil
			})
			reg.SetApprover(tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.ApprovalOutcome, error) { panic(panicking) }))
		}, `tool "t": the approver panicked: ` + panicking, tool.CodeToolPanic},
		{"wrapper panics after next", nil, func(reg *tool.Registry) {
			reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
				_, _ = next(ctx)
				panic(panicking)
			})
		}, `tool "t": an around-execute wrapper panicked: ` + panicking, tool.CodeToolPanic},
		{"post-execute panics", nil, func(reg *tool.Registry) {
			reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				panic(panicking)
			})
		}, `tool "t": a post-execute hook panicked: ` + panicking, tool.CodeToolPanic},
		{"post-execute returns a lossy value", nil, func(reg *tool.Registry) {
			reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				return tool.PostDecision{ReplaceValue: true, Value: make(chan int)}, nil
			})
		}, `tool "t" returned invalid output: value is not lossless JSON`, tool.CodeInvalidToolOutput},
		{"post-execute returns lossy contexts", nil, func(reg *tool.Registry) {
			reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				return tool.Accept(content.Message{ID: "\xff", Role: content.RoleUser}), nil
			})
		}, "tool result must be losslessly JSON-serializable", ""},
		{"wrapper returns lossy meta", nil, func(reg *tool.Registry) {
			reg.WrapExecute(func(context.Context, *tool.Execution, func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
				return &tool.Result{IsError: true, Error: &tool.Failure{Message: "m"}, Meta: map[string]any{"c": make(chan int)}}, nil
			})
		}, "tool result must be losslessly JSON-serializable", ""},
		{"wrapper returns a lossy block", nil, func(reg *tool.Registry) {
			reg.WrapExecute(func(context.Context, *tool.Execution, func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
				return &tool.Result{IsError: true, Error: &tool.Failure{Message: "m"},
					Content: []content.Block{{Type: "widget", Extra: jsonv.NewObject(jsonv.Member{Name: "x", Value: make(chan int)})}}}, nil
			})
		}, "tool result must be losslessly JSON-serializable", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &logCapture{}
			reg := newReg(t, tool.Config{Logger: slog.New(logs)})
			body := tt.body
			if body == nil {
				body = func(context.Context, *tool.Call) (any, error) { return "ok", nil }
			}
			register(t, reg, bodyTool("t", func(ctx context.Context, call *tool.Call) (any, error) {
				call.DeferContext(msg("body", "kept"))
				return body(ctx, call)
			}))
			if tt.setup != nil {
				tt.setup(reg)
			}
			var results counter
			reg.OnResult(func(context.Context, *tool.Execution, *tool.Result) error {
				results.inc("r")
				panic("listener panicked too")
			})
			res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}, Agent: reg.NewScope("a", nil)})
			checkInvariants(t, res)
			if !res.IsError || res.Error.Message != tt.msg {
				t.Errorf("result = %s", resultJSON(t, res))
			}
			if code := res.Error.Info; (code == nil) != (tt.code == "") || code != nil && code.Code != tt.code {
				t.Errorf("info = %+v, want %q", code, tt.code)
			}
			if results.get("r") != 1 {
				t.Errorf("%d result notifications", results.get("r"))
			}
			if got := logs.messages(); len(got) != 1 || got[0] != `WARN tool "t" (c): tools/result observer failed: listener panicked too` {
				t.Errorf("logs = %q", got)
			}
		})
	}
}

// TestGoexit: runtime.Goexit anywhere a body, hook, guard, approver, wrapper or finalizer
// runs ends the call in a TOOL_PANIC result naming where, on the caller's goroutine; in a
// result listener it is logged and changes nothing. Nothing hangs: every call returns.
func TestGoexit(t *testing.T) {
	// Each case runs with a goroutine per call and on a registry's kept goroutines
	// (Config.Workers), handed over through the scheduler or by a direct switch
	// (Config.DirectSwitch), where a Goexit ends one of them and a later call gets another.
	for _, c := range []struct {
		workers int
		direct  bool
	}{{0, false}, {2, false}, {2, true}} {
		t.Run(fmt.Sprintf("workers=%d,direct=%v", c.workers, c.direct), func(t *testing.T) { testGoexit(t, c.workers, c.direct) })
	}
}

func testGoexit(t *testing.T, workers int, direct bool) {
	goexitMsg := func(where string) string { return `tool "t": ` + where + ` called runtime.Goexit` }
	tests := []struct {
		name  string
		body  func(context.Context, *tool.Call) (any, error)
		setup func(reg *tool.Registry)
		msg   string
	}{
		{"body", func(context.Context, *tool.Call) (any, error) { runtime.Goexit(); return nil, nil }, nil, goexitMsg("the body")},
		{"pre-execute hook", nil, func(reg *tool.Registry) {
			reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				runtime.Goexit()
				return tool.Allow(), nil
			})
		}, goexitMsg("a pre-execute hook")},
		{"guard", nil, func(reg *tool.Registry) {
			reg.Guard(func(*tool.Execution) string { runtime.Goexit(); return "" })
		}, goexitMsg("a guard")},
		{"approver", nil, func(reg *tool.Registry) {
			reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				return tool.Ask(""), nil
			})
			reg.SetApprover(tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
				runtime.Goexit()
				return tool.ApprovalAllowedOnce, nil
			}))
		}, goexitMsg("the approver")},
		{"wrapper before next", nil, func(reg *tool.Registry) {
			reg.WrapExecute(func(context.Context, *tool.Execution, func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
				runtime.Goexit()
				return nil, nil
			})
		}, goexitMsg("an around-execute wrapper")},
		{"wrapper after next", nil, func(reg *tool.Registry) {
			reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
				_, _ = next(ctx)
				runtime.Goexit()
				return nil, nil
			})
		}, goexitMsg("an around-execute wrapper")},
		{"body under a wrapper calling next on another goroutine", func(context.Context, *tool.Call) (any, error) { runtime.Goexit(); return nil, nil },
			func(reg *tool.Registry) {
				reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
					type out struct {
						res *tool.Result
						err error
					}
					ch := make(chan out, 1)
					go func() {
						res, err := next(ctx)
						ch <- out{res, err}
					}()
					o := <-ch
					return o.res, o.err
				})
			}, goexitMsg("the body")},
		{"post-execute hook", nil, func(reg *tool.Registry) {
			reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				runtime.Goexit()
				return tool.PostDecision{}, nil
			})
		}, goexitMsg("a post-execute hook")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &logCapture{}
			reg := newReg(t, tool.Config{Logger: slog.New(logs), Workers: workers, DirectSwitch: direct})
			body := tt.body
			if body == nil {
				body = func(context.Context, *tool.Call) (any, error) { return "ok", nil }
			}
			register(t, reg, bodyTool("t", body))
			if tt.setup != nil {
				tt.setup(reg)
			}
			var results counter
			reg.OnResult(func(context.Context, *tool.Execution, *tool.Result) error {
				results.inc("r")
				runtime.Goexit()
				return nil
			})
			reg.OnResult(func(context.Context, *tool.Execution, *tool.Result) error {
				results.inc("after")
				return nil
			})
			// The second call runs where the first one's Goexits ended goroutines.
			for round := 1; round <= 2; round++ {
				res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}, Agent: reg.NewScope("a", nil)})
				checkInvariants(t, res)
				if !res.IsError || res.Error.Message != tt.msg || res.Error.Info == nil || res.Error.Info.Code != tool.CodeToolPanic || res.Error.Info.Name != "ToolPanicError" {
					t.Errorf("round %d: result = %s", round, resultJSON(t, res))
				}
				if results.get("r") != round || results.get("after") != round {
					t.Errorf("round %d: result listeners ran %d and %d times, want %d each", round, results.get("r"), results.get("after"), round)
				}
				if got := logs.messages(); len(got) != round || got[round-1] != `WARN tool "t" (c): tools/result observer called runtime.Goexit` {
					t.Errorf("round %d: logs = %q", round, got)
				}
			}
		})
	}
	t.Run("finalize-content", func(t *testing.T) {
		reg := newReg(t, tool.Config{Workers: workers, DirectSwitch: direct})
		d := bodyTool("t", func(context.Context, *tool.Call) (any, error) { return "ok", nil })
		d.FinalizeContent = func(*tool.Execution, *tool.Result) ([]content.Block, error) {
			runtime.Goexit()
			return nil, nil
		}
		register(t, reg, d)
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}})
		checkInvariants(t, res)
		if !res.IsError || res.Error.Message != goexitMsg("finalize-content") || res.Error.Info.Code != tool.CodeToolPanic {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
	t.Run("a wrapper's Goexit waits for the body it started", func(t *testing.T) {
		reg := newReg(t, tool.Config{Workers: workers, DirectSwitch: direct})
		started, release := make(chan struct{}), make(chan struct{})
		var finished atomic.Bool
		register(t, reg, bodyTool("t", func(context.Context, *tool.Call) (any, error) {
			close(started)
			<-release
			finished.Store(true)
			return "ok", nil
		}))
		reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			go next(ctx) //nolint:errcheck // the body the wrapper abandons
			<-started
			close(release)
			runtime.Goexit()
			return nil, nil
		})
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}})
		if !finished.Load() {
			t.Error("Execute returned before the started body did")
		}
		if !res.IsError || res.Error.Message != goexitMsg("an around-execute wrapper") {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
}

func TestMaxArgBytesConfig(t *testing.T) {
	if _, err := tool.NewRegistry(tool.Config{MaxArgBytes: -1}); err == nil || err.Error() != "tool: MaxArgBytes must not be negative, got -1" {
		t.Errorf("NewRegistry = %v", err)
	}
	reg := newReg(t, tool.Config{MaxArgBytes: 20})
	register(t, reg, bodyTool("t", func(context.Context, *tool.Call) (any, error) { return "ok", nil }))
	var seen counter // refused arguments reach no hook
	reg.OnPreExecute(func(_ context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		seen.inc("pre")
		return next()
	})
	for args, want := range map[string]string{
		`{"a":"0123456789ab"}`:    "",                                                // exactly 20 bytes
		`{"a":"0123456789abc"}`:   "they are 21 bytes of JSON, over the limit of 20", // one more
		`{"a":"\n\n\n\n\n\n"}`:    "",                                                // 6 escapes: 20 bytes
		`{"a":"\u0001\u0001"}`:    "",                                                // 2 × \u0001: 20 bytes
		`{"a":"\u0001\u0001\n"}`:  "they are 22 bytes of JSON, over the limit of 20",
		`{"a":[1,2,true,null]}`:   "they are 21 bytes of JSON, over the limit of 20",
		`{"path":"a\u0000"}`:      `"path" contains a NUL byte`,
		`{"a":[1,2,true]}`:        "",
		"  {\"a\":1}  ":           "",                                                // white space counts only in text longer than the cap
		"      {\"a\":1}        ": "they are 21 bytes of JSON, over the limit of 20", // not parsed at all
	} {
		before := seen.get("pre")
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: reg.ParseArguments(args)})
		if hooked := seen.get("pre") - before; want != "" && hooked != 0 || want == "" && hooked != 1 {
			t.Errorf("%s: the pre-execute hook ran %d times", args, hooked)
		}
		if want == "" && res.IsError || want != "" && (!res.IsError || !strings.Contains(res.Error.Message, want) || res.Error.Info.Code != tool.CodeInvalidArgs) {
			t.Errorf("%s: result = %s", args, resultJSON(t, res))
		}
	}
}
