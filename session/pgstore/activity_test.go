package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/session"
)

// TestActivity: both stores tell whether a writer holds a session and move its mark with
// every stored batch, without reading the events; an unknown session is ErrNotFound.
func TestActivity(t *testing.T) {
	for _, k := range stores {
		t.Run(k.name, func(t *testing.T) {
			c := newClock()
			st := k.open(t, c.Now)
			w, ok := st.(session.Watcher)
			if !ok {
				t.Fatalf("%T is not a session.Watcher", st)
			}
			if _, err := w.Activity(t.Context(), "nobody"); !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("Activity of an unknown session = %v, want ErrNotFound", err)
			}
			l, err := st.Create(t.Context(), session.Header{ID: "a1", Cwd: "/w"})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if _, err := l.AppendDurable(session.TurnStart{Turn: 1}.Event()); err != nil {
				t.Fatal(err)
			}
			first, err := w.Activity(t.Context(), "a1")
			if err != nil || !first.Held {
				t.Fatalf("while written: %+v, %v; want held", first, err)
			}
			again, err := w.Activity(t.Context(), "a1")
			if err != nil || again != first {
				t.Fatalf("unchanged session: %+v then %+v (%v)", first, again, err)
			}
			if _, err := l.AppendDurable(session.UserMessage{Message: content.Message{ID: "u1", Content: content.Texts("hello")}}.Event()); err != nil {
				t.Fatal(err)
			}
			grown, err := w.Activity(t.Context(), "a1")
			if err != nil || !grown.Held || grown.Mark == first.Mark {
				t.Fatalf("after an append: %+v (before %+v), %v; want held with a new mark", grown, first, err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			closed, err := w.Activity(t.Context(), "a1")
			if err != nil || closed.Held || closed.Mark != grown.Mark {
				t.Fatalf("after Close: %+v, %v; want not held, mark %d", closed, err, grown.Mark)
			}
		})
	}
	// A crashed writer's lease holds the session until it lapses.
	t.Run("postgres/lapsed-lease", func(t *testing.T) {
		c := newClock()
		st := openPG(t, pg.Database(t), c.Now)
		l, err := st.Create(t.Context(), session.Header{ID: "crashed", Cwd: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := l.AppendDurable(session.TurnStart{Turn: 1}.Event()); err != nil {
			t.Fatal(err)
		}
		if a, err := st.Activity(t.Context(), "crashed"); err != nil || !a.Held {
			t.Fatalf("within the lease: %+v, %v", a, err)
		}
		c.Advance(leaseTTL + time.Millisecond)
		if a, err := st.Activity(t.Context(), "crashed"); err != nil || a.Held {
			t.Fatalf("after the lease lapsed: %+v, %v; want not held", a, err)
		}
	})
}
