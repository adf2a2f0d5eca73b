package session_test

import (
	"context"
	"fmt"
	"os"

	"github.com/dsh-go/dsh/session"
)

// A viewer follows a session by its Activity: held while a writer has it open, with a
// mark that moves when events are stored.
func ExampleFileStore_Activity() {
	root, _ := os.MkdirTemp("", "dsh-sessions-")
	defer os.RemoveAll(root)
	store, _ := session.Open(root, session.Options{})
	ctx := context.Background()
	l, _ := store.Create(ctx, session.Header{ID: "s1", Cwd: "/work/app"})
	l.AppendDurable(session.TurnStart{Turn: 1}.Event())
	before, _ := store.Activity(ctx, "s1")
	l.AppendDurable(session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}}.Event())
	after, _ := store.Activity(ctx, "s1")
	l.Close()
	closed, _ := store.Activity(ctx, "s1")
	fmt.Println(before.Held, after.Mark != before.Mark, closed.Held)
	// Output: true true false
}
