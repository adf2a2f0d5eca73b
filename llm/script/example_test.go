package script_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/script"
)

// A script replays a tool call, then an answer that requires the tool's result.
func ExampleParse() {
	const demo = `# read a file, then answer
{"text":"Let me look.","toolCalls":[{"id":"c1","name":"read_file","arguments":{"path":"notes.txt"}}]}
{"expectToolResults":["c1"],"text":"The notes say: buy milk."}
`
	replies, err := script.Parse(strings.NewReader(demo), "demo.jsonl")
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := script.New(replies, script.Options{Source: "demo.jsonl"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	req := llm.Request{Messages: []content.Message{{Role: content.RoleUser, Content: content.Texts("What do my notes say?")}}}

	first, _ := llm.Generate(ctx, m, req)
	call := first.ToolCalls()[0]
	fmt.Println(first.FinishReason, call.Name, call.Arguments)

	req.Messages = append(req.Messages, first.Message, content.Message{Role: content.RoleUser,
		Content: []content.Block{content.ToolResult(call.ID, content.Texts("buy milk"), false)}})
	second, _ := llm.Generate(ctx, m, req)
	fmt.Println(second.FinishReason, second.Text())

	_, err = llm.Generate(ctx, m, req)
	fmt.Println(err)
	// Output:
	// tool-calls read_file {"path":"notes.txt"}
	// stop The notes say: buy milk.
	// demo.jsonl has no reply left for request 3 (it holds 2 replies)
}

// Replies built in Go, streamed in chunks of four runes.
func ExampleNew() {
	m, err := script.New([]script.Reply{{Text: "Hello, world!"}}, script.Options{ChunkSize: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev, err := range m.Stream(context.Background(), llm.Request{}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.Type == llm.EventTextDelta {
			fmt.Printf("%q\n", ev.Text)
		}
	}
	// Output:
	// "Hell"
	// "o, w"
	// "orld"
	// "!"
}
