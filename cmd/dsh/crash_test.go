package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-go/dsh/session"
)

// crashScript is a multi-step scripted session: parallel reads, commands and writes. Every
// command also leaves "sleep <marker>" running in a new session, for the test to find
// should anything survive.
func crashScript(marker string) string {
	const script = `{"toolCalls":[{"id":"r1","name":"read","arguments":{"file_path":"a.txt"}},{"id":"r2","name":"read","arguments":{"file_path":"b.txt"}},{"id":"b1","name":"bash","arguments":{"command":"LEAVE sleep 0.05; echo one","description":"Wait and print one"}}]}
{"toolCalls":[{"id":"w1","name":"write","arguments":{"file_path":"c.txt","content":"written\n"}},{"id":"b2","name":"bash","arguments":{"command":"LEAVE sleep 0.05; echo two","description":"Wait and print two"}}]}
{"toolCalls":[{"id":"r3","name":"read","arguments":{"file_path":"c.txt"}},{"id":"b3","name":"bash","arguments":{"command":"LEAVE sleep 0.05; echo three > d.txt","description":"Write d.txt"}}]}
{"text":"done"}
`
	return strings.ReplaceAll(script, "LEAVE", "setsid sleep "+marker+" </dev/null >/dev/null 2>&1 &")
}

// TestRunSurvivesSIGKILL runs "dsh run" with a scripted model as a subprocess, kills it with
// SIGKILL at random points, and loads each log: it must load (at most the torn last batch
// is gone), every tool/call must be closed by exactly one tool/result (recovery results
// for the open ones), the log must never claim less than happened (a file the tools wrote
// has its tool/call in the log), and the session must resume to completion. Only the dsh
// process is killed, not its process group, and no process its commands started may
// survive it. Every run must check a session: a kill that lands before the first batch was
// written cannot happen: the kill point is measured from the log's creation.
func TestRunSurvivesSIGKILL(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	scriptPath := filepath.Join(dir, "crash.jsonl")
	resumePath := filepath.Join(dir, "resume.jsonl")
	marker := uniqueMarker()
	if err := os.WriteFile(scriptPath, []byte(crashScript(marker)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(resumePath, []byte(`{"text":"resumed"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	start := func(ctx context.Context, home, ws string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Dir = ws
		// Spill directories go under the test's directory: a killed run cannot remove its own.
		cmd.Env = append(os.Environ(), "DSH_TEST_AS_DSH=1", "DSH_HOME="+home, "DSH_SPILL_DIR="+dir, "NO_COLOR=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd
	}
	setup := func(t *testing.T) (home, ws string) {
		home, ws = t.TempDir(), t.TempDir()
		for name, text := range map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n"} {
			if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return home, ws
	}

	// One undisturbed run gives the time span to kill within.
	home, ws := setup(t)
	if out, err := start(t.Context(), home, ws, "run", "--script", scriptPath, "crash test").CombinedOutput(); err != nil {
		t.Fatalf("undisturbed run: %v\n%s", err, out)
	}
	// The span to kill within is the undisturbed run's first to last event, not its
	// process's life, so that most kills land while the session is still being written.
	span := sessionSpan(t, home) + 20*time.Millisecond

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	const runs = 12
	checked := 0
	for i := range runs {
		t.Run(fmt.Sprintf("kill%02d", i), func(t *testing.T) {
			home, ws := setup(t)
			cmd := start(t.Context(), home, ws, "run", "--script", scriptPath, "crash test")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { cmd.Wait(); close(exited) }()
			// The kill point is taken from the moment the session's log exists, not from
			// the process's start, which a busy machine can delay by more than the span.
			sessions := filepath.Join(home, "sessions")
			id := waitForSession(t, sessions, exited)
			delay := time.Duration(rng.Int64N(int64(span)))
			select {
			case <-time.After(delay):
			case <-exited:
			}
			cmd.Process.Kill() // dsh alone: its commands must not outlive it
			<-exited
			noSurvivors(t, marker, delay)

			store, err := session.Open(sessions, session.Options{})
			if err != nil {
				t.Fatal(err)
			}
			checked++
			loaded, err := store.Load(t.Context(), id)
			if err != nil {
				t.Fatalf("killed after %v: load: %v", delay, err)
			}
			t.Logf("killed after %v: %d events, %d recovery events, %d torn bytes", delay, len(loaded.Events), loaded.Recovered, loaded.TornBytes)
			checkClosed(t, loaded.Events)
			if _, err := os.Stat(filepath.Join(ws, "c.txt")); err == nil && !hasCall(loaded.Events, "w1") {
				t.Fatalf("killed after %v: c.txt was written but the log has no tool/call for w1", delay)
			}
			if _, err := os.Stat(filepath.Join(ws, "d.txt")); err == nil && !hasCall(loaded.Events, "b3") {
				t.Fatalf("killed after %v: d.txt was written but the log has no tool/call for b3", delay)
			}

			// The session resumes: recovery results are written, and a new turn completes.
			out, err := start(t.Context(), home, ws, "run", "--resume", id, "--script", resumePath, "go on").CombinedOutput()
			if err != nil {
				t.Fatalf("resume after a kill at %v: %v\n%s", delay, err, out)
			}
			after, err := store.Load(t.Context(), id)
			if err != nil || after.Recovered != 0 || after.TornBytes != 0 {
				t.Fatalf("after resume: recovered %d, torn %d, err %v", after.Recovered, after.TornBytes, err)
			}
			checkClosed(t, after.Events)
			if last := after.Events[len(after.Events)-1]; last.Type != session.TypeTurnEnd {
				t.Fatalf("after resume the log ends with %s", last.Type)
			}
		})
	}
	if checked != runs {
		t.Fatalf("%d of %d kills were checked", checked, runs)
	}
}

// noSurvivors waits, for a bounded time, until no process a killed dsh's commands started
// ("sleep <marker>") is alive, and fails otherwise.
func noSurvivors(t *testing.T, marker string, delay time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for len(sleepers(marker)) > 0 {
		select {
		case <-ctx.Done():
			pids := sleepers(marker)
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("killed after %v: %d processes its commands started survived dsh: %v", delay, len(pids), pids)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkClosed checks that every tool/call has exactly one tool/result citing it and that
// every turn that started has ended.
func checkClosed(t *testing.T, events []session.Event) {
	t.Helper()
	calls := map[int64]string{}
	results := map[int64]int{}
	open := 0
	for _, e := range events {
		switch e.Type {
		case session.TypeToolCall:
			c, err := session.DecodeToolCall(e)
			if err != nil {
				t.Fatal(err)
			}
			calls[e.Seq] = c.CallID
		case session.TypeToolResult:
			for _, s := range e.SourceEventSeqs {
				results[s]++
			}
		case session.TypeTurnStart:
			open++
		case session.TypeTurnEnd:
			open--
		}
	}
	for seq, id := range calls {
		if results[seq] != 1 {
			t.Fatalf("tool/call %s (seq %d) has %d tool/results", id, seq, results[seq])
		}
	}
	if open != 0 {
		var types []string
		for _, e := range events {
			types = append(types, e.Type)
		}
		t.Fatalf("%d turns left open: %s", open, strings.Join(types, " "))
	}
}

func hasCall(events []session.Event, callID string) bool {
	for _, e := range events {
		if e.Type == session.TypeToolCall {
			if c, err := session.DecodeToolCall(e); err == nil && c.CallID == callID {
				return true
			}
		}
	}
	return false
}

// sessionSpan returns the time from the first to the last event of the only session under
// home.
func sessionSpan(t *testing.T, home string) time.Duration {
	t.Helper()
	store, err := session.Open(filepath.Join(home, "sessions"), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	infos, err := store.List(t.Context())
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions: %d, %v", len(infos), err)
	}
	loaded, err := store.Load(t.Context(), infos[0].Header.ID)
	if err != nil {
		t.Fatal(err)
	}
	first, last := loaded.Events[0].Time, loaded.Events[len(loaded.Events)-1].Time
	return time.Duration(last-first) * time.Millisecond
}

// waitForSession waits, for a bounded time, until the file store under root lists a session,
// and returns its id. It fails if the process exits first without one.
func waitForSession(t *testing.T, root string, exited <-chan struct{}) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for {
		if _, err := os.Stat(root); err == nil {
			store, err := session.Open(root, session.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if infos, err := store.List(ctx); err == nil && len(infos) > 0 {
				return infos[0].Header.ID
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no session was created under %s within the bound", root)
		case <-exited:
			// The run may have finished between the look and the exit: look once more.
			store, err := session.Open(root, session.Options{})
			if err == nil {
				if infos, err := store.List(t.Context()); err == nil && len(infos) > 0 {
					return infos[0].Header.ID
				}
			}
			t.Fatalf("dsh exited without creating a session under %s", root)
		case <-time.After(2 * time.Millisecond):
		}
	}
}
