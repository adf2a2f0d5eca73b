package spill_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/cputime"
	"github.com/dsh-go/dsh/policy/spill"
	"github.com/dsh-go/dsh/tool"
)

// callExecution returns the execution of one real call of a tool named name, for
// benchmarks that run a hook by itself.
func callExecution(b *testing.B, name string) *tool.Execution {
	b.Helper()
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		b.Fatal(err)
	}
	def := tool.Must(tool.New(name, "Echoes.", func(_ context.Context, _ *tool.Call, in struct{}) (struct{}, error) { return in, nil }))
	if _, err := reg.Register(def); err != nil {
		b.Fatal(err)
	}
	var exec *tool.Execution
	reg.OnPreExecute(func(_ context.Context, e *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		exec = e
		return next()
	})
	if res := reg.Execute(b.Context(), tool.Input{CallID: "c1", Name: name, Args: tool.ParseArguments(`{}`)}); res.IsError {
		b.Fatal(res.Error.Message)
	}
	return exec
}

// BenchmarkPostExecute measures the spill policy's post-execute hook by itself, with the
// later hooks accepting: on the call path's common case, a short text (nothing to spill,
// so nothing may be allocated), and on a text over the default cap, spilled to a store that
// keeps nothing (the preview and notice) or to the local store (a file written per call).
func BenchmarkPostExecute(b *testing.B) {
	exec := callExecution(b, "echo")
	accept := func() (tool.PostDecision, error) { return tool.PostDecision{}, nil }
	discard := storeFunc(func(_ context.Context, req spill.SaveRequest) (spill.Ref, error) {
		return spill.Ref{Locator: "/spill/" + req.SuggestedName, Bytes: len(req.Text), RetrievalHint: "Read it."}, nil
	})
	long := strings.Repeat("line of ordinary output\n", 4000) // 96 KB
	for _, c := range []struct {
		name  string
		text  string
		store spill.Store
	}{
		{"short", "{\n  \"text\": \"hello\"\n}", discard},
		{"spilled", long, discard},
		{"spilled-to-file", long, nil},
	} {
		p, err := spill.New(spill.Config{MaxInlineBytes: spill.DefaultMaxInlineBytes, Dir: b.TempDir(), Store: c.store})
		if err != nil {
			b.Fatal(err)
		}
		res := tool.Success(c.text, content.Texts(c.text))
		want := c.text != long
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			defer cputime.PerOp(b, "cpu-ns/op", 1)()
			for b.Loop() {
				d, err := p.PostExecute(b.Context(), exec, res, accept)
				if err != nil || d.ReplaceContent == want {
					b.Fatalf("decision %+v, %v", d, err)
				}
			}
		})
	}
}

// BenchmarkDecide measures deciding whether a result of many text blocks, under the cap,
// is spilled: from the blocks' sizes, without joining them.
func BenchmarkDecide(b *testing.B) {
	exec := callExecution(b, "echo")
	accept := func() (tool.PostDecision, error) { return tool.PostDecision{}, nil }
	p, err := spill.New(spill.Config{MaxInlineBytes: spill.DefaultMaxInlineBytes, Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	blocks := make([]content.Block, 100)
	for i := range blocks {
		blocks[i] = content.Block{Type: content.TypeText, Text: strings.Repeat("x", 400)}
	}
	res := tool.Success(nil, blocks)
	b.ReportAllocs()
	defer cputime.PerOp(b, "cpu-ns/op", 1)()
	for b.Loop() {
		if d, err := p.PostExecute(b.Context(), exec, res, accept); err != nil || d.ReplaceContent {
			b.Fatalf("decision %+v, %v", d, err)
		}
	}
}
