package durable_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/session"
)

// fullTurn logs one whole turn of a session through the host's activities, as the workflow
// does: open, turn/start + user/message, turn/end.
func fullTurn(t *testing.T, h *durable.Host, id string) {
	t.Helper()
	ctx := context.Background()
	out, err := h.Open(ctx, durable.OpenInput{SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	openTurn(t, h, id, out)
	if _, err := h.Append(ctx, durable.AppendInput{SessionID: id, Expect: out.NextSeq + 2,
		Events: []durable.LogEvent{{Kind: session.TypeTurnEnd, Turn: out.Turn + 1, Reason: session.EndCompleted}}}); err != nil {
		t.Fatal(err)
	}
}

// openTurn logs turn/start and user/message of the session's next turn.
func openTurn(t *testing.T, h *durable.Host, id string, at durable.OpenOutput) {
	t.Helper()
	if _, err := h.Append(context.Background(), durable.AppendInput{SessionID: id, Expect: at.NextSeq, Events: []durable.LogEvent{
		{Kind: session.TypeTurnStart, Turn: at.Turn + 1},
		{Kind: session.TypeUserMessage, Turn: at.Turn + 1, Text: "go"},
	}}); err != nil {
		t.Fatal(err)
	}
}

// held reports whether the host still holds a session's log open for writing: the store
// refuses a second writer while it does.
func held(t *testing.T, store session.Store, id string) bool {
	t.Helper()
	l, err := store.Resume(context.Background(), id)
	if errors.Is(err, session.ErrConflict) {
		return true
	}
	if err != nil {
		t.Fatalf("resume %s: %v", id, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return false
}

// TestHostBoundsOpenLogs checks that a host keeps at most MaxOpenLogs session logs open
// once their turns have ended, closing the least recently used first; that a log with a
// turn still open is never closed; and that a closed session goes on where it stopped.
func TestHostBoundsOpenLogs(t *testing.T) {
	f := newFixture(t, nil, func(c *durable.HostConfig) { c.MaxOpenLogs = 2 })
	ctx := context.Background()
	mid, err := f.host.Open(ctx, durable.OpenInput{SessionID: "mid"})
	if err != nil {
		t.Fatal(err)
	}
	openTurn(t, f.host, "mid", mid) // the least recently used, but its turn is open
	ids := []string{"s0", "s1", "s2", "s3", "s4"}
	for _, id := range ids {
		fullTurn(t, f.host, id)
	}
	want := map[string]bool{"mid": true, "s0": false, "s1": false, "s2": false, "s3": false, "s4": true}
	for id, w := range want {
		if got := held(t, f.store, id); got != w {
			t.Errorf("session %s held open: %v, want %v", id, got, w)
		}
	}
	// s0 was closed: its next turn continues its log where it stopped.
	out, err := f.host.Open(ctx, durable.OpenInput{SessionID: "s0"})
	if err != nil {
		t.Fatal(err)
	}
	if out.NextSeq != 3 || out.Turn != 1 {
		t.Fatalf("reopened s0 at %+v, want NextSeq 3, Turn 1", out)
	}
	fullTurn(t, f.host, "s0")
	if got := fmt.Sprint(types(f.events(t, "s0"))); got != "[turn/start user/message turn/end turn/start user/message turn/end]" {
		t.Fatalf("s0's log: %s", got)
	}
}

// TestHostOpensASessionOnce opens one new session from many activities at once: they all
// get the same log, and its appends land in order.
func TestHostOpensASessionOnce(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			out, err := f.host.Open(ctx, durable.OpenInput{SessionID: "one"})
			if err == nil && out.NextSeq != 0 {
				err = fmt.Errorf("a new session opened at seq %d", out.NextSeq)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	fullTurn(t, f.host, "one")
	if got := fmt.Sprint(types(f.events(t, "one"))); got != "[turn/start user/message turn/end]" {
		t.Fatalf("log: %s", got)
	}
}

// TestHostOpenFailureIsNotKept checks that an activity for a session the store does not
// have fails naming it, and that the failure is not remembered: the session can be opened
// afterwards.
func TestHostOpenFailureIsNotKept(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := context.Background()
	_, err := f.host.Append(ctx, durable.AppendInput{SessionID: "later", Events: []durable.LogEvent{{Kind: session.TypeTurnStart, Turn: 1}}})
	if err == nil || !strings.Contains(err.Error(), `open session "later"`) || !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("append to a missing session: %v", err)
	}
	if _, err := f.host.Model(ctx, durable.ModelInput{SessionID: "later", Turn: 1, Step: 1}); err == nil || !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("model request of a missing session: %v", err)
	}
	fullTurn(t, f.host, "later")
	if got := fmt.Sprint(types(f.events(t, "later"))); got != "[turn/start user/message turn/end]" {
		t.Fatalf("log: %s", got)
	}
}
