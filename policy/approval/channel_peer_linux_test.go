package approval

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-go/dsh/internal/testwait"
)

// TestChannelRefusesAnotherUser connects to a channel's socket as another user (nobody,
// through python3, with the socket's permissions opened for the test): the answer is refused
// by the peer check and the question keeps waiting. Running a process as another user needs
// root, which CI has.
func TestChannelRefusesAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("running a process as another user needs root; CI runs the tests as root")
	}
	// Debian's python3, which another user can run (a user's own install may not be).
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("python3 (scripts/test-deps.sh installs it): %v", err)
	}
	dir, err := os.MkdirTemp("", "peer")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o711)
	c, err := ListenChannel(filepath.Join(dir, "approve.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	os.Chmod(c.Path(), 0o666) // let the other user reach the socket: only the peer check stands
	ctx, cancel := context.WithCancel(testwait.Context(t))
	defer cancel()
	asked := make(chan struct{})
	c.Asked = func(Question) { close(asked) }
	out := make(chan Reply, 1)
	go func() {
		r, _ := c.Prompt(ctx, Question{ID: "q", CallID: "call_1"})
		out <- r
	}()
	testwait.Recv(t, asked, "the question")
	script := `import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
reply = s.recv(4096)  # the refusal comes before anything is read
try:
    s.sendall(b'{"callId":"call_1","decision":"yes"}\n')
except BrokenPipeError:
    pass
print(reply.decode())`
	cmd := exec.CommandContext(ctx, python, "-c", script, c.Path())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the client as nobody: %v\n%s", err, got)
	}
	if !strings.Contains(string(got), `"ok":false`) || !strings.Contains(string(got), "user 65534 may not answer") {
		t.Fatalf("reply to another user = %s", got)
	}
	// The question is still waiting: its owner can answer it.
	if err := SendAnswer(ctx, c.Path(), ChannelAnswer{CallID: "call_1", Decision: "no"}); err != nil {
		t.Fatal(err)
	}
	if r := testwait.Recv(t, out, "the reply"); r.Outcome != "rejected" {
		t.Fatalf("reply = %+v", r)
	}
}
