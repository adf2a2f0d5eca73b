package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/dsh-go/dsh/tool"
	"github.com/dsh-go/dsh/tools/web"
)

// web_search runs through the registry's pipeline like any tool; here a small server plays
// DeepSeek's Search API.
func Example() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != web.SearchPath || r.Header.Get("Authorization") != "Bearer sk-example" {
			http.Error(w, `{"error":{"message":"no"}}`, http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"results":[{"url":"https://go.dev/doc/","title":"Documentation","snippet":"The Go documentation."}],"truncated":false}`)
	}))
	defer api.Close()

	reg, _ := tool.NewRegistry(tool.Config{})
	undo, err := web.Install(reg, web.Config{BaseURL: api.URL, APIKey: "sk-example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer undo()
	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "web_search",
		Args: tool.ParseArguments(`{"queries":["go documentation"]}`)})
	fmt.Println(res.IsError)
	fmt.Println(res.Content[0].Text)
	// Output:
	// false
	// Sources:
	// - [Documentation](https://go.dev/doc/) — The Go documentation.
	//
	// Cite the URLs you use as markdown links.
}
