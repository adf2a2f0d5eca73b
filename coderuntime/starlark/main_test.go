package starlark

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/jsonv"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newRuntime returns a runtime that is closed when the test ends.
func newRuntime(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	rt, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return rt
}

// toolCallError is the error class Code Mode declares.
func toolCallError() *coderuntime.ErrorClass {
	return &coderuntime.ErrorClass{Name: "ToolCallError", MemberNameProperty: "toolName"}
}

// tools is one namespace "tools" with ToolCallError, like Code Mode's.
func tools(fns map[string]coderuntime.Func) []coderuntime.Namespace {
	return []coderuntime.Namespace{{Global: "tools", Functions: fns, ErrorClass: toolCallError()}}
}

func run(t testing.TB, rt *Runtime, program string, bindings []coderuntime.Namespace) coderuntime.Result {
	t.Helper()
	return runCtx(t, testwait.Context(t), rt, program, bindings)
}

// testClock is the clock a run measures busy time with: real time plus an offset the test
// moves, at once (advance) or at a chosen later reading (jumpAfter).
type testClock struct {
	mu     sync.Mutex
	offset time.Duration
	reads  int
	jumpAt int
	jump   time.Duration
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	if c.reads == c.jumpAt {
		c.offset += c.jump
	}
	return time.Now().Add(c.offset)
}

// advance moves the clock on by d now.
func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// jumpAfter moves the clock on by d at the n-th reading from now.
func (c *testClock) jumpAfter(n int, d time.Duration) {
	c.mu.Lock()
	c.jumpAt, c.jump = c.reads+n, d
	c.mu.Unlock()
}

// manualTimer is a wall-clock timer the test fires itself.
type manualTimer chan time.Time

func (m manualTimer) start(time.Duration) (<-chan time.Time, func()) { return m, func() {} }

// fire reaches the ceiling; a second fire before the first was received is a no-op.
func (m manualTimer) fire() {
	select {
	case m <- time.Time{}:
	default:
	}
}

func runCtx(t testing.TB, ctx context.Context, rt *Runtime, program string, bindings []coderuntime.Namespace) coderuntime.Result {
	t.Helper()
	res, err := rt.Run(ctx, coderuntime.Request{Program: program, Bindings: bindings})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Logs == nil {
		t.Fatalf("Logs is nil")
	}
	return res
}

// jsonOf renders a jsonv value compactly for comparisons.
func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := jsonv.Marshal(v)
	if err != nil {
		t.Fatalf("Marshal(%#v): %v", v, err)
	}
	return string(b)
}

// wantValue checks a successful result's value (as compact JSON).
func wantValue(t testing.TB, res coderuntime.Result, want string) {
	t.Helper()
	if res.Error != nil {
		t.Fatalf("run failed: %v (logs %q)", res.Error, res.Logs)
	}
	if !res.HasValue {
		t.Fatalf("no value, want %s", want)
	}
	if got := jsonOf(t, res.Value); got != want {
		t.Fatalf("value = %s, want %s", got, want)
	}
}

// wantFailure checks a failed result's kind and exact message.
func wantFailure(t testing.TB, res coderuntime.Result, kind coderuntime.FailureKind, message string) {
	t.Helper()
	if res.Error == nil {
		t.Fatalf("run succeeded (value %v, logs %q), want %s: %s", res.Value, res.Logs, kind, message)
	}
	if res.Error.Kind != kind || res.Error.Message != message {
		t.Fatalf("failure = %s: %q, want %s: %q", res.Error.Kind, res.Error.Message, kind, message)
	}
	if res.HasValue {
		t.Fatalf("failed result has a value")
	}
}

// resultBytes is what the output ledger bounds.
func resultBytes(t testing.TB, res coderuntime.Result) int {
	t.Helper()
	logs := make([]any, len(res.Logs))
	for i, s := range res.Logs {
		logs[i] = s
	}
	n := len(jsonOf(t, logs))
	switch {
	case res.Error != nil:
		n += len(jsonOf(t, res.Error.Message))
	case res.HasValue:
		n += len(jsonOf(t, res.Value))
	}
	return n
}
