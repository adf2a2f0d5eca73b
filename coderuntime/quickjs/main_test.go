package quickjs

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/jsonv"
	"go.uber.org/goleak"
)

// The test binary doubles as the worker: the runtime re-executes it with WorkerArg (or,
// for the hostile-peer tests, with forgeArg and a scenario name).
func TestMain(m *testing.M) {
	if IsWorker(os.Args[1:]) {
		os.Exit(WorkerMain())
	}
	if len(os.Args) > 2 && os.Args[1] == forgeArg {
		os.Exit(forgedWorker(os.Args[2]))
	}
	goleak.VerifyTestMain(m)
}

// testExe is the test binary, used as the worker command.
func testExe(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// newRuntime returns a runtime over the test binary that checks, when the test ends, that
// it was closed cleanly and that every worker it spawned is gone with its process group.
func newRuntime(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	if !cfg.InProcess && cfg.WorkerCommand == nil {
		cfg.WorkerCommand = []string{testExe(t), WorkerArg}
	}
	if cfg.Stderr == nil {
		cfg.Stderr = testLogWriter{t}
	}
	var mu sync.Mutex
	var pids []int
	rt, err := newWithSpawnHook(cfg, func(pid int) {
		mu.Lock()
		pids = append(pids, pid)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if rt.pool != nil {
		// The pool has started its workers, so the first run takes one of them.
		rt.pool.quiet(testwait.Context(t).Done())
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, pid := range pids {
			assertGone(t, pid)
		}
	})
	return rt
}

// spawned reports how many workers rt started so far.
func spawnCounter(rt *Runtime) func() int {
	var mu sync.Mutex
	n := 0
	prev := rt.onSpawn
	rt.onSpawn = func(pid int) {
		mu.Lock()
		n++
		mu.Unlock()
		if prev != nil {
			prev(pid)
		}
	}
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// assertGone checks that neither the worker nor anything in its process group exists.
func assertGone(t testing.TB, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("worker %d still exists (kill 0: %v)", pid, err)
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("worker process group %d still exists (kill 0: %v)", pid, err)
	}
}

// tools is one namespace "tools" with ToolCallError, like Code Mode's.
func tools(fns map[string]coderuntime.Func) []coderuntime.Namespace {
	return []coderuntime.Namespace{{
		Global:     "tools",
		Functions:  fns,
		ErrorClass: &coderuntime.ErrorClass{Name: "ToolCallError", MemberNameProperty: "toolName"},
	}}
}

func run(t testing.TB, rt *Runtime, program string, bindings []coderuntime.Namespace) coderuntime.Result {
	t.Helper()
	return runCtx(t, testwait.Context(t), rt, program, bindings)
}

// manualTimer is a timer the test fires itself, for a ceiling that must be reached at a
// point the test chooses rather than after a real interval that load can stretch.
type manualTimer struct {
	c     chan time.Time
	mu    sync.Mutex
	asked []time.Duration
}

func newManualTimer() *manualTimer { return &manualTimer{c: make(chan time.Time, 1)} }

// start is the timerFunc: it records d and returns the channel fire sends on.
func (m *manualTimer) start(d time.Duration) (<-chan time.Time, func()) {
	m.mu.Lock()
	m.asked = append(m.asked, d)
	m.mu.Unlock()
	return m.c, func() {}
}

// fire reaches the ceiling; a second fire before the first was received is a no-op.
func (m *manualTimer) fire() {
	select {
	case m.c <- time.Time{}:
	default:
	}
}

// durations returns the durations the timer was started with.
func (m *manualTimer) durations() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]time.Duration(nil), m.asked...)
}

// neverTimer is a timerFunc that never fires: the run ends by itself or by the test's
// deadline (see run), never because a real ceiling raced the machine's load.
func neverTimer(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }

func runCtx(t testing.TB, ctx context.Context, rt *Runtime, program string, bindings []coderuntime.Namespace) coderuntime.Result {
	t.Helper()
	res, err := rt.Run(ctx, coderuntime.Request{Program: program, Bindings: bindings})
	if err != nil {
		t.Fatalf("Run: %v", err)
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

// testLogWriter shows a worker's standard error in the test log.
type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Logf("worker stderr: %s", p)
	return len(p), nil
}
