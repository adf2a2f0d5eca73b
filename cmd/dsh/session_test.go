package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/internal/testwait"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// TestSessionShowRecoversACrash renders a session whose process died mid-call: the log
// alone shows the call, the recovery result and the interrupted turn; "dsh run --resume"
// then continues it.
func TestSessionShowRecoversACrash(t *testing.T) {
	s := newSandbox(t)
	c, err := loadConfig(&env{getenv: func(k string) string { return s.env[k] }}, s.ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	store, err := openStore(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	log, err := store.Create(context.Background(), session.Header{Cwd: s.ws})
	if err != nil {
		t.Fatal(err)
	}
	id := log.Header().ID
	asst := content.Message{Role: content.RoleAssistant, Content: []content.Block{
		content.Text("Running the tests."),
		content.ToolCall("call_1", "bash", `{"command":"go test ./...","description":"Run the tests"}`),
	}}
	for _, e := range []session.Event{
		session.TurnStart{Turn: 1}.Event(),
		session.StepStart{Turn: 1, Step: 1}.Event(),
		session.UserMessage{Message: content.Message{Role: content.RoleUser, Content: content.Texts("run the tests"), Source: &content.Source{Kind: "user"}}}.Event(),
		session.AssistantMessage{Turn: 1, Step: 1, Message: asst}.Event(),
		session.ToolCall{Turn: 1, Step: 1, CallID: "call_1", Name: "bash", Arguments: `{"command":"go test ./...","description":"Run the tests"}`}.Event(),
	} {
		if _, err := log.AppendDurable(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Close(); err != nil { // the "crash": no result, no turn end
		t.Fatal(err)
	}
	show := s.dsh("session", "show", id).want(t, 0)
	mustContain(t, "session show", show.stdout,
		"› run the tests\nRunning the tests.\n● $ go test ./...\n  Run the tests\n✗ bash\n",
		"— turn 1 interrupted (dsh stopped before it ended)\n",
		"recovery events close a turn that was interrupted")

	// Resuming writes the recovery and runs a new turn on the history.
	srv := newChatServer(t, textReply("Resumed."))
	r := s.dsh("run", "--base-url", srv.srv.URL, "--resume", id, "again").want(t, 0)
	mustContain(t, "resumed run", r.stderr, "› again", "Resumed.", "— turn 2 completed")
	show = s.dsh("session", "show", id).want(t, 0)
	if strings.Contains(show.stdout, "recovery events") {
		t.Errorf("the recovery was not written on resume:\n%s", show.stdout)
	}
	msgs, _ := srv.requests()[0]["messages"].([]any)
	b, _ := json.Marshal(msgs)
	mustContain(t, "resumed request", string(b), "Its outcome is unknown.", "go test ./...")
}

// syncBuffer is a bytes.Buffer safe for a concurrent writer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestApprovalInTranscript runs a turn whose call needs approval: the prompter is asked,
// and the question and the answer are logged and shown.
func TestApprovalInTranscript(t *testing.T) {
	for _, answer := range []tool.ApprovalOutcome{tool.ApprovalAllowedOnce, tool.ApprovalRejected} {
		t.Run(string(answer), func(t *testing.T) {
			s := newSandbox(t)
			c, err := loadConfig(&env{getenv: func(k string) string { return s.env[k] }}, s.ws, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.Permissions.Ask = []string{"bash(echo *)"}
			model, err := script.New([]script.Reply{
				{ToolCalls: []script.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"echo approved","description":"Say it"}`}}},
				{ExpectToolResults: []string{"c1"}, Text: "ok"},
			}, script.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var asked []string
			prompter := approval.PrompterFunc(func(_ context.Context, q approval.Question) (approval.Reply, error) {
				asked = append(asked, q.ToolName+": "+q.Reason)
				return approval.Reply{Outcome: answer}, nil
			})
			var out, errb bytes.Buffer
			e := &env{stdout: &out, stderr: &errb, cwd: s.ws, getenv: func(k string) string { return s.env[k] }}
			err = runAgent(context.Background(), e, agentRun{config: c, workspace: s.ws, model: model, task: "say it", banner: "test", prompter: prompter})
			if err != nil {
				t.Fatalf("runAgent: %v\n%s", err, errb.String())
			}
			if want := []string{`bash: tool "bash" requires approval by permission rule "bash(echo *)"`}; fmt.Sprint(asked) != fmt.Sprint(want) {
				t.Errorf("asked %q, want %q", asked, want)
			}
			mustContain(t, "transcript", errb.String(),
				`? bash needed approval: tool "bash" requires approval by permission rule "bash(echo *)"`)
			if answer == tool.ApprovalAllowedOnce {
				mustContain(t, "transcript", errb.String(), "✓ allowed once\n")
			} else {
				mustContain(t, "transcript", errb.String(), "✗ rejected\n")
			}
			if strings.Contains(errb.String(), "approval allowed-once") || strings.Contains(errb.String(), "approval asked for") {
				t.Errorf("the transcript shows the internal outcome name:\n%s", errb.String())
			}
			if answer == tool.ApprovalAllowedOnce {
				mustContain(t, "transcript", errb.String(), "✓ bash · exit 0\n  approved\n")
			} else {
				mustContain(t, "transcript", errb.String(), "✗ bash\n  Error: the user rejected tool \"bash\"\n")
			}
			id, _ := sessionID(t, errb.String())
			show := s.dsh("session", "show", id).want(t, 0)
			if !strings.Contains(errb.String(), show.stdout) {
				t.Errorf("replay differs from the live transcript\nlive:\n%s\nshow:\n%s", errb.String(), show.stdout)
			}
		})
	}
}

// TestMCPServeHTTP serves streamable HTTP on a loopback port until interrupted.
func TestMCPServeHTTP(t *testing.T) {
	s := newSandbox(t)
	var errb syncBuffer
	e := &env{stdout: &bytes.Buffer{}, stderr: &errb, cwd: s.ws, getenv: func(k string) string { return s.env[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, e, []string{"mcp", "serve", "--http", "127.0.0.1:0"}) }()
	addr := regexp.MustCompile(`serving streamable HTTP on (http://\S+)`)
	var url string
	announced := func() bool {
		if m := addr.FindStringSubmatch(errb.String()); m != nil {
			url = m[1]
			return true
		}
		return false
	}
	t.Cleanup(func() {
		if url == "" { // the wait below failed: stop the server
			cancel()
			<-done
		}
	})
	testwait.Until(t, "the server to announce its address", announced)
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(body.String(), `"serverInfo"`) {
		t.Errorf("initialize: %d %s", resp.StatusCode, body.String())
	}
	// The session never calls a tool (nor even sends notifications/initialized) and holds
	// its standalone SSE stream open: stopping the server still ends it.
	get, _ := http.NewRequest("GET", url, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", resp.Header.Get("Mcp-Session-Id"))
	get.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	sse, err := (&http.Client{}).Do(get)
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Body.Close()
	if sse.StatusCode != http.StatusOK {
		t.Fatalf("standalone SSE stream: %s", sse.Status)
	}
	streamEnded := make(chan struct{})
	go func() {
		io.Copy(io.Discard, sse.Body)
		close(streamEnded)
	}()
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("dsh mcp serve --http exited %d: %s", code, errb.String())
	}
	<-streamEnded
	client.CloseIdleConnections()
	http.DefaultClient.CloseIdleConnections()
}
