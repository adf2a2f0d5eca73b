package tool_test

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// ShoutArgs are the arguments of the example tool.
type ShoutArgs struct {
	Text  string `json:"text" jsonschema:"the text to shout"`
	Times int    `json:"times,omitempty" jsonschema:"how many times, default 1"`
}

// ShoutOut is its canonical output.
type ShoutOut struct {
	Shouted string `json:"shouted"`
}

func Example() {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		panic(err)
	}
	shout := tool.Must(tool.New("shout", "Upper-cases text.",
		func(ctx context.Context, call *tool.Call, in ShoutArgs) (ShoutOut, error) {
			n := max(in.Times, 1)
			return ShoutOut{Shouted: strings.Repeat(strings.ToUpper(in.Text), n)}, nil
		},
		tool.ConcurrencySafe(),
	))
	if _, err := reg.Register(shout); err != nil {
		panic(err)
	}

	// A policy: deny shouting about secrets.
	reg.OnPreExecute(func(ctx context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		if strings.Contains(exec.ArgsJSON(), "secret") {
			return tool.Deny("no shouting secrets"), nil
		}
		return next()
	})

	ctx := context.Background()
	res := reg.Execute(ctx, tool.Input{CallID: "c1", Name: "shout", Args: tool.ParseArguments(`{"text":"hi","times":2}`)})
	fmt.Println(res.IsError, res.Content[0].Text)

	res = reg.Execute(ctx, tool.Input{CallID: "c2", Name: "shout", Args: tool.ParseArguments(`{"text":"a secret"}`)})
	fmt.Println(res.IsError, res.Content[0].Text)

	res = reg.Execute(ctx, tool.Input{CallID: "c3", Name: "shout", Args: tool.ParseArguments(`{"txt":"typo"}`)})
	fmt.Println(res.Error.Info.Code, res.Content[0].Text)
	// Output:
	// false {
	//   "shouted": "HIHI"
	// }
	// true Error: no shouting secrets
	// INVALID_ARGS Error: invalid arguments: missing required property "text"
}

// Inferred argument objects are open: an argument the tool does not declare is ignored.
// Strict closes them, so that such an argument fails the call.
func ExampleStrict() {
	type args struct {
		Text string `json:"text"`
	}
	echo := func(_ context.Context, _ *tool.Call, in args) (string, error) { return in.Text, nil }
	reg, _ := tool.NewRegistry(tool.Config{})
	reg.Register(tool.Must(tool.New("echo", "Echoes text.", echo)))
	reg.Register(tool.Must(tool.New("strict_echo", "Echoes text; nothing else accepted.", echo, tool.Strict())))

	extra := tool.ParseArguments(`{"text":"hi","loud":true}`)
	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: extra})
	fmt.Println(res.IsError, res.Content[0].Text)
	res = reg.Execute(context.Background(), tool.Input{CallID: "c2", Name: "strict_echo", Args: extra})
	fmt.Println(res.Error.Info.Code, res.Content[0].Text)
	fmt.Println(reg.Get("echo", nil).Strict, reg.Get("strict_echo", nil).Strict)
	// Output:
	// false hi
	// INVALID_ARGS Error: invalid arguments: "loud" is not a declared property (additionalProperties: false)
	// false true
}

// A scheduler overlaps the dispatch of several calls while keeping policy and commits in
// model order: Prepare in order, Dispatch concurrently, Finalize in order.
func ExampleRegistry_Prepare() {
	reg, _ := tool.NewRegistry(tool.Config{})
	anyJSON := &jsonv.Object{} // the unconstrained schema
	upper := tool.NewRaw("upper", "Upper-cases text.", anyJSON, anyJSON,
		func(ctx context.Context, call *tool.Call) (any, error) {
			s, _ := call.Args().(string)
			return strings.ToUpper(s), nil
		})
	if _, err := reg.Register(upper); err != nil {
		panic(err)
	}
	ctx := context.Background()
	var invs []*tool.Invocation
	for i, word := range []string{"a", "b", "c"} {
		invs = append(invs, reg.Prepare(ctx, tool.Input{CallID: fmt.Sprint(i), Name: "upper", Args: word}))
	}
	var wg sync.WaitGroup
	for _, inv := range invs {
		if inv.NeedsDispatch() {
			wg.Go(inv.Dispatch)
		}
	}
	wg.Wait()
	for _, inv := range invs {
		fmt.Println(inv.Finalize().Value)
	}
	// Output:
	// A
	// B
	// C
}

// An agent's scope restricts what it inherits; its own tools stay visible.
func ExampleScope_Restrict() {
	reg, _ := tool.NewRegistry(tool.Config{})
	anyJSON := &jsonv.Object{}
	noop := func(ctx context.Context, call *tool.Call) (any, error) { return nil, nil }
	agent := reg.NewScope("reviewer", nil)
	for _, r := range []struct {
		scope *tool.Scope
		name  string
	}{{reg.Global(), "read"}, {reg.Global(), "bash"}, {agent, "report"}} {
		if _, err := r.scope.Register(tool.NewRaw(r.name, "A tool.", anyJSON, anyJSON, noop)); err != nil {
			panic(err)
		}
	}
	if _, err := agent.Restrict(tool.Filter{Deny: []string{"bash"}}); err != nil {
		panic(err)
	}
	fmt.Println(reg.Names(agent))
	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "bash", Args: anyJSON, Agent: agent})
	fmt.Println(res.Content[0].Text)
	// Output:
	// [read report]
	// Error: unknown tool "bash"
}

// A post-execute hook can block a result; the model reads the feedback as an error.
func ExampleScope_OnPostExecute() {
	reg, _ := tool.NewRegistry(tool.Config{})
	anyJSON := &jsonv.Object{}
	env := tool.NewRaw("env", "Prints the environment.", anyJSON, anyJSON,
		func(ctx context.Context, call *tool.Call) (any, error) { return "TOKEN=s3cr3t", nil })
	if _, err := reg.Register(env); err != nil {
		panic(err)
	}
	reg.OnPostExecute(func(ctx context.Context, exec *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		if !res.IsError && strings.Contains(res.Content[0].Text, "TOKEN=") {
			return tool.BlockWith(content.Texts("output withheld: it contains a credential")), nil
		}
		return next()
	})
	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "env", Args: anyJSON})
	fmt.Println(res.IsError, res.Error.Message)
	// Output:
	// true output withheld: it contains a credential
}

// ExampleRegistry_ParseArguments shows the argument limits: text over the registry's cap is
// not even parsed, and a NUL byte in a path argument is refused; both are INVALID_ARGS.
func ExampleRegistry_ParseArguments() {
	reg, err := tool.NewRegistry(tool.Config{MaxArgBytes: 64})
	if err != nil {
		panic(err)
	}
	reg.Register(tool.Must(tool.New("open", "Opens a file.",
		func(ctx context.Context, call *tool.Call, in struct {
			Path string `json:"path"`
		}) (string, error) {
			return "opened " + in.Path, nil
		})))
	for _, raw := range []string{
		`{"path":"notes.txt"}`,
		`{"path":"` + strings.Repeat("x", 100) + `"}`,
		`{"path":"notes.txt\u0000.png"}`,
	} {
		// The parsed arguments are used for nothing else, so they are handed over
		// (OwnArgs): the pipeline takes them as the call's snapshot without copying.
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "open", Args: reg.ParseArguments(raw), OwnArgs: true})
		if res.IsError {
			fmt.Println(res.Error.Info.Code, res.Error.Message)
		} else {
			fmt.Println(res.Content[0].Text)
		}
	}
	// Output:
	// opened notes.txt
	// INVALID_ARGS invalid arguments: they are 111 bytes of JSON, over the limit of 64 bytes for one call; pass less at a time (for example, write a large file in parts)
	// INVALID_ARGS invalid arguments: "path" contains a NUL byte, which no file path may hold
}

// ExampleWithProgress receives a tool's live output while the call runs: the context passed
// to Execute carries the receiver to the tool's body.
func ExampleWithProgress() {
	reg, _ := tool.NewRegistry(tool.Config{})
	type noArgs struct{}
	reg.Register(tool.Must(tool.New("count", "Counts to three.", func(ctx context.Context, call *tool.Call, _ noArgs) (string, error) {
		if p := tool.ProgressFrom(ctx); p != nil {
			for _, s := range []string{"one\n", "two\n", "three\n"} {
				p(call.CallID(), "stdout", []byte(s))
			}
		}
		return "done", nil
	})))
	ctx := tool.WithProgress(context.Background(), func(callID, stream string, chunk []byte) {
		fmt.Printf("%s %s: %s", callID, stream, chunk)
	})
	res := reg.Execute(ctx, tool.Input{CallID: "c1", Name: "count", Args: tool.ParseArguments(`{}`)})
	fmt.Println(res.Content[0].Text)
	// Output:
	// c1 stdout: one
	// c1 stdout: two
	// c1 stdout: three
	// done
}

// A policy keying calls by their arguments: the canonical form is the same whatever the
// member order the model chose, and appending it to a buffer copies no arguments.
func ExampleExecution_AppendCanonicalArgs() {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		panic(err)
	}
	shout := tool.Must(tool.New("shout", "Upper-cases text.",
		func(ctx context.Context, call *tool.Call, in ShoutArgs) (ShoutOut, error) {
			return ShoutOut{Shouted: strings.ToUpper(in.Text)}, nil
		}))
	if _, err := reg.Register(shout); err != nil {
		panic(err)
	}
	var buf [128]byte
	reg.OnPreExecute(func(ctx context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		key, ok := exec.AppendCanonicalArgs(buf[:0])
		fmt.Println(string(key), ok)
		return next()
	})
	ctx := context.Background()
	reg.Execute(ctx, tool.Input{CallID: "c1", Name: "shout", Args: tool.ParseArguments(`{"times":2,"text":"hi"}`)})
	reg.Execute(ctx, tool.Input{CallID: "c2", Name: "shout", Args: tool.ParseArguments(`{"text":"hi","times":2}`)})
	// Output:
	// {"text":"hi","times":2} true
	// {"text":"hi","times":2} true
}
