package tool_test

import (
	"context"
	"fmt"
	"strings"

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
	// INVALID_ARGS Error: invalid arguments: missing required property "text"; "txt" is not a declared property (additionalProperties: false)
}
