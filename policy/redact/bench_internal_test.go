package redact

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/cputime"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// benchExecution returns the execution of one real call, for benchmarks that run the
// policy's hooks by themselves.
func benchExecution(b *testing.B) *tool.Execution {
	b.Helper()
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		b.Fatal(err)
	}
	def := tool.Must(tool.New("echo", "Echoes.", func(_ context.Context, _ *tool.Call, in struct{}) (struct{}, error) { return in, nil }))
	if _, err := reg.Register(def); err != nil {
		b.Fatal(err)
	}
	var exec *tool.Execution
	reg.OnPreExecute(func(_ context.Context, e *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		exec = e
		return next()
	})
	if res := reg.Execute(b.Context(), tool.Input{CallID: "c1", Name: "echo", Args: tool.ParseArguments(`{}`)}); res.IsError {
		b.Fatal(res.Error.Message)
	}
	return exec
}

// BenchmarkHooks measures each of the policy's hooks by itself on the call path's common
// case — a short, clean success ({"text":"hello"} rendered as indented JSON), which every
// hook lets through unchanged without allocating — and the wrapper on a value holding a
// secret and an escape sequence, which it cleans. "wrap" and "post" are the after-execute
// hook (clean) and the post-decision hook (decide) in the classic forms the policy used to
// install, "after" and "decide" as Install adds them.
func BenchmarkHooks(b *testing.B) {
	exec := benchExecution(b)
	p := New(Config{Env: []string{"GITHUB_TOKEN=Zx9vQ2mL7pK4"}})
	clean := tool.Success(jsonv.NewObject(jsonv.Member{Name: "text", Value: "hello"}), content.Texts("{\n  \"text\": \"hello\"\n}"))
	dirty := tool.Success(jsonv.NewObject(jsonv.Member{Name: "text", Value: "key AKIAIOSFODNN7EXAMPLE \x1b[31mred\x1b[0m"}), nil)
	accept := func() (tool.PostDecision, error) { return tool.PostDecision{}, nil }
	ctx := context.Background()
	run := func(name string, f func(b *testing.B)) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			defer cputime.PerOp(b, "cpu-ns/op", 1)()
			for b.Loop() {
				f(b)
			}
		})
	}
	run("wrap-clean", func(b *testing.B) {
		if res, err := p.wrap(ctx, exec, func(context.Context) (*tool.Result, error) { return clean, nil }); err != nil || res != clean {
			b.Fatalf("wrap: %+v, %v", res, err)
		}
	})
	run("post-clean", func(b *testing.B) {
		if d, err := p.post(ctx, exec, clean, accept); err != nil || d.ReplaceContent {
			b.Fatalf("post: %+v, %v", d, err)
		}
	})
	run("after-clean", func(b *testing.B) {
		if res, err := p.clean(ctx, exec, clean); err != nil || res != clean {
			b.Fatalf("clean: %+v, %v", res, err)
		}
	})
	run("decide-clean", func(b *testing.B) {
		if d, err := p.decide(ctx, exec, clean, tool.PostDecision{}, nil); err != nil || d.ReplaceContent {
			b.Fatalf("decide: %+v, %v", d, err)
		}
	})
	run("done-clean", func(b *testing.B) {
		if err := p.done(ctx, exec, clean); err != nil {
			b.Fatal(err)
		}
	})
	run("wrap-dirty", func(b *testing.B) {
		res, err := p.wrap(ctx, exec, func(context.Context) (*tool.Result, error) { return dirty, nil })
		if err != nil || res == dirty {
			b.Fatalf("wrap: %+v, %v", res, err)
		}
		p.done(ctx, exec, res) // forgets the call, as the result listener does
	})
}

// BenchmarkText measures cleaning and redacting one text: a short clean one (no work
// beyond the scans, no allocation), 10 KB of ordinary output, and a short one holding a
// secret and an escape sequence.
func BenchmarkText(b *testing.B) {
	p := New(Config{Env: []string{"GITHUB_TOKEN=Zx9vQ2mL7pK4"}})
	for _, c := range []struct{ name, text string }{
		{"short-clean", "{\n  \"text\": \"hello\"\n}"},
		{"10KB-clean", strings.Repeat("ordinary output of a command, line after line\n", 220)},
		{"short-dirty", "key AKIAIOSFODNN7EXAMPLE \x1b[31mred\x1b[0m"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			defer cputime.PerOp(b, "cpu-ns/op", 1)()
			for b.Loop() {
				p.Text(c.text)
			}
		})
	}
}
