package tool_test

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
	"github.com/google/go-cmp/cmp"
)

// TestTypedBodyReplaced checks that the pipeline runs a typed tool's Execute as it is now:
// a copy of the definition whose Execute was replaced runs the replacement (whose value is
// snapshotted and validated like any body's), not the body New made; the original still
// runs its own body; and a replacement that calls the original gets the typed value.
func TestTypedBodyReplaced(t *testing.T) {
	orig := tool.Must(tool.New("echo", "Echoes its text.",
		func(ctx context.Context, call *tool.Call, in echoArgs) (echoOut, error) { return echoOut(in), nil }))
	tests := []struct {
		name    string
		execute func(ctx context.Context, call *tool.Call) (any, error)
		want    string
		failure string
	}{
		{"original", nil, `{"text":"hi"}`, ""},
		{"replaced", func(ctx context.Context, call *tool.Call) (any, error) {
			return map[string]any{"text": "replaced"}, nil
		}, `{"text":"replaced"}`, ""},
		{"replaced with an invalid value", func(ctx context.Context, call *tool.Call) (any, error) {
			return map[string]any{"text": 1}, nil
		}, "", "INVALID_TOOL_OUTPUT"},
		{"replaced by a wrapper of the original", func(ctx context.Context, call *tool.Call) (any, error) {
			return orig.Execute(ctx, call)
		}, `{"text":"hi"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := tool.NewRegistry(tool.Config{})
			if err != nil {
				t.Fatal(err)
			}
			def := *orig
			if tt.execute != nil {
				def.Execute = tt.execute
			}
			if _, err := reg.Register(&def); err != nil {
				t.Fatal(err)
			}
			res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: map[string]any{"text": "hi"}})
			if tt.failure != "" {
				if !res.IsError || res.Error.Info == nil || string(res.Error.Info.Code) != tt.failure {
					t.Fatalf("result %+v, want a %s failure", res, tt.failure)
				}
				return
			}
			if res.IsError {
				t.Fatalf("failed: %s", res.Error.Message)
			}
			got, err := jsonv.Marshal(res.Value)
			if err != nil || string(got) != tt.want {
				t.Fatalf("value %s (%v), want %s", got, err, tt.want)
			}
		})
	}
}

// TestFlatOutputValidation checks that a typed tool's output is still validated wherever
// its schema says more than its Go type: an explicit OutputSchema, or a definition whose
// Output.Schema was replaced before registering. Only the schema inference made of a flat
// type lets the pipeline skip validating what the flat conversion built.
func TestFlatOutputValidation(t *testing.T) {
	short := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string", "enum": []any{"a"}}}}
	body := func(ctx context.Context, call *tool.Call, in echoArgs) (echoOut, error) { return echoOut(in), nil }
	inferred := tool.Must(tool.New("echo", "Echoes its text.", body))
	replaced := *inferred
	replaced.Output.Schema = short
	tests := []struct {
		name    string
		def     *tool.Definition
		failure bool
	}{
		{"inferred schema", inferred, false},
		{"explicit output schema", tool.Must(tool.New("echo", "Echoes its text.", body, tool.OutputSchema(short))), true},
		{"output schema replaced after New", &replaced, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := tool.NewRegistry(tool.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := reg.Register(tt.def); err != nil {
				t.Fatal(err)
			}
			res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: map[string]any{"text": "hi"}})
			if !tt.failure {
				if res.IsError {
					t.Fatalf("failed: %s", res.Error.Message)
				}
				return
			}
			if !res.IsError || res.Error.Info == nil || res.Error.Info.Code != tool.CodeInvalidToolOutput {
				t.Fatalf("result %+v, want INVALID_TOOL_OUTPUT", res)
			}
		})
	}
}

// TestDefaultRenderDirect checks that a definition rendering with DefaultRender itself,
// which the pipeline runs directly, gets exactly the content and value it gets when the same
// render runs as any other function would (here wrapped in a closure).
func TestDefaultRenderDirect(t *testing.T) {
	outputs := []string{`"plain text"`, `{"text":"hello","n":1.5,"on":true,"none":null}`, `[1,"two",{"three":[3]}]`, `42`, `{}`, `"\u00e9\n\"quoted\""`}
	for _, out := range outputs {
		t.Run(out, func(t *testing.T) {
			var results []*tool.Result
			for _, render := range []func(args, value any) ([]content.Block, error){
				tool.DefaultRender,
				func(args, value any) ([]content.Block, error) { return tool.DefaultRender(args, value) },
			} {
				def := tool.NewRaw("t", "Returns a fixed value.", map[string]any{"type": "object"}, map[string]any{},
					func(ctx context.Context, call *tool.Call) (any, error) { return jsonv.ParseString(out) })
				def.Output.Render = render
				reg, err := tool.NewRegistry(tool.Config{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := reg.Register(def); err != nil {
					t.Fatal(err)
				}
				res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "t", Args: map[string]any{}})
				if res.IsError {
					t.Fatalf("failed: %s", res.Error.Message)
				}
				results = append(results, res)
			}
			direct, general := results[0], results[1]
			if diff := cmp.Diff(general.Content, direct.Content); diff != "" {
				t.Fatalf("content differs (-general +direct):\n%s", diff)
			}
			if !jsonv.Equal(direct.Value, general.Value) {
				t.Fatalf("value %v, want %v", direct.Value, general.Value)
			}
		})
	}
}
