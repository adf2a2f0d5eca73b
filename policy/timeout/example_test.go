package timeout_test

import (
	"context"
	"fmt"
	"time"

	"github.com/dsh-go/dsh/policy/timeout"
	"github.com/dsh-go/dsh/tool"
)

type fetchIn struct {
	URL string `json:"url" jsonschema:"the URL to fetch"`
}

func Example() {
	reg, _ := tool.NewRegistry(tool.Config{})
	if _, err := timeout.Install(reg.Global(), timeout.Config{}); err != nil {
		panic(err)
	}
	// A tool declaring a 5 ms budget that honours its context but never finishes in time.
	slow := tool.Must(tool.New("slow_fetch", "Fetches slowly.",
		func(ctx context.Context, _ *tool.Call, in fetchIn) (string, error) {
			<-ctx.Done() // a real tool passes ctx to its I/O
			return "", context.Cause(ctx)
		},
		tool.WithTimeout(5*time.Millisecond),
	))
	if _, err := reg.Register(slow); err != nil {
		panic(err)
	}
	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "slow_fetch", Args: tool.ParseArguments(`{"url":"https://example.com"}`)})
	fmt.Println(res.Error.Info.Code)
	fmt.Println(res.Content[0].Text)
	// Output:
	// TOOL_TIMEOUT
	// Error: tool call timed out after 5ms
}
