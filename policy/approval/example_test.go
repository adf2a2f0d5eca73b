package approval_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/policy/rules"
	"github.com/dsh-go/dsh/session"
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
	if _, err := rules.Install(reg.Global(), rules.Config{Ask: []string{"bash(git push*)"}, Workspace: "/work/project"}); err != nil {
		panic(err)
	}

	// The person asked answers "always" to the first question. (approval.ForStdio gives
	// the interactive terminal prompter, which shows the same question.)
	var screen strings.Builder
	person := approval.PrompterFunc(func(ctx context.Context, q approval.Question) (approval.Reply, error) {
		screen.WriteString(approval.FormatQuestion(q))
		return approval.Reply{Outcome: tool.ApprovalAllowedOnce, Always: true}, nil
	})
	log := session.NewMemory(nil)
	log.Append(session.TurnStart{Turn: 0}.Event())
	if _, err := approval.Install(reg, approval.Config{Prompter: person, Auditor: approval.NewSessionAuditor(log)}); err != nil {
		panic(err)
	}

	agent := reg.NewScope("agent", nil)
	defer agent.Close()
	for i := range 2 {
		res := reg.Execute(context.Background(), tool.Input{CallID: fmt.Sprint("call_", i), Name: "bash",
			Args: tool.ParseArguments(`{"command":"git push"}`), Agent: agent})
		fmt.Println("=>", res.Content[0].Text)
	}
	fmt.Println(strings.TrimSpace(screen.String()))
	for _, e := range log.Events()[1:] {
		if d, err := session.DecodeApprovalDecided(e); err == nil {
			fmt.Println(e.Type, d.Outcome, d.Answer)
		} else {
			b, _ := jsonv.Marshal(e.Data)
			fmt.Println(e.Type, strings.Replace(string(b), e.Data.(*jsonv.Object).Members()[0].Value.(string), "<id>", 1))
		}
	}
	// Output:
	// => ran: git push
	// => ran: git push
	// ? bash needs your approval
	//   tool "bash" requires approval by permission rule "bash(git push*)"
	//   command: git push
	// approval/asked {"id":"<id>","toolName":"bash","callId":"call_0","reason":"tool \"bash\" requires approval by permission rule \"bash(git push*)\""}
	// approval/decided allowed-once always-session
	// approval/asked {"id":"<id>","toolName":"bash","callId":"call_1","reason":"tool \"bash\" requires approval by permission rule \"bash(git push*)\""}
	// approval/decided allowed-once remembered
}

// ExampleAddAllowRule saves the rule an "always, save it" answer produces, keeping the rest
// of the configuration file.
func ExampleAddAllowRule() {
	dir, _ := os.MkdirTemp("", "dsh-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "config.yaml")
	os.WriteFile(path, []byte("model: deepseek-flash # mine\npermissions:\n  deny: [\"bash(rm -rf *)\"]\n"), 0o600)

	q := approval.Question{ToolName: "bash", Argument: rules.Argument{Name: "command", Kind: rules.KindCommand, Value: "go test ./..."}}
	rule, _ := q.AllowRule()
	if err := approval.AddAllowRule(path, rule); err != nil {
		panic(err)
	}
	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	// Output:
	// model: deepseek-flash # mine
	// permissions:
	//   deny: ["bash(rm -rf *)"]
	//   allow:
	//     - "bash(go test ./...)"
}

// ExampleInstallPreset runs a registry under the auto-edit preset: edits run, commands ask
// (and with nobody to answer, are denied).
func ExampleInstallPreset() {
	reg, _ := tool.NewRegistry(tool.Config{})
	for _, name := range []string{"edit", "bash"} {
		reg.Register(tool.Must(tool.New(name, "Does "+name+".", func(_ context.Context, _ *tool.Call, in bashIn) (string, error) {
			return name + " ran", nil
		})))
	}
	approval.InstallPreset(reg, approval.PresetAutoEdit)
	approval.Install(reg, approval.Config{Policy: approval.PresetPolicy(approval.PresetAutoEdit), Prompter: approval.NonInteractive()})
	agent := reg.NewScope("agent", nil)
	defer agent.Close()
	for _, name := range []string{"edit", "bash"} {
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: name, Args: tool.ParseArguments(`{"command":"x"}`), Agent: agent})
		fmt.Println(name+":", res.Content[0].Text)
	}
	// Output:
	// edit: edit ran
	// bash: Error: tool "bash" requires approval, but no approval channel is available
}
