package approval_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dsh-go/dsh/policy/approval"
)

// A session listens for answers on a socket in its directory; another process (the
// viewer, "dsh approve") answers a waiting question by its call id.
func ExampleListenChannel() {
	dir, _ := os.MkdirTemp("", "session")
	defer os.RemoveAll(dir)
	ch, err := approval.ListenChannel(filepath.Join(dir, approval.ChannelFile))
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
	err = approval.SendAnswer(context.Background(), ch.Path(), approval.ChannelAnswer{CallID: "call_1", Decision: "no", Reason: "run the tests first"})
	fmt.Println(err)
	r := <-replies
	fmt.Printf("%s: %s\n", r.Outcome, r.Feedback)
	// Output:
	// <nil>
	// rejected: run the tests first
}
