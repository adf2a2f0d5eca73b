package spill_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-go/dsh/policy/spill"
	"github.com/dsh-go/dsh/tool"
)

type logIn struct {
	Lines int `json:"lines" jsonschema:"how many lines to print"`
}

func Example() {
	reg, _ := tool.NewRegistry(tool.Config{})
	logs := tool.Must(tool.New("logs", "Prints log lines.", func(_ context.Context, _ *tool.Call, in logIn) (string, error) {
		var b strings.Builder
		for i := range in.Lines {
			fmt.Fprintf(&b, "line %04d\n", i)
		}
		return b.String(), nil
	}))
	if _, err := reg.Register(logs); err != nil {
		panic(err)
	}
	// A store answering with a fixed locator, to keep the output stable; the default
	// LocalStore writes a file and answers with its path.
	store := storeFunc(func(_ context.Context, req spill.SaveRequest) (spill.Ref, error) {
		return spill.Ref{Locator: "/tmp/spill/" + req.SuggestedName, Bytes: len(req.Text), RetrievalHint: spill.RetrievalHint}, nil
	})
	if _, err := spill.Install(reg.Global(), spill.Config{MaxInlineBytes: 300, Store: store}); err != nil {
		panic(err)
	}
	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "logs", Args: tool.ParseArguments(`{"lines":1000}`)})
	for _, line := range strings.Split(res.Content[0].Text, "\n") {
		fmt.Println("|" + line)
	}
	// Output:
	// |line 0000
	// |line 0001
	// |line 0002
	// |line 0003
	// |line 0004
	// |line 0005
	// |line 0006
	// |lin92
	// |line 0993
	// |line 0994
	// |line 0995
	// |line 0996
	// |line 0997
	// |line 0998
	// |line 0999
	// |
	// |
	// |(Omitted 9854 bytes. Full formatted result stored at: /tmp/spill/logs.txt. Use read with this absolute path and offset/limit; grep does not search it.)
}

type storeFunc func(ctx context.Context, req spill.SaveRequest) (spill.Ref, error)

func (f storeFunc) SaveText(ctx context.Context, req spill.SaveRequest) (spill.Ref, error) {
	return f(ctx, req)
}
