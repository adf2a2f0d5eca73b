package tool_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

type readArgs struct {
	Path   string `json:"path" jsonschema:"Absolute path"`
	Offset int    `json:"offset,omitempty"`
	Limit  *int   `json:"limit,omitempty" jsonschema:"Max lines"`
}

type readOut struct {
	Text  string `json:"text"`
	Lines int    `json:"lines"`
}

func readTool(tb testing.TB, opts ...tool.Option) *tool.Definition {
	tb.Helper()
	def, err := tool.New("read", "Reads a path.", func(_ context.Context, _ *tool.Call, in readArgs) (readOut, error) {
		if in.Path == "/fail" {
			return readOut{}, tool.NewError("FsError", "FS_NOT_FOUND", "no such file: /fail")
		}
		lines := -1
		if in.Limit != nil {
			lines = *in.Limit
		}
		return readOut{Text: "read " + in.Path, Lines: lines}, nil
	}, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return def
}

func TestTypedSchemas(t *testing.T) {
	reg := newReg(t)
	register(t, reg, readTool(t))
	s, err := reg.Schemas(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := jsonv.Marshal(s[0].Parameters)
	// Argument objects are inferred open; the output schema is closed.
	const want = `{"type":"object","properties":{"path":{"type":"string","description":"Absolute path"},"offset":{"type":"integer"},"limit":{"type":"integer","description":"Max lines"}},"required":["path"]}`
	if s[0].Name != "read" || s[0].Description != "Reads a path." || string(b) != want || s[0].Strict {
		t.Errorf("schema = %s %s strict %v\n%s", s[0].Name, s[0].Description, s[0].Strict, b)
	}
	out, _ := jsonv.Marshal(reg.Get("read", nil).Output.Schema)
	if string(out) != `{"type":"object","properties":{"text":{"type":"string"},"lines":{"type":"integer"}},"required":["text","lines"],"additionalProperties":false}` {
		t.Errorf("output schema = %s", out)
	}
}

// TestTypedArguments pins docs/behaviour.md §2.3: arguments are validated inside the body stage.
func TestTypedArguments(t *testing.T) {
	reg := newReg(t)
	register(t, reg, readTool(t))
	var posts counter
	reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		if res.IsError && res.Error.Info != nil && res.Error.Info.Code == tool.CodeInvalidArgs {
			posts.inc("invalid")
		}
		return next()
	})
	tests := []struct {
		args string
		want string
	}{
		{`{"path":"/x"}`, `{"isError":false,"content":[{"type":"text","text":"{\n  \"text\": \"read /x\",\n  \"lines\": -1\n}"}],"value":{"text":"read /x","lines":-1}}`},
		{`{"path":"/x","limit":3}`, `{"isError":false,"content":[{"type":"text","text":"{\n  \"text\": \"read /x\",\n  \"lines\": 3\n}"}],"value":{"text":"read /x","lines":3}}`},
		{`{}`, `{"isError":true,"error":{"message":"invalid arguments: missing required property \"path\"","info":{"name":"ToolArgsError","code":"INVALID_ARGS"}},"content":[{"type":"text","text":"Error: invalid arguments: missing required property \"path\""}]}`},
		{`{"offset":"x","extra":true}`, `{"isError":true,"error":{"message":"invalid arguments: missing required property \"path\"; \"offset\" must be an integer","info":{"name":"ToolArgsError","code":"INVALID_ARGS"}},"content":[{"type":"text","text":"Error: invalid arguments: missing required property \"path\"; \"offset\" must be an integer"}]}`},
		{`{"path":"/x","extra":true}`, `{"isError":false,"content":[{"type":"text","text":"{\n  \"text\": \"read /x\",\n  \"lines\": -1\n}"}],"value":{"text":"read /x","lines":-1}}`},
		{`{"path":"/x","limit":1.5}`, `{"isError":true,"error":{"message":"invalid arguments: \"limit\" must be an integer","info":{"name":"ToolArgsError","code":"INVALID_ARGS"}},"content":[{"type":"text","text":"Error: invalid arguments: \"limit\" must be an integer"}]}`},
		{`{"path":null}`, `{"isError":true,"error":{"message":"invalid arguments: \"path\" must be a string","info":{"name":"ToolArgsError","code":"INVALID_ARGS"}},"content":[{"type":"text","text":"Error: invalid arguments: \"path\" must be a string"}]}`},
		{`{"path":`, `{"isError":true,"error":{"message":"invalid arguments: \"arguments\" must be an object","info":{"name":"ToolArgsError","code":"INVALID_ARGS"}},"content":[{"type":"text","text":"Error: invalid arguments: \"arguments\" must be an object"}]}`},
		{`[]`, `{"isError":true,"error":{"message":"invalid arguments: \"arguments\" must be an object","info":{"name":"ToolArgsError","code":"INVALID_ARGS"}},"content":[{"type":"text","text":"Error: invalid arguments: \"arguments\" must be an object"}]}`},
		{`{"path":"/fail"}`, `{"isError":true,"error":{"message":"no such file: /fail","info":{"name":"FsError","code":"FS_NOT_FOUND"}},"content":[{"type":"text","text":"Error: no such file: /fail"}]}`},
	}
	for _, tt := range tests {
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "read", Args: tool.ParseArguments(tt.args)})
		checkInvariants(t, res)
		wantJSON(t, res, tt.want)
	}
	if posts.get("invalid") != 6 {
		t.Errorf("INVALID_ARGS reached post-execute %d times, want 6", posts.get("invalid"))
	}
	// A number the schema accepts but the Go type cannot hold fails as INVALID_ARGS too.
	res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "read", Args: tool.ParseArguments(`{"path":"/x","offset":1e300}`)})
	if !res.IsError || res.Error.Info.Code != tool.CodeInvalidArgs || !strings.HasPrefix(res.Error.Message, "invalid arguments: ") {
		t.Errorf("overflow = %s", resultJSON(t, res))
	}
}

// TestStrict checks the Strict option: inferred argument objects, nested ones included, are
// closed, the definition and its wire schema are marked strict, and an undeclared argument
// fails with INVALID_ARGS; without it the same argument is ignored.
func TestStrict(t *testing.T) {
	type inner struct {
		N int `json:"n"`
	}
	type args struct {
		In    inner          `json:"in"`
		List  []inner        `json:"list,omitempty"`
		Extra map[string]int `json:"extra,omitempty"`
		Ptr   *inner         `json:"ptr"`
	}
	body := func(_ context.Context, _ *tool.Call, in args) (int, error) { return in.In.N, nil }
	for _, tt := range []struct {
		name     string
		opts     []tool.Option
		schema   string
		strict   bool
		extraTop string // the result of an undeclared top-level argument
		extraIn  string // and of one inside a nested struct
	}{
		{
			name:     "inferred: open",
			schema:   `{"type":"object","properties":{"in":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]},"list":{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}},"extra":{"type":"object"},"ptr":{"oneOf":[{"type":"null"},{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}]}},"required":["in","ptr"]}`,
			extraTop: "1",
			extraIn:  "1",
		},
		{
			name:     "Strict: closed",
			opts:     []tool.Option{tool.Strict()},
			schema:   `{"type":"object","properties":{"in":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false},"list":{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}},"extra":{"type":"object"},"ptr":{"oneOf":[{"type":"null"},{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}]}},"required":["in","ptr"],"additionalProperties":false}`,
			strict:   true,
			extraTop: `Error: invalid arguments: "more" is not a declared property (additionalProperties: false)`,
			extraIn:  `Error: invalid arguments: "in.more" is not a declared property (additionalProperties: false)`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := newReg(t)
			register(t, reg, tool.Must(tool.New("t", "d", body, tt.opts...)))
			s, err := reg.Schemas(nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := jsonv.Marshal(s[0].Parameters)
			if string(b) != tt.schema || s[0].Strict != tt.strict || reg.Get("t", nil).Strict != tt.strict {
				t.Errorf("schema (strict %v)\n got %s\nwant %s", s[0].Strict, b, tt.schema)
			}
			for args, want := range map[string]string{
				`{"in":{"n":1},"ptr":null,"more":true}`:            tt.extraTop,
				`{"in":{"n":1,"more":true},"ptr":null,"extra":{}}`: tt.extraIn,
			} {
				res := reg.Execute(t.Context(), tool.Input{CallID: "c", Name: "t", Args: tool.ParseArguments(args)})
				if got := res.Content[0].Text; got != want {
					t.Errorf("%s: %s, want %s", args, got, want)
				}
			}
		})
	}
}

func TestTypedOptions(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		for _, d := range []time.Duration{0, -time.Second} {
			_, err := tool.New("x", "d", func(context.Context, *tool.Call, struct{}) (string, error) { return "", nil }, tool.WithTimeout(d))
			if err == nil || err.Error() != "defineTool(x): timeoutMs must be a positive finite number" {
				t.Errorf("WithTimeout(%v): %v", d, err)
			}
		}
		def := readTool(t, tool.WithTimeout(30*time.Second))
		if def.Timeout != 30*time.Second || readTool(t).Timeout != 0 {
			t.Error("timeout not attached")
		}
	})
	t.Run("an option of the wrong type", func(t *testing.T) {
		_, err := tool.New("x", "d", func(context.Context, *tool.Call, readArgs) (string, error) { return "", nil },
			tool.ConcurrencySafeIf(func(in struct{ A int }) bool { return true }))
		if err == nil || !strings.HasPrefix(err.Error(), `tool "x": option ConcurrencySafeIf was given a func(struct { A int }) bool`) {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("non-object arguments", func(t *testing.T) {
		if _, err := tool.New("x", "d", func(context.Context, *tool.Call, string) (string, error) { return "", nil }); err == nil {
			t.Error("string arguments accepted")
		}
	})
	t.Run("unsupported schema override", func(t *testing.T) {
		_, err := tool.New("x", "d", func(context.Context, *tool.Call, struct{}) (string, error) { return "", nil },
			tool.OutputSchema(js(t, `{"type":"string","minLength":1}`)))
		if err == nil || tool.InfoOf(err) == nil || tool.InfoOf(err).Code != tool.CodeUnsupportedSchema {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("Must", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("Must did not panic")
			}
		}()
		tool.Must(tool.New("x", "d", func(context.Context, *tool.Call, string) (string, error) { return "", nil }))
	})
	t.Run("render and meta", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, readTool(t,
			tool.Render(func(in readArgs, out readOut) ([]content.Block, error) {
				return content.Texts(in.Path + " -> " + out.Text), nil
			}),
			tool.Meta(func(in readArgs, out readOut) (any, error) {
				if in.Path == "/nometa" {
					return nil, nil
				}
				return struct {
					Path string `json:"path"`
				}{in.Path}, nil
			})))
		wantJSON(t, reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "read", Args: js(t, `{"path":"/a"}`)}),
			`{"isError":false,"content":[{"type":"text","text":"/a -> read /a"}],"meta":{"path":"/a"},"value":{"text":"read /a","lines":-1}}`)
		wantJSON(t, reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "read", Args: js(t, `{"path":"/nometa"}`)}),
			`{"isError":false,"content":[{"type":"text","text":"/nometa -> read /nometa"}],"value":{"text":"read /nometa","lines":-1}}`)
	})
	t.Run("finalize content", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, readTool(t, tool.FinalizeContent(func(exec *tool.Execution, res *tool.Result) ([]content.Block, error) {
			// Failures reach the finalizer too, with arguments that may be invalid.
			return content.Texts(exec.ArgsJSON() + " => " + firstText(res)[:5]), nil
		})))
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "read", Args: js(t, `{"bad":1}`)})
		if !res.IsError || firstText(res) != `{"bad":1} => Error` {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
	t.Run("input and output schema overrides", func(t *testing.T) {
		reg := newReg(t)
		def := tool.Must(tool.New("open", "d",
			func(_ context.Context, call *tool.Call, in map[string]any) (any, error) { return in["v"], nil },
			tool.InputSchema(js(t, `{"type":"object","properties":{"v":{"type":"string"}},"required":["v"]}`)),
			tool.OutputSchema(js(t, `{"type":"string"}`))))
		register(t, reg, def)
		wantJSON(t, reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "open", Args: js(t, `{"v":"x","extra":1}`)}),
			`{"isError":false,"content":[{"type":"text","text":"x"}],"value":"x"}`)
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "open", Args: js(t, `{"v":1}`)})
		if res.Error == nil || res.Error.Message != `invalid arguments: "v" must be a string` {
			t.Errorf("result = %s", resultJSON(t, res))
		}
	})
}

// TestTypedPresenters pins docs/behaviour.md §2.3: presenters validate softly.
func TestTypedPresenters(t *testing.T) {
	def := readTool(t,
		tool.CallCard(func(in readArgs) *card.Call {
			if in.Path == "/panic" {
				panic("presenter exploded")
			}
			return &card.Call{Card: card.Generic, Title: "Open " + in.Path, Kind: card.KindRead, RawInput: in.Path}
		}),
		tool.ResultCard(func(in readArgs, res card.ToolResult) *card.Result {
			return &card.Result{Card: card.Generic, Title: "Opened " + in.Path, Content: res.Content}
		}))
	if c := def.PresentCall(js(t, `{"path":"/a"}`)); c == nil || c.Title != "Open /a" || c.Kind != card.KindRead {
		t.Errorf("PresentCall = %+v", c)
	}
	for _, bad := range []any{js(t, `{}`), js(t, `{"path":1}`), "raw text", nil, js(t, `{"path":"/panic"}`)} {
		if c := def.PresentCall(bad); c != nil {
			t.Errorf("PresentCall(%v) = %+v, want nil", bad, c)
		}
	}
	res := card.ToolResult{Content: content.Texts("x")}
	if r := def.PresentResult(js(t, `{"path":"/a"}`), res); r == nil || r.Title != "Opened /a" || len(r.Content) != 1 {
		t.Errorf("PresentResult = %+v", r)
	}
	if r := def.PresentResult(js(t, `{"wrong":1}`), res); r != nil {
		t.Errorf("PresentResult with bad args = %+v", r)
	}
	plain := readTool(t)
	if plain.PresentCall != nil || plain.PresentResult != nil || plain.ConcurrencySafe != nil || plain.FinalizeContent != nil {
		t.Error("a plain typed tool declares presenters or classifiers")
	}
}

// TestRawToolsAreNotValidated: raw definitions get no argument validation, but their output
// is still checked (docs/behaviour.md §2.3).
func TestRawToolsAreNotValidated(t *testing.T) {
	reg := newReg(t)
	params := js(t, `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	register(t, reg, tool.NewRaw("raw", "raw tool", params, js(t, `{"type":"string"}`), func(_ context.Context, call *tool.Call) (any, error) {
		return jsonv.KindOf(call.Args()), nil
	}))
	wantJSON(t, reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "raw", Args: &jsonv.Object{}}),
		`{"isError":false,"content":[{"type":"text","text":"object"}],"value":"object"}`)
	wantJSON(t, reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "raw", Args: "unparsed"}),
		`{"isError":false,"content":[{"type":"text","text":"string"}],"value":"string"}`)
	register(t, reg, tool.NewRaw("bad-out", "d", params, js(t, `{"type":"string"}`), func(context.Context, *tool.Call) (any, error) { return 1.0, nil }))
	res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "bad-out", Args: &jsonv.Object{}})
	if res.Error == nil || res.Error.Message != `tool "bad-out" returned invalid output: "value" must be a string` {
		t.Errorf("result = %s", resultJSON(t, res))
	}
}

func TestDefaultRender(t *testing.T) {
	for _, tt := range []struct {
		value any
		want  string
	}{
		{"raw text", "raw text"},
		{js(t, `{"a":[1,{"b":null}]}`), "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ]\n}"},
		{1.5, "1.5"},
		{nil, "null"},
		{js(t, `[]`), "[]"},
	} {
		blocks, err := tool.DefaultRender(nil, tt.value)
		if err != nil || len(blocks) != 1 || blocks[0].Text != tt.want {
			t.Errorf("DefaultRender(%v) = %+v, %v", tt.value, blocks, err)
		}
	}
	if _, err := tool.DefaultRender(nil, func() {}); err == nil {
		t.Error("DefaultRender accepted a func")
	}
}

func TestTypedBodyErrorsAndArgsCopy(t *testing.T) {
	reg := newReg(t)
	type in struct {
		Items []string `json:"items"`
	}
	register(t, reg, tool.Must(tool.New("mut", "d", func(_ context.Context, call *tool.Call, v in) ([]string, error) {
		v.Items[0] = "changed" // a decoded copy
		call.Args().(*jsonv.Object).Set("items", "changed")
		if len(v.Items) == 2 {
			return nil, errors.New("two items")
		}
		return v.Items, nil
	})))
	var seenArgs string
	reg.OnResult(func(_ context.Context, exec *tool.Execution, _ *tool.Result) error {
		seenArgs = exec.ArgsJSON()
		return nil
	})
	res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "mut", Args: js(t, `{"items":["a"]}`)})
	if res.IsError || seenArgs != `{"items":["a"]}` {
		t.Errorf("result %s, args seen after the body %s", resultJSON(t, res), seenArgs)
	}
	wantJSON(t, reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "mut", Args: js(t, `{"items":["a","b"]}`)}),
		`{"isError":true,"error":{"message":"two items"},"content":[{"type":"text","text":"Error: two items"}]}`)
}
