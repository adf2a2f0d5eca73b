package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDemo runs the demo in every mode, end to end in-process: the real loop, tools,
// policies and Code Mode worker, driven by the scripted model.
func TestDemo(t *testing.T) {
	common := []string{
		"SCRIPTED MODEL", "no LLM is called",
		"› Make the greeter greet the world",
		`denied by permission rule "bash(rm -rf *)"`, // the denied command
		"— turn 1 completed",
		"replay: dsh session show ",
		"workspace removed: ",
	}
	tests := []struct {
		mode  string
		wants []string
	}{
		{"native", []string{
			"- \tfmt.Println(\"hello\")", "+ \tfmt.Println(\"hello, world\")", // the edit's diff
			"● Read README.md\n● Read main.go\n● Glob *.go\n✓ read · ", // two reads and a glob started before the first result: parallel
			"✓ glob · 1 path\n  main.go\n",
			"● Edit main.go\n✓ edit · Edit main.go · 1 file\n",
			"● $ rm -rf build\n  Remove old build output\n✗ bash\n",
			"● $ sleep 30\n  Wait for a slow command\n✗ bash · killed by SIGTERM\n  (no output)\n  [timed out after 300ms]\n",
			// The timeout policy's deadline: TOOL_TIMEOUT.
			"● slow_check {\"name\":\"ci\"}\n✗ slow_check\n  Error: tool call timed out after 300ms\n",
		}},
		{"both", []string{
			"- \tfmt.Println(\"hello\")", "+ \tfmt.Println(\"hello, world\")",
			"● Read README.md\n● Read main.go\n● Glob *.go\n✓ read · ",
			"● Count the lines of README.md and main.go\n  │ const files",
			// The program's two reads run in parallel; they are submitted, and commit, in
			// the program's call order.
			"  ✓ read {\"file_path\":\"README.md\"}\n  ✓ read {\"file_path\":\"main.go\"}\n✓ run_code\n  README.md: 5 lines\n  main.go: 7 lines\n",
		}},
		{"code", []string{
			"● Read README.md and main.go in parallel\n",
			"  ✓ read {\"file_path\":\"README.md\"}\n  ✓ read {\"file_path\":\"main.go\"}\n✓ run_code\n",
			"  ✓ edit {\"file_path\":\"main.go\"",
			"  ✗ bash {\"command\":\"rm -rf build\",\"description\":\"Remove old build o… → Error: tool \"bash\" is denied by permission rule \"bash(rm -rf *)\"\n" +
				"  ✓ bash {\"command\":\"sleep 30\",\"description\":\"Wait for a slow comman…\n  ✗ slow_check {\"name\":\"ci\"} → Error: tool call timed out after 300ms\n✓ run_code\n",
			"denied: tool \"bash\" is denied by permission rule",
			"slow command timed out: true",
			"slow check: tool call timed out after 300ms",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			s := newSandbox(t)
			r := s.dsh("demo", "--home", "--mode", tt.mode).want(t, 0)
			mustContain(t, "demo transcript", r.stderr, append(common, tt.wants...)...)
			mustContain(t, "demo transcript", r.stderr, "mode "+tt.mode)
			if want := "Done. main.go now prints \"hello, world\""; !strings.HasPrefix(r.stdout, want) {
				t.Errorf("stdout = %q, want the final answer", r.stdout)
			}
			if tt.mode == "native" && strings.Contains(r.stderr, "run_code") {
				t.Errorf("native demo used run_code:\n%s", r.stderr)
			}
			id, path := sessionID(t, r.stderr)
			if _, err := os.Stat(path); err != nil {
				t.Errorf("the demo's log %s: %v", path, err)
			}
			if !strings.HasPrefix(path, filepath.Join(s.home, "sessions")+"/") {
				t.Errorf("log %s is not under DSH_HOME", path)
			}
			// The log alone renders the same transcript.
			show := s.dsh("session", "show", id).want(t, 0)
			if len(show.stdout) < 500 || !strings.Contains(r.stderr, show.stdout) {
				t.Errorf("session show differs from the live transcript\nlive:\n%s\nshow:\n%s", r.stderr, show.stdout)
			}
			ls := s.dsh("session", "ls", "--all").want(t, 0)
			mustContain(t, "session ls", ls.stdout, "ID", id, "dsh-demo-")
		})
	}
}

// TestDemoJSON checks that --json prints the session's events, one JSON object per line,
// in log order, and nothing else on standard output.
func TestDemoJSON(t *testing.T) {
	s := newSandbox(t)
	r := s.dsh("demo", "--home", "--json", "--mode", "native").want(t, 0)
	if !strings.HasPrefix(r.stderr, "dsh demo · SCRIPTED MODEL") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("--json wrote more than the banner to stderr: %q", r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	var types []string
	for i, l := range lines {
		var ev struct {
			Type string `json:"type"`
			Seq  int    `json:"seq"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, l)
		}
		if ev.Seq != i {
			t.Fatalf("line %d has seq %d", i+1, ev.Seq)
		}
		types = append(types, ev.Type)
	}
	joined := strings.Join(types, " ")
	for _, want := range []string{
		// Two reads and a glob run in parallel; then the edit.
		"turn/start step/start user/message assistant/message tool/call tool/call tool/call tool/result tool/result tool/result step/end",
		"step/start assistant/message tool/call tool/result step/end",
		// The denied command, the command past its timeoutMs and the check past its budget,
		// one after another.
		"step/start assistant/message tool/call tool/result tool/call tool/result tool/call tool/result step/end",
		"step/end turn/end",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("event types lack %q:\n%s", want, joined)
		}
	}
	// The same events come back from the store.
	ls := s.dsh("session", "ls", "--all", "--json").want(t, 0)
	var info struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(ls.stdout)), &info); err != nil {
		t.Fatalf("session ls --json: %v\n%s", err, ls.stdout)
	}
	show := s.dsh("session", "show", "--json", info.ID).want(t, 0)
	if show.stdout != r.stdout {
		t.Errorf("session show --json differs from the live events\nlive:\n%s\nshow:\n%s", r.stdout, show.stdout)
	}
}

// TestDemoBinary builds dsh once and runs the demo as a subprocess: the real main, with its
// hidden Code Mode worker mode, in a clean environment.
func TestDemoBinary(t *testing.T) {
	bin := buildDsh(t)
	home := filepath.Join(t.TempDir(), "home")
	cmd := exec.Command(bin, "demo", "--home")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "DSH_HOME=" + home, "HOME=" + home, "TERM=dumb"}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dsh demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	mustContain(t, "dsh demo", stderr.String(), "SCRIPTED MODEL", "✓ run_code", "README.md: 5 lines", "[timed out after 300ms]", "— turn 1 completed")
	if strings.Contains(stderr.String(), "\x1b[") {
		t.Errorf("piped output holds escape sequences:\n%q", stderr.String())
	}
	mustContain(t, "dsh demo answer", stdout.String(), "Done.")
	// The binary's own session listing sees the demo.
	ls := exec.Command(bin, "session", "ls", "--all")
	ls.Env = cmd.Env
	out, err := ls.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "dsh-demo-") {
		t.Errorf("dsh session ls: %v\n%s", err, out)
	}
}

// TestDemoCodeDispatchOrder checks the order of the Code Mode dispatch events in the code
// demo's log: a program that awaits each call logs start, settle, start, settle; one that
// runs calls in parallel logs each kind in the program's call order, every settle after its
// start.
func TestDemoCodeDispatchOrder(t *testing.T) {
	s := newSandbox(t)
	r := s.dsh("demo", "--json", "--mode", "code").want(t, 0)
	runs := map[string][]string{} // run_code call id → its dispatch events, "start N" / "settle N"
	var order []string
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				ParentCallID string          `json:"parentCallId"`
				SubCallID    string          `json:"subCallId"`
				Arguments    json.RawMessage `json:"arguments"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, l)
		}
		kind := map[string]string{"tool/code-dispatch-start": "start", "tool/code-dispatch": "settle"}[ev.Type]
		if kind == "" {
			continue
		}
		parent := ev.Data.ParentCallID
		if _, ok := runs[parent]; !ok {
			order = append(order, parent)
		}
		entry := kind + " " + strings.TrimPrefix(ev.Data.SubCallID, parent+":code:")
		var args struct {
			FilePath string `json:"file_path"`
		}
		if err := json.Unmarshal(ev.Data.Arguments, &args); err != nil {
			t.Fatalf("dispatch arguments are not an object: %v\n%s", err, l)
		}
		if args.FilePath != "" {
			entry += " " + args.FilePath
		}
		runs[parent] = append(runs[parent], entry)
	}
	if len(order) != 3 {
		t.Fatalf("dispatch events of %d run_code calls, want 3: %v", len(order), runs)
	}
	// The reads run in parallel: both kinds in the program's call order (README.md is
	// sub-call 1, main.go sub-call 2), each settle after its start. Whether the second read
	// starts before the first one settles is a matter of timing.
	reads := runs[order[0]]
	pos := func(e string) int { return slices.Index(reads, e) }
	if len(reads) != 4 || pos("start 1 README.md") != 0 || pos("start 2 main.go") < 0 ||
		pos("settle 1 README.md") < 0 || pos("settle 1 README.md") > pos("settle 2 main.go") ||
		pos("start 2 main.go") > pos("settle 2 main.go") {
		t.Errorf("parallel reads logged %v", reads)
	}
	// The edit, then the two awaited bash calls and the awaited slow check.
	if got := strings.Join(runs[order[1]], ", "); got != "start 1 main.go, settle 1 main.go" {
		t.Errorf("edit run logged %s", got)
	}
	if got := strings.Join(runs[order[2]], ", "); got != "start 1, settle 1, start 2, settle 2, start 3, settle 3" {
		t.Errorf("bash and slow_check run logged %s", got)
	}
}

// TestDemoTemporaryHome: without --home the demo leaves the dsh home alone; its session
// log lives in a temporary directory removed with the workspace (kept with --keep, and then
// replayable from there).
func TestDemoTemporaryHome(t *testing.T) {
	s := newSandbox(t)
	r := s.dsh("demo", "--mode", "native").want(t, 0)
	if _, err := os.Stat(filepath.Join(s.home, "sessions")); !os.IsNotExist(err) {
		t.Errorf("the demo wrote into DSH_HOME's sessions: %v", err)
	}
	_, path := sessionID(t, r.stderr)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the temporary session log %s was not removed: %v", path, err)
	}
	mustContain(t, "demo notices", r.stderr, "the session log is temporary (pass --home", "session log removed: ")

	r = s.dsh("demo", "--mode", "native", "--keep").want(t, 0)
	id, path := sessionID(t, r.stderr)
	m := regexp.MustCompile(`replay: dsh session show --sessions-dir (\S+) ` + id).FindStringSubmatch(r.stderr)
	if m == nil || !strings.HasPrefix(path, m[1]+"/") {
		t.Fatalf("no replay hint for the kept log %s:\n%s", path, r.stderr)
	}
	t.Cleanup(func() { os.RemoveAll(m[1]) })
	ws := regexp.MustCompile(`workspace kept: (\S+)`).FindStringSubmatch(r.stderr)
	if ws == nil {
		t.Fatalf("no kept workspace in:\n%s", r.stderr)
	}
	t.Cleanup(func() { os.RemoveAll(ws[1]) })
	show := s.dsh("session", "show", "--sessions-dir", m[1], id).want(t, 0)
	mustContain(t, "replay of the kept log", show.stdout, "Error: tool call timed out after 300ms")
}
