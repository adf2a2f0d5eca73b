package rules_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/internal/cputime"
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

// BenchmarkCommand measures one verdict for shell commands: a typical one, warm (the
// analysis cached, as for the guard after the pre-execute hook and for repeated commands)
// and cold (a new command each time, parsed and analysed), and a long pipeline of wrappers
// and nested shell strings, cold.
func BenchmarkCommand(b *testing.B) {
	r, err := rules.New(benchConfig)
	if err != nil {
		b.Fatal(err)
	}
	const typical = "cd src && go test ./... 2>&1 | tail -20"
	b.Run("typical-warm", func(b *testing.B) {
		args := js(b, fmt.Sprintf(`{"command":%q}`, typical))
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			r.Evaluate("bash", args)
		}
	})
	cold := func(b *testing.B, command string) {
		// More distinct commands than the cache holds: every call parses.
		args := make([]any, 1024)
		for i := range args {
			args[i] = js(b, fmt.Sprintf(`{"command":%q}`, fmt.Sprintf("%s x%d", command, i)))
		}
		b.ReportAllocs()
		defer reportCPU(b)()
		i := 0
		for b.Loop() {
			r.Evaluate("bash", args[i%len(args)])
			i++
		}
	}
	b.Run("typical-cold", func(b *testing.B) { cold(b, typical) })
	b.Run("git-status-cold", func(b *testing.B) { cold(b, "git status --short") })
	b.Run("wrapped-cold", func(b *testing.B) {
		cold(b, `timeout 60 nice -n 5 env GOFLAGS=-race bash -c 'go vet ./... && go test ./... | tee log' && echo "$(git rev-parse HEAD)"`)
	})
}

// BenchmarkHook measures a whole pipeline call without and with the rules installed; the
// difference is the hook's and the guard's cost per call. "with" is Install (the rules'
// Check, a pre-execute check); "with-pre-execute" registers the rules' PreExecute instead,
// the classic form with a closure for next per call.
func BenchmarkHook(b *testing.B) {
	args := jsonv.NewObject(jsonv.Member{Name: "command", Value: "git status --short"})
	for _, name := range []string{"without", "with", "with-pre-execute"} {
		b.Run(name, func(b *testing.B) {
			reg, _ := tool.NewRegistry(tool.Config{})
			var runs atomic.Int32
			if _, err := reg.Register(bashTool(&runs)); err != nil {
				b.Fatal(err)
			}
			switch name {
			case "with":
				if _, err := rules.Install(reg.Global(), benchConfig); err != nil {
					b.Fatal(err)
				}
			case "with-pre-execute":
				r, err := rules.New(benchConfig)
				if err != nil {
					b.Fatal(err)
				}
				reg.Global().OnPreExecute(r.PreExecute, tool.Prepend())
				reg.Global().GuardCoded(r.Guard)
			}
			in := tool.Input{CallID: "c", Name: "bash", Args: args}
			ctx := context.Background()
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				if res := reg.Execute(ctx, in); res.IsError {
					b.Fatal(res.Error.Message)
				}
			}
		})
	}
}

// reportCPU reports the process's CPU time per operation ("cpu-ns/op") when the returned
// function is called after the loop: unlike ns/op, it does not grow when other work shares
// the machine, which is how these figures are usually taken.
func reportCPU(b *testing.B) func() { return cputime.PerOp(b, "cpu-ns/op", 1) }
