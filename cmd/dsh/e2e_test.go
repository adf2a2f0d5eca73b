package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/deepseektest"
)

// conversationOf returns the messages of a recorded request without the system prompt.
func conversationOf(q deepseektest.ChatRequest) []deepseektest.Message {
	var out []deepseektest.Message
	for _, m := range q.Messages {
		if m.Role != "system" {
			out = append(out, m)
		}
	}
	return out
}

// msgText is the text of m, "" when it has none.
func msgText(m deepseektest.Message) string {
	if m.Content == nil {
		return ""
	}
	return *m.Content
}

// TestRunContinueAgainstDeepSeek: "dsh run --continue" against the DeepSeek stand-in sends the
// first turn's messages with the second: the task, the assistant message with its tool call
// and its reasoning_content (thinking mode refuses a request without it), the tool result and
// the answer, then the new task.
func TestRunContinueAgainstDeepSeek(t *testing.T) {
	s, ds := deepseekSandbox(t)
	s.write("notes.txt", "alpha\n")
	ds.Enqueue(
		deepseektest.Reply{Reasoning: "Read the notes first.", ToolCalls: []deepseektest.ToolCall{
			{ID: "call_read_1", Name: "read", Arguments: `{"file_path":"notes.txt"}`}}},
		deepseektest.Reply{Reasoning: "They say alpha.", Text: "The notes say alpha."},
	)
	r := s.dsh("run", "what do the notes say?").want(t, 0)
	if r.stdout != "The notes say alpha.\n" {
		t.Errorf("first turn: stdout = %q", r.stdout)
	}
	id, _ := sessionID(t, r.stderr)

	ds.Enqueue(deepseektest.Text("You asked what the notes say."))
	r = s.dsh("run", "--continue", "what did I ask?").want(t, 0)
	if r.stdout != "You asked what the notes say.\n" {
		t.Errorf("second turn: stdout = %q", r.stdout)
	}
	mustContain(t, "second turn", r.stderr, "session "+id, "— turn 2 completed")

	reqs := ds.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d chat requests, want 3", len(reqs))
	}
	for i, q := range reqs {
		if q.Status != 200 || q.Thinking != "enabled" {
			t.Errorf("request %d: status %d, thinking %q", i, q.Status, q.Thinking)
		}
	}
	msgs := conversationOf(reqs[2])
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, " ") != "user assistant tool assistant user" {
		t.Fatalf("the continued turn sent %v, want the first turn's messages and the new task", roles)
	}
	if !strings.Contains(msgText(msgs[0]), "what do the notes say?") {
		t.Errorf("first message = %q", msgText(msgs[0]))
	}
	call := msgs[1]
	if len(call.ToolCalls) != 1 || call.ToolCalls[0].ID != "call_read_1" || call.ToolCalls[0].Function.Name != "read" {
		t.Errorf("the assistant message's tool calls = %+v", call.ToolCalls)
	}
	if call.ReasoningContent == nil || *call.ReasoningContent != "Read the notes first." {
		t.Errorf("the tool-calling message's reasoning_content was not passed back: %v", call.ReasoningContent)
	}
	if msgs[2].ToolCallID != "call_read_1" || !strings.Contains(msgText(msgs[2]), "alpha") {
		t.Errorf("tool result = %q for %q", msgText(msgs[2]), msgs[2].ToolCallID)
	}
	if msgText(msgs[3]) != "The notes say alpha." {
		t.Errorf("first answer = %q", msgText(msgs[3]))
	}
	if !strings.Contains(msgText(msgs[4]), "what did I ask?") {
		t.Errorf("new task = %q", msgText(msgs[4]))
	}
}

// deepseekChatEnv is the chat environment of chatEnv with the DeepSeek stand-in as the model
// server.
func deepseekChatEnv(home string, ds *deepseektest.Server) []string {
	return append(chatEnv(home), "DSH_BASE_URL="+ds.URL, "DSH_PROVIDER=deepseek", "DEEPSEEK_API_KEY="+ds.APIKey)
}

// TestChatAgainstDeepSeekThroughPTY drives the chat on a terminal against the DeepSeek stand-in:
// a turn whose edit an ask rule holds for approval, the question showing the edit's diff and
// answered on the terminal; /usage with the tokens and the estimated cost; Ctrl-D; then
// "dsh --continue" showing the history and a second turn that carries the first one's
// messages, reasoning included.
func TestChatAgainstDeepSeekThroughPTY(t *testing.T) {
	bin := builtDsh(t)
	home, ws := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "greet.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ds := deepseektest.New(t, deepseektest.Options{})
	ds.Enqueue(
		deepseektest.Reply{Reasoning: "Read the file.", ToolCalls: []deepseektest.ToolCall{
			{ID: "call_read_1", Name: "read", Arguments: `{"file_path":"greet.txt"}`}},
			Usage: &deepseektest.Usage{CacheMiss: 1000, Completion: 100}},
		deepseektest.Reply{Reasoning: "Now edit it.", ToolCalls: []deepseektest.ToolCall{
			{ID: "call_edit_2", Name: "edit", Arguments: `{"file_path":"greet.txt","old_string":"hello","new_string":"goodbye"}`}},
			Usage: &deepseektest.Usage{CacheHit: 512, CacheMiss: 600, Completion: 50}},
		deepseektest.Reply{Text: "Changed hello to goodbye.",
			Usage: &deepseektest.Usage{CacheHit: 1024, CacheMiss: 200, Completion: 20}},
	)
	env := deepseekChatEnv(home, ds)
	p := startPTY(t, bin, ws, env, "--ask", "edit")
	p.expect("dsh · deepseek-flash via deepseek")
	p.expect("› ")
	p.send("change hello to goodbye\r")
	p.expect("? edit needs your approval")
	p.expect(`requires approval by permission rule "edit"`)
	p.expect("greet.txt modified +1 −1")
	p.expect("- hello")
	p.expect("+ goodbye")
	p.expect("Allow? [y]es")
	p.send("y\r")
	p.expect("✓ allowed once")
	p.expect("Changed hello to goodbye.")
	p.expect("— turn 1 completed")
	// The question says why it asks and the answer once: the transcript leaves both to it.
	for _, once := range []string{`requires approval by permission rule "edit"`, "allowed once"} {
		if n := strings.Count(p.text(), once); n != 1 {
			t.Errorf("%q is shown %d times:\n%s", once, n, p.text())
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "goodbye\n" {
		t.Errorf("greet.txt = %q after the approved edit", b)
	}
	p.expect("› ")
	p.send("/usage\r")
	p.expect("usage: 3,336 input tokens (1,536 cached) · 170 output · ≈ ¥")
	p.expect("(estimated)")
	p.expect("› ")
	p.send("\x04")
	p.expect("saved · continue it with dsh --continue")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d; the terminal showed:\n%s", code, p.text())
	}
	id := regexp.MustCompile(`session (\S+) saved`).FindStringSubmatch(p.text())[1]

	// --continue shows the history, and the next turn carries it to the model.
	ds.Enqueue(deepseektest.Text("It now says goodbye."))
	p = startPTY(t, bin, ws, env, "--continue")
	p.expect("session " + id)
	p.expect("› change hello to goodbye\n")
	p.expect("Changed hello to goodbye.")
	p.expect("— turn 1 completed")
	p.expect("› ")
	p.send("what does it say now?\r")
	p.expect("It now says goodbye.")
	p.expect("— turn 2 completed")
	p.expect("› ")
	p.send("/quit\r")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d; the terminal showed:\n%s", code, p.text())
	}

	reqs := ds.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d chat requests, want 4", len(reqs))
	}
	for i, q := range reqs {
		if q.Status != 200 {
			t.Errorf("request %d answered %d", i, q.Status)
		}
	}
	var withReasoning []string
	for _, m := range conversationOf(reqs[3]) {
		if len(m.ToolCalls) > 0 && m.ReasoningContent != nil {
			withReasoning = append(withReasoning, m.ToolCalls[0].ID+": "+*m.ReasoningContent)
		}
	}
	if strings.Join(withReasoning, "; ") != "call_read_1: Read the file.; call_edit_2: Now edit it." {
		t.Errorf("the continued chat passed back %q", withReasoning)
	}
}

const presetScript = `{"toolCalls":[{"id":"c1","name":"bash","arguments":{"command":"echo preset-ran","description":"Say it"}}]}
{"expectToolResults":["c1"],"text":"Ran it."}
`

// TestChatApprovalPreset: the chat takes --approval as dsh run does. full-auto runs a call an
// ask rule would hold; an unknown preset is a usage error.
func TestChatApprovalPreset(t *testing.T) {
	s := newSandbox(t)
	for _, args := range [][]string{{"--approval", "yolo"}, {"chat", "--approval", "yolo"}} {
		r := s.dsh(args...).want(t, 2)
		mustContain(t, "dsh "+strings.Join(args, " "), r.stderr, "--approval: ", `"yolo"`)
	}

	bin := builtDsh(t)
	home, ws := t.TempDir(), t.TempDir()
	scriptPath := filepath.Join(t.TempDir(), "preset.jsonl")
	if err := os.WriteFile(scriptPath, []byte(presetScript), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startPTY(t, bin, ws, chatEnv(home), "--script", scriptPath, "--ask", "bash(echo *)", "--approval", "full-auto")
	p.expect("› ")
	p.send("say it\r")
	p.expect("preset-ran\n")
	p.expect("Ran it.")
	p.expect("— turn 1 completed")
	if strings.Contains(p.text(), "needs your approval") {
		t.Errorf("full-auto asked:\n%s", p.text())
	}
	p.expect("› ")
	p.send("/quit\r")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d:\n%s", code, p.text())
	}
}

// TestDemoLeavesMCPServersAlone: the demo does not start the MCP servers the user configured.
func TestDemoLeavesMCPServersAlone(t *testing.T) {
	s := newSandbox(t)
	marker := filepath.Join(t.TempDir(), "started")
	s.writeUserConfig(t, "mcp:\n  servers:\n    mine:\n      command: sh\n      args: [\"-c\", \"touch "+marker+"; exit 1\"]\n")
	// The server does start for a command that needs it.
	s.dsh("mcp", "ls", "--wait", "30s").want(t, 1)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("mcp ls did not start the configured server: %v", err)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	r := s.dsh("demo", "--mode", "native").want(t, 0)
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("dsh demo started the configured MCP server (%v)", err)
	}
	if strings.Contains(r.stderr, "mine") {
		t.Errorf("the demo mentions the configured server:\n%s", r.stderr)
	}
}

const answersScript = `{"toolCalls":[{"id":"c1","name":"bash","arguments":{"command":"echo one","description":"Say one"}}]}
{"expectToolResults":["c1"],"text":"Told."}
{"toolCalls":[{"id":"c2","name":"bash","arguments":{"command":"echo two","description":"Say two"}}]}
{"expectToolResults":["c2"],"text":"Saved."}
`

// TestChatApprovalAnswers: the chat's approval question takes the terminal prompter's
// answers: an answer it does not know asks again, f rejects with a line for the model, s
// saves an allow rule to the user's configuration.
func TestChatApprovalAnswers(t *testing.T) {
	bin := builtDsh(t)
	home, ws := t.TempDir(), t.TempDir()
	scriptPath := filepath.Join(t.TempDir(), "answers.jsonl")
	if err := os.WriteFile(scriptPath, []byte(answersScript), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startPTY(t, bin, ws, chatEnv(home), "--script", scriptPath, "--ask", "bash(echo *)")
	p.expect("› ")
	p.send("say one\r")
	p.expect("? bash needs your approval")
	p.expect("[s]ave as") // the line wraps at the terminal width
	p.expect("a rule: ")
	p.send("maybe\r")
	p.expect("Please answer [y]es")
	p.send("f\r")
	p.expect("Tell the model why (one line): ")
	p.send("not now\r")
	p.expect("✗ rejected, the model is told why")
	p.expect(`the user rejected tool "bash": not now`)
	p.expect("Told.")
	p.expect("— turn 1 completed")
	p.expect("› ")
	p.send("say two\r")
	p.expect("[s]ave as") // the line wraps at the terminal width
	p.expect("a rule: ")
	p.send("s\r")
	p.expect(`saved allow rule "bash(echo two)" to ` + filepath.Join(home, "config.yaml"))
	p.expect("two\n")
	p.expect("Saved.")
	p.expect("— turn 2 completed")
	p.expect("› ")
	p.send("/quit\r")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d:\n%s", code, p.text())
	}
	b, err := os.ReadFile(filepath.Join(home, "config.yaml"))
	if err != nil || !strings.Contains(string(b), "bash(echo two)") {
		t.Errorf("the user configuration after saving: %v\n%s", err, b)
	}
	if strings.Contains(p.text(), "\none\n") {
		t.Errorf("the rejected command ran:\n%s", p.text())
	}
}
