package approval_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dsh-go/dsh/policy/approval"
)

// A running session listens for answers on its socket under the dsh home; another process
// (the viewer, "dsh approve") answers a waiting question by its call id.
func ExampleListenSession() {
	home, _ := os.MkdirTemp("", "dsh-home")
	defer os.RemoveAll(home)
	ch, err := approval.ListenSession(approval.SocketDir(home), "20261201T103900Z-3f9a2c1d")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ch.Close()
	waiting := make(chan struct{})
	ch.Asked = func(approval.Question) { close(waiting) }
	replies := make(chan approval.Reply)
	go func() {
		r, _ := ch.Prompt(context.Background(), approval.Question{ID: "q1", CallID: "call_1", ToolName: "bash"})
		replies <- r
	}()
	<-waiting
	path, _ := approval.SocketPath(approval.SocketDir(home), "20261201T103900Z-3f9a2c1d")
	fmt.Println(filepath.Base(path))
	err = approval.SendAnswer(context.Background(), path, approval.ChannelAnswer{CallID: "call_1", Decision: "no", Reason: "run the tests first"})
	fmt.Println(err)
	r := <-replies
	fmt.Printf("%s: %s\n", r.Outcome, r.Feedback)
	// Output:
	// 20261201T103900Z-3f9a2c1d.sock
	// <nil>
	// rejected: run the tests first
}
