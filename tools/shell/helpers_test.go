package shell

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testGrace keeps kill escalation short in tests.
const testGrace = 100 * time.Millisecond

// setup installs the shell tools for cfg (Root, SpillDir and Grace default to test values)
// and returns the registry and the workspace. Jobs are closed at cleanup.
func setup(t testing.TB, cfg Config) (*tool.Registry, *Tools) {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = t.TempDir()
	}
	if cfg.SpillDir == "" {
		cfg.SpillDir = t.TempDir()
	}
	if cfg.Grace == 0 {
		cfg.Grace = testGrace
	}
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := NewTools(cfg)
	if err != nil {
		t.Fatal(err)
	}
	undo, err := tools.Register(reg.Global())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(undo)
	return reg, tools
}

func call(t testing.TB, reg *tool.Registry, name, args string) *tool.Result {
	t.Helper()
	return callCtx(context.Background(), reg, nil, name, args)
}

func callCtx(ctx context.Context, reg *tool.Registry, agent *tool.Scope, name, args string) *tool.Result {
	return reg.Execute(ctx, tool.Input{CallID: "call-1", Name: name, Args: tool.ParseArguments(args), Agent: agent})
}

func text(t testing.TB, res *tool.Result) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("want one content block, got %+v", res.Content)
	}
	return res.Content[0].Text
}

func code(res *tool.Result) string {
	if res.Error == nil || res.Error.Info == nil {
		return ""
	}
	return res.Error.Info.Code
}

// foreground decodes the value of a successful foreground bash call.
func foreground(t testing.TB, res *tool.Result) Foreground {
	t.Helper()
	if res.IsError {
		t.Fatalf("bash failed: %s", text(t, res))
	}
	var o BashOutput
	if err := jsonv.Decode(res.Value, &o); err != nil {
		t.Fatal(err)
	}
	if o.Kind != "foreground" {
		t.Fatalf("kind = %q", o.Kind)
	}
	return o.Foreground
}

// bashArgs builds bash arguments for command with extra members (a JSON fragment).
func bashArgs(command string, extra string) string {
	b, _ := jsonv.Marshal(command)
	s := `{"command":` + string(b) + `,"description":"test command"`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// signalFifo makes a fifo a command can write a line to (echo $$ > path) and returns its
// path and a function that returns the first line written, waiting no longer than the
// test's deadline. The test holds both ends open from the start, so the command's write
// never blocks and a line written before the read is kept in the pipe.
func signalFifo(t testing.TB) (string, func() string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "signal")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatalf("mkfifo %s: %v", p, err)
	}
	r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatalf("open %s for reading: %v", p, err)
	}
	// A writer held open keeps the reader from seeing end of file between writers.
	w, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		r.Close()
		t.Fatalf("open %s for writing: %v", p, err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	var buf []byte
	return p, func() string {
		t.Helper()
		ctx := testwait.Context(t)
		if d, ok := ctx.Deadline(); ok {
			r.SetReadDeadline(d)
		}
		chunk := make([]byte, 512)
		for {
			if i := bytes.IndexByte(buf, '\n'); i >= 0 {
				line := string(buf[:i])
				buf = buf[i+1:]
				return strings.TrimSpace(line)
			}
			n, err := r.Read(chunk)
			buf = append(buf, chunk[:n]...)
			if err != nil {
				t.Fatalf("no line was written to %s: %v", p, err)
				return ""
			}
		}
	}
}

// assertGroupGone checks the process table: no process of group pgid is alive. Zombies
// do not count: this machine's init does not reap orphans, so a killed orphan stays a
// zombie (holding no resources) although kill(-pgid, 0) still finds it.
func assertGroupGone(t testing.TB, pgid int) {
	t.Helper()
	if pgid <= 1 {
		t.Fatalf("bad process group %d", pgid)
	}
	if err := syscall.Kill(-pgid, 0); err == syscall.ESRCH {
		return
	}
	live, ok := liveMembers(pgid)
	if !ok {
		t.Fatal("cannot read /proc")
	}
	if live {
		t.Errorf("process group %d still has live processes:\n%s", pgid, psGroup(pgid))
	}
}

// assertNoProcess checks that no live process has marker in its command line.
func assertNoProcess(t testing.TB, marker string) {
	t.Helper()
	for _, pid := range processesWith(marker) {
		t.Errorf("process %d (%q) is still alive", pid, marker)
	}
}

func processesWith(marker string) []int {
	var out []int
	names, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range names {
		cmdline, err := os.ReadFile(dir + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		stat, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue
		}
		if state, _, ok := parseStat(stat); ok && state != 'Z' && state != 'X' {
			pid, _ := strconv.Atoi(filepath.Base(dir))
			if pid != os.Getpid() {
				out = append(out, pid)
			}
		}
	}
	return out
}

func psGroup(pgid int) string {
	var b strings.Builder
	names, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range names {
		stat, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue
		}
		if state, pg, ok := parseStat(stat); ok && pg == strconv.Itoa(pgid) {
			cmdline, _ := os.ReadFile(dir + "/cmdline")
			b.WriteString(filepath.Base(dir) + " " + string(state) + " " + strings.ReplaceAll(string(cmdline), "\x00", " ") + "\n")
		}
	}
	return b.String()
}

// uniqueSleep returns a sleep duration unlikely to appear in any other command line, to
// find the processes of one test in the process table.
func uniqueSleep(t testing.TB) string {
	return "30." + strconv.Itoa(os.Getpid()%1000) + strconv.Itoa(int(time.Now().UnixNano()%100000))
}

func atoi(t testing.TB, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

// liveMembers scans /proc for a process of group pgid that is not a zombie. ok is false
// when /proc cannot be read.
func liveMembers(pgid int) (live, ok bool) {
	entries, ok := readProc()
	if !ok {
		return false, false
	}
	for _, e := range entries {
		if e.pgrp == pgid && e.live() {
			return true, true
		}
	}
	return false, true
}

// parseStat extracts the state and process group from /proc/<pid>/stat, independently of
// parseStatFull (which the fuzz test checks against it).
func parseStat(data []byte) (state byte, pgrp string, ok bool) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, "", false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, "", false
	}
	return f[0][0], string(f[2]), true
}

// manualClock replaces a runner's timers so that a test decides when a foreground timeout
// expires and when a grace period ends, at a point it chooses, instead of racing a short
// real interval against the machine's load.
type manualClock struct {
	expire chan time.Time  // what every timeout the runner arms waits on
	armed  chan *armedKill // each kill armed after SIGTERM, in order
	mu     sync.Mutex
	asked  []time.Duration // the timeouts armed
}

// armedKill is a kill the runner armed after sending SIGTERM.
type armedKill struct {
	grace time.Duration
	f     func()

	mu      sync.Mutex
	stopped bool
}

// fire ends the grace period: the kill runs unless the runner disarmed it.
func (a *armedKill) fire() {
	a.mu.Lock()
	stopped := a.stopped
	a.mu.Unlock()
	if !stopped {
		a.f()
	}
}

// useManualClock installs a manualClock in r; call it before r runs anything.
func useManualClock(r *Runner) *manualClock {
	c := &manualClock{expire: make(chan time.Time, 1), armed: make(chan *armedKill, 64)}
	r.timer = func(d time.Duration) (<-chan time.Time, func()) {
		c.mu.Lock()
		c.asked = append(c.asked, d)
		c.mu.Unlock()
		return c.expire, func() {}
	}
	r.afterFunc = func(d time.Duration, f func()) func() {
		a := &armedKill{grace: d, f: f}
		c.armed <- a
		return func() {
			a.mu.Lock()
			a.stopped = true
			a.mu.Unlock()
		}
	}
	return c
}

// timeout makes the running command's timeout expire.
func (c *manualClock) timeout(t testing.TB) {
	t.Helper()
	select {
	case c.expire <- time.Time{}:
	case <-testwait.Context(t).Done():
		t.Fatal("gave up expiring the timeout: one is pending already")
	}
}

// timeouts returns the timeouts the runner armed.
func (c *manualClock) timeouts() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.asked)
}

// goCall runs a call in its own goroutine and returns the channel its result arrives on.
func goCall(reg *tool.Registry, name, args string) <-chan *tool.Result {
	done := make(chan *tool.Result, 1)
	go func() { done <- callCtx(context.Background(), reg, nil, name, args) }()
	return done
}
