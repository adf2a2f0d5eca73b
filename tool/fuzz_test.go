package tool_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/schema"
	"github.com/dsh-go/dsh/tool"
)

// argumentSeeds are hostile and ordinary argument texts a model may send.
var argumentSeeds = []string{
	``, `{}`, `{"path":"x"}`, `{"path":"x","count":2,"tags":["a","b"],"any":{"k":[1,null,true]}}`,
	`{"path":`, `not json`, `{"path":"a","path":"b"}`, "{\"path\":\"\xff\"}", `{"path":"x","count":1e400}`,
	`{"path":"x","count":-0}`, `{"path":"x","count":1.5}`, `{"path":1}`, `[]`, `null`, `"s"`, `{"extra":1}`,
	`{"path":"x","any":` + nested(200) + `}`, `{"path":"\u0000\ud800"}`, `{"path":"x"} trailing`, ` {"path" : "x" } `,
	`{"path":"x","tags":null}`, `{"path":"x","count":9007199254740993}`, `{"__proto__":{"path":"x"}}`,
}

// FuzzParseArguments: ParseArguments never panics; it returns either the raw text or a
// lossless value that encodes and parses back to itself.
func FuzzParseArguments(f *testing.F) {
	for _, s := range argumentSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v := tool.ParseArguments(raw)
		if s, ok := v.(string); ok && s == raw && raw != "" {
			if _, err := jsonv.ParseString(raw); err == nil {
				// Valid JSON whose value is the text itself is possible only for a string
				// literal, whose value differs from its text.
				t.Fatalf("valid JSON %q was not parsed", raw)
			}
			return
		}
		if err := jsonv.Check(v); err != nil {
			t.Fatalf("ParseArguments(%q) = a non-jsonv value: %v", raw, err)
		}
		b, err := jsonv.Marshal(v)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		back, err := jsonv.Parse(b)
		if err != nil || !jsonv.Equal(back, v) {
			t.Fatalf("%q does not round-trip: %s, %v", raw, b, err)
		}
	})
}

// FuzzExecuteTyped sends arbitrary argument text through the whole pipeline to a typed tool:
// the call never panics and ends in a success or an INVALID_ARGS / lossless-arguments failure
// that keeps every result invariant.
func FuzzExecuteTyped(f *testing.F) {
	for _, s := range argumentSeeds {
		f.Add(s)
	}
	reg := newReg(f)
	register(f, reg, tool.Must(tool.New("typed", "d", func(_ context.Context, _ *tool.Call, in badArgs) (badArgs, error) {
		return in, nil
	})))
	f.Fuzz(func(t *testing.T, raw string) {
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "typed", Args: tool.ParseArguments(raw)})
		checkInvariants(t, res)
		if !res.IsError {
			// A success echoes arguments the schema accepted.
			if o, ok := res.Value.(*jsonv.Object); !ok || o.Len() == 0 {
				t.Fatalf("success value %s", resultJSON(t, res))
			}
			return
		}
		switch {
		case res.Error.Info != nil && res.Error.Info.Code == tool.CodeInvalidArgs:
			if !strings.HasPrefix(res.Error.Message, "invalid arguments: ") {
				t.Fatalf("message %q", res.Error.Message)
			}
		case res.Error.Info == nil && res.Error.Message == "tool execution arguments must be losslessly JSON-serializable":
			if utf8.ValidString(raw) {
				t.Fatalf("valid UTF-8 text %q rejected as not lossless", raw)
			}
		default:
			t.Fatalf("unexpected failure for %q: %s", raw, resultJSON(t, res))
		}
	})
}

// FuzzValidateOutput checks the output contract against the validator: a body returning an
// arbitrary parsed value succeeds exactly when the value conforms to the output schema, and
// otherwise fails INVALID_TOOL_OUTPUT with the validator's violations.
func FuzzValidateOutput(f *testing.F) {
	out := schema.MustCompile(js(f, `{"type":"object","properties":{
		"name":{"type":"string"},
		"kind":{"type":"string","enum":["a","b"]},
		"n":{"type":"integer"},
		"items":{"type":"array","items":{"oneOf":[{"type":"string"},{"type":"null"}]}},
		"meta":{}
	},"required":["name"],"additionalProperties":false}`))
	for _, s := range []string{
		`{"name":"x"}`, `{"name":"x","kind":"c"}`, `{"name":1}`, `{}`, `{"name":"x","n":1.5}`,
		`{"name":"x","items":["a",null,1]}`, `{"name":"x","extra":true}`, `[]`, `"x"`, `null`,
		`{"name":"x","meta":{"deep":` + nested(100) + `}}`,
	} {
		f.Add(s)
	}
	reg := newReg(f)
	var current any
	register(f, reg, &tool.Definition{
		Name:       "t",
		Parameters: &jsonv.Object{},
		Output:     tool.Output{Schema: out.Raw(), Render: func(any, any) ([]content.Block, error) { return content.Texts("ok"), nil }},
		Execute:    func(context.Context, *tool.Call) (any, error) { return current, nil },
	})
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := jsonv.ParseString(raw)
		if err != nil {
			return
		}
		current = v
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}})
		checkInvariants(t, res)
		violations := out.Validate(v, schema.RootValue)
		if len(violations) == 0 {
			if res.IsError || !jsonv.Equal(res.Value, v) {
				t.Fatalf("a conforming value failed: %s", resultJSON(t, res))
			}
			return
		}
		want := `tool "t" returned invalid output: ` + strings.Join(violations, "; ")
		if !res.IsError || res.Error.Message != want || res.Error.Info.Code != tool.CodeInvalidToolOutput {
			t.Fatalf("result %s, want %q", resultJSON(t, res), want)
		}
	})
}

// FuzzBlockFeedback: a post-execute block with arbitrary feedback text always ends in a
// failure whose message derives from the text, or the materialization failure when the
// text is not valid UTF-8.
func FuzzBlockFeedback(f *testing.F) {
	for _, s := range []string{"", "blocked", "a\nb", "\xff", "\u2028", strings.Repeat("x", 1000)} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, text string, withImage bool) {
		reg := newReg(t)
		register(t, reg, strTool("t", "ok"))
		feedback := content.Texts(text)
		want := text
		if withImage {
			feedback = append(feedback, content.Block{Type: content.TypeImage, Image: &content.ImageRef{AttachmentID: "a", MediaType: "image/png"}})
			want += "\n[image content]"
		}
		if want == "" {
			want = "tool result blocked by post-execute policy"
		}
		if !utf8.ValidString(text) {
			want = "tool result must be losslessly JSON-serializable"
		}
		reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			return tool.BlockWith(feedback), nil
		})
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}})
		checkInvariants(t, res)
		if !res.IsError || res.Error.Message != want {
			t.Fatalf("result %s, want message %q", resultJSON(t, res), want)
		}
	})
}
