package durable_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// A host serves the session workflow; here Temporal's test environment stands in for a
// server and a worker. A turn is an update; the tool call runs as an activity and the
// session log records it as in process.
func ExampleHost() {
	dir, _ := os.MkdirTemp("", "durable-example-")
	defer os.RemoveAll(dir)

	reg, _ := tool.NewRegistry(tool.Config{})
	upper, _ := tool.New("shout", "Upper-case a text.", func(ctx context.Context, c *tool.Call, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text + "!", nil
	}, tool.ConcurrencySafe())
	reg.Register(upper)
	model, _ := script.New([]script.Reply{
		{ToolCalls: []script.ToolCall{{ID: "c1", Name: "shout", Arguments: `{"text":"hello"}`}}},
		{Text: "I shouted."},
	}, script.Options{})
	store, _ := session.Open(filepath.Join(dir, "sessions"), session.Options{})
	host, err := durable.NewHost(durable.HostConfig{Registry: reg, Store: store, Results: filepath.Join(dir, "results"), Model: model})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer host.Close()

	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	host.Register(env)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(durable.UpdateTurn, "turn-1", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { fmt.Println(err) },
			OnComplete: func(v any, err error) {
				res := v.(durable.TurnResult)
				fmt.Println(res.Reason, res.Text, res.Calls[0].Name, res.Calls[0].IsError)
				env.CancelWorkflow()
			},
		}, durable.TurnRequest{Text: "shout hello"})
	}, 0)
	env.ExecuteWorkflow(durable.WorkflowName, durable.SessionInput{SessionID: "example", SessionQueue: "q"})
	// Output:
	// completed I shouted. shout false
}
