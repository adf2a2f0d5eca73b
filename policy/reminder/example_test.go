package reminder_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/policy/reminder"
	"github.com/dsh-go/dsh/tool"
)

type lsIn struct {
	Path string `json:"path" jsonschema:"directory to list"`
}

func Example() {
	reg, _ := tool.NewRegistry(tool.Config{})
	ls := tool.Must(tool.New("ls", "Lists a directory.", func(_ context.Context, _ *tool.Call, in lsIn) (string, error) {
		return "a.txt b.txt", nil
	}))
	if _, err := reg.Register(ls); err != nil {
		panic(err)
	}
	rem, err := reminder.New(reminder.Config{Thresholds: []int{2, 3}})
	if err != nil {
		panic(err)
	}
	if _, err := rem.Install(reg.Global()); err != nil {
		panic(err)
	}
	agent := reg.NewScope("agent", nil)
	defer agent.Close()

	call := func(id string) {
		res := reg.Execute(context.Background(), tool.Input{CallID: id, Name: "ls", Args: tool.ParseArguments(`{"path":"."}`), Agent: agent})
		for _, m := range res.AdditionalContexts {
			first, _, _ := strings.Cut(m.Content[0].Text, "\n")
			fmt.Printf("%s [%s]: %s\n", id, m.Source.Summary, first)
		}
	}
	call("c1")
	call("c2")
	call("c3")
	// The user says something: the agent loop resets the chain.
	rem.PreStep(agent, []content.Message{{Role: content.RoleUser, Source: &content.Source{Kind: "user"}}})
	call("c4")
	// Output:
	// c2 [ls × 2]: You are repeating the exact same tool call with identical arguments. Carefully analyze the previous result before calling again: if the task is not complete, try a different approach or different arguments instead of repeating the call.
	// c3 [ls × 3]: Repeated tool call detected:
}
