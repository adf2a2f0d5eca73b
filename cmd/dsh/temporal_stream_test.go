package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-go/dsh/internal/testwait"
)

// TestDurableRunStreamsTheTurn runs "dsh run --temporal" as a process and checks that it
// shows the turn as it goes, as an in-process run does: the first call's result card is on
// the terminal while the second call is still blocked, and the rest follows when it ends.
func TestDurableRunStreamsTheTurn(t *testing.T) {
	w := newDurableWorld(t)
	ws := w.workspace("ws")
	gate := filepath.Join(ws, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	script := w.script("stream.jsonl", fmt.Sprintf(`{"text":"two commands","toolCalls":[%s,%s]}
{"text":"all done"}
`, bashCall("b1", "printf '%s-%s\\n' alpha omega"), bashCall("b2", "touch started; read x < gate; printf '%s-%s\\n' second $x")))
	w.worker(ws, "q", script)
	id := newSessionID()
	run := w.start(ws, "run", "--temporal", w.addr, "--queue", "q", "--resume", id, "stream it")
	testwait.Until(t, "the first call's result while the second runs", func() bool {
		_, err := os.Stat(filepath.Join(ws, "started"))
		return err == nil && strings.Contains(run.out.String(), "alpha-omega")
	})
	select {
	case <-run.exited:
		t.Fatalf("dsh run ended before the second call did:\n%s", run.out)
	default:
	}
	if out := run.out.String(); strings.Contains(out, "second-") || strings.Contains(out, "all done") {
		t.Fatalf("the output shows what has not happened yet:\n%s", out)
	}
	g, err := os.OpenFile(gate, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	g.Close()
	if err := run.wait(t, "dsh run"); err != nil {
		t.Fatalf("dsh run: %v\n%s", err, run.out)
	}
	out := run.out.String()
	// The transcript, in log order: the request, the reply's text, both calls' cards with
	// their results, the answer, how the turn ended; then the summary.
	at := 0
	for _, want := range []string{"› stream it", "two commands", "alpha-omega", "second-go", "all done", "— turn 1 completed", "tool bash (b2): ok"} {
		i := strings.Index(out[at:], want)
		if i < 0 {
			t.Fatalf("no %q after offset %d in the output:\n%s", want, at, out)
		}
		at += i + len(want)
	}
	durableResults(t, w.events(id))
}

// TestDurableRunJSON: with --json, dsh run --temporal prints the turn's events as JSON
// lines, in log order, and then the summary object, as an in-process run does.
func TestDurableRunJSON(t *testing.T) {
	w := newDurableWorld(t)
	ws := w.workspace("ws")
	script := w.script("json.jsonl", fmt.Sprintf(`{"toolCalls":[%s]}
{"text":"ok"}
`, bashCall("b1", "echo hi")))
	w.worker(ws, "q", script)
	id := newSessionID()
	res := testwait.Recv(t, w.run(t.Context(), ws, id, "--queue", "q", "--json", "as json"), "dsh run to end")
	res.want(t, 0)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	var types []string
	var last map[string]any
	for _, l := range lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("stdout line %q is not JSON: %v\n%s", l, err, res.stdout)
		}
		types = append(types, fmt.Sprint(v["type"]))
		last = v
	}
	logged := typesOf(w.events(id))
	if got := strings.Join(types[:len(types)-1], " "); got != strings.Join(logged, " ") {
		t.Fatalf("stdout events %s, the log %s", got, logged)
	}
	want := map[string]any{"type": "summary", "status": "completed", "answer": "ok", "sessionId": id, "turn": float64(1)}
	if fmt.Sprint(last) != fmt.Sprint(want) {
		t.Fatalf("summary %v, want %v", last, want)
	}
}
