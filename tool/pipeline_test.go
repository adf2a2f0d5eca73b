package tool_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/schema"
	"github.com/dsh-go/dsh/tool"
)

// echoTool mirrors the reference's echo: open object arguments, string output, the body
// returns args.text or "".
func echoTool() *tool.Definition {
	d := strTool("echo", "")
	d.Description = "echo arguments back"
	d.Parameters = jsonv.NewObject(jsonv.Member{Name: "type", Value: "object"},
		jsonv.Member{Name: "properties", Value: jsonv.NewObject(jsonv.Member{Name: "text", Value: jsonv.NewObject(jsonv.Member{Name: "type", Value: "string"})})})
	d.Execute = func(_ context.Context, call *tool.Call) (any, error) {
		if o, ok := call.Args().(*jsonv.Object); ok {
			if v, ok := o.Get("text"); ok {
				return v, nil
			}
		}
		return "", nil
	}
	return d
}

func callEcho(reg *tool.Registry, args string) *tool.Result {
	return reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: tool.ParseArguments(args)})
}

func TestExecuteSuccess(t *testing.T) {
	reg := newReg(t)
	register(t, reg, echoTool())
	var observed *tool.Result
	reg.OnResult(func(_ context.Context, _ *tool.Execution, res *tool.Result) error { observed = res; return nil })
	res := callEcho(reg, `{"text":"hi"}`)
	const want = `{"isError":false,"content":[{"type":"text","text":"hi"}],"value":"hi"}`
	wantJSON(t, res, want)
	wantJSON(t, observed, want)
	if observed == res {
		t.Error("the listener received the authoritative result itself")
	}
}

func TestPresentationMeta(t *testing.T) {
	reg := newReg(t)
	d := echoTool()
	d.Name = "meta-tool"
	d.Output.PresentationMeta = func(_, _ any) (any, error) {
		return map[string]any{"diffs": []any{map[string]any{"path": "a", "oldText": nil, "newText": "x"}}}, nil
	}
	d.Execute = func(context.Context, *tool.Call) (any, error) { return "ok", nil }
	register(t, reg, d)
	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "meta-tool", Args: &jsonv.Object{}})
	wantJSON(t, res, `{"isError":false,"content":[{"type":"text","text":"ok"}],"meta":{"diffs":[{"newText":"x","oldText":null,"path":"a"}]},"value":"ok"}`)

	// Nested (composite) dispatches never project meta.
	nested := reg.Execute(context.Background(), tool.Input{CallID: "n", Name: "meta-tool", Args: &jsonv.Object{}, Parent: &tool.Token{}})
	wantJSON(t, nested, `{"isError":false,"content":[{"type":"text","text":"ok"}],"value":"ok"}`)

	// No projector, no meta key.
	register(t, reg, strTool("plain", "ok"))
	wantJSON(t, reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "plain", Args: &jsonv.Object{}}),
		`{"isError":false,"content":[{"type":"text","text":"ok"}],"value":"ok"}`)
}

type failingMarshaler struct{}

func (failingMarshaler) MarshalJSON() ([]byte, error) { return nil, errors.New("marshaler exploded") }

// TestOutputContract pins docs/behaviour.md §2.4: every INVALID_TOOL_OUTPUT form.
func TestOutputContract(t *testing.T) {
	stringSchema := func() any { return js(nil, `{"type":"string"}`) }
	objSchema := func() any {
		return js(nil, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`)
	}
	ok := func(any, any) ([]content.Block, error) { return content.Texts("ok"), nil }
	tests := []struct {
		name   string
		schema any
		value  any
		render func(args, value any) ([]content.Block, error)
		meta   func(args, value any) (any, error)
		want   string
	}{
		{"func value", &jsonv.Object{}, func() {}, ok, nil, `value is not lossless JSON`},
		{"NaN value", &jsonv.Object{}, math.NaN(), ok, nil, `value is not lossless JSON`},
		{"negative zero", &jsonv.Object{}, math.Copysign(0, -1), ok, nil, `value is not lossless JSON`},
		{"struct value", &jsonv.Object{}, struct{ A int }{1}, ok, nil, `value is not lossless JSON`},
		{"invalid UTF-8 value", &jsonv.Object{}, "\xff", ok, nil, `value is not lossless JSON`},
		{"schema mismatch", stringSchema(), 42.0, ok, nil, `"value" must be a string`},
		{"violations joined", objSchema(), map[string]any{"c": true}, ok, nil,
			`missing required property "value.a"; missing required property "value.b"; "value.c" is not a declared property (additionalProperties: false)`},
		{"render error", stringSchema(), "x", func(any, any) ([]content.Block, error) { return nil, errors.New("renderer exploded") }, nil,
			`output.render failed: renderer exploded`},
		{"render panic", stringSchema(), "x", func(any, any) ([]content.Block, error) { panic("renderer exploded") }, nil,
			`output.render failed: renderer exploded`},
		{"render invalid UTF-8", stringSchema(), "x", func(any, any) ([]content.Block, error) { return content.Texts("\xff"), nil }, nil,
			`output.render returned non-lossless JSON`},
		{"render untyped block", stringSchema(), "x", func(any, any) ([]content.Block, error) { return []content.Block{{Text: "x"}}, nil }, nil,
			`output.render returned non-lossless JSON`},
		{"meta error", stringSchema(), "x", ok, func(any, any) (any, error) { return nil, errors.New("metadata exploded") },
			`output.presentationMeta failed: metadata exploded`},
		{"meta panic", stringSchema(), "x", ok, func(any, any) (any, error) { panic(errors.New("metadata exploded")) },
			`output.presentationMeta failed: metadata exploded`},
		{"meta lossy", stringSchema(), "x", ok, func(any, any) (any, error) { return map[string]any{"f": func() {}}, nil },
			`output.presentationMeta returned non-lossless JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := newReg(t)
			var posts counter
			reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				if res.IsError {
					posts.inc("error")
				}
				return next()
			})
			register(t, reg, &tool.Definition{
				Name:       "t",
				Parameters: &jsonv.Object{},
				Output:     tool.Output{Schema: tt.schema, Render: tt.render, PresentationMeta: tt.meta},
				Execute:    func(context.Context, *tool.Call) (any, error) { return tt.value, nil },
			})
			res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}})
			checkInvariants(t, res)
			msg := `tool "t" returned invalid output: ` + tt.want
			if !res.IsError || res.Error.Message != msg || firstText(res) != "Error: "+msg {
				t.Errorf("result = %s\nwant message %q", resultJSON(t, res), msg)
			}
			if res.Error.Info == nil || *res.Error.Info != (tool.Info{Name: "ToolOutputError", Code: "INVALID_TOOL_OUTPUT"}) {
				t.Errorf("info = %+v", res.Error.Info)
			}
			if posts.get("error") != 1 {
				t.Errorf("post-execute saw %d failures, want 1 (post-result)", posts.get("error"))
			}
		})
	}
	t.Run("typed output whose encoding fails", func(t *testing.T) {
		reg := newReg(t)
		def, err := tool.New("typed", "d",
			func(context.Context, *tool.Call, struct{}) (failingMarshaler, error) { return failingMarshaler{}, nil },
			tool.OutputSchema(&jsonv.Object{}))
		if err != nil {
			t.Fatal(err)
		}
		register(t, reg, def)
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "typed", Args: &jsonv.Object{}})
		if !res.IsError || !strings.HasPrefix(res.Error.Message, `tool "typed" returned invalid output: value snapshot failed: `) ||
			!contains(res.Error.Message, "marshaler exploded") || res.Error.Info.Code != tool.CodeInvalidToolOutput {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
}

func TestPostDecisions(t *testing.T) {
	projected := func() *tool.Definition {
		return &tool.Definition{
			Name:       "projected",
			Parameters: &jsonv.Object{},
			Output: tool.Output{
				Schema: js(t, `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
				Render: func(_, v any) ([]content.Block, error) {
					s, _ := v.(*jsonv.Object).Get("text")
					return content.Texts("render:" + s.(string)), nil
				},
				PresentationMeta: func(_, v any) (any, error) {
					s, _ := v.(*jsonv.Object).Get("text")
					return map[string]any{"projected": s}, nil
				},
			},
			Execute: func(context.Context, *tool.Call) (any, error) { return map[string]any{"text": "body"}, nil },
		}
	}
	post := func(reg *tool.Registry, d tool.PostDecision) {
		reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			return d, nil
		})
	}
	exec := func(reg *tool.Registry, name string) *tool.Result {
		return reg.Execute(context.Background(), tool.Input{CallID: "c", Name: name, Args: &jsonv.Object{}})
	}
	t.Run("content replacement keeps value and meta", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, projected())
		post(reg, tool.PostDecision{ReplaceContent: true, Content: content.Texts("policy content")})
		wantJSON(t, exec(reg, "projected"), `{"isError":false,"content":[{"type":"text","text":"policy content"}],"meta":{"projected":"body"},"value":{"text":"body"}}`)
	})
	t.Run("value replacement recomputes content and meta", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, projected())
		post(reg, tool.PostDecision{ReplaceValue: true, Value: map[string]any{"text": "policy value"}, AdditionalContexts: []content.Message{msg("test", "value context")}})
		wantJSON(t, exec(reg, "projected"), `{"isError":false,"content":[{"type":"text","text":"render:policy value"}],"meta":{"projected":"policy value"},"additionalContexts":[{"id":"m-test","role":"user","content":[{"type":"text","text":"value context"}],"source":{"kind":"plugin","plugin":"test"}}],"value":{"text":"policy value"}}`)
	})
	t.Run("value replacement without contexts", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		post(reg, tool.PostDecision{ReplaceValue: true, Value: "replacement"})
		wantJSON(t, callEcho(reg, `{}`), `{"isError":false,"content":[{"type":"text","text":"replacement"}],"value":"replacement"}`)
	})
	t.Run("both replacements", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		post(reg, tool.PostDecision{ReplaceValue: true, Value: "r", ReplaceContent: true, Content: content.Texts("also"), AdditionalContexts: []content.Message{msg("p", "x")}})
		wantJSON(t, callEcho(reg, `{}`), `{"isError":true,"error":{"message":"tools/post-execute accept decision cannot replace both value and content"},"content":[{"type":"text","text":"Error: tools/post-execute accept decision cannot replace both value and content"}]}`)
	})
	t.Run("invalid replacement value", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		post(reg, tool.PostDecision{ReplaceValue: true, Value: 1.0, AdditionalContexts: []content.Message{msg("p", "x")}})
		wantJSON(t, callEcho(reg, `{}`), `{"isError":true,"error":{"message":"tool \"echo\" returned invalid output: \"value\" must be a string","info":{"name":"ToolOutputError","code":"INVALID_TOOL_OUTPUT"}},"content":[{"type":"text","text":"Error: tool \"echo\" returned invalid output: \"value\" must be a string"}]}`)
	})
	t.Run("value replacement of a failure", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, bodyTool("boom", func(context.Context, *tool.Call) (any, error) { return nil, errors.New("body failed") }))
		post(reg, tool.PostDecision{ReplaceValue: true, Value: "replacement"})
		wantJSON(t, exec(reg, "boom"), `{"isError":true,"error":{"message":"tools/post-execute cannot replace the value of a failed result"},"content":[{"type":"text","text":"Error: tools/post-execute cannot replace the value of a failed result"}]}`)
	})
	t.Run("value replacement after the tool disappeared", func(t *testing.T) {
		reg := newReg(t)
		undo := register(t, reg, echoTool())
		reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			undo()
			return tool.PostDecision{ReplaceValue: true, Value: "replacement"}, nil
		})
		wantJSON(t, callEcho(reg, `{}`), `{"isError":true,"error":{"message":"unknown tool \"echo\"","info":{"name":"ToolNotFoundError","code":"UNKNOWN_TOOL"}},"content":[{"type":"text","text":"Error: unknown tool \"echo\""}]}`)
	})
	t.Run("block", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		post(reg, tool.BlockWith(content.Texts("blocked by policy")))
		wantJSON(t, callEcho(reg, `{"text":"secret"}`), `{"isError":true,"error":{"message":"blocked by policy"},"content":[{"type":"text","text":"blocked by policy"}]}`)
	})
	t.Run("accept with contexts", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		post(reg, tool.Accept(msg("test", "fyi")))
		res := callEcho(reg, `{"text":"hi"}`)
		if res.IsError || !slices.Equal(plugins(res), []string{"test"}) || firstText(res) != "hi" {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
	t.Run("non-lossless block feedback", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		post(reg, tool.BlockWith([]content.Block{content.Text("blocked \xff")}, msg("p", "lost")))
		wantJSON(t, callEcho(reg, `{}`), `{"isError":true,"error":{"message":"tool result must be losslessly JSON-serializable"},"content":[{"type":"text","text":"Error: tool result must be losslessly JSON-serializable"}]}`)
	})
	t.Run("listener failures", func(t *testing.T) {
		for name, f := range map[string]func() (tool.PostDecision, error){
			`{"isError":true,"error":{"message":"post hook broke"},"content":[{"type":"text","text":"Error: post hook broke"}]}`:                                                                                                                                                func() (tool.PostDecision, error) { return tool.PostDecision{}, errors.New("post hook broke") },
			`{"isError":true,"error":{"message":"tool \"echo\": a post-execute hook panicked: post hook broke","info":{"name":"ToolPanicError","code":"TOOL_PANIC"}},"content":[{"type":"text","text":"Error: tool \"echo\": a post-execute hook panicked: post hook broke"}]}`: func() (tool.PostDecision, error) { panic("post hook broke") },
		} {
			reg := newReg(t)
			register(t, reg, echoTool())
			reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				return f()
			})
			wantJSON(t, callEcho(reg, `{"text":"hi"}`), name)
		}
		reg := newReg(t)
		register(t, reg, echoTool())
		reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			return tool.PostDecision{}, tool.NewError("HarnessError", "POST_FAILURE", "post-policy failed")
		})
		wantJSON(t, callEcho(reg, `{}`), `{"isError":true,"error":{"message":"post-policy failed","info":{"name":"HarnessError","code":"POST_FAILURE"}},"content":[{"type":"text","text":"Error: post-policy failed"}]}`)
	})
	t.Run("content replacement and contexts on a failure", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, bodyTool("boom", func(context.Context, *tool.Call) (any, error) {
			return nil, tool.NewError("E", "CODE", "body failed")
		}))
		post(reg, tool.PostDecision{ReplaceContent: true, Content: content.Texts("softened"), AdditionalContexts: []content.Message{msg("p", "x")}})
		wantJSON(t, exec(reg, "boom"), `{"isError":true,"error":{"message":"body failed","info":{"name":"E","code":"CODE"}},"content":[{"type":"text","text":"softened"}],"additionalContexts":[{"id":"m-p","role":"user","content":[{"type":"text","text":"x"}],"source":{"kind":"plugin","plugin":"p"}}]}`)
	})
	t.Run("a listener's copy is its own", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			res.Content[0].Text = "mutated"
			res.Value = "mutated"
			res.IsError = true
			return next()
		})
		reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			if res.IsError || firstText(res) != "original" {
				t.Errorf("a later listener saw an earlier listener's mutation: %s", resultJSON(t, res))
			}
			return next()
		})
		wantJSON(t, callEcho(reg, `{"text":"original"}`), `{"isError":false,"content":[{"type":"text","text":"original"}],"value":"original"}`)
	})
}

// TestBlockMessage pins the block message derivation of docs/behaviour.md §4.7.
func TestBlockMessage(t *testing.T) {
	img := content.Block{Type: content.TypeImage, Image: &content.ImageRef{AttachmentID: "a", MediaType: "image/png", Bytes: 1, Width: 1, Height: 1}}
	widget := content.Block{Type: "widget", Extra: jsonv.NewObject(jsonv.Member{Name: "x", Value: 1.0})}
	tests := []struct {
		feedback []content.Block
		want     string
	}{
		{nil, "tool result blocked by post-execute policy"},
		{[]content.Block{}, "tool result blocked by post-execute policy"},
		{content.Texts(""), "tool result blocked by post-execute policy"},
		{[]content.Block{content.Reasoning("private rationale")}, "[reasoning content]"},
		{[]content.Block{img}, "[image content]"},
		{[]content.Block{widget}, "[widget content]"},
		{[]content.Block{content.Text("a"), img, content.Text("b")}, "a\n[image content]\nb"},
		{[]content.Block{content.Text(""), content.Text("")}, "\n"},
	}
	for _, tt := range tests {
		reg := newReg(t)
		register(t, reg, echoTool())
		reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			return tool.BlockWith(tt.feedback), nil
		})
		res := callEcho(reg, `{}`)
		checkInvariants(t, res)
		if res.Error.Message != tt.want || res.Error.Info != nil || len(res.Content) != len(tt.feedback) {
			t.Errorf("feedback %+v: %s", tt.feedback, resultJSON(t, res))
		}
	}
}

// TestWrapperResults pins docs/behaviour.md §4.6 step 3 (normalization of wrapper-authored results).
func TestWrapperResults(t *testing.T) {
	wrap := func(reg *tool.Registry, f func(next func(context.Context) (*tool.Result, error)) (*tool.Result, error)) {
		reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			return f(next)
		})
	}
	t.Run("failure keeps error, content, meta and contexts", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		wrap(reg, func(func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			return &tool.Result{IsError: true, Value: "dropped", ConcludesTurn: true, Error: &tool.Failure{Message: "wrapped failure"},
				Content: content.Texts("wrapper content"), Meta: map[string]any{"wrapped": true},
				AdditionalContexts: []content.Message{msg("test", "wrapper context")}}, nil
		})
		wantJSON(t, callEcho(reg, `{}`), `{"isError":true,"error":{"message":"wrapped failure"},"content":[{"type":"text","text":"wrapper content"}],"meta":{"wrapped":true},"additionalContexts":[{"id":"m-test","role":"user","content":[{"type":"text","text":"wrapper context"}],"source":{"kind":"plugin","plugin":"test"}}]}`)
	})
	t.Run("failure without an error", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		wrap(reg, func(func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			return &tool.Result{IsError: true, Content: content.Texts("x")}, nil
		})
		wantJSON(t, callEcho(reg, `{}`), `{"isError":true,"error":{"message":"tool result must be losslessly JSON-serializable"},"content":[{"type":"text","text":"Error: tool result must be losslessly JSON-serializable"}]}`)
	})
	t.Run("short-circuit content is re-rendered", func(t *testing.T) {
		reg := newReg(t)
		var ran counter
		d := echoTool()
		d.Execute = func(context.Context, *tool.Call) (any, error) { ran.inc("body"); return "unreachable", nil }
		register(t, reg, d)
		var posts counter
		reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			posts.inc("post")
			return next()
		})
		wrap(reg, func(func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			return &tool.Result{Value: "short-circuited", Content: content.Texts("ignored authored content"), Error: &tool.Failure{Message: "dropped"},
				AdditionalContexts: []content.Message{msg("around", "from around dispatch")}}, nil
		})
		wantJSON(t, callEcho(reg, `{}`), `{"isError":false,"content":[{"type":"text","text":"short-circuited"}],"additionalContexts":[{"id":"m-around","role":"user","content":[{"type":"text","text":"from around dispatch"}],"source":{"kind":"plugin","plugin":"around"}}],"value":"short-circuited"}`)
		if ran.get("body") != 0 || posts.get("post") != 1 {
			t.Errorf("body ran %d, post ran %d", ran.get("body"), posts.get("post"))
		}
	})
	t.Run("success for a tool that disappeared is final", func(t *testing.T) {
		reg := newReg(t)
		undo := register(t, reg, echoTool())
		var posts counter
		reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			posts.inc("post")
			return next()
		})
		wrap(reg, func(func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			undo()
			return &tool.Result{Value: "replacement"}, nil
		})
		wantJSON(t, callEcho(reg, `{}`), `{"isError":true,"error":{"message":"unknown tool \"echo\"","info":{"name":"ToolNotFoundError","code":"UNKNOWN_TOOL"}},"content":[{"type":"text","text":"Error: unknown tool \"echo\""}]}`)
		if posts.get("post") != 0 {
			t.Error("a renormalization failure reached post-execute")
		}
	})
	t.Run("a cached result is revalidated for the tool it is returned for", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, strTool("string-output", "cached"))
		objRan := false
		register(t, reg, &tool.Definition{
			Name:       "object-output",
			Parameters: &jsonv.Object{},
			Output:     tool.Output{Schema: js(t, `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`), Render: renderText},
			Execute:    func(context.Context, *tool.Call) (any, error) { objRan = true; return map[string]any{"ok": true}, nil },
		})
		var cached *tool.Result
		reg.WrapExecute(func(ctx context.Context, exec *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			if exec.Name() == "string-output" {
				res, err := next(ctx)
				cached = res
				return res, err
			}
			return cached, nil
		})
		first := reg.Execute(context.Background(), tool.Input{CallID: "a", Name: "string-output", Args: &jsonv.Object{}})
		second := reg.Execute(context.Background(), tool.Input{CallID: "b", Name: "object-output", Args: &jsonv.Object{}})
		if first.IsError || first.Value != "cached" || objRan {
			t.Errorf("first = %s, body ran %v", resultJSON(t, first), objRan)
		}
		if !second.IsError || second.Error.Info.Code != tool.CodeInvalidToolOutput {
			t.Errorf("second = %s", resultJSON(t, second))
		}
	})
	t.Run("wrapper error and panic are final", func(t *testing.T) {
		for f, want := range map[*func() (*tool.Result, error)]string{
			ptr(func() (*tool.Result, error) { return nil, errors.New("wrapper broke") }): `{"isError":true,"error":{"message":"wrapper broke"},"content":[{"type":"text","text":"Error: wrapper broke"}]}`,
			ptr(func() (*tool.Result, error) { panic("wrapper broke") }):                  `{"isError":true,"error":{"message":"tool \"echo\": an around-execute wrapper panicked: wrapper broke","info":{"name":"ToolPanicError","code":"TOOL_PANIC"}},"content":[{"type":"text","text":"Error: tool \"echo\": an around-execute wrapper panicked: wrapper broke"}]}`,
		} {
			reg := newReg(t)
			register(t, reg, echoTool())
			var posts counter
			reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				posts.inc("post")
				return next()
			})
			wrap(reg, func(func(context.Context) (*tool.Result, error)) (*tool.Result, error) { return (*f)() })
			wantJSON(t, callEcho(reg, `{"text":"hi"}`), want)
			if posts.get("post") != 0 {
				t.Error("a wrapper failure reached post-execute")
			}
		}
		reg := newReg(t)
		register(t, reg, echoTool())
		wrap(reg, func(func(context.Context) (*tool.Result, error)) (*tool.Result, error) { return nil, nil })
		wantJSON(t, callEcho(reg, `{}`), `{"isError":true,"error":{"message":"tool \"echo\": tools/execute wrapper returned no result"},"content":[{"type":"text","text":"Error: tool \"echo\": tools/execute wrapper returned no result"}]}`)
	})
	t.Run("body errors arrive normalized", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, bodyTool("boom", func(context.Context, *tool.Call) (any, error) {
			return nil, tool.NewError("HarnessError", "BOOM", "kaboom")
		}))
		var seen *tool.Result
		reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			res, err := next(ctx)
			seen = res
			return res, err
		})
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "boom", Args: &jsonv.Object{}})
		const want = `{"isError":true,"error":{"message":"kaboom","info":{"name":"HarnessError","code":"BOOM"}},"content":[{"type":"text","text":"Error: kaboom"}]}`
		wantJSON(t, seen, want)
		wantJSON(t, res, want)
	})
	t.Run("mutating the handed result changes nothing", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		wrap(reg, func(next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			res, err := next(nil)
			res.Value = "around mutation"
			res.Content[0].Text = "around mutation"
			res.AdditionalContexts = append(res.AdditionalContexts, msg("sneaky", "x"))
			return res, err
		})
		reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			res.Value = "post mutation"
			return next()
		})
		wantJSON(t, callEcho(reg, `{"text":"original"}`), `{"isError":false,"content":[{"type":"text","text":"original"}],"value":"original"}`)
	})
	t.Run("a new result built from the handed one is renormalized", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		wrap(reg, func(next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			res, err := next(nil)
			out := *res
			out.AdditionalContexts = append(out.AdditionalContexts, msg("wrapper", "x"))
			return &out, err
		})
		res := callEcho(reg, `{"text":"v"}`)
		if res.IsError || res.Value != "v" || !slices.Equal(plugins(res), []string{"wrapper"}) {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
	t.Run("concurrent attempts", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, bodyTool("hedged", func(_ context.Context, call *tool.Call) (any, error) {
			call.DeferContext(msg("attempt", "a"))
			return "ok", nil
		}))
		wrap(reg, func(next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			type out struct {
				res *tool.Result
				err error
			}
			ch := make(chan out, 2)
			for range 2 {
				go func() { r, err := next(nil); ch <- out{r, err} }()
			}
			first := <-ch
			// The other attempt is awaited by the registry if it started before the chain
			// returned, and refused otherwise.
			return first.res, first.err
		})
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "hedged", Args: &jsonv.Object{}})
		if n := len(res.AdditionalContexts); res.IsError || res.Value != "ok" || n < 1 || n > 2 {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
	t.Run("retry returns the last attempt", func(t *testing.T) {
		reg := newReg(t)
		attempts := 0
		register(t, reg, bodyTool("flaky", func(context.Context, *tool.Call) (any, error) {
			attempts++
			if attempts == 1 {
				return nil, errors.New("transient")
			}
			return "ok", nil
		}))
		wrap(reg, func(next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			res, err := next(nil)
			if err == nil && res.IsError {
				res, err = next(nil)
			}
			return res, err
		})
		wantJSON(t, reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "flaky", Args: &jsonv.Object{}}),
			`{"isError":false,"content":[{"type":"text","text":"ok"}],"value":"ok"}`)
	})
}

// TestBodyFailures pins docs/behaviour.md §5.2 and §5.3 for bodies.
func TestBodyFailures(t *testing.T) {
	var typedNil *tool.Error
	tests := []struct {
		name string
		body func() (any, error)
		want string
	}{
		{"plain error", func() (any, error) { return nil, errors.New("just a message") },
			`{"isError":true,"error":{"message":"just a message"},"content":[{"type":"text","text":"Error: just a message"}]}`},
		{"coded error", func() (any, error) { return nil, tool.NewError("HarnessError", "ENOSPC", "disk full") },
			`{"isError":true,"error":{"message":"disk full","info":{"name":"HarnessError","code":"ENOSPC"}},"content":[{"type":"text","text":"Error: disk full"}]}`},
		{"wrapped coded error", func() (any, error) {
			return nil, fmt.Errorf("writing: %w", tool.NewError("FsError", "FS_IO_ERROR", "io"))
		}, `{"isError":true,"error":{"message":"writing: io","info":{"name":"FsError","code":"FS_IO_ERROR"}},"content":[{"type":"text","text":"Error: writing: io"}]}`},
		{"unnamed coded error", func() (any, error) { return nil, &tool.Error{Code: "X", Message: "m"} },
			`{"isError":true,"error":{"message":"m","info":{"name":"Error","code":"X"}},"content":[{"type":"text","text":"Error: m"}]}`},
		{"code-less tool.Error", func() (any, error) { return nil, &tool.Error{Name: "N", Message: "m"} },
			`{"isError":true,"error":{"message":"m"},"content":[{"type":"text","text":"Error: m"}]}`},
		{"schema error", func() (any, error) { _, err := schema.Compile(js(nil, `{"anyOf":[]}`)); return nil, err },
			`{"isError":true,"error":{"message":"unsupported JSON schema: schema.anyOf is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)","info":{"name":"JsonSchemaError","code":"UNSUPPORTED_SCHEMA"}},"content":[{"type":"text","text":"Error: unsupported JSON schema: schema.anyOf is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)"}]}`},
		{"panic string", func() (any, error) { panic("kaboom") }, `{"isError":true,"error":{"message":"tool \"t\": the body panicked: kaboom","info":{"name":"ToolPanicError","code":"TOOL_PANIC"}},"content":[{"type":"text","text":"Error: tool \"t\": the body panicked: kaboom"}]}`},
		// A panic is a bug, never a way to return a domain code: a coded panic value is TOOL_PANIC too.
		{"panic coded error", func() (any, error) { panic(tool.NewError("HarnessError", "BOOM", "kaboom")) }, `{"isError":true,"error":{"message":"tool \"t\": the body panicked: kaboom","info":{"name":"ToolPanicError","code":"TOOL_PANIC"}},"content":[{"type":"text","text":"Error: tool \"t\": the body panicked: kaboom"}]}`},
		{"panic unprintable", func() (any, error) { panic(hostile{}) }, `{"isError":true,"error":{"message":"tool \"t\": the body panicked: <unprintable thrown value>","info":{"name":"ToolPanicError","code":"TOOL_PANIC"}},"content":[{"type":"text","text":"Error: tool \"t\": the body panicked: <unprintable thrown value>"}]}`},
		{"panic struct", func() (any, error) { panic(struct{ Code int }{500}) }, `{"isError":true,"error":{"message":"tool \"t\": the body panicked: {500}","info":{"name":"ToolPanicError","code":"TOOL_PANIC"}},"content":[{"type":"text","text":"Error: tool \"t\": the body panicked: {500}"}]}`},
		{"Goexit", func() (any, error) { runtime.Goexit(); return nil, nil },
			`{"isError":true,"error":{"message":"tool \"t\": the body called runtime.Goexit","info":{"name":"ToolPanicError","code":"TOOL_PANIC"}},"content":[{"type":"text","text":"Error: tool \"t\": the body called runtime.Goexit"}]}`},
		{"typed nil error", func() (any, error) { return nil, typedNil },
			`{"isError":true,"error":{"message":"<unprintable thrown value>"},"content":[{"type":"text","text":"Error: <unprintable thrown value>"}]}`},
		{"error wins over a value", func() (any, error) { return "value", errors.New("failed anyway") },
			`{"isError":true,"error":{"message":"failed anyway"},"content":[{"type":"text","text":"Error: failed anyway"}]}`},
		{"invalid UTF-8 message", func() (any, error) { return nil, errors.New("bad \xff") },
			`{"isError":true,"error":{"message":"tool result must be losslessly JSON-serializable"},"content":[{"type":"text","text":"Error: tool result must be losslessly JSON-serializable"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := newReg(t)
			register(t, reg, bodyTool("t", func(context.Context, *tool.Call) (any, error) { return tt.body() }))
			res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}})
			checkInvariants(t, res)
			wantJSON(t, res, tt.want)
		})
	}
	t.Run("no body", func(t *testing.T) {
		reg := newReg(t)
		d := strTool("t", "")
		d.Execute = nil
		register(t, reg, d)
		wantJSON(t, reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}}),
			`{"isError":true,"error":{"message":"tool \"t\" has no body"},"content":[{"type":"text","text":"Error: tool \"t\" has no body"}]}`)
	})
}

// hostile is a panic value whose formatting panics.
type hostile struct{}

func (hostile) String() string { panic("coercion trap") }

// TestPreExecute pins docs/behaviour.md §4.5 and §7.
func TestPreExecute(t *testing.T) {
	pre := func(reg *tool.Registry, d tool.PreDecision) {
		reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			return d, nil
		})
	}
	t.Run("deny reaches post-execute, skips the wrappers", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		pre(reg, tool.Deny("denied by policy"))
		var seen counter
		reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			seen.inc("wrapper")
			return next(ctx)
		})
		reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			seen.inc("post")
			return next()
		})
		wantJSON(t, callEcho(reg, `{"text":"hi"}`), `{"isError":true,"error":{"message":"denied by policy"},"content":[{"type":"text","text":"Error: denied by policy"}]}`)
		if seen.get("wrapper") != 0 || seen.get("post") != 1 {
			t.Errorf("seen = %v", seen.m)
		}
	})
	t.Run("ask without an approver", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		pre(reg, tool.Ask("needs approval"))
		wantJSON(t, callEcho(reg, `{}`), `{"isError":true,"error":{"message":"needs approval"},"content":[{"type":"text","text":"Error: needs approval"}]}`)
		reg2 := newReg(t)
		register(t, reg2, echoTool())
		pre(reg2, tool.Ask(""))
		wantJSON(t, callEcho(reg2, `{}`), `{"isError":true,"error":{"message":"tool \"echo\" requires approval (not yet supported)"},"content":[{"type":"text","text":"Error: tool \"echo\" requires approval (not yet supported)"}]}`)
	})
	t.Run("approval outcomes", func(t *testing.T) {
		tests := []struct {
			outcome tool.ApprovalOutcome
			err     error
			want    string
			posts   int
		}{
			{tool.ApprovalAllowedOnce, nil, "hi", 1},
			{tool.ApprovalRejected, nil, `Error: the user rejected tool "echo"`, 1},
			{tool.ApprovalCancelled, nil, `Error: approval for tool "echo" was cancelled`, 1},
			{tool.ApprovalUnavailable, nil, `Error: tool "echo" requires approval, but no approval channel is available`, 1},
			{"yolo", nil, `Error: approval service returned unknown outcome "yolo" for tool "echo"`, 0},
			{"", errors.New("approval broke"), "Error: approval broke", 0},
		}
		for _, tt := range tests {
			reg := newReg(t)
			register(t, reg, echoTool())
			pre(reg, tool.Ask("hook wants a human"))
			var posts counter
			reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				posts.inc("post")
				return next()
			})
			agent := reg.NewScope("agent", nil)
			var reqs []tool.ApprovalRequest
			reg.SetApprover(tool.ApproverFunc(func(ctx context.Context, req tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
				reqs = append(reqs, req)
				return tt.outcome, tt.err
			}))
			res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: js(t, `{"text":"hi"}`), Agent: agent})
			checkInvariants(t, res)
			if firstText(res) != tt.want || posts.get("post") != tt.posts {
				t.Errorf("outcome %q: %s, posts %d", tt.outcome, resultJSON(t, res), posts.get("post"))
			}
			if res.IsError && res.Error.Info != nil {
				t.Errorf("outcome %q: a denial carries info", tt.outcome)
			}
			if len(reqs) != 1 || reqs[0].Agent != agent || reqs[0].ToolName != "echo" || reqs[0].CallID != "c1" ||
				reqs[0].Reason != "hook wants a human" || reqs[0].Exec == nil || reqs[0].Exec.CallID() != "c1" {
				t.Errorf("requests = %+v", reqs)
			}
		}
	})
	t.Run("an agent-less call is denied without asking", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		pre(reg, tool.Ask(""))
		asked := false
		remove := reg.SetApprover(tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
			asked = true
			return tool.ApprovalAllowedOnce, nil
		}))
		wantJSON(t, callEcho(reg, `{}`), `{"isError":true,"error":{"message":"tool \"echo\" requires approval, but the call has no agent to route it through"},"content":[{"type":"text","text":"Error: tool \"echo\" requires approval, but the call has no agent to route it through"}]}`)
		if asked {
			t.Error("the approver was consulted")
		}
		remove()
		if got := firstText(callEcho(reg, `{}`)); got != `Error: tool "echo" requires approval (not yet supported)` {
			t.Errorf("after removing the approver: %q", got)
		}
	})
	t.Run("a call for an agent scope reaches the approver, one for the global scope does not", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		pre(reg, tool.Ask(""))
		var asked []*tool.Scope
		reg.SetApprover(tool.ApproverFunc(func(_ context.Context, req tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
			asked = append(asked, req.Agent)
			return tool.ApprovalAllowedOnce, nil
		}))
		agent := reg.NewScope("a", nil)
		defer agent.Close()
		if res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: tool.ParseArguments(`{}`), Agent: agent}); res.IsError {
			t.Errorf("an agent's call: %s", resultJSON(t, res))
		}
		res := reg.Execute(context.Background(), tool.Input{CallID: "c2", Name: "echo", Args: tool.ParseArguments(`{}`), Agent: reg.Global()})
		if got := firstText(res); got != `Error: tool "echo" requires approval, but the call has no agent to route it through` {
			t.Errorf("a global-scope call: %q", got)
		}
		if len(asked) != 1 || asked[0] != agent {
			t.Errorf("the approver was asked for %v, want only the agent", asked)
		}
	})
	t.Run("allowed-once still meets the guards", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, echoTool())
		pre(reg, tool.Ask(""))
		reg.SetApprover(tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
			return tool.ApprovalAllowedOnce, nil
		}))
		reg.Guard(func(*tool.Execution) string { return "guarded" })
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "echo", Args: &jsonv.Object{}, Agent: reg.NewScope("a", nil)})
		if firstText(res) != "Error: guarded" {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
	t.Run("failures are final", func(t *testing.T) {
		tests := []struct {
			name string
			hook func() (tool.PreDecision, error)
			want string
		}{
			{"error", func() (tool.PreDecision, error) { return tool.PreDecision{}, errors.New("permission hook broke") },
				`{"isError":true,"error":{"message":"permission hook broke"},"content":[{"type":"text","text":"Error: permission hook broke"}]}`},
			{"coded", func() (tool.PreDecision, error) {
				return tool.PreDecision{}, tool.NewError("HarnessError", "DENIED", "denied")
			},
				`{"isError":true,"error":{"message":"denied","info":{"name":"HarnessError","code":"DENIED"}},"content":[{"type":"text","text":"Error: denied"}]}`},
			{"panic", func() (tool.PreDecision, error) { panic("permission hook broke") }, `{"isError":true,"error":{"message":"tool \"echo\": a pre-execute hook panicked: permission hook broke","info":{"name":"ToolPanicError","code":"TOOL_PANIC"}},"content":[{"type":"text","text":"Error: tool \"echo\": a pre-execute hook panicked: permission hook broke"}]}`},
			{"unknown kind", func() (tool.PreDecision, error) { return tool.PreDecision{Kind: 42}, nil },
				`{"isError":true,"error":{"message":"tools/pre-execute returned unknown decision kind 42"},"content":[{"type":"text","text":"Error: tools/pre-execute returned unknown decision kind 42"}]}`},
		}
		for _, tt := range tests {
			reg := newReg(t)
			register(t, reg, echoTool())
			reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
				return tt.hook()
			})
			var posts counter
			reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				posts.inc("post")
				return next()
			})
			res := callEcho(reg, `{"text":"hi"}`)
			wantJSON(t, res, tt.want)
			if posts.get("post") != 0 {
				t.Errorf("%s: a pre-execute failure reached post-execute", tt.name)
			}
		}
		reg := newReg(t)
		register(t, reg, echoTool())
		reg.Guard(func(*tool.Execution) string { panic("guard exploded") })
		wantJSON(t, callEcho(reg, `{}`), `{"isError":true,"error":{"message":"tool \"echo\": a guard panicked: guard exploded","info":{"name":"ToolPanicError","code":"TOOL_PANIC"}},"content":[{"type":"text","text":"Error: tool \"echo\": a guard panicked: guard exploded"}]}`)
	})
	t.Run("an unknown tool meets policy and post-execute", func(t *testing.T) {
		reg := newReg(t)
		var seen counter
		reg.OnPreExecute(func(_ context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			seen.inc("pre:" + exec.Name())
			return next()
		})
		reg.Guard(func(exec *tool.Execution) string { seen.inc("guard:" + exec.Name()); return "" })
		reg.OnPostExecute(func(_ context.Context, exec *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			seen.inc("post:" + res.Error.Info.Code)
			return next()
		})
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "nope", Args: &jsonv.Object{}})
		wantJSON(t, res, `{"isError":true,"error":{"message":"unknown tool \"nope\"","info":{"name":"ToolNotFoundError","code":"UNKNOWN_TOOL"}},"content":[{"type":"text","text":"Error: unknown tool \"nope\""}]}`)
		if seen.get("pre:nope") != 1 || seen.get("guard:nope") != 1 || seen.get("post:UNKNOWN_TOOL") != 1 {
			t.Errorf("seen = %v", seen.m)
		}
	})
}

// TestFinalizeContent pins docs/behaviour.md §4.8 step 2 and §4.1 step 3.
func TestFinalizeContent(t *testing.T) {
	t.Run("runs once per path", func(t *testing.T) {
		paths := []struct {
			name  string
			setup func(reg *tool.Registry)
			ctx   func() context.Context
			args  any
		}{
			{"success", nil, nil, nil},
			{"denied", func(reg *tool.Registry) {
				reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
					return tool.Deny("no"), nil
				})
			}, nil, nil},
			{"pre-execute failure", func(reg *tool.Registry) {
				reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
					return tool.PreDecision{}, errors.New("broke")
				})
			}, nil, nil},
			{"wrapper failure", func(reg *tool.Registry) {
				reg.WrapExecute(func(context.Context, *tool.Execution, func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
					return nil, errors.New("broke")
				})
			}, nil, nil},
			{"post failure", func(reg *tool.Registry) {
				reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
					return tool.PostDecision{}, errors.New("broke")
				})
			}, nil, nil},
			{"pre-aborted", nil, func() context.Context { ctx, cancel := context.WithCancel(context.Background()); cancel(); return ctx }, nil},
			{"args not lossless", nil, nil, map[string]any{"f": func() {}}},
		}
		for _, p := range paths {
			reg := newReg(t)
			var calls counter
			d := echoTool()
			d.FinalizeContent = func(exec *tool.Execution, res *tool.Result) ([]content.Block, error) {
				calls.inc("fin")
				return content.Texts("finalized:" + firstText(res)), nil
			}
			register(t, reg, d)
			if p.setup != nil {
				p.setup(reg)
			}
			ctx := context.Background()
			if p.ctx != nil {
				ctx = p.ctx()
			}
			args := p.args
			if args == nil {
				args = js(t, `{"text":"hi"}`)
			}
			var observed string
			reg.OnResult(func(_ context.Context, _ *tool.Execution, res *tool.Result) error {
				observed = firstText(res)
				return nil
			})
			res := reg.Execute(ctx, tool.Input{CallID: "c", Name: "echo", Args: args})
			checkInvariants(t, res)
			if calls.get("fin") != 1 || !strings.HasPrefix(firstText(res), "finalized:") || observed != firstText(res) {
				t.Errorf("%s: finalizer calls %d, result %s, observed %q", p.name, calls.get("fin"), resultJSON(t, res), observed)
			}
		}
	})
	t.Run("nil keeps the content", func(t *testing.T) {
		reg := newReg(t)
		d := echoTool()
		d.FinalizeContent = func(*tool.Execution, *tool.Result) ([]content.Block, error) { return nil, nil }
		register(t, reg, d)
		wantJSON(t, callEcho(reg, `{}`), `{"isError":false,"content":[{"type":"text","text":""}],"value":""}`)
	})
	t.Run("empty replaces the content", func(t *testing.T) {
		reg := newReg(t)
		d := echoTool()
		d.FinalizeContent = func(*tool.Execution, *tool.Result) ([]content.Block, error) { return []content.Block{}, nil }
		register(t, reg, d)
		wantJSON(t, callEcho(reg, `{"text":"x"}`), `{"isError":false,"content":[],"value":"x"}`)
	})
	t.Run("failures", func(t *testing.T) {
		for name, tc := range map[string]struct {
			fin  func(*tool.Execution, *tool.Result) ([]content.Block, error)
			want string
		}{
			"error": {func(*tool.Execution, *tool.Result) ([]content.Block, error) {
				return nil, errors.New("finalizer violated its total contract")
			}, `{"isError":true,"error":{"message":"finalizer violated its total contract"},"content":[{"type":"text","text":"Error: finalizer violated its total contract"}]}`},
			"panic": {func(*tool.Execution, *tool.Result) ([]content.Block, error) {
				panic("finalizer violated its total contract")
			}, `{"isError":true,"error":{"message":"tool \"echo\": finalize-content panicked: finalizer violated its total contract","info":{"name":"ToolPanicError","code":"TOOL_PANIC"}},"content":[{"type":"text","text":"Error: tool \"echo\": finalize-content panicked: finalizer violated its total contract"}]}`},
			"lossy": {func(*tool.Execution, *tool.Result) ([]content.Block, error) {
				return content.Texts("\xff"), nil
			}, `{"isError":true,"error":{"message":"tool result must be losslessly JSON-serializable"},"content":[{"type":"text","text":"Error: tool result must be losslessly JSON-serializable"}]}`},
			"coded": {func(*tool.Execution, *tool.Result) ([]content.Block, error) {
				return nil, tool.NewError("E", "FIN", "fin")
			}, `{"isError":true,"error":{"message":"fin","info":{"name":"E","code":"FIN"}},"content":[{"type":"text","text":"Error: fin"}]}`},
		} {
			reg := newReg(t)
			var calls counter
			d := echoTool()
			d.FinalizeContent = func(e *tool.Execution, r *tool.Result) ([]content.Block, error) {
				calls.inc("fin")
				return tc.fin(e, r)
			}
			register(t, reg, d)
			res := callEcho(reg, `{}`)
			wantJSON(t, res, tc.want)
			if calls.get("fin") != 1 {
				t.Errorf("%s: finalizer ran %d times", name, calls.get("fin"))
			}
		}
	})
	t.Run("sees materialized failures of meta projection", func(t *testing.T) {
		reg := newReg(t)
		d := echoTool()
		d.Output.PresentationMeta = func(any, any) (any, error) { return nil, errors.New(strings.Repeat("snapshot failed: ", 100)) }
		calls := 0
		d.FinalizeContent = func(_ *tool.Execution, res *tool.Result) ([]content.Block, error) {
			calls++
			return content.Texts(firstText(res)[:32]), nil
		}
		register(t, reg, d)
		res := callEcho(reg, `{}`)
		if !res.IsError || firstText(res) != `Error: tool "echo" returned inva` || calls != 1 {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
	t.Run("captured when the call starts", func(t *testing.T) {
		reg := newReg(t)
		d := echoTool()
		d.FinalizeContent = func(*tool.Execution, *tool.Result) ([]content.Block, error) {
			return content.Texts("bounded failure"), nil
		}
		undo := register(t, reg, d)
		reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			undo()
			d2 := echoTool()
			d2.FinalizeContent = func(*tool.Execution, *tool.Result) ([]content.Block, error) {
				return content.Texts("replacement finalizer"), nil
			}
			register(t, reg, d2)
			return tool.PreDecision{}, tool.NewError("HarnessError", "POLICY_FAILED", "policy failed")
		})
		wantJSON(t, callEcho(reg, `{}`), `{"isError":true,"error":{"message":"policy failed","info":{"name":"HarnessError","code":"POLICY_FAILED"}},"content":[{"type":"text","text":"bounded failure"}]}`)
	})
	t.Run("dropped for a live collapsed call, kept for an aborted one", func(t *testing.T) {
		reg := newReg(t, tool.Config{Mode: tool.ModeCode})
		calls := 0
		d := echoTool()
		d.FinalizeContent = func(*tool.Execution, *tool.Result) ([]content.Block, error) { calls++; return nil, nil }
		register(t, reg, d)
		callEcho(reg, `{}`)
		if calls != 0 {
			t.Error("the finalizer of a collapsed call ran")
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res := reg.Execute(ctx, tool.Input{CallID: "c", Name: "echo", Args: &jsonv.Object{}})
		if calls != 1 || res.Error.Info.Code != tool.CodeAbortedBeforeDispatch {
			t.Errorf("aborted collapsed call: calls %d, %s", calls, resultJSON(t, res))
		}
		// A collapsed call with lossy arguments: the collapse decides, so no finalizer.
		reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "echo", Args: map[string]any{"f": func() {}}})
		if calls != 1 {
			t.Error("the finalizer of a live collapsed call with lossy arguments ran")
		}
	})
}

// TestResultListeners pins docs/behaviour.md §4.8 steps 3 and 4.
func TestResultListeners(t *testing.T) {
	logs := &logCapture{}
	reg := newReg(t, tool.Config{Logger: slog.New(logs)})
	register(t, reg, strTool("t", "ok"))
	a := reg.NewScope("a", nil)
	var seen []string
	a.OnResult(func(_ context.Context, exec *tool.Execution, res *tool.Result) error {
		seen = append(seen, "scoped:"+firstText(res))
		res.Content[0].Text = "mutated"
		res.Value = "mutated"
		res.IsError = true
		return nil
	})
	reg.OnResult(func(context.Context, *tool.Execution, *tool.Result) error { panic(hostile{}) })
	reg.OnResult(func(context.Context, *tool.Execution, *tool.Result) error { return errors.New("observer failure") })
	reg.OnResult(func(context.Context, *tool.Execution, *tool.Result) error { panic(errors.New("panicking observer")) })
	reg.OnResult(func(_ context.Context, _ *tool.Execution, res *tool.Result) error {
		seen = append(seen, "global:"+firstText(res))
		return nil
	})
	res := reg.Execute(context.Background(), tool.Input{CallID: "final", Name: "t", Args: &jsonv.Object{}, Agent: a})
	wantJSON(t, res, `{"isError":false,"content":[{"type":"text","text":"ok"}],"value":"ok"}`)
	if !slices.Equal(seen, []string{"scoped:ok", "global:ok"}) {
		t.Errorf("seen = %v", seen)
	}
	want := []string{
		`WARN tool "t" (final): tools/result observer failed: <unprintable thrown value>`,
		`WARN tool "t" (final): tools/result observer failed: observer failure`,
		`WARN tool "t" (final): tools/result observer failed: panicking observer`,
	}
	if got := logs.messages(); !slices.Equal(got, want) {
		t.Errorf("logs = %q", got)
	}
}

// TestContextOrder pins docs/behaviour.md §4.10.
func TestContextOrder(t *testing.T) {
	newComposite := func(fail bool) *tool.Definition {
		return bodyTool("composite", func(_ context.Context, call *tool.Call) (any, error) {
			call.DeferContext(msg("nested-1", "a"))
			call.DeferContext(msg("nested-2", "b"))
			if fail {
				return nil, errors.New("outer failure")
			}
			return "done", nil
		})
	}
	exec := func(reg *tool.Registry) *tool.Result {
		return reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "composite", Args: &jsonv.Object{}})
	}
	t.Run("deferred, wrapper, post", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, newComposite(false))
		reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			res, err := next(ctx)
			out := *res
			out.AdditionalContexts = append(slices.Clone(res.AdditionalContexts), msg("wrapper", "w"))
			return &out, err
		})
		reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			d, err := next()
			d.AdditionalContexts = append([]content.Message{msg("post", "p")}, d.AdditionalContexts...)
			return d, err
		})
		reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			return tool.Accept(msg("post-inner", "q")), nil
		})
		if got := plugins(exec(reg)); !slices.Equal(got, []string{"nested-1", "nested-2", "wrapper", "post", "post-inner"}) {
			t.Errorf("contexts = %v", got)
		}
	})
	t.Run("a failing body keeps its deferred contexts; a block drops them", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, newComposite(true))
		failed := exec(reg)
		if !failed.IsError || !slices.Equal(plugins(failed), []string{"nested-1", "nested-2"}) {
			t.Errorf("failed = %s", resultJSON(t, failed))
		}
		reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			return tool.BlockWith(content.Texts("blocked"), msg("blocker", "x")), nil
		})
		if got := plugins(exec(reg)); !slices.Equal(got, []string{"blocker"}) {
			t.Errorf("blocked contexts = %v", got)
		}
	})
}

// TestConcludesTurn pins docs/behaviour.md §4.11.
func TestConcludesTurn(t *testing.T) {
	concluding := func(fail bool) *tool.Definition {
		return bodyTool("terminal", func(_ context.Context, call *tool.Call) (any, error) {
			call.ConcludeTurn()
			if fail {
				return nil, errors.New("failed")
			}
			return "terminal", nil
		})
	}
	exec := func(reg *tool.Registry) *tool.Result {
		return reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "terminal", Args: &jsonv.Object{}})
	}
	reg := newReg(t)
	register(t, reg, concluding(false))
	wantJSON(t, exec(reg), `{"isError":false,"content":[{"type":"text","text":"terminal"}],"concludesTurn":true,"value":"terminal"}`)

	reg = newReg(t)
	register(t, reg, concluding(true))
	if res := exec(reg); res.ConcludesTurn || contains(resultJSON(t, res), "concludesTurn") {
		t.Error("a failure concludes the turn")
	}

	for name, d := range map[string]tool.PostDecision{
		"block":         tool.BlockWith(content.Texts("no")),
		"content":       {ReplaceContent: true, Content: content.Texts("c")},
		"value":         {ReplaceValue: true, Value: "v"},
		"invalid value": {ReplaceValue: true, Value: func() {}},
	} {
		reg := newReg(t)
		register(t, reg, concluding(false))
		reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			return d, nil
		})
		res := exec(reg)
		checkInvariants(t, res)
		if res.ConcludesTurn != !res.IsError {
			t.Errorf("%s: %s", name, resultJSON(t, res))
		}
	}

	// A composite forwards a nested success's marker; a nested failure has none to forward.
	reg = newReg(t)
	register(t, reg, concluding(false))
	register(t, reg, bodyTool("composite", func(ctx context.Context, call *tool.Call) (any, error) {
		nested := reg.Execute(ctx, tool.Input{CallID: call.CallID() + ":n", Name: "terminal", Args: &jsonv.Object{}, Parent: call.Token()})
		if nested.ConcludesTurn {
			call.ConcludeTurn()
		}
		if nested.IsError {
			return "nested failed, composite recovered", nil
		}
		return "nested succeeded", nil
	}))
	veto := reg.OnPostExecute(func(_ context.Context, exec *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		if exec.Name() != "terminal" {
			return next()
		}
		return tool.BlockWith(content.Texts("nested success rejected")), nil
	})
	rec := reg.Execute(context.Background(), tool.Input{CallID: "a", Name: "composite", Args: &jsonv.Object{}})
	if rec.IsError || rec.ConcludesTurn || rec.Value != "nested failed, composite recovered" {
		t.Errorf("vetoed composite = %s", resultJSON(t, rec))
	}
	veto()
	ok := reg.Execute(context.Background(), tool.Input{CallID: "b", Name: "composite", Args: &jsonv.Object{}})
	if ok.IsError || !ok.ConcludesTurn {
		t.Errorf("composite = %s", resultJSON(t, ok))
	}
}

func TestPhaseOrderAndIdentity(t *testing.T) {
	reg := newReg(t)
	var order []string
	tokens := map[*tool.Token]int{}
	note := func(phase string, exec *tool.Execution) {
		order = append(order, phase)
		tokens[exec.Token()]++
		if exec.CallID() != "c1" || exec.RootCallID() != "root" || exec.Name() != "traced" {
			t.Errorf("%s: identity %q %q %q", phase, exec.CallID(), exec.RootCallID(), exec.Name())
		}
	}
	register(t, reg, bodyTool("traced", func(_ context.Context, call *tool.Call) (any, error) {
		note("body", call.Execution)
		args := call.Args().(*jsonv.Object)
		args.Set("mutated", true)
		return "hi", nil
	}))
	reg.OnPreExecute(func(_ context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		note("pre", exec)
		args, _ := exec.Args()
		args.(*jsonv.Object).Set("pre", true)
		return next()
	})
	reg.WrapExecute(func(ctx context.Context, exec *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
		note("execute:before", exec)
		res, err := next(ctx)
		note("execute:after", exec)
		return res, err
	})
	reg.OnPostExecute(func(_ context.Context, exec *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		note("post", exec)
		return next()
	})
	reg.OnResult(func(_ context.Context, exec *tool.Execution, _ *tool.Result) error {
		note("result", exec)
		if exec.ArgsJSON() != `{"a":1}` {
			t.Errorf("args seen by the listener = %s", exec.ArgsJSON())
		}
		return nil
	})
	callerArgs := js(t, `{"a":1}`)
	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", RootCallID: "root", Name: "traced", Args: callerArgs})
	if res.IsError {
		t.Fatal(resultJSON(t, res))
	}
	if !slices.Equal(order, []string{"pre", "execute:before", "body", "execute:after", "post", "result"}) {
		t.Errorf("order = %v", order)
	}
	if len(tokens) != 1 {
		t.Errorf("tokens = %d, want one shared by every phase", len(tokens))
	}
	if b, _ := jsonv.Marshal(callerArgs); string(b) != `{"a":1}` {
		t.Errorf("the caller's arguments changed: %s", b)
	}
	// RootCallID defaults to CallID; each call gets a fresh token.
	var roots []string
	var toks []*tool.Token
	reg2 := newReg(t)
	register(t, reg2, strTool("t", ""))
	reg2.OnResult(func(_ context.Context, exec *tool.Execution, _ *tool.Result) error {
		roots = append(roots, exec.RootCallID())
		toks = append(toks, exec.Token())
		return nil
	})
	reg2.Execute(context.Background(), tool.Input{CallID: "x", Name: "t", Args: &jsonv.Object{}})
	reg2.Execute(context.Background(), tool.Input{CallID: "y", Name: "t", Args: &jsonv.Object{}})
	if !slices.Equal(roots, []string{"x", "y"}) || toks[0] == toks[1] || toks[0] == nil {
		t.Errorf("roots %v, tokens %v", roots, toks)
	}
}

// TestArgumentsNotLossless pins docs/behaviour.md §4.4 step 4.
func TestArgumentsNotLossless(t *testing.T) {
	reg := newReg(t)
	var seen counter
	register(t, reg, bodyTool("t", func(context.Context, *tool.Call) (any, error) { seen.inc("body"); return "ran", nil }))
	reg.OnPreExecute(func(_ context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		seen.inc("pre")
		return next()
	})
	reg.Guard(func(*tool.Execution) string { seen.inc("guard"); return "" })
	reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		seen.inc("post")
		return next()
	})
	a := reg.NewScope("a", nil)
	a.OnResult(func(_ context.Context, exec *tool.Execution, res *tool.Result) error {
		seen.inc("scoped-result")
		if _, ok := exec.Args(); ok || exec.ArgsJSON() != "" {
			t.Error("the listener saw arguments")
		}
		return nil
	})
	reg.OnResult(func(context.Context, *tool.Execution, *tool.Result) error { seen.inc("result"); return nil })
	const want = `{"isError":true,"error":{"message":"tool execution arguments must be losslessly JSON-serializable"},"content":[{"type":"text","text":"Error: tool execution arguments must be losslessly JSON-serializable"}]}`
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, in := range []struct {
		ctx   context.Context
		args  any
		agent *tool.Scope
	}{
		{context.Background(), map[string]any{"invalid": func() {}}, a},
		{context.Background(), struct{ A int }{1}, nil},
		{context.Background(), math.Inf(1), nil},
		{context.Background(), []any{"\xff"}, nil},
		{cancelled, map[string]any{"invalid": func() {}}, nil}, // wins over a pre-aborted call
		{context.Background(), map[string]any{"x": func() {}}, nil},
	} {
		wantJSON(t, reg.Execute(in.ctx, tool.Input{CallID: "c", Name: "t", Args: in.args, Agent: in.agent}), want)
	}
	if seen.get("pre")+seen.get("guard")+seen.get("body")+seen.get("post") != 0 || seen.get("result") != 6 || seen.get("scoped-result") != 1 {
		t.Errorf("seen = %v", seen.m)
	}
	// Go values that snapshot losslessly are accepted.
	res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: map[string]any{"n": 1, "s": []string{"a"}}})
	if res.IsError {
		t.Errorf("lossless Go arguments rejected: %s", resultJSON(t, res))
	}
}

// ptr returns a pointer to v, to key a map by a function.
func ptr[T any](v T) *T { return &v }
