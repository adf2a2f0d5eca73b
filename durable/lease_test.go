package durable_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
)

// heldSession creates a session with an open turn and step and returns its writer, which
// holds the session as a crashed worker's lease does until it lapses.
func heldSession(t *testing.T, f *fixture, id string) session.Writer {
	t.Helper()
	w, err := f.store.Create(t.Context(), session.Header{ID: id, Cwd: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []session.Event{
		session.TurnStart{Turn: 1}.Event(),
		session.UserMessage{Message: content.Message{Content: content.Texts("go")}}.Event(),
		session.StepStart{Turn: 1, Step: 1}.Event(),
	} {
		if _, err := w.AppendDurable(e); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// TestModelWaitsForAHeldSession runs a model request for a session another writer still
// holds: the request waits instead of failing, takes the session once the writer lets go,
// and appends the reply where the workflow expects it. A request
// whose context ends while it waits fails with the conflict.
func TestModelWaitsForAHeldSession(t *testing.T) {
	t.Run("released", func(t *testing.T) {
		f := newFixture(t, []script.Reply{{Text: "hi"}}, nil)
		held := heldSession(t, f, "s-held")
		waits := 0
		durable.WaitForLease(f.host, 0, func() {
			waits++
			if waits == 1 {
				if err := held.Close(); err != nil {
					t.Error(err)
				}
			}
		})
		out, err := f.host.Model(t.Context(), durable.ModelInput{SessionID: "s-held", Turn: 1, Step: 1, Expect: 3})
		if err != nil {
			t.Fatal(err)
		}
		if waits != 1 || out.Seq != 3 || out.Text != "hi" {
			t.Fatalf("waited %d times, reply %+v", waits, out)
		}
		if err := f.host.Close(); err != nil {
			t.Fatal(err)
		}
		l, err := f.store.Load(t.Context(), "s-held")
		if err != nil {
			t.Fatal(err)
		}
		// On disk: the three events and the reply (Load adds recovery events that close the
		// open step and turn, which the workflow would have written).
		if len(l.Events)-l.Recovered != 4 || l.Events[3].Type != session.TypeAssistantMessage {
			t.Fatalf("log %v, %d recovered", types(l.Events), l.Recovered)
		}
	})
	t.Run("given up", func(t *testing.T) {
		f := newFixture(t, []script.Reply{{Text: "hi"}}, nil)
		held := heldSession(t, f, "s-held")
		defer held.Close()
		ctx, cancel := context.WithCancel(t.Context())
		durable.WaitForLease(f.host, 0, cancel)
		_, err := f.host.Model(ctx, durable.ModelInput{SessionID: "s-held", Turn: 1, Step: 1, Expect: 3})
		if !errors.Is(err, session.ErrConflict) {
			t.Fatalf("Model = %v, want the conflict", err)
		}
	})
}
