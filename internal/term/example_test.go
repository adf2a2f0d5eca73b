package term_test

import (
	"fmt"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/internal/term"
)

func ExampleRenderer() {
	r := term.Renderer{} // plain: what a pipe gets
	fmt.Print(r.Call("bash", card.Call{Card: card.Terminal, Title: "go test ./...", Description: "Run the tests"}))
	exit := 0
	fmt.Print(r.Result("bash", card.Result{Card: card.Terminal, Output: "ok  \tdemo\t0.01s\n", ExitCode: &exit}, false))
	// Output:
	// ● $ go test ./...
	//   Run the tests
	// ✓ bash · exit 0
	//   ok  	demo	0.01s
}
