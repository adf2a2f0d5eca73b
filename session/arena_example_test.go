package session_test

import (
	"fmt"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/session"
)

// A store reading a session back parses its event lines through one EventArena, so that
// the payloads lie one after the other as the log orders them.
func ExampleEventArena() {
	var lines [][]byte
	for seq, m := range []content.Message{
		{ID: "u1", Role: content.RoleUser, Content: content.Texts("hello")},
		{ID: "u2", Role: content.RoleUser, Content: content.Texts("and again")},
	} {
		e, err := session.Stamp(session.UserMessage{Message: m}.Event(), int64(seq), 1_700_000_000_000)
		if err != nil {
			fmt.Println(err)
			return
		}
		line, err := session.EncodeEvent(e)
		if err != nil {
			fmt.Println(err)
			return
		}
		lines = append(lines, line)
	}

	var arena session.EventArena
	var events []session.Event
	for _, line := range lines {
		e, err := arena.ParseEvent(line)
		if err != nil {
			fmt.Println(err)
			return
		}
		events = append(events, e)
	}
	msgs, err := session.DeriveMessages(events)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range msgs {
		fmt.Println(m.ID, m.Content[0].Text)
	}
	if _, err := arena.ParseEvent([]byte(`{"type":`)); err != nil {
		fmt.Println("refused:", err != nil)
	}
	// Output:
	// u1 hello
	// u2 and again
	// refused: true
}
