package tool_test

import (
	"context"
	"fmt"

	"github.com/dsh-go/dsh/tool"
)

// A registry that keeps goroutines for its calls' contained steps (Config.Workers) is
// closed when it is no longer needed, which ends them.
func ExampleRegistry_Close() {
	reg, err := tool.NewRegistry(tool.Config{Workers: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Close()
	type in struct {
		Text string `json:"text"`
	}
	echo := tool.Must(tool.New("echo", "Echoes its text.",
		func(ctx context.Context, call *tool.Call, a in) (string, error) { return a.Text, nil }))
	if _, err := reg.Register(echo); err != nil {
		fmt.Println(err)
		return
	}
	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: reg.ParseArguments(`{"text":"hello"}`)})
	fmt.Println(res.Content[0].Text)
	// Output: hello
}
