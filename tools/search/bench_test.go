package search

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/tool"
)

// benchTree generates a source tree of dirs×files files (about 40 lines each), with a
// .gitignore excluding one generated directory, and returns its root.
func benchTree(b *testing.B, dirs, files int) string {
	b.Helper()
	root := b.TempDir()
	var body bytes.Buffer
	for i := range 40 {
		fmt.Fprintf(&body, "func handler%d(w http.ResponseWriter, r *http.Request) { log.Printf(\"serving %%s\", r.URL) }\n", i)
	}
	for d := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("pkg%03d", d), "internal")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range files {
			data := body.Bytes()
			if f == 7 {
				data = append(bytes.Clone(data), "// TODO: remove the needle\n"...)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%03d.go", f)), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte("pkg000/\n*.tmp\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return root
}

func benchRun(b *testing.B, reg *tool.Registry, name, args, wantPrefix string) {
	b.Helper()
	in := tool.Input{CallID: "bench", Name: name, Args: tool.ParseArguments(args)}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res := reg.Execute(context.Background(), in)
		if res.IsError || !strings.HasPrefix(res.Content[0].Text, wantPrefix) {
			b.Fatalf("%s %s: %.200s", name, args, res.Content[0].Text)
		}
	}
}

// The trees have 20,000 files (200 directories of 100), of which pkg000 is ignored.

func BenchmarkGlob20k(b *testing.B) {
	reg := newRegistry(b, Config{Root: benchTree(b, 200, 100)})
	benchRun(b, reg, "glob", `{"pattern":"**/file00*.go"}`, "pkg")
}

func BenchmarkGrep20kLiteral(b *testing.B) {
	reg := newRegistry(b, Config{Root: benchTree(b, 200, 100)})
	benchRun(b, reg, "grep", `{"pattern":"needle"}`, "Found 199 matches")
}

func BenchmarkGrep20kRegexp(b *testing.B) {
	reg := newRegistry(b, Config{Root: benchTree(b, 200, 100)})
	benchRun(b, reg, "grep", `{"pattern":"TODO:\\s+\\w+ the","include":"*.go"}`, "Found 199 matches")
}

// benchEngine scans about 5 MB of source-like lines for pattern.
func benchEngine(b *testing.B, pattern string) {
	e, err := compileGrep(pattern)
	if err != nil {
		b.Fatal(err)
	}
	var line bytes.Buffer
	for i := range 50_000 {
		fmt.Fprintf(&line, "func handler%d(w http.ResponseWriter, r *http.Request) { log.Printf(\"x\") }\n", i)
	}
	data := line.Bytes()
	buf := make([]byte, initialBuf)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.scan(bytes.NewReader(data), &buf, func(int, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEngineLiteral(b *testing.B)         { benchEngine(b, "needle") }
func BenchmarkEngineWordBoundary(b *testing.B)    { benchEngine(b, `\bneedle\b`) }
func BenchmarkEngineAlternation(b *testing.B)     { benchEngine(b, "needle|pin") }
func BenchmarkEngineCaseInsensitive(b *testing.B) { benchEngine(b, "(?i)needle") }
func BenchmarkEngineEveryLine(b *testing.B)       { benchEngine(b, `func \w+\(`) }

// BenchmarkEngineDotAll is the case a whole-buffer regexp prefilter makes quadratic: a
// match that could run to the end of the buffer from every line.
func BenchmarkEngineDotAll(b *testing.B) {
	e, err := compileGrep(`(?s)a.*z`)
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(strings.Repeat("a line with no match\n", 50_000))
	buf := make([]byte, initialBuf)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.scan(bytes.NewReader(data), &buf, func(int, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
