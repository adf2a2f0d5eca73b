package agent_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

type addArgs struct {
	A float64 `json:"a" jsonschema:"the first addend"`
	B float64 `json:"b" jsonschema:"the second addend"`
}

// A turn with a scripted model: the model calls a tool twice in parallel, reads the
// results, and answers. Every step is in the session log.
func ExampleAgent_Run() {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		log.Fatal(err)
	}
	add := tool.Must(tool.New("add", "Add two numbers.",
		func(ctx context.Context, call *tool.Call, in addArgs) (float64, error) {
			return in.A + in.B, nil
		}, tool.ConcurrencySafe()))
	if _, err := reg.Register(add); err != nil {
		log.Fatal(err)
	}
	model, err := script.New([]script.Reply{
		{ToolCalls: []script.ToolCall{
			{ID: "c1", Name: "add", Arguments: `{"a":1,"b":2}`},
			{ID: "c2", Name: "add", Arguments: `{"a":3,"b":4}`},
		}},
		{ExpectToolResults: []string{"c1", "c2"}, Text: "1+2 is 3 and 3+4 is 7."},
	}, script.Options{})
	if err != nil {
		log.Fatal(err)
	}
	a, err := agent.New(agent.Config{
		Registry: reg,
		Model:    model,
		Observer: agent.Observer{
			ToolCall: func(c agent.ToolCallEvent) { fmt.Println("call", c.CallID, c.Card.Title) },
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()

	res, err := a.Run(context.Background(), "What are 1+2 and 3+4?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Reason.Kind, "after", res.Steps, "steps:", res.Text())
	var types []string
	for _, e := range a.Log().Events() {
		types = append(types, e.Type)
	}
	fmt.Println(strings.Join(types, " "))
	// Output:
	// call c1 add
	// call c2 add
	// completed after 2 steps: 1+2 is 3 and 3+4 is 7.
	// turn/start step/start user/message assistant/message tool/call tool/call tool/result tool/result step/end step/start assistant/message step/end turn/end
}

// Cancelling a turn's context ends it "aborted"; a CancelCause says who cancelled.
func ExampleCancelCause() {
	reg, _ := tool.NewRegistry(tool.Config{})
	model, _ := script.New([]script.Reply{{Text: "never read"}}, script.Options{})
	a, _ := agent.New(agent.Config{Registry: reg, Model: model})
	defer a.Close()

	ctx, cancel := context.WithCancelCause(context.Background())
	a.OnPreStep(func(ctx context.Context, s agent.PreStep) error {
		cancel(&agent.CancelCause{Kind: "hook", Reason: "quota reached"})
		return nil
	})
	res, err := a.Run(ctx, "hello")
	fmt.Println(err)
	fmt.Println(res.Reason.Kind, res.Reason.Cause, res.Reason.CauseReason)
	// Output:
	// agent: turn 1 aborted: turn cancelled by hook: quota reached
	// aborted hook quota reached
}

// Prompt sections are ordered, and empty ones are dropped.
func ExampleRenderPrompt() {
	fmt.Println(agent.RenderPrompt([]agent.PromptSection{
		{Name: "sdk", Order: agent.OrderSDK, Text: "declare function read(…): …"},
		{Name: "identity", Order: agent.OrderIdentity, Text: "You are dsh."},
		{Name: "empty", Order: 0},
	}))
	// Output:
	// You are dsh.
	//
	// declare function read(…): …
}

// A session log written by one agent can be continued by another: turn numbers go on and
// the history is derived from the log.
func ExampleNew_continue() {
	reg, _ := tool.NewRegistry(tool.Config{})
	mem := session.NewMemory(nil)
	for i, answer := range []string{"first", "second"} {
		model, _ := script.New([]script.Reply{{Text: answer}}, script.Options{})
		a, err := agent.New(agent.Config{Registry: reg, Model: model, Log: mem})
		if err != nil {
			log.Fatal(err)
		}
		res, _ := a.Run(context.Background(), fmt.Sprint("question ", i+1))
		fmt.Println("turn", res.Turn, res.Text(), "history:", len(model.Requests()[0].Messages), "messages")
		a.Close()
	}
	// Output:
	// turn 1 first history: 1 messages
	// turn 2 second history: 3 messages
}
