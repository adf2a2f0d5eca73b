package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/session"
)

// TestReopen checks Reopen on both stores: a session left with an open turn (a writer
// crashed mid-call) is reopened as it stands, its owner finishes the turn at the seqs it
// expects, and the log then loads without recovery events; both stores keep the same
// bytes. Reopen keeps the single-writer rules of Resume.
func TestReopen(t *testing.T) {
	got := map[string][]string{}
	for _, k := range stores {
		t.Run(k.name, func(t *testing.T) {
			c := newClock()
			st := k.open(t, c.Now)
			open := turnEvents()
			write(t, st, c, session.Header{ID: "o1", Cwd: "/w"}, open)
			w, err := st.Reopen(t.Context(), "o1")
			if err != nil {
				t.Fatal(err)
			}
			if w.Len() != len(open) || w.Durable() != len(open) {
				t.Fatalf("reopened log Len %d Durable %d, want %d: no recovery events", w.Len(), w.Durable(), len(open))
			}
			// A second writer is refused while the owner holds the log.
			if w2, err := st.Reopen(t.Context(), "o1"); !errors.Is(err, session.ErrConflict) {
				if err == nil {
					w2.Close()
				}
				t.Errorf("second Reopen = %v, want ErrConflict", err)
			}
			if w2, err := st.Resume(t.Context(), "o1"); !errors.Is(err, session.ErrConflict) {
				if err == nil {
					w2.Close()
				}
				t.Errorf("Resume while reopened = %v, want ErrConflict", err)
			}
			// The owner writes the rest of the turn at the seqs it expects.
			rest := []session.Event{
				session.ToolResult{Turn: 1, Step: 0, MessageID: "r1", CallID: "c1", Content: content.Texts("A"), SourceEventSeqs: []int64{4}}.Event(),
				session.ToolCall{Turn: 1, Step: 0, CallID: "c2", Name: "bash", Arguments: `{"command":"ls"}`}.Event(),
				session.ToolResult{Turn: 1, Step: 0, MessageID: "r2", CallID: "c2", Content: content.Texts("a.txt"), SourceEventSeqs: []int64{6}}.Event(),
				session.StepEnd{Turn: 1, Step: 0}.Event(),
				session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}}.Event(),
			}
			for i, e := range rest {
				c.Advance(time.Millisecond)
				out, err := w.AppendDurable(e)
				if err != nil {
					t.Fatalf("append %s: %v", e.Type, err)
				}
				if want := int64(len(open) + i); out.Seq != want {
					t.Fatalf("%s landed at seq %d, want %d", e.Type, out.Seq, want)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			l, err := st.Load(t.Context(), "o1")
			if err != nil {
				t.Fatal(err)
			}
			if l.Recovered != 0 || len(l.Events) != len(open)+len(rest) {
				t.Fatalf("loaded %d events, %d recovered; want %d and none", len(l.Events), l.Recovered, len(open)+len(rest))
			}
			for _, e := range l.Events {
				if e.Type == session.TypeToolResult {
					if r, err := session.DecodeToolResult(e); err != nil || r.IsError {
						t.Errorf("result %+v, %v: a synthetic result closed a call", r, err)
					}
				}
			}
			got[k.name] = lines(t, l.Events)

			// A reopened session whose turn is closed reopens unchanged too, and a missing
			// one is not found.
			w, err = st.Reopen(t.Context(), "o1")
			if err != nil {
				t.Fatal(err)
			}
			if w.Len() != len(l.Events) {
				t.Errorf("reopened a closed session at %d events, want %d", w.Len(), len(l.Events))
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Reopen(t.Context(), "missing"); !errors.Is(err, session.ErrNotFound) {
				t.Errorf("Reopen of a missing session = %v, want ErrNotFound", err)
			}
		})
	}
	if diff := cmp.Diff(got["file"], got["postgres"]); diff != "" {
		t.Errorf("the stores differ (-file +postgres):\n%s", diff)
	}
}
