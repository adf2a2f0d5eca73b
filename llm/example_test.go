package llm_test

import (
	"context"
	"fmt"

	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/script"
)

// Collect drains a model stream into the assembled reply.
func ExampleCollect() {
	m, _ := script.New([]script.Reply{{
		Reasoning: "Two reads are independent.",
		ToolCalls: []script.ToolCall{
			{ID: "c1", Name: "read_file", Arguments: `{"path":"a.txt"}`},
			{ID: "c2", Name: "read_file", Arguments: `{"path":"b.txt"}`},
		},
	}}, script.Options{ChunkSize: 5})

	resp, err := llm.Collect(m.Stream(context.Background(), llm.Request{}))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.FinishReason)
	for _, b := range resp.Message.Content {
		fmt.Printf("%s %s %s%s\n", b.Type, b.ID, b.Text, b.Arguments)
	}
	// Output:
	// tool-calls
	// reasoning  Two reads are independent.
	// tool-call c1 {"path":"a.txt"}
	// tool-call c2 {"path":"b.txt"}
}

// An adapter decodes its wire format and lets an Assembler produce the events.
func ExampleAssembler() {
	stream := func(yield func(llm.Event, error) bool) {
		a := llm.NewAssembler(func(ev llm.Event) bool { return yield(ev, nil) })
		// Deltas as a provider might send them: two tool calls, interleaved.
		_ = a.ToolCall(0, "call_a", "list", `{"dir":`) &&
			a.ToolCall(1, "call_b", "stat", `{"path":"x"}`) &&
			a.ToolCall(0, "", "", `"."}`)
		a.Finish(llm.FinishToolCalls, llm.Usage{OutputTokens: 12}, "my-model")
	}
	for ev, err := range stream {
		if err != nil {
			return
		}
		if ev.Type == llm.EventBlockEnd {
			fmt.Println(ev.Index, ev.Block.Name, ev.Block.Arguments)
		}
	}
	// Output:
	// 0 list {"dir":"."}
	// 1 stat {"path":"x"}
}
