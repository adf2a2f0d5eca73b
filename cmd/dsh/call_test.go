package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsageAndExitStatus(t *testing.T) {
	s := newSandbox(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // substring of standard error
		stdout string // substring of standard output
	}{
		{"no arguments and no terminal", nil, 2, "dsh chat: the chat needs a terminal on standard input", ""},
		{"help", []string{"help"}, 0, "", "Commands:"},
		{"unknown command", []string{"frobnicate"}, 2, `dsh: unknown command "frobnicate" (run "dsh help" for the commands)`, ""},
		{"unknown flag", []string{"call", "--frobnicate", "read"}, 2, "dsh call: unknown flag --frobnicate; run \"dsh call -h\" for the flags\n", ""},
		{"command help", []string{"call", "-h"}, 0, "Usage: dsh call [flags] TOOL", ""},
		{"call without tool", []string{"call"}, 2, "dsh call: want a tool name and optionally its arguments as JSON", ""},
		{"call with extra arguments", []string{"call", "read", "{}", "x"}, 2, "want a tool name", ""},
		{"run without task", []string{"run"}, 2, "dsh run: want the task as one argument", ""},
		{"bad mode flag", []string{"tools", "--mode", "fancy"}, 2, `dsh tools: flag --mode: mode must be "native", "code" or "both", got "fancy"`, ""},
		{"missing workspace", []string{"tools", "--workspace", "/no/such/dir"}, 1, `dsh tools: workspace "/no/such/dir" does not exist`, ""},
		{"session without subcommand", []string{"session"}, 2, "dsh session: want a subcommand: ls, show ID, rm ID…, prune or serve", ""},
		{"session unknown subcommand", []string{"session", "prnue"}, 2, `unknown subcommand "prnue" (did you mean "prune"?)`, ""},
		{"session show without id", []string{"session", "show"}, 2, "want one session id", ""},
		{"session show unknown id", []string{"session", "show", "20260101T000000Z-00000000"}, 1,
			`dsh session: no session "20260101T000000Z-00000000" in ` + s.home + `/sessions (list them with "dsh session ls")`, ""},
		{"demo with an argument", []string{"demo", "now"}, 2, `unexpected argument "now"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.dsh(tt.args...).want(t, tt.code)
			mustContain(t, "stderr", r.stderr, tt.stderr)
			mustContain(t, "stdout", r.stdout, tt.stdout)
		})
	}
}

// TestCallJSON pins the exact bytes "dsh call --json" prints: the result object of docs/behaviour.md
// §5.1 with absent keys absent, in the reference's member order.
func TestCallJSON(t *testing.T) {
	s := newSandbox(t)
	s.write("a.txt", "one\ntwo\n")
	ws := s.ws
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"success", []string{"read", `{"file_path":"a.txt"}`}, 0,
			`{"isError":false,"content":[{"type":"text","text":"<path>` + ws + `/a.txt</path>\n<type>file</type>\n<content>\n1: one\n2: two\n\n(End of file - total 2 lines)\n</content>"}],` +
				`"meta":{"path":"` + ws + `/a.txt","offset":1,"lines":[{"number":1,"text":"one"},{"number":2,"text":"two"}],"totalLines":2},` +
				`"value":{"path":"` + ws + `/a.txt","offset":1,"lines":[{"number":1,"text":"one"},{"number":2,"text":"two"}],"totalLines":2}}`},
		{"denied by a rule", []string{"bash", `{"command":"rm -rf /tmp/x","description":"Remove x"}`, "--deny", "bash(rm *)"}, 1,
			`{"isError":true,"error":{"message":"tool \"bash\" is denied by permission rule \"bash(rm *)\"","info":{"name":"PermissionDeniedError","code":"PERMISSION_DENIED"}},"content":[{"type":"text","text":"Error: tool \"bash\" is denied by permission rule \"bash(rm *)\""}]}`},
		{"ask without an approver", []string{"bash", `{"command":"git push","description":"Push"}`, "--ask", "bash(git push*)"}, 1,
			`{"isError":true,"error":{"message":"tool \"bash\" requires approval, but no approval channel is available"},"content":[{"type":"text","text":"Error: tool \"bash\" requires approval, but no approval channel is available"}]}`},
		{"invalid arguments", []string{"read", `{"file_path":1}`}, 1,
			`{"isError":true,"error":{"message":"invalid arguments: \"file_path\" must be a string","info":{"name":"ToolArgsError","code":"INVALID_ARGS"}},"content":[{"type":"text","text":"Error: invalid arguments: \"file_path\" must be a string"}]}`},
		{"arguments not an object", []string{"read", `["file_path"]`}, 1,
			`{"isError":true,"error":{"message":"invalid arguments: \"arguments\" must be an object","info":{"name":"ToolArgsError","code":"INVALID_ARGS"}},"content":[{"type":"text","text":"Error: invalid arguments: \"arguments\" must be an object"}]}`},
		{"unknown tool", []string{"nope"}, 1,
			`{"isError":true,"error":{"message":"unknown tool \"nope\"","info":{"name":"ToolNotFoundError","code":"UNKNOWN_TOOL"}},"content":[{"type":"text","text":"Error: unknown tool \"nope\""}]}`},
		{"code mode collapse", []string{"read", `{"file_path":"a.txt"}`, "--mode", "code"}, 1,
			"{\"isError\":true,\"error\":{\"message\":\"unknown tool \\\"read\\\": only `run_code` is callable directly — call `read` from inside a `run_code` program instead\",\"info\":{\"name\":\"ToolNotFoundError\",\"code\":\"UNKNOWN_TOOL\"}},\"content\":[{\"type\":\"text\",\"text\":\"Error: unknown tool \\\"read\\\": only `run_code` is callable directly — call `read` from inside a `run_code` program instead\"}]}"},
		{"tool domain error", []string{"read", `{"file_path":"missing.txt"}`}, 1,
			`{"isError":true,"error":{"message":"cannot read \"` + ws + `/missing.txt\": not found","info":{"name":"FsError","code":"FS_NOT_FOUND"}},"content":[{"type":"text","text":"Error: cannot read \"` + ws + `/missing.txt\": not found"}]}`},
		{"outside the workspace", []string{"read", `{"file_path":"/etc/passwd"}`}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.dsh(append([]string{"call", "--json"}, tt.args...)...).want(t, tt.code)
			if r.stderr != "" {
				t.Errorf("stderr = %q, want nothing", r.stderr)
			}
			if !strings.HasSuffix(r.stdout, "}\n") || strings.Count(r.stdout, "\n") != 1 {
				t.Fatalf("want one JSON line, got %q", r.stdout)
			}
			if tt.want == "" {
				var v map[string]any
				if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v["isError"] != true {
					t.Fatalf("want a failure object, got %s (%v)", r.stdout, err)
				}
				return
			}
			if got := strings.TrimSuffix(r.stdout, "\n"); got != tt.want {
				t.Errorf("dsh call --json %s\n got %s\nwant %s", strings.Join(tt.args, " "), got, tt.want)
			}
		})
	}
}

// TestCallCards checks the plain cards "dsh call" prints when its output is not a terminal.
func TestCallCards(t *testing.T) {
	s := newSandbox(t)
	s.write("a.txt", "one\ntwo\n")
	r := s.dsh("call", "read", `{"file_path":"a.txt"}`).want(t, 0)
	want := "● Read a.txt\n✓ read · " + s.ws + "/a.txt · lines 1-2 of 2\n  1 │ one\n  2 │ two\n"
	if r.stdout != want {
		t.Errorf("read cards:\n got %q\nwant %q", r.stdout, want)
	}
	r = s.dsh("call", "bash", `{"command":"echo out; echo err >&2; exit 3","description":"Fail on purpose"}`).want(t, 1)
	want = "● $ echo out; echo err >&2; exit 3\n  Fail on purpose\n✗ bash · exit 3\n  out\n  [stderr]\n  err\n"
	if r.stdout != want {
		t.Errorf("bash cards:\n got %q\nwant %q", r.stdout, want)
	}
	r = s.dsh("call", "bash", `{"command":"rm -rf build","description":"Clean"}`, "--deny", "bash(rm -rf *)").want(t, 1)
	want = "● $ rm -rf build\n  Clean\n✗ bash\n  Error: tool \"bash\" is denied by permission rule \"bash(rm -rf *)\"\n"
	if r.stdout != want {
		t.Errorf("denied cards:\n got %q\nwant %q", r.stdout, want)
	}
	r = s.dsh("call", "nope", "{}").want(t, 1)
	want = "● nope {}\n✗ nope\n  Error: unknown tool \"nope\"\n"
	if r.stdout != want {
		t.Errorf("unknown tool cards:\n got %q\nwant %q", r.stdout, want)
	}
}

func TestTools(t *testing.T) {
	s := newSandbox(t)
	r := s.dsh("tools").want(t, 0)
	mustContain(t, "tools", r.stdout, "TOOL", "read        parallel", "glob        parallel", "grep        parallel", "bash", "job_kill")
	if strings.Contains(r.stdout, "run_code") {
		t.Errorf("native mode lists run_code:\n%s", r.stdout)
	}
	r = s.dsh("tools", "--json").want(t, 0)
	var schemas []struct {
		Name       string         `json:"name"`
		Parameters map[string]any `json:"parameters"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &schemas); err != nil {
		t.Fatalf("tools --json: %v\n%s", err, r.stdout)
	}
	if len(schemas) < 5 || schemas[0].Name != "read" || schemas[0].Parameters["type"] != "object" {
		t.Errorf("tools --json = %+v", schemas)
	}
	r = s.dsh("tools", "--mode", "code").want(t, 0)
	mustContain(t, "tools --mode code", r.stdout, "run_code", "The SDK run_code programs are written against", "interface ToolArgsMap", "read: {")
	if strings.Contains(r.stdout, "read        parallel") {
		t.Errorf("code mode offers native tools:\n%s", r.stdout)
	}
	r = s.dsh("tools", "--mode", "code", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &schemas); err != nil || len(schemas) != 1 || schemas[0].Name != "run_code" {
		t.Errorf("tools --mode code --json = %s (%v)", r.stdout, err)
	}
}

// TestCallSeveral runs several calls in one invocation: they share one agent's observation
// state, so a read authorizes the edit after it; across invocations nothing carries over.
func TestCallSeveral(t *testing.T) {
	s := newSandbox(t)
	s.write("a.txt", "one\ntwo\n")
	readA := `{"file_path":"a.txt"}`
	edit := `{"file_path":"a.txt","old_string":"one","new_string":"uno"}`

	// Alone, an edit of a file never read fails, with a hint on standard error.
	r := s.dsh("call", "edit", edit).want(t, 1)
	mustContain(t, "lone edit", r.stdout, "Error: edit requires reading \""+s.ws+"/a.txt\" first — read the file, then retry")
	mustContain(t, "lone edit hint", r.stderr, "dsh call: edit needs the file read first, in the same invocation: dsh call read")
	// A read in an earlier invocation does not count.
	s.dsh("call", "read", readA).want(t, 0)
	s.dsh("call", "--json", "edit", edit).want(t, 1)

	r = s.dsh("call", "read", readA, "edit", edit).want(t, 0)
	want := "● Read a.txt\n✓ read · " + s.ws + "/a.txt · lines 1-2 of 2\n  1 │ one\n  2 │ two\n" +
		"● Edit a.txt\n✓ edit · Edit a.txt · 1 file\n  a.txt modified +1 −1\n    - one\n    + uno\n      two\n"
	if r.stdout != want {
		t.Errorf("cards:\n got %q\nwant %q", r.stdout, want)
	}
	if r.stderr != "" {
		t.Errorf("stderr = %q", r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(s.ws, "a.txt")); string(b) != "uno\ntwo\n" {
		t.Errorf("a.txt = %q", b)
	}

	// --json prints one result object per call; the first failure stops the rest.
	r = s.dsh("call", "--json", "read", `{"file_path":"missing.txt"}`, "write", `{"file_path":"b.txt","content":"x"}`).want(t, 1)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `"code":"FS_NOT_FOUND"`) {
		t.Errorf("stdout = %q, want the failed read's object only", r.stdout)
	}
	mustContain(t, "stderr", r.stderr, "dsh call: call 1 (read) failed; the 1 call(s) after it did not run")
	if _, err := os.Stat(filepath.Join(s.ws, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("the call after the failure ran: %v", err)
	}
	r = s.dsh("call", "--json", "read", readA, "write", `{"file_path":"a.txt","content":"new\n"}`).want(t, 0)
	if lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n"); len(lines) != 2 || !strings.Contains(lines[1], `"operation":"update"`) {
		t.Errorf("stdout = %q, want two result objects", r.stdout)
	}

	// Several calls need their arguments; the help explains the shared state.
	r = s.dsh("call", "read", readA, "edit").want(t, 2)
	mustContain(t, "odd arguments", r.stderr, "several calls as TOOL 'JSON' pairs")
	r = s.dsh("call", "-h").want(t, 0)
	mustContain(t, "help", r.stderr, "Usage: dsh call [flags] TOOL ['JSON'] [TOOL 'JSON']...",
		"stops at the first call that fails", "Nothing carries over from one invocation to the next.")
}

// TestCallExtraArgumentIgnored: a built-in tool with an inferred schema ignores an argument
// it does not declare, as a model sometimes adds one.
func TestCallExtraArgumentIgnored(t *testing.T) {
	s := newSandbox(t)
	s.write("found.txt", "x\n")
	r := s.dsh("call", "--json", "glob", `{"pattern":"*.txt","hidden":true}`).want(t, 0)
	mustContain(t, "glob with an extra argument", r.stdout, `"isError":false`, "found.txt")
}
