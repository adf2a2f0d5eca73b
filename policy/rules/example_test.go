package rules_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-go/dsh/policy/rules"
	"github.com/dsh-go/dsh/tool"
)

type bashIn struct {
	Command string `json:"command" jsonschema:"the command to run"`
}

func Example() {
	reg, _ := tool.NewRegistry(tool.Config{})
	bash := tool.Must(tool.New("bash", "Runs a command.", func(_ context.Context, _ *tool.Call, in bashIn) (string, error) {
		return "ran: " + in.Command, nil
	}))
	if _, err := reg.Register(bash); err != nil {
		panic(err)
	}
	_, err := rules.Install(reg.Global(), rules.Config{
		Allow:     []string{"bash(git status*)"},
		Ask:       []string{"bash(git push*)"},
		Deny:      []string{"bash(rm *)"},
		Workspace: "/work/project",
	})
	if err != nil {
		panic(err)
	}
	for _, cmd := range []string{"git status -s", "ls && rm -rf build", "git push"} {
		res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "bash", Args: tool.ParseArguments(fmt.Sprintf(`{"command":%q}`, cmd))})
		fmt.Println(res.Content[0].Text)
	}
	// Output:
	// ran: git status -s
	// Error: tool "bash" is denied by permission rule "bash(rm *)"
	// Error: tool "bash" requires approval by permission rule "bash(git push*)"
}

func ExampleRules_Evaluate() {
	r, err := rules.New(rules.Config{
		Allow:     []string{"read", "write(src/**)"},
		Deny:      []string{"read(**/.env)"},
		Workspace: "/work/project",
	})
	if err != nil {
		panic(err)
	}
	for _, c := range []struct{ tool, args string }{
		{"read", `{"file_path":"src/main.go"}`},
		{"read", `{"file_path":"config/../.env"}`},
		{"write", `{"file_path":"/work/project/src/a.go","content":""}`},
		{"write", `{"file_path":"README.md","content":""}`},
	} {
		v := r.Evaluate(c.tool, tool.ParseArguments(c.args))
		fmt.Println(c.tool, v.Kind, v.Rule)
	}
	// Output:
	// read allow read
	// read deny read(**/.env)
	// write allow write(src/**)
	// write none
}

// Command rules see every program a shell command runs, through wrappers and shell strings;
// a command whose program is computed when it runs counts as matching every deny rule.
func ExampleRules_Evaluate_commands() {
	r, err := rules.New(rules.Config{
		Allow:     []string{"bash(git status)", "bash(go test *)"},
		Deny:      []string{"bash(rm *)"},
		Workspace: "/work/project",
	})
	if err != nil {
		panic(err)
	}
	for _, cmd := range []string{
		"timeout 60 go test ./...",
		"env rm -rf build",
		`bash -c "eval 'rm f1'"`,
		"echo f1 | xargs rm",
		"git status; rm f1",
		"git status $(touch x)",
		"$(echo rm) f1",
	} {
		v := r.Evaluate("bash", tool.ParseArguments(fmt.Sprintf(`{"command":%q}`, cmd)))
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%-26s %s %s", cmd, v.Kind, v.Unresolved)))
	}
	// Output:
	// timeout 60 go test ./...   allow
	// env rm -rf build           deny
	// bash -c "eval 'rm f1'"     deny
	// echo f1 | xargs rm         deny
	// git status; rm f1          deny
	// git status $(touch x)      none
	// $(echo rm) f1              deny the program $(echo rm) is computed at run time
}
