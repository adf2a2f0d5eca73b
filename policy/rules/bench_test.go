package rules_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/policy/rules"
	"github.com/dsh-go/dsh/tool"
)

var benchConfig = rules.Config{
	Allow:     []string{"read", "glob", "grep", "bash(git status*)", "bash(git diff*)", "bash(go test *)", "bash(ls*)", "write(src/**)"},
	Ask:       []string{"bash(git push*)", "mcp__*", "write(**/*.md)"},
	Deny:      []string{"read(**/.env)", "bash(rm -rf *)", "bash(curl *)", "write(.git/**)"},
	Workspace: "/ws",
}

// BenchmarkEvaluate measures one verdict for typical calls.
func BenchmarkEvaluate(b *testing.B) {
	r, err := rules.New(benchConfig)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, tool, args string }{
		{"bash-compound", "bash", `{"command":"cd src && go test ./... 2>&1 | tail -20","description":"test"}`},
		{"read", "read", `{"file_path":"src/deep/path/main.go"}`},
		{"write", "write", `{"file_path":"src/a.go","content":"package a"}`},
		{"mcp", "mcp__gh__issue", `{"title":"x","body":"y"}`},
	} {
		args := js(b, c.args)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r.Evaluate(c.tool, args)
			}
		})
	}
}

// BenchmarkHook measures a whole pipeline call without and with the rules installed; the
// difference is the hook's and the guard's cost per call.
func BenchmarkHook(b *testing.B) {
	args := jsonv.NewObject(jsonv.Member{Name: "command", Value: "git status --short"})
	for _, installed := range []bool{false, true} {
		name := "without"
		if installed {
			name = "with"
		}
		b.Run(name, func(b *testing.B) {
			reg, _ := tool.NewRegistry(tool.Config{})
			var runs atomic.Int32
			if _, err := reg.Register(bashTool(&runs)); err != nil {
				b.Fatal(err)
			}
			if installed {
				if _, err := rules.Install(reg.Global(), benchConfig); err != nil {
					b.Fatal(err)
				}
			}
			in := tool.Input{CallID: "c", Name: "bash", Args: args}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				reg.Execute(ctx, in)
			}
		})
	}
}
