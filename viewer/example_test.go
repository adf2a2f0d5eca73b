package viewer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/viewer"
)

// The viewer is an http.Handler over a session store: the list at /, each session at
// /session/ID.
func ExampleNew() {
	root, _ := os.MkdirTemp("", "sessions")
	defer os.RemoveAll(root)
	store, _ := session.Open(root, session.Options{})
	l, _ := store.Create(context.Background(), session.Header{Cwd: "/work/app"})
	l.AppendDurable(session.TurnStart{Turn: 1}.Event())
	l.AppendDurable(session.UserMessage{Message: content.Message{Content: content.Texts("hello <viewer>")}}.Event())
	l.Close()

	v, err := viewer.New(viewer.Options{Store: store})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(v)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/session/" + l.Header().ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Content-Security-Policy") == viewer.ContentSecurityPolicy)
	// Output: 200 true
}
