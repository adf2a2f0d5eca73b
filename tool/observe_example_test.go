package tool_test

import (
	"context"
	"fmt"

	"github.com/dsh-go/dsh/tool"
)

// printObserver prints each call's start, decisions and end, as a tracer would record them.
type printObserver struct{}

func (printObserver) CallStarted(ctx context.Context, c tool.ObservedCall) (context.Context, tool.CallTrace) {
	fmt.Println("start", c.Name, c.CallID)
	return ctx, printTrace{}
}

type printTrace struct{}

func (printTrace) Decision(stage, decision, reason string) {
	if reason != "" {
		decision += " (" + reason + ")"
	}
	fmt.Println(" ", stage, decision)
}

func (printTrace) Finished(exec *tool.Execution, res *tool.Result) {
	fmt.Println("end", exec.Name(), "error:", res.IsError)
}

func ExampleRegistry_ObserveCalls() {
	reg, _ := tool.NewRegistry(tool.Config{})
	reg.Register(tool.Must(tool.New("echo", "Echoes its text.", func(_ context.Context, _ *tool.Call, in echoArgs) (echoOut, error) {
		return echoOut(in), nil
	})))
	remove := reg.ObserveCalls(printObserver{})
	defer remove()
	reg.OnPreExecute(func(_ context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		if exec.ArgsJSON() == `{"text":"secret"}` {
			return tool.Deny("no secrets"), nil
		}
		return next()
	})
	reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: tool.ParseArguments(`{"text":"hi"}`)})
	reg.Execute(context.Background(), tool.Input{CallID: "c2", Name: "echo", Args: tool.ParseArguments(`{"text":"secret"}`)})
	// Output:
	// start echo c1
	//   pre_execute allow
	// end echo error: false
	// start echo c2
	//   pre_execute deny (no secrets)
	// end echo error: true
}
