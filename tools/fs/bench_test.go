package fs

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/tool"
)

// benchEnv is newEnv for benchmarks.
func benchEnv(b *testing.B, cfg Config) (*Tools, *tool.Registry, string) {
	b.Helper()
	dir := b.TempDir()
	cfg.Root = dir
	tools, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tools.Close() })
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tools.Register(reg.Global()); err != nil {
		b.Fatal(err)
	}
	return tools, reg, dir
}

// textOfSize returns numbered lines of about 80 bytes totalling at least size bytes.
func textOfSize(size int) string {
	var sb strings.Builder
	for i := 0; sb.Len() < size; i++ {
		fmt.Fprintf(&sb, "%08d %s\n", i, strings.Repeat("lorem ipsum ", 6))
	}
	return sb.String()
}

// BenchmarkRead10MBWindow reads a 100-line window from the middle of a 10 MB file through
// the whole pipeline; the read scans the whole file for the exact line count.
func BenchmarkRead10MBWindow(b *testing.B) {
	_, reg, dir := benchEnv(b, Config{})
	data := textOfSize(10 << 20)
	if err := os.WriteFile(dir+"/big.txt", []byte(data), 0o644); err != nil {
		b.Fatal(err)
	}
	args := tool.ParseArguments(`{"file_path":"big.txt","offset":50000,"limit":100}`)
	ctx := context.Background()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		res := reg.Execute(ctx, tool.Input{CallID: "c", Name: "read", Args: args})
		if res.IsError {
			b.Fatal(res.Error.Message)
		}
	}
}

// BenchmarkEdit1MB edits one line of a 1 MB file through the whole pipeline, including the
// guarded read, the atomic write and the diff meta.
func BenchmarkEdit1MB(b *testing.B) {
	_, reg, dir := benchEnv(b, Config{})
	data := textOfSize(1<<20) + "marker-A\n"
	if err := os.WriteFile(dir+"/one.txt", []byte(data), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if res := reg.Execute(ctx, tool.Input{CallID: "r", Name: "read", Args: tool.ParseArguments(`{"file_path":"one.txt","limit":1}`)}); res.IsError {
		b.Fatal(res.Error.Message)
	}
	flip := []any{
		tool.ParseArguments(`{"file_path":"one.txt","old_string":"marker-A","new_string":"marker-B"}`),
		tool.ParseArguments(`{"file_path":"one.txt","old_string":"marker-B","new_string":"marker-A"}`),
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		res := reg.Execute(ctx, tool.Input{CallID: "c", Name: "edit", Args: flip[i%2]})
		if res.IsError {
			b.Fatal(res.Error.Message)
		}
		i++
	}
}

// BenchmarkWindowBuilder measures the line scanner alone on 10 MB in 1 MB chunks.
func BenchmarkWindowBuilder(b *testing.B) {
	data := []byte(textOfSize(10 << 20))
	spec := windowSpec{offset: 50000, limit: 2000, maxLineLength: 2000, maxBytes: 50 * 1024}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		w := newWindowBuilder(spec)
		for p := data; len(p) > 0; {
			n := min(len(p), chunkSize)
			if err := w.Write(p[:n]); err != nil {
				b.Fatal(err)
			}
			p = p[n:]
		}
		if err := w.finish(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolve resolves a four-component path with a symbolic link in it.
func BenchmarkResolve(b *testing.B) {
	tools, _, dir := benchEnv(b, Config{})
	if err := os.MkdirAll(dir+"/a/b/c", 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.Symlink("a/b", dir+"/link"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tools.ws.Resolve("read", "link/c/file.txt"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHunkDiffs diffs a 1 MB text against a copy with two changed lines.
func BenchmarkHunkDiffs(b *testing.B) {
	before := textOfSize(1 << 20)
	after := strings.Replace(strings.Replace(before, "00000100 ", "changed ", 1), "00009000 ", "changed ", 1)
	b.SetBytes(int64(len(before)))
	b.ReportAllocs()
	for b.Loop() {
		if d := hunkDiffs("p", before, after); len(d) != 2 {
			b.Fatalf("%d hunks", len(d))
		}
	}
}
