package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/session"
)

// leakyScript prints what must never reach the model or the log as is: an AWS key, a
// GitHub token, a private key, terminal escapes (colour, a window title, a hyperlink), a
// carriage-return progress flood and a NUL.
const leakyScript = `echo AKIAIOSFODNN7EXAMPLE; echo ghp_1234567890abcdefghijABCDEFGHIJ123456; ` +
	`printf -- '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAvRkbm6Dd9xAqJv1n3pGzJ9f2X0mFz7b1\n'; ` +
	`printf '\033[31mred\033[0m \033]0;pwned\007title \033]8;;http://x\033\\link\033]8;;\033\\\n'; ` +
	`printf '  1%%\r 50%%\r100%%\n'; printf 'a\000b\n'`

// leaks are the bytes that must be gone.
var leaks = []string{"AKIAIOSFODNN7EXAMPLE", "ghp_1234567890", "MIIEowIBAAKCAQEA", "BEGIN RSA", "\x1b", "\r", "\x00", "\x07", "pwned", " 50%"}

// leakyCommand runs leakyScript from a file, so that the command the model wrote (shown in
// the call card and kept in the log as the model's own words) holds none of it.
const leakyCommand = "bash leaky.sh"

func bashArgs(t *testing.T, command string) string {
	t.Helper()
	b, err := json.Marshal(map[string]string{"command": command, "description": "print things"})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func noLeaks(t *testing.T, what, s string) {
	t.Helper()
	for _, l := range leaks {
		if strings.Contains(s, l) {
			t.Errorf("%s holds %q:\n%q", what, l, s)
		}
	}
}

const wantClean = "[REDACTED:aws-access-token]\n[REDACTED:github-pat]\n[REDACTED:private-key]\nred title link\n100%\na\\x00b\n"

func TestCallRedactsAndCleans(t *testing.T) {
	s := newSandbox(t)
	s.write("leaky.sh", leakyScript)
	r := s.dsh("call", "--json", "bash", bashArgs(t, leakyCommand)).want(t, 0)
	var res struct {
		Content []struct{ Text string } `json:"content"`
		Value   struct {
			Stdout struct{ Text string } `json:"stdout"`
		} `json:"value"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	noLeaks(t, "dsh call --json", r.stdout)
	if len(res.Content) != 1 || res.Content[0].Text != wantClean {
		t.Errorf("content %q\nwant    %q", res.Content, wantClean)
	}
	if res.Value.Stdout.Text != wantClean {
		t.Errorf("value's stdout %q", res.Value.Stdout.Text)
	}
	// The cards a person reads are rendered from the same clean result.
	r = s.dsh("call", "bash", bashArgs(t, leakyCommand)).want(t, 0)
	noLeaks(t, "dsh call cards", r.stdout+r.stderr)
}

func TestCallBinaryOutput(t *testing.T) {
	s := newSandbox(t)
	s.env["DSH_SPILL_DIR"] = t.TempDir()
	ls, err := os.ReadFile("/bin/ls")
	if err != nil {
		t.Fatal(err)
	}
	r := s.dsh("call", "--json", "bash", bashArgs(t, "cat /bin/ls")).want(t, 0)
	var res struct {
		Content []struct{ Text string } `json:"content"`
		Value   struct {
			Stdout struct {
				Text      string `json:"text"`
				SpillPath string `json:"spillPath"`
			} `json:"stdout"`
		} `json:"value"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %.500s", err, r.stdout)
	}
	if len(res.Content) != 1 || !strings.HasPrefix(res.Content[0].Text, "[binary data omitted: ") ||
		!strings.Contains(res.Content[0].Text, " bytes, sha256 ") || strings.Contains(r.stdout, "ELF") {
		t.Fatalf("content %.300q", res.Content)
	}
	// The exact bytes are in the file the result names.
	path := res.Value.Stdout.SpillPath
	if path == "" || !strings.Contains(res.Content[0].Text, path) {
		t.Fatalf("no spill path in %q", res.Content[0].Text)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, ls) {
		t.Errorf("spill file %s: %d bytes (err %v), want /bin/ls's %d", path, len(got), err, len(ls))
	}
}

func TestCallRedactsEnvironmentSecret(t *testing.T) {
	t.Setenv("DSH_TEST_SERVICE_TOKEN", "Zx9vQ2mL7pK4-not-real")
	s := newSandbox(t)
	s.write("config.txt", "token: Zx9vQ2mL7pK4-not-real\n")
	r := s.dsh("call", "--json", "bash", bashArgs(t, "cat config.txt")).want(t, 0)
	if strings.Contains(r.stdout, "Zx9vQ2mL7pK4") || !strings.Contains(r.stdout, "token: [REDACTED:env:DSH_TEST_SERVICE_TOKEN]") {
		t.Errorf("stdout %s", r.stdout)
	}
	// read is covered as well
	r = s.dsh("call", "--json", "read", `{"file_path":"config.txt"}`).want(t, 0)
	if strings.Contains(r.stdout, "Zx9vQ2mL7pK4") || !strings.Contains(r.stdout, "[REDACTED:env:DSH_TEST_SERVICE_TOKEN]") {
		t.Errorf("read: %s", r.stdout)
	}
}

func TestRedactionCanBeTurnedOffByTheUser(t *testing.T) {
	s := newSandbox(t)
	s.env["DSH_REDACT_ENABLED"] = "false"
	r := s.dsh("call", "--json", "bash", bashArgs(t, "echo AKIAIOSFODNN7EXAMPLE")).want(t, 0)
	if !strings.Contains(r.stdout, "AKIAIOSFODNN7EXAMPLE") {
		t.Errorf("with redact.enabled false the key should pass: %s", r.stdout)
	}
	// a project file may not turn it off
	s = newSandbox(t)
	s.write(".dsh/config.yaml", "redact: {enabled: false}\n")
	r = s.dsh("call", "--json", "bash", bashArgs(t, "echo AKIAIOSFODNN7EXAMPLE"))
	if r.code == 0 || !strings.Contains(r.stderr, `"redact.enabled" may be set only in the user configuration`) {
		t.Errorf("project file turning redaction off: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestRunLogIsRedacted runs a scripted turn whose command leaks, then reads the session log:
// the tool/result the model was sent and the log kept holds markers, and a redact/applied
// event records the kinds and counts.
func TestRunLogIsRedacted(t *testing.T) {
	s := newSandbox(t)
	s.write("leaky.sh", leakyScript)
	call, err := json.Marshal(map[string]any{"toolCalls": []any{map[string]any{"id": "c1", "name": "bash",
		"arguments": map[string]string{"command": leakyCommand, "description": "print things"}}}})
	if err != nil {
		t.Fatal(err)
	}
	s.write("script.jsonl", string(call)+"\n"+`{"expectToolResults":["c1"],"text":"done"}`+"\n")
	r := s.dsh("run", "--script", filepath.Join(s.ws, "script.jsonl"), "print the things").want(t, 0)
	noLeaks(t, "transcript", r.stderr)
	store, err := session.Open(filepath.Join(s.home, "sessions"), session.Options{})
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
	var results, applied int
	for _, e := range loaded.Events {
		raw, err := json.Marshal(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		noLeaks(t, "log event "+e.Type, string(raw))
		switch e.Type {
		case session.TypeToolResult:
			p, err := session.DecodeToolResult(e)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Content) != 1 || p.Content[0].Text != wantClean {
				t.Errorf("logged result %+v", p.Content)
			}
			results++
		case redactEventType:
			mustContain(t, "redact/applied", string(raw), `"callId":"c1"`, `"aws-access-token":1`, `"github-pat":1`, `"private-key":1`)
			if results != 0 {
				t.Errorf("the %s event follows the tool/result", redactEventType)
			}
			applied++
		}
	}
	if results != 1 || applied != 1 {
		t.Errorf("%d tool/result and %d %s events, want 1 each", results, applied, redactEventType)
	}
	// The log replays without the event getting in the way, and without the secrets.
	show := s.dsh("session", "show", infos[0].Header.ID).want(t, 0)
	noLeaks(t, "dsh session show", show.stdout+show.stderr)
	mustContain(t, "dsh session show", show.stdout+show.stderr, "[REDACTED:aws-access-token]", "red title link")
}

// TestMCPServeRedacts calls bash and read through "dsh mcp serve": the content and the
// structuredContent (read's canonical value) an MCP client receives are clean.
func TestMCPServeRedacts(t *testing.T) {
	s := newSandbox(t)
	s.write("leaky.sh", leakyScript)
	s.write("creds.txt", "token=ghp_1234567890abcdefghijABCDEFGHIJ123456\n")
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	e := &env{stdout: outW, stderr: &errb, stdin: inR, cwd: s.ws, getenv: func(k string) string { return s.env[k] }}
	done := make(chan int, 1)
	go func() {
		code := run(t.Context(), e, []string{"mcp", "serve"})
		outW.Close()
		done <- code
	}()
	args := bashArgs(t, leakyCommand)
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":` + args + `}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read","arguments":{"file_path":"creds.txt"}}}`,
	} {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 1<<22)
	var got, gotRead string
	for (got == "" || gotRead == "") && lines.Scan() {
		var m struct {
			ID int `json:"id"`
		}
		if json.Unmarshal(lines.Bytes(), &m) == nil {
			switch m.ID {
			case 2:
				got = lines.Text()
			case 3:
				gotRead = lines.Text()
			}
		}
	}
	inW.Close()
	if code := <-done; code != 0 {
		t.Errorf("dsh mcp serve exited %d: %s", code, errb.String())
	}
	inR.Close()
	outR.Close()
	if got == "" || gotRead == "" {
		t.Fatalf("no responses to the calls (stderr: %s)", errb.String())
	}
	var res struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(got), &res); err != nil {
		t.Fatal(err)
	}
	noLeaks(t, "MCP bash response", got)
	if len(res.Result.Content) != 1 || res.Result.Content[0].Text != wantClean {
		t.Errorf("MCP bash result %s", got)
	}
	noLeaks(t, "MCP read response", gotRead)
	if !strings.Contains(gotRead, `"structuredContent"`) || strings.Count(gotRead, "token=[REDACTED:github-pat]") != 2 {
		t.Errorf("MCP read result (content and structuredContent both redacted) %s", gotRead)
	}
}

// TestCodeModeRedacts: a program's tool calls receive redacted values (the program never
// holds the secret a file had), and what the program itself prints or returns is redacted
// before the model reads it.
func TestCodeModeRedacts(t *testing.T) {
	s := newSandbox(t)
	s.write("creds.txt", "token=ghp_1234567890abcdefghijABCDEFGHIJ123456\n")
	s.env["DSH_CODE_RUNTIME"] = "starlark"
	program := "r = await tools.read({\"file_path\": \"creds.txt\"})\n" +
		"print(\"AKIA\" + \"IOSFODNN7EXAMPLE\")\n" +
		"return r[\"lines\"][0][\"text\"]"
	args, _ := json.Marshal(map[string]string{"code": program, "description": "Read the credentials"})
	r := s.dsh("call", "--json", "--mode", "code", "run_code", string(args)).want(t, 0)
	var res struct {
		Value struct {
			Logs   []string `json:"logs"`
			Result string   `json:"result"`
		} `json:"value"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v in %s", err, r.stdout)
	}
	noLeaks(t, "run_code result", r.stdout)
	if res.Value.Result != "token=[REDACTED:github-pat]" || strings.Join(res.Value.Logs, "|") != "[REDACTED:aws-access-token]" {
		t.Errorf("run_code value %+v", res.Value)
	}
}

// TestModelRequestIsRedacted runs a turn against a local OpenAI-compatible server: the tool
// message the model is sent after a leaky command holds the markers and clean text.
func TestModelRequestIsRedacted(t *testing.T) {
	s := newSandbox(t)
	s.write("leaky.sh", leakyScript)
	srv := newChatServer(t,
		toolReply("", "call_1", "bash", bashArgs(t, leakyCommand)),
		textReply("done"),
	)
	s.dsh("run", "--base-url", srv.srv.URL, "print the things").want(t, 0)
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	raw, err := json.Marshal(reqs[1])
	if err != nil {
		t.Fatal(err)
	}
	noLeaks(t, "the model request", string(raw))
	msgs, _ := reqs[1]["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if last["role"] != "tool" || fmt.Sprint(last["content"]) != wantClean {
		t.Errorf("tool message %v", last)
	}
}

// TestSpillFileKeepsExactText: a result too large to show inline is spilled by the spill
// policy with the exact text the tool produced (secret and escapes included), while the
// preview the model reads is redacted and clean.
func TestSpillFileKeepsExactText(t *testing.T) {
	s := newSandbox(t)
	s.env["DSH_SPILL_DIR"] = t.TempDir()
	s.write("big.sh", `printf '\033[1mAKIAIOSFODNN7EXAMPLE\033[0m\n'; for i in $(seq 1 2700); do echo "line $i of output"; done; echo AKIAIOSFODNN7EXAMPLE`)
	r := s.dsh("call", "--json", "bash", bashArgs(t, "bash big.sh")).want(t, 0)
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %.300s", err, r.stdout)
	}
	noLeaks(t, "dsh call --json", r.stdout)
	if len(res.Content) != 1 {
		t.Fatalf("content %.300q", r.stdout)
	}
	text := res.Content[0].Text
	_, path, ok := strings.Cut(text, "Full formatted result stored at: ")
	if !ok {
		t.Fatalf("no spill notice in %.300q", text)
	}
	path, _, _ = strings.Cut(path, ". ")
	if !strings.HasPrefix(text, "[REDACTED:aws-access-token]\nline 1 of output") {
		t.Errorf("preview starts %.80q", text)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "\x1b[1mAKIAIOSFODNN7EXAMPLE\x1b[0m\nline 1 of output") || !strings.HasSuffix(string(b), "line 2700 of output\nAKIAIOSFODNN7EXAMPLE\n") {
		t.Errorf("spill file %s holds %.60q … %.60q", path, b, b[max(0, len(b)-60):])
	}
}
