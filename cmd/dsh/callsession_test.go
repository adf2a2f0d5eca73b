package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/session"
)

// storedSessions loads every session of the sandbox's store with the session package.
func (s *sandbox) storedSessions(t *testing.T) []*session.Loaded {
	t.Helper()
	store, err := session.Open(filepath.Join(s.home, "sessions"), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	infos, err := store.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []*session.Loaded
	for _, in := range infos {
		l, err := store.Load(context.Background(), in.Header.ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// describeEvents renders a log's events as "type" or "type name/outcome" lines.
func describeEvents(t *testing.T, evs []session.Event) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		d := e.Type
		switch e.Type {
		case session.TypeToolCall:
			p, err := session.DecodeToolCall(e)
			if err != nil {
				t.Fatal(err)
			}
			d += " " + p.Name + " " + p.Arguments
		case session.TypeToolResult:
			p, err := session.DecodeToolResult(e)
			if err != nil {
				t.Fatal(err)
			}
			d += map[bool]string{true: " error", false: " ok"}[p.IsError]
			if len(p.SourceEventSeqs) != 1 {
				t.Errorf("tool/result %s cites %v, want its tool/call", p.CallID, p.SourceEventSeqs)
			}
		case session.TypeCodeDispatchStart:
			p, err := session.DecodeCodeDispatchStart(e)
			if err != nil {
				t.Fatal(err)
			}
			d += " " + p.Name
		case session.TypeApprovalDecided:
			p, err := session.DecodeApprovalDecided(e)
			if err != nil {
				t.Fatal(err)
			}
			d += " " + p.Outcome
		case session.TypeTurnEnd:
			p, err := session.DecodeTurnEnd(e)
			if err != nil {
				t.Fatal(err)
			}
			d += " " + p.Reason.Kind
		}
		out = append(out, d)
	}
	return out
}

// TestCallWritesSession: each dsh call invocation is one session holding every call, result,
// sub-call and approval, which session ls lists and session show renders.
func TestCallWritesSession(t *testing.T) {
	s := newSandbox(t)
	s.write("a.txt", "alpha\n")
	program, _ := json.Marshal(map[string]string{
		"code":        `const r = await tools.read({ file_path: "a.txt" }); console.log(typeof r);`,
		"description": "read a file",
	})
	s.dsh("call", "--mode", "both", "--ask", "bash(echo *)",
		"read", `{"file_path":"a.txt"}`,
		"run_code", string(program),
		"bash", `{"command":"echo hi","description":"greet"}`).want(t, 1)
	s.dsh("call", "glob", `{"pattern":"*.txt"}`).want(t, 0)

	logs := s.storedSessions(t)
	if len(logs) != 2 {
		t.Fatalf("%d sessions, want one per invocation", len(logs))
	}
	first := logs[0]
	if len(logs[1].Events) > len(first.Events) {
		first = logs[1]
	}
	if first.Header.Client != "dsh call" || first.Header.Cwd != s.ws || first.Recovered != 0 {
		t.Errorf("header %+v, %d recovery events", first.Header, first.Recovered)
	}
	got := describeEvents(t, first.Events)
	want := []string{
		"turn/start",
		`tool/call read {"file_path":"a.txt"}`, "tool/result ok",
		"tool/call run_code " + string(program),
		"tool/code-dispatch-start read", "tool/code-dispatch",
		"tool/result ok",
		`tool/call bash {"command":"echo hi","description":"greet"}`,
		"approval/asked", "approval/decided unavailable",
		"tool/result error",
		"turn/end completed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}

	ls := s.dsh("session", "ls").want(t, 0)
	mustContain(t, "session ls", ls.stdout, "BY", "dsh call", first.Header.ID)
	show := s.dsh("session", "show", first.Header.ID).want(t, 0)
	mustContain(t, "session show", show.stdout, "Read a.txt", "run_code", "greet", "— turn 1 completed")

	script := filepath.Join(t.TempDir(), "script.jsonl")
	if err := os.WriteFile(script, []byte(`{"text":"ok"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := s.dsh("run", "--script", script, "--resume", first.Header.ID, "more").want(t, 1)
	mustContain(t, "run --resume of a call session", r.stderr, "records the tool calls of dsh call, not a conversation")
}
