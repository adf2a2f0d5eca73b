package session_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/session"
)

// A listing names sessions by a short prefix of their id and says what each was about.
func ExampleStore_Resolve() {
	root, err := os.MkdirTemp("", "dsh-sessions-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	store, err := session.Open(root, session.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	l, err := store.Create(ctx, session.Header{ID: "20261201T103900Z-3f9a2c1d", Cwd: "/home/me/project"})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range []session.Event{
		session.TurnStart{Turn: 1}.Event(),
		session.UserMessage{Message: content.Message{Role: content.RoleUser, Source: &content.Source{Kind: "user"}, Content: content.Texts("fix the flaky test")}}.Event(),
		session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}}.Event(),
	} {
		if _, err := l.Append(e); err != nil {
			log.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		log.Fatal(err)
	}

	id, err := store.Resolve(ctx, "20261201T1039")
	if err != nil {
		log.Fatal(err)
	}
	loaded, err := store.Load(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	sum := session.Summarize(loaded.Header, loaded.Events)
	fmt.Printf("%s: %q, %d turn, %s\n", id, sum.FirstPrompt, sum.Turns, sum.LastEnd.Kind)
	// Output: 20261201T103900Z-3f9a2c1d: "fix the flaky test", 1 turn, completed
}
