package approval_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/tool"
)

// listen opens a channel in a fresh 0700 directory and closes it with the test.
func listen(t *testing.T, dir string) *approval.Channel {
	t.Helper()
	c, err := approval.ListenChannel(filepath.Join(dir, "approve.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ask puts q to c on a goroutine; the reply arrives on the returned channel. asked is
// closed once q is waiting.
func ask(t *testing.T, ctx context.Context, c *approval.Channel, q approval.Question) (<-chan approval.Reply, <-chan struct{}) {
	t.Helper()
	asked := make(chan struct{})
	c.Asked = func(approval.Question) { close(asked) }
	out := make(chan approval.Reply, 1)
	go func() {
		r, err := c.Prompt(ctx, q)
		if err != nil {
			t.Errorf("Prompt: %v", err)
		}
		out <- r
	}()
	return out, asked
}

func TestChannelAnswers(t *testing.T) {
	tests := []struct {
		name   string
		answer approval.ChannelAnswer
		want   approval.Reply
	}{
		{"yes by call id", approval.ChannelAnswer{CallID: "call-1", Decision: "yes"}, approval.Reply{Outcome: tool.ApprovalAllowedOnce}},
		{"yes by question id", approval.ChannelAnswer{CallID: "q-1", Decision: "yes"}, approval.Reply{Outcome: tool.ApprovalAllowedOnce}},
		{"no", approval.ChannelAnswer{CallID: "call-1", Decision: "no"}, approval.Reply{Outcome: tool.ApprovalRejected}},
		{"no with a reason", approval.ChannelAnswer{CallID: "call-1", Decision: "no", Reason: "  use git status instead "}, approval.Reply{Outcome: tool.ApprovalRejected, Feedback: "use git status instead"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testwait.Context(t)
			c := listen(t, t.TempDir())
			out, asked := ask(t, ctx, c, approval.Question{ID: "q-1", CallID: "call-1", ToolName: "bash"})
			testwait.Recv(t, asked, "the question to wait")
			if err := approval.SendAnswer(ctx, c.Path(), tt.answer); err != nil {
				t.Fatal(err)
			}
			if got := testwait.Recv(t, out, "the reply"); got != tt.want {
				t.Fatalf("reply = %+v, want %+v", got, tt.want)
			}
			// The question is answered: a second answer finds nothing waiting.
			err := approval.SendAnswer(ctx, c.Path(), tt.answer)
			if err == nil || !strings.Contains(err.Error(), "no question about call") {
				t.Fatalf("second answer: %v", err)
			}
		})
	}
}

func TestChannelRefusesBadAnswers(t *testing.T) {
	ctx := testwait.Context(t)
	c := listen(t, t.TempDir())
	out, asked := ask(t, ctx, c, approval.Question{ID: "q-1", CallID: "call-1", ToolName: "bash"})
	testwait.Recv(t, asked, "the question to wait")
	tests := []struct {
		name    string
		raw     string
		wantErr string
	}{
		{"not JSON", "yes please\n", "is not a JSON object"},
		{"unknown member", `{"callId":"call-1","decision":"yes","always":true}` + "\n", `unknown field "always"`},
		{"bad decision", `{"callId":"call-1","decision":"maybe"}` + "\n", `decision must be "yes" or "no", got "maybe"`},
		{"empty call", `{"callId":"","decision":"yes"}` + "\n", "the call id is empty"},
		{"reason with yes", `{"callId":"call-1","decision":"yes","reason":"ok"}` + "\n", `a reason goes with "no"`},
		{"unknown call", `{"callId":"call-9","decision":"yes"}` + "\n", `no question about call "call-9" is waiting`},
		{"too long", strings.Repeat("x", 70<<10), "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("unix", c.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			go conn.Write([]byte(tt.raw))
			buf := make([]byte, 4096)
			n, _ := conn.Read(buf)
			var reply struct {
				OK    bool   `json:"ok"`
				Error string `json:"error"`
			}
			if err := json.Unmarshal(buf[:n], &reply); err != nil {
				t.Fatalf("reply %q: %v", buf[:n], err)
			}
			if reply.OK || !strings.Contains(reply.Error, tt.wantErr) {
				t.Fatalf("reply = %+v, want an error containing %q", reply, tt.wantErr)
			}
		})
	}
	// Nothing bad answered the question: a good answer still does.
	if err := approval.SendAnswer(ctx, c.Path(), approval.ChannelAnswer{CallID: "call-1", Decision: "yes"}); err != nil {
		t.Fatal(err)
	}
	if got := testwait.Recv(t, out, "the reply"); got.Outcome != tool.ApprovalAllowedOnce {
		t.Fatalf("reply = %+v", got)
	}
}

func TestSendAnswerChecksFirst(t *testing.T) {
	ctx := testwait.Context(t)
	dir := t.TempDir()
	err := approval.SendAnswer(ctx, filepath.Join(dir, "approve.sock"), approval.ChannelAnswer{CallID: "c", Decision: "nope"})
	if err == nil || !strings.Contains(err.Error(), `decision must be "yes" or "no"`) {
		t.Fatalf("err = %v", err)
	}
	err = approval.SendAnswer(ctx, filepath.Join(dir, "approve.sock"), approval.ChannelAnswer{CallID: "c", Decision: "yes"})
	if err == nil || !strings.Contains(err.Error(), "takes no answers from outside") {
		t.Fatalf("err = %v", err)
	}
}

func TestChannelCancelAndClose(t *testing.T) {
	ctx := testwait.Context(t)
	dir := t.TempDir()
	c := listen(t, dir)
	qctx, cancel := context.WithCancel(ctx)
	out, asked := ask(t, qctx, c, approval.Question{ID: "q-1", CallID: "call-1"})
	testwait.Recv(t, asked, "the question to wait")
	cancel()
	if got := testwait.Recv(t, out, "the reply"); got.Outcome != tool.ApprovalCancelled {
		t.Fatalf("cancelled question: %+v", got)
	}
	// A question waiting when the channel closes is unavailable: it fails closed.
	out, asked = ask(t, ctx, c, approval.Question{ID: "q-2", CallID: "call-2"})
	testwait.Recv(t, asked, "the question to wait")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := testwait.Recv(t, out, "the reply"); got.Outcome != tool.ApprovalUnavailable {
		t.Fatalf("question at close: %+v", got)
	}
	if _, err := os.Lstat(c.Path()); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
	if r, err := c.Prompt(ctx, approval.Question{ID: "q-3"}); err != nil || r.Outcome != tool.ApprovalUnavailable {
		t.Fatalf("question after close: %+v %v", r, err)
	}
}

func TestChannelSocketFile(t *testing.T) {
	dir := t.TempDir()
	c := listen(t, dir)
	fi, err := os.Lstat(c.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket mode = %v, want a 0600 socket", fi.Mode())
	}
	// A second owner is refused while the first listens.
	if _, err := approval.ListenChannel(c.Path()); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("second listener: %v", err)
	}
	// A file in the way is not replaced.
	other := filepath.Join(t.TempDir(), "approve.sock")
	os.WriteFile(other, []byte("x"), 0o600)
	if _, err := approval.ListenChannel(other); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Fatalf("file in the way: %v", err)
	}
}

func TestChannelStaleSocketAndLongPath(t *testing.T) {
	ctx := testwait.Context(t)
	// A directory deeper than a socket address can name.
	dir := t.TempDir()
	for len(dir) < 150 {
		dir = filepath.Join(dir, "a-rather-long-session-directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "approve.sock")
	// A socket left by a dead process (bound, then its listener closed without removing it).
	first, err := approval.ListenChannel(path)
	if err != nil {
		t.Fatal(err)
	}
	// Simulate the dead owner: keep the file, drop the listener.
	os.Link(path, path+".keep")
	first.Close()
	os.Rename(path+".keep", path)
	c := listen(t, dir)
	out, asked := ask(t, ctx, c, approval.Question{ID: "q", CallID: "call"})
	testwait.Recv(t, asked, "the question to wait")
	if err := approval.SendAnswer(ctx, path, approval.ChannelAnswer{CallID: "call", Decision: "no", Reason: "not now"}); err != nil {
		t.Fatal(err)
	}
	if got := testwait.Recv(t, out, "the reply"); got.Outcome != tool.ApprovalRejected || got.Feedback != "not now" {
		t.Fatalf("reply = %+v", got)
	}
}

func TestChannelThroughTheService(t *testing.T) {
	ctx := testwait.Context(t)
	c := listen(t, t.TempDir())
	asked := make(chan string, 1)
	c.Asked = func(q approval.Question) { asked <- q.CallID }
	svc, err := approval.New(approval.Config{Prompter: c})
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		out      tool.ApprovalOutcome
		feedback string
	}
	got := make(chan res, 1)
	go func() {
		o, fb, _ := svc.ApproveWithFeedback(ctx, tool.ApprovalRequest{ToolName: "bash", CallID: "call-7"})
		got <- res{o, fb}
	}()
	id := testwait.Recv(t, asked, "the question")
	if err := approval.SendAnswer(ctx, c.Path(), approval.ChannelAnswer{CallID: id, Decision: "no", Reason: "too risky"}); err != nil {
		t.Fatal(err)
	}
	if r := testwait.Recv(t, got, "the decision"); r.out != tool.ApprovalRejected || r.feedback != "too risky" {
		t.Fatalf("decision = %+v", r)
	}
}

// TestListenSession: the socket of a session is named for its id in a private directory
// created on demand; a directory others may write to, a file in its place and an id that
// cannot be a file name are refused with what is wrong.
func TestListenSession(t *testing.T) {
	ctx := testwait.Context(t)
	home := t.TempDir()
	dir := approval.SocketDir(home)
	c, err := approval.ListenSession(dir, "20261201T103900Z-3f9a2c1d")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(home, "run", "approve", "20261201T103900Z-3f9a2c1d.sock")
	if c.Path() != want {
		t.Errorf("socket at %s, want %s", c.Path(), want)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket directory: %v %v, want mode 0700", fi, err)
	}
	out, asked := ask(t, ctx, c, approval.Question{ID: "q", CallID: "call"})
	testwait.Recv(t, asked, "the question to wait")
	if err := approval.SendAnswer(ctx, want, approval.ChannelAnswer{CallID: "call", Decision: "yes"}); err != nil {
		t.Fatal(err)
	}
	if got := testwait.Recv(t, out, "the reply"); got.Outcome != tool.ApprovalAllowedOnce {
		t.Fatalf("reply = %+v", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(want); !os.IsNotExist(err) {
		t.Errorf("the socket outlived Close: %v", err)
	}

	// An id with a path separator stays one file name in the directory.
	p, err := approval.SocketPath(dir, "a/../b")
	if err != nil || filepath.Dir(p) != dir {
		t.Errorf("SocketPath(a/../b) = %q, %v: want a file in %s", p, err, dir)
	}

	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777) // past the umask
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, nil, 0o600)
	for _, tt := range []struct{ name, dir, id, want string }{
		{"world-writable directory", open, "s1", "other users may write to"},
		{"a file in place of the directory", notDir, "s1", "not a directory"},
		{"empty id", dir, "", "cannot encode an empty path segment"},
		{"id too long for a file name", dir, strings.Repeat("x", 300), "too long for a file name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := approval.ListenSession(tt.dir, tt.id)
			if err == nil {
				c.Close()
				t.Fatalf("ListenSession(%q, %q) succeeded", tt.dir, tt.id)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q lacks %q", err, tt.want)
			}
		})
	}
}
