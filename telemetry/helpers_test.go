package telemetry_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/dsh-go/dsh/telemetry"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// recorder is a tracer provider recording every span in memory, with the Tracing over it.
type recorder struct {
	rec *tracetest.SpanRecorder
	tp  *sdktrace.TracerProvider
	tr  *telemetry.Tracing
}

func newRecorder(t *testing.T, content bool) *recorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	return &recorder{rec: rec, tp: tp, tr: telemetry.New(tp, telemetry.Settings{RecordContent: content})}
}

// tree renders the ended spans as an indented tree: each span with its kind, status,
// attributes (sorted) and events, its children below it ordered by their tool call id and
// name. Ids and times are left out; a span whose parent was not recorded is a root, and
// says so when its parent is remote.
func tree(spans []sdktrace.ReadOnlySpan) string {
	byParent := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if p := s.Parent(); p.IsValid() && ids[p.SpanID()] {
			byParent[p.SpanID()] = append(byParent[p.SpanID()], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(list []sdktrace.ReadOnlySpan, depth int)
	walk = func(list []sdktrace.ReadOnlySpan, depth int) {
		slices.SortStableFunc(list, func(x, y sdktrace.ReadOnlySpan) int {
			return strings.Compare(sortKey(x), sortKey(y))
		})
		for _, s := range list {
			ind := strings.Repeat("  ", depth)
			fmt.Fprintf(&b, "%s%s [%s] status=%s", ind, s.Name(), s.SpanKind(), s.Status().Code)
			if s.Status().Description != "" {
				fmt.Fprintf(&b, " %q", s.Status().Description)
			}
			if s.Parent().IsRemote() {
				b.WriteString(" (remote parent)")
			}
			b.WriteString("\n")
			for _, a := range sortedAttrs(s.Attributes()) {
				fmt.Fprintf(&b, "%s  %s=%s\n", ind, a.Key, mintedID.ReplaceAllString(a.Value.Emit(), "call_<minted>"))
			}
			for _, e := range s.Events() {
				fmt.Fprintf(&b, "%s  event %s", ind, e.Name)
				for _, a := range sortedAttrs(e.Attributes) {
					fmt.Fprintf(&b, " %s=%q", a.Key, a.Value.Emit())
				}
				b.WriteString("\n")
			}
			walk(byParent[s.SpanContext().SpanID()], depth+1)
		}
	}
	walk(roots, 0)
	return b.String()
}

// mintedID matches the call ids dsh mints (an MCP server's calls), which change per run.
var mintedID = regexp.MustCompile(`^call_[0-9a-f]{16}$`)

func sortKey(s sdktrace.ReadOnlySpan) string {
	for _, a := range s.Attributes() {
		if a.Key == telemetry.AttrToolCallID {
			return a.Value.AsString() + "\x00" + s.Name()
		}
	}
	return s.Name()
}

func sortedAttrs(as []attribute.KeyValue) []attribute.KeyValue {
	out := slices.Clone(as)
	slices.SortFunc(out, func(x, y attribute.KeyValue) int { return strings.Compare(string(x.Key), string(y.Key)) })
	return out
}

// golden compares got with testdata/<name>.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("spans of %s differ from %s:\n--- got\n%s--- want\n%s", name, path, got, want)
	}
}
