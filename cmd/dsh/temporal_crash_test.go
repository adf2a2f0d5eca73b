package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/session/pgstore"
)

// TestDurableSessionWorkerCrashMidTurn kills the worker that holds the session log (and
// asks the model) with SIGKILL while a call runs on the tool worker, starts a new session
// worker, and lets the call finish: the new worker takes the turn over where the workflow
// stands, so the log does not diverge, the call's real result is logged, the turn completes
// and the log loads with every tool/call closed by exactly one tool/result and no recovery
// events; with the file store and with PostgreSQL.
func TestDurableSessionWorkerCrashMidTurn(t *testing.T) {
	t.Run("files", func(t *testing.T) { sessionWorkerCrash(t, "") })
	// The new worker waits for the crashed one's lease on the session to lapse.
	t.Run("postgres", func(t *testing.T) { sessionWorkerCrash(t, pg.Database(t)) })
}

func sessionWorkerCrash(t *testing.T, storeURL string) {
	w := newDurableWorld(t)
	w.store = storeURL
	ws := w.workspace("ws")
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(ws, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	// The first session worker's model asks for the blocked call; the second one's (it
	// replies to the rest of the turn) checks that the history it is sent carries the
	// call's result.
	first := w.script("first.jsonl", fmt.Sprintf(`{"toolCalls":[%s]}
`, bashCall("b1", "touch started; read x < gate; echo got $x")))
	rest := w.script("rest.jsonl", `{"expectToolResults":["b1"],"toolCalls":[{"id":"r1","name":"read","arguments":{"file_path":"a.txt"}}]}
{"expectToolResults":["r1"],"text":"done"}
`)
	sess := w.worker(ws, "sess", first)
	w.worker(ws, "tools", "")
	id := newSessionID()
	ran := w.run(t.Context(), ws, id, "--queue", "sess", "--tool-queue", "tools", "--heartbeat-timeout", "3s", "crash the session worker")
	testwait.Until(t, "the bash body to start", func() bool {
		_, err := os.Stat(filepath.Join(ws, "started"))
		return err == nil
	})
	sess.kill()
	w.worker(ws, "sess", rest)
	// The body reads the gate: it has opened it already or is about to.
	g, err := os.OpenFile(gate, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	g.Close()
	res := testwait.Recv(t, ran, "dsh run to end")
	res.want(t, 0)
	mustContain(t, "stdout", res.stdout, "tool bash (b1): ok", "tool read (r1): ok", "done")

	var store session.Store
	if storeURL != "" {
		ps, err := pgstore.Open(t.Context(), storeURL, pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Close()
		store = ps
	} else if store, err = session.Open(filepath.Join(w.home, "sessions"), session.Options{}); err != nil {
		t.Fatal(err)
	}
	l, err := store.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if l.Recovered != 0 {
		t.Fatalf("the log needs %d recovery events: %v", l.Recovered, typesOf(l.Events))
	}
	results := durableResults(t, l.Events)
	if len(results) != 2 {
		t.Fatalf("results %v, want b1 and r1", results)
	}
	if r := results["b1"]; r.IsError || !strings.Contains(textOf(r.Content), "got go") {
		t.Fatalf("b1 was not closed by its own result: %+v", r)
	}
	if r := results["r1"]; r.IsError {
		t.Fatalf("r1 failed: %+v", r)
	}
	var turns int
	for _, e := range l.Events {
		if e.Type == session.TypeTurnEnd {
			turns++
			if end, err := session.DecodeTurnEnd(e); err != nil || end.Reason.Kind != session.EndCompleted {
				t.Fatalf("turn end %+v %v", end, err)
			}
		}
	}
	if turns != 1 {
		t.Fatalf("%d turn ends: %v", turns, typesOf(l.Events))
	}
}
