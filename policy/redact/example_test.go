package redact_test

import (
	"context"
	"fmt"

	"github.com/dsh-go/dsh/policy/redact"
	"github.com/dsh-go/dsh/tool"
)

type catIn struct {
	File string `json:"file"`
}

// The policy on a registry: the result the model reads carries markers, and the report
// names kinds and counts.
func Example() {
	reg, _ := tool.NewRegistry(tool.Config{})
	cat := tool.Must(tool.New("cat", "Prints a file.", func(_ context.Context, _ *tool.Call, in catIn) (string, error) {
		return "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\ntoken = s3cr3t-Value-42\n\x1b[32mok\x1b[0m\n", nil
	}))
	if _, err := reg.Register(cat); err != nil {
		panic(err)
	}
	_, err := redact.Install(reg.Global(), redact.Config{
		Env: []string{"SERVICE_TOKEN=s3cr3t-Value-42"},
		Report: func(_ context.Context, exec *tool.Execution, r redact.Report) {
			fmt.Printf("%s: %s\n", exec.Name(), r)
		},
	})
	if err != nil {
		panic(err)
	}
	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "cat", Args: tool.ParseArguments(`{"file":"creds"}`)})
	fmt.Print(res.Content[0].Text)
	// Output:
	// cat: redacted aws-access-token×1, env:SERVICE_TOKEN×1; removed 2 escape sequences
	// aws_access_key_id = [REDACTED:aws-access-token]
	// token = [REDACTED:env:SERVICE_TOKEN]
	// ok
}

func ExampleRedactor_String() {
	r := redact.NewRedactor(nil)
	out, counts := r.String("export GITHUB_TOKEN=ghp_1234567890abcdefghijABCDEFGHIJ123456")
	fmt.Println(out)
	fmt.Println(counts)
	// Output:
	// export GITHUB_TOKEN=[REDACTED:github-pat]
	// github-pat×1
}
