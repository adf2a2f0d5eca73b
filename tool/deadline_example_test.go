package tool_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dsh-go/dsh/tool"
)

// A deadline hook gives calls a time budget the pipeline arms around the body itself: the
// body's context ends when the budget elapses, and the call then fails with the hook's
// Expired error instead of whatever the body returned.
func ExampleRegistry_OnDeadline() {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		panic(err)
	}
	slow := tool.Must(tool.New("slow", "Waits for its context.",
		func(ctx context.Context, _ *tool.Call, _ struct{}) (string, error) {
			<-ctx.Done() // a cooperative body: it stops when its budget is spent
			return "finished", nil
		}))
	if _, err := reg.Register(slow); err != nil {
		panic(err)
	}
	reg.OnDeadline(func(exec *tool.Execution) (tool.Deadline, error) {
		return tool.Deadline{
			Budget:  10 * time.Millisecond,
			Cause:   errors.New("budget spent"), // a cause of this call's own
			Expired: tool.NewError("ToolTimeoutError", tool.CodeToolTimeout, "tool call timed out after 10ms"),
		}, nil
	})
	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "slow", Args: map[string]any{}})
	fmt.Println(res.Error.Info.Code, res.Error.Message)
	// Output: TOOL_TIMEOUT tool call timed out after 10ms
}

// An after-execute hook sees what the body (and every around-execute wrapper) produced and
// returns it, or a replacement the pipeline validates and renders again: here a value with
// a word masked.
func ExampleRegistry_AfterExecute() {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		panic(err)
	}
	echo := tool.Must(tool.New("echo", "Echoes its text.",
		func(_ context.Context, _ *tool.Call, in struct {
			Text string `json:"text"`
		}) (string, error) {
			return in.Text, nil
		}))
	if _, err := reg.Register(echo); err != nil {
		panic(err)
	}
	reg.AfterExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result) (*tool.Result, error) {
		s, ok := res.Value.(string)
		if res.IsError || !ok || !strings.Contains(s, "hunter2") {
			return res, nil // unchanged: the registry's result stands
		}
		return &tool.Result{Value: strings.ReplaceAll(s, "hunter2", "*******")}, nil
	}, tool.ReadOnly()) // it only reads the result it is given
	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: map[string]any{"text": "my password is hunter2"}})
	fmt.Println(res.Value)
	// Output: my password is *******
}

// A pre-execute check gives its verdict before the hooks after it, without a closure for
// next: here it refuses writes outright, and its allow of reads turns the later hook's ask
// into an allow. With no opinion (decided false) it leaves a call to the later hooks.
func ExampleRegistry_OnPreCheck() {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"read", "write", "list"} {
		def := tool.Must(tool.New(name, "Does nothing.",
			func(context.Context, *tool.Call, struct{}) (string, error) { return "done", nil }))
		if _, err := reg.Register(def); err != nil {
			panic(err)
		}
	}
	reg.OnPreCheck(func(_ context.Context, exec *tool.Execution) (tool.PreDecision, bool, error) {
		switch exec.Name() {
		case "write":
			return tool.Deny("writes are off"), true, nil
		case "read":
			return tool.Allow(), true, nil
		}
		return tool.PreDecision{}, false, nil
	})
	reg.OnPreExecute(func(_ context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		fmt.Println("later hook sees", exec.Name())
		return tool.Ask("every call needs approval"), nil // no approver: an ask is refused
	})
	for _, name := range []string{"read", "write", "list"} {
		res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: name, Args: map[string]any{}})
		fmt.Println(name, res.Content[0].Text)
	}
	// Output:
	// later hook sees read
	// read done
	// write Error: writes are off
	// later hook sees list
	// list Error: every call needs approval
}
