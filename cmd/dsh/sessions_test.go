package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/session"
)

// writeScript writes a scripted model's replies and returns the file.
func writeScript(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// storedIDs lists the ids in the sandbox's session store.
func (s *sandbox) storedIDs() []string {
	s.t.Helper()
	store, err := session.Open(filepath.Join(s.home, "sessions"), session.Options{})
	if err != nil {
		s.t.Fatal(err)
	}
	infos, err := store.List(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	var ids []string
	for _, in := range infos {
		ids = append(ids, in.Header.ID)
	}
	return ids
}

// TestFailedFirstTurn: a first turn whose model call fails prints the error once, in plain
// words, leaves no session behind and suggests no "continue".
func TestFailedFirstTurn(t *testing.T) {
	for _, status := range []int{400, 401} {
		t.Run(httpStatus(status), func(t *testing.T) {
			s := newSandbox(t)
			srv := newChatServer(t, reply{status: status}, reply{status: status}, reply{status: status}, reply{status: status}, reply{status: status})
			s.env["K"] = "sk"
			r := s.dsh("run", "--base-url", srv.srv.URL, "--api-key-env", "K", "hi").want(t, 1)
			msg := fmt.Sprintf("status %d", status)
			if n := strings.Count(r.stderr, msg); n != 1 {
				t.Errorf("the error %q is printed %d times:\n%s", msg, n, r.stderr)
			}
			for _, bad := range []string{"continue:", "--resume", "dsh run: the turn failed", "replay:"} {
				if strings.Contains(r.stderr, bad) {
					t.Errorf("stderr holds %q:\n%s", bad, r.stderr)
				}
			}
			mustContain(t, "stderr", r.stderr, "— turn 1 failed: ", "nothing was saved: the session had no reply")
			if ids := s.storedIDs(); len(ids) != 0 {
				t.Errorf("the failed turn left sessions %v", ids)
			}

			// With --json: the events, then a summary saying it failed; the error once on stderr.
			r = s.dsh("run", "--json", "--base-url", srv.srv.URL, "--api-key-env", "K", "hi").want(t, 1)
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			var sum map[string]any
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
				t.Fatal(err)
			}
			if sum["type"] != "summary" || sum["status"] != "error" || sum["sessionId"] != nil || !strings.Contains(sum["error"].(string), msg) {
				t.Errorf("summary = %v", sum)
			}
			if n := strings.Count(r.stderr, msg); n != 1 {
				t.Errorf("--json: the error is printed %d times:\n%s", n, r.stderr)
			}
			if ids := s.storedIDs(); len(ids) != 0 {
				t.Errorf("the failed --json turn left sessions %v", ids)
			}
		})
	}
}

func httpStatus(status int) string { return fmt.Sprintf("HTTP %d", status) }

// TestFailedLaterTurnKeepsSession: a failed turn in a session that has replies keeps it.
func TestFailedLaterTurnKeepsSession(t *testing.T) {
	s := newSandbox(t)
	srv := newChatServer(t, textReply("One."), reply{status: 400})
	r := s.dsh("run", "--base-url", srv.srv.URL, "first").want(t, 0)
	id, _ := sessionID(t, r.stderr)
	r = s.dsh("run", "--base-url", srv.srv.URL, "--continue", "second").want(t, 1)
	mustContain(t, "stderr", r.stderr, "session "+id, "— turn 2 failed: ", "continue: dsh run --continue")
	if ids := s.storedIDs(); len(ids) != 1 || ids[0] != id {
		t.Errorf("sessions %v, want %s kept", ids, id)
	}
}

// TestRunContinue: --continue picks this workspace's most recently active session, not
// another workspace's, and says so when there is none.
func TestRunContinue(t *testing.T) {
	s := newSandbox(t)
	other := t.TempDir()
	sc := writeScript(t, `{"text":"A"}`, `{"text":"B"}`, `{"text":"C"}`, `{"text":"D"}`)
	r := s.dsh("run", "--continue", "--script", sc, "hi").want(t, 1)
	mustContain(t, "stderr", r.stderr, "dsh run: no earlier session in "+s.ws+" to continue")
	first, _ := sessionID(t, s.dsh("run", "--script", sc, "one").want(t, 0).stderr)
	second, _ := sessionID(t, s.dsh("run", "--script", writeScript(t, `{"text":"B"}`, `{"text":"C"}`), "two").want(t, 0).stderr)
	s.dsh("run", "--workspace", other, "--script", sc, "elsewhere").want(t, 0)
	r = s.dsh("run", "--continue", "--script", writeScript(t, `{"text":"C"}`), "three").want(t, 0)
	got, _ := sessionID(t, r.stderr)
	if got != second || got == first {
		t.Errorf("--continue took %s, want the last one %s", got, second)
	}
	mustContain(t, "stderr", r.stderr, "— turn 2 completed")
	r = s.dsh("run", "--continue", "--resume", first, "x").want(t, 2)
	mustContain(t, "stderr", r.stderr, "--resume and --continue exclude each other")
}

// TestSessionIDPrefixes: every command taking a session id takes a unique prefix; an
// ambiguous one lists the candidates.
func TestSessionIDPrefixes(t *testing.T) {
	s := newSandbox(t)
	store, err := session.Open(filepath.Join(s.home, "sessions"), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"20261201T103900Z-aaaa0001", "20261201T103900Z-aaaa0002", "20261201T110000Z-bbbb0001"} {
		l, err := store.Create(context.Background(), session.Header{ID: id, Cwd: s.ws})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range []session.Event{
			session.TurnStart{Turn: 1}.Event(),
			session.UserMessage{Message: content.Message{Role: content.RoleUser, Source: &content.Source{Kind: "user"}, Content: content.Texts("prompt of " + id)}}.Event(),
			session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}}.Event(),
		} {
			if _, err := l.AppendDurable(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	show := s.dsh("session", "show", "20261201T1100").want(t, 0)
	mustContain(t, "show by prefix", show.stdout, "› prompt of 20261201T110000Z-bbbb0001")
	r := s.dsh("session", "show", "20261201T1039").want(t, 1)
	mustContain(t, "ambiguous", r.stderr, `dsh session: session id "20261201T1039" is ambiguous: it matches 20261201T103900Z-aaaa0001, 20261201T103900Z-aaaa0002`)
	r = s.dsh("run", "--resume", "20261201T1100", "--script", writeScript(t, `{"text":"resumed"}`), "more").want(t, 0)
	mustContain(t, "resume by prefix", r.stderr, "session 20261201T110000Z-bbbb0001", "— turn 2 completed")
	r = s.dsh("run", "--resume", "2026", "--script", writeScript(t, `{"text":"x"}`), "more").want(t, 1)
	mustContain(t, "ambiguous resume", r.stderr, `is ambiguous: it matches 20261201T103900Z-aaaa0001, 20261201T103900Z-aaaa0002, 20261201T110000Z-bbbb0001`)
	r = s.dsh("session", "rm", "20261201T103900Z-aaaa0002", "2026120").want(t, 1)
	mustContain(t, "rm with an ambiguous id", r.stderr, "is ambiguous")
	if n := len(s.storedIDs()); n != 3 {
		t.Errorf("a failed rm removed something: %d sessions left", n)
	}
	r = s.dsh("session", "rm", "20261201T103900Z-aaaa0002", "20261201T11").want(t, 0)
	if r.stdout != "removed 20261201T103900Z-aaaa0002\nremoved 20261201T110000Z-bbbb0001\n" {
		t.Errorf("rm printed %q", r.stdout)
	}
	if ids := s.storedIDs(); len(ids) != 1 || ids[0] != "20261201T103900Z-aaaa0001" {
		t.Errorf("left %v", ids)
	}
}

// TestSessionList: this workspace's sessions by default, every one with --all, with the
// time, turns, status and first prompt.
func TestSessionList(t *testing.T) {
	s := newSandbox(t)
	other := t.TempDir()
	s.dsh("run", "--script", writeScript(t, `{"text":"ok"}`), "summarize the README file please, in detail and at length").want(t, 0)
	s.dsh("run", "--workspace", other, "--script", writeScript(t, `{"text":"ok"}`), "elsewhere").want(t, 0)
	ls := s.dsh("session", "ls").want(t, 0)
	mustContain(t, "ls", ls.stdout, "ID", "ACTIVE", "TURNS", "STATUS", "FIRST PROMPT", "  1 ", "completed", "summarize the README file please, in detail and…")
	if strings.Contains(ls.stdout, "elsewhere") {
		t.Errorf("ls shows another workspace's session:\n%s", ls.stdout)
	}
	all := s.dsh("session", "ls", "--all").want(t, 0)
	mustContain(t, "ls --all", all.stdout, "elsewhere", "summarize the README", "WORKSPACE", other)
	js := s.dsh("session", "ls", "--json").want(t, 0)
	var o map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(js.stdout)), &o); err != nil {
		t.Fatalf("ls --json: %v\n%s", err, js.stdout)
	}
	if o["turns"] != 1.0 || o["status"] != "completed" || !strings.HasPrefix(o["firstPrompt"].(string), "summarize") || o["cwd"] != s.ws {
		t.Errorf("ls --json = %v", o)
	}
	empty := newSandbox(t)
	r := empty.dsh("session", "ls").want(t, 0)
	mustContain(t, "empty ls", r.stdout, "no sessions in this directory")
}

// TestSessionPrune removes sessions by age, keeping the most recent ones, and --dry-run
// removes nothing.
func TestSessionPrune(t *testing.T) {
	s := newSandbox(t)
	now := time.Now()
	ages := map[string]time.Duration{"s40": 40 * 24 * time.Hour, "s10": 10 * 24 * time.Hour, "s0": 0}
	for id, age := range ages {
		at := now.Add(-age)
		store, err := session.Open(filepath.Join(s.home, "sessions"), session.Options{Now: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		l, err := store.Create(context.Background(), session.Header{ID: id, Cwd: s.ws})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendDurable(session.TurnStart{Turn: 1}.Event()); err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	tests := []struct {
		args []string
		out  []string
		left int
	}{
		{[]string{"--dry-run"}, []string{"would remove s40 "}, 3},
		{[]string{"--older-than", "5d", "--keep", "2"}, []string{"removed s40 "}, 2},
		{[]string{"--older-than", "1h"}, []string{"removed s10 "}, 1},
		{[]string{"--older-than", "1h"}, []string{"nothing to prune"}, 1},
	}
	for _, tt := range tests {
		r := s.dsh(append([]string{"session", "prune"}, tt.args...)...).want(t, 0)
		mustContain(t, "prune "+strings.Join(tt.args, " "), r.stdout, tt.out...)
		if n := len(s.storedIDs()); n != tt.left {
			t.Errorf("after prune %v: %d sessions, want %d", tt.args, n, tt.left)
		}
	}
	r := s.dsh("session", "prune", "--older-than", "soon").want(t, 2)
	mustContain(t, "bad age", r.stderr, `--older-than: want a number of days such as 30d or a duration such as 12h, got "soon"`)
}

// TestResumeElsewhere: a session resumed from another directory is refused unless --cd is
// given; with it the move is logged and the session belongs to the new directory.
func TestResumeElsewhere(t *testing.T) {
	s := newSandbox(t)
	moved := t.TempDir()
	sc := writeScript(t, `{"text":"ok"}`)
	id, _ := sessionID(t, s.dsh("run", "--script", sc, "hi").want(t, 0).stderr)
	r := s.dsh("run", "--workspace", moved, "--resume", id, "--script", sc, "again").want(t, 1)
	mustContain(t, "refusal", r.stderr, "dsh run: session "+id+" ran in "+s.ws+", not here ("+moved+"): continue it from there, or pass --cd")
	r = s.dsh("run", "--workspace", moved, "--resume", id, "--cd", "--script", sc, "again").want(t, 0)
	mustContain(t, "moved", r.stderr, "session "+id+" moves from "+s.ws+" to "+moved, "— turn 2 completed")
	show := s.dsh("session", "show", "--json", id).want(t, 0)
	mustContain(t, "log", show.stdout, `"type":"session/workspace-moved"`, `"from":"`+s.ws+`","to":"`+moved+`"`)
	// Now it belongs to the new directory.
	r = s.dsh("run", "--resume", id, "--script", sc, "back home").want(t, 1)
	mustContain(t, "refusal in the old directory", r.stderr, "ran in "+moved)
	r = s.dsh("run", "--workspace", moved, "--continue", "--script", sc, "more").want(t, 0)
	mustContain(t, "continue in the new directory", r.stderr, "session "+id, "— turn 3 completed")
}

// TestRunTaskFromStdin: "dsh run -" reads the task from standard input.
func TestRunTaskFromStdin(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home, ws := t.TempDir(), t.TempDir()
	sc := writeScript(t, `{"text":"read it"}`)
	run := func(stdin string) (string, string, error) {
		cmd := exec.CommandContext(t.Context(), exe, "run", "--script", sc, "-")
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "DSH_TEST_AS_DSH=1", "DSH_HOME="+home, "NO_COLOR=1")
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	out, errOut, err := run("  the task\nfrom a pipe\n")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	mustContain(t, "transcript", errOut, "› the task\n  from a pipe\n")
	if out != "read it\n" {
		t.Errorf("stdout = %q", out)
	}
	_, errOut, err = run(" \n")
	if err == nil || !strings.Contains(errOut, "dsh run: the task on standard input is empty") {
		t.Errorf("empty stdin: %v %q", err, errOut)
	}
}

// TestRunJSONSummary: --json ends with one summary object after the events.
func TestRunJSONSummary(t *testing.T) {
	s := newSandbox(t)
	sc := writeScript(t,
		`{"toolCalls":[{"id":"c1","name":"glob","arguments":{"pattern":"*"}}],"usage":{"inputTokens":100,"outputTokens":10}}`,
		`{"text":"All done.","usage":{"inputTokens":150,"outputTokens":20,"cacheReadTokens":90}}`)
	r := s.dsh("run", "--json", "--script", sc, "go").want(t, 0)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var last map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`session (\S+)`).FindStringSubmatch(r.stderr)[1]
	want := map[string]any{"type": "summary", "status": "completed", "answer": "All done.", "sessionId": id, "turn": 1.0,
		"usage": map[string]any{"inputTokens": 250.0, "outputTokens": 30.0, "cacheReadTokens": 90.0}}
	if b1, b2 := mustJSON(t, last), mustJSON(t, want); b1 != b2 {
		t.Errorf("summary\n%s\nwant\n%s", b1, b2)
	}
	for _, l := range lines[:len(lines)-1] {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev["seq"] == nil {
			t.Errorf("a line before the summary is not an event: %s", l)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestScriptingErrors: --version, flag typos (one short line, no usage), unknown commands,
// and "dsh call" arguments that are not JSON.
func TestScriptingErrors(t *testing.T) {
	s := newSandbox(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string // the whole standard error
	}{
		{"version", []string{"--version"}, 0, "dsh ", ""},
		{"version command", []string{"version"}, 0, "dsh ", ""},
		{"flag typo", []string{"run", "--mdoel", "x", "hi"}, 2, "", "dsh run: unknown flag --mdoel (did you mean --model?); run \"dsh run -h\" for the flags\n"},
		{"single-dash typo", []string{"call", "-jsno", "read"}, 2, "", "dsh call: unknown flag --jsno (did you mean --json?); run \"dsh call -h\" for the flags\n"},
		{"missing flag value", []string{"run", "hi", "--resume"}, 2, "", "dsh run: flag --resume needs a value; run \"dsh run -h\" for the flags\n"},
		{"command typo", []string{"sesion", "ls"}, 2, "", "dsh: unknown command \"sesion\" (did you mean \"session\"? run \"dsh help\" for the commands)\n"},
		{"call JSON cut short", []string{"call", "read", `{"file_path":`}, 2, "",
			"dsh call: the arguments of read are not valid JSON: invalid JSON at offset 13: the text ends before the value is complete, in {\"file_path\":\n"},
		{"call JSON syntax", []string{"call", "read", `{"file_path":"a",}`}, 2, "",
			"dsh call: the arguments of read are not valid JSON: invalid JSON at offset 16 ($): invalid character ',' at start of value, in {\"file_path\":\"a\",}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.dsh(tt.args...).want(t, tt.code)
			if !strings.HasPrefix(r.stdout, tt.stdout) {
				t.Errorf("stdout = %q, want it to start with %q", r.stdout, tt.stdout)
			}
			if r.stderr != tt.stderr {
				t.Errorf("stderr = %q\nwant     %q", r.stderr, tt.stderr)
			}
		})
	}
}

func TestVersionLine(t *testing.T) {
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"release with commit", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "4242f9e0"}, {Key: "vcs.time", Value: "2026-12-01T11:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			"dsh v0.3.0 · commit 4242f9e0 (2026-12-01T11:00:00Z) · go1.26.0"},
		{"local changes", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			"dsh (devel) · commit abc with uncommitted changes · go1.26.0"},
		{"no VCS", debug.BuildInfo{GoVersion: "go1.26.0"}, "dsh (devel) · commit unknown (built without version control information) · go1.26.0"},
	}
	for _, tt := range tests {
		if got := formatVersion(&tt.bi); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestUnwritableSessionDir: a session store that cannot be written fails the run before
// the model is called.
func TestUnwritableSessionDir(t *testing.T) {
	s := newSandbox(t)
	logPath, err := session.LogPath(filepath.Join(s.home, "sessions"), s.ws, "x", session.CompressionZstd)
	if err != nil {
		t.Fatal(err)
	}
	// A file where the workspace's project directory belongs: no session can be created
	// there (this holds for root too, unlike permission bits).
	blocker := filepath.Dir(filepath.Dir(logPath))
	if err := os.MkdirAll(filepath.Dir(blocker), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := newChatServer(t, textReply("should not be asked"))
	r := s.dsh("run", "--base-url", srv.srv.URL, "hi").want(t, 1)
	mustContain(t, "stderr", r.stderr, "dsh run: session directory is not writable")
	if n := len(srv.requests()); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
}

// TestProjectInstructions: AGENTS.md files from the repository root down to the workspace
// go into the system prompt, root first, and dsh config lists them.
func TestProjectInstructions(t *testing.T) {
	s := newSandbox(t)
	s.write(".git/HEAD", "ref: refs/heads/main\n")
	s.write("AGENTS.md", "Use tabs.\n")
	s.write("svc/AGENTS.md", "Run go vet.\n")
	sub := filepath.Join(s.ws, "svc")
	srv := newChatServer(t, textReply("ok"))
	s.dsh("run", "--workspace", sub, "--base-url", srv.srv.URL, "hi").want(t, 0)
	msgs, _ := srv.requests()[0]["messages"].([]any)
	system, _ := msgs[0].(map[string]any)["content"].(string)
	root, nested := strings.Index(system, "Use tabs."), strings.Index(system, "Run go vet.")
	if root < 0 || nested < root {
		t.Errorf("system prompt does not hold the root's then the workspace's instructions:\n%s", system)
	}
	mustContain(t, "system prompt", system, "--- "+s.ws+"/AGENTS.md ---\nUse tabs.", "--- "+sub+"/AGENTS.md ---\nRun go vet.")
	cfg := s.dsh("config", "--workspace", sub).want(t, 0)
	mustContain(t, "config", cfg.stdout, "# project instructions: "+s.ws+"/AGENTS.md (10 bytes)\n# project instructions: "+sub+"/AGENTS.md (12 bytes)\n")
	none := s.dsh("config", "--workspace", t.TempDir()).want(t, 0)
	mustContain(t, "config without instructions", none.stdout, "# project instructions: no AGENTS.md from ")
}

// FuzzParseAge: any --older-than text either fails with the usage message or yields a
// non-negative age.
func FuzzParseAge(f *testing.F) {
	for _, s := range []string{"30d", "0d", "12h", "90m", "1h30m", "-1d", "d", "", "soon", "999999999999d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseAge(s)
		if err != nil {
			if !strings.Contains(err.Error(), "want a number of days such as 30d") {
				t.Fatalf("parseAge(%q): unexpected error %v", s, err)
			}
			return
		}
		if d < 0 {
			t.Fatalf("parseAge(%q) = %v", s, d)
		}
	})
}
