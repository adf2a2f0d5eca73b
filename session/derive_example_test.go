package session_test

import (
	"fmt"
	"log"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/session"
)

// The agent loop derives the model history from its log once a step. The messages are
// shared with the log and read-only; a step that changes one works on a clone.
func ExampleDeriveMessages() {
	l := session.NewMemory(nil)
	appendAll := func(evs ...session.Event) {
		for _, e := range evs {
			if _, err := l.Append(e); err != nil {
				log.Fatal(err)
			}
		}
	}
	appendAll(
		session.TurnStart{Turn: 0}.Event(),
		session.UserMessage{Message: content.Message{ID: "u1", Content: content.Texts("list the files")}}.Event(),
		session.AssistantMessage{Message: content.Message{ID: "a1", Content: []content.Block{content.ToolCall("c1", "ls", `{}`)}}}.Event(),
	)
	if _, err := session.DeriveMessages(l.Events()); err != nil {
		log.Fatal(err)
	}
	appendAll(session.ToolResult{MessageID: "r1", CallID: "c1", Content: content.Texts("a.go b.go")}.Event())
	second, err := session.DeriveMessages(l.Events()) // appends only the new message
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range second {
		fmt.Println(m.ID, m.Role, m.Content[0].Type)
	}
	again, err := session.DeriveMessages(l.Events()) // nothing new: the same history
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("shared:", &again[0] == &second[0])

	edited := second[0].Clone() // never second[0].Content[0].Text = …
	edited.Content[0].Text = "list the Go files"
	fmt.Println(edited.Content[0].Text, "/", second[0].Content[0].Text)
	// Output:
	// u1 user text
	// a1 assistant tool-call
	// r1 user tool-result
	// shared: true
	// list the Go files / list the files
}
