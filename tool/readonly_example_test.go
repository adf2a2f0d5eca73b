package tool_test

import (
	"context"
	"fmt"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/tool"
)

// A post-execute hook that only looks at the result — here, one that measures what the
// model will read and adds a note when it is long — registers ReadOnly: it is handed the
// call's own result instead of a deep copy made for it on every call.
func ExampleReadOnly() {
	reg, _ := tool.NewRegistry(tool.Config{})
	reg.Register(tool.Must(tool.New("echo", "Echoes its text.", func(_ context.Context, _ *tool.Call, in echoArgs) (echoOut, error) {
		return echoOut(in), nil
	})))
	reg.OnPostExecute(func(_ context.Context, exec *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		size := 0
		for _, b := range res.Content {
			size += len(b.Text)
		}
		d, err := next()
		if err != nil || size <= 20 {
			return d, err
		}
		note := content.Message{ID: "note-" + exec.CallID(), Role: content.RoleUser, Content: content.Texts(fmt.Sprintf("%s returned %d bytes", exec.Name(), size))}
		d.AdditionalContexts = append(d.AdditionalContexts, note)
		return d, nil
	}, tool.ReadOnly())
	for _, text := range []string{"hi", "a longer text to echo"} {
		res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: tool.ParseArguments(fmt.Sprintf(`{"text":%q}`, text))})
		fmt.Printf("%q, %d notes\n", res.Content[0].Text, len(res.AdditionalContexts))
	}
	// Output:
	// "{\n  \"text\": \"hi\"\n}", 0 notes
	// "{\n  \"text\": \"a longer text to echo\"\n}", 1 notes
}
