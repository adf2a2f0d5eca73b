package quickjs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/internal/testwait"
)

func TestPoolConfig(t *testing.T) {
	for _, n := range []int{-1, MaxPool + 1} {
		_, err := New(Config{Pool: n})
		want := fmt.Sprintf("quickjs: config.pool must be an integer from 0 to %d, got %d", MaxPool, n)
		if err == nil || err.Error() != want {
			t.Errorf("New(Pool: %d) = %v, want %q", n, err, want)
		}
	}
	// In process there are no worker processes to keep.
	rt := newRuntime(t, Config{InProcess: true, Pool: 3})
	if rt.pool != nil {
		t.Error("an in-process runtime has a pool")
	}
	wantValue(t, run(t, rt, "return 1", nil), "1")
}

// Every run gets a worker of its own, used once: what one program leaves behind (globals,
// patched intrinsics, timers) is never seen by the next, and the worker is gone once its
// run has returned.
func TestPoolRunsAreIsolated(t *testing.T) {
	for _, size := range []int{1, 2} {
		t.Run(fmt.Sprintf("pool=%d", size), func(t *testing.T) {
			t.Parallel()
			rt := newRuntime(t, Config{Pool: size})
			ctx := testwait.Context(t)
			for i := range 4 {
				idle := rt.pool.quiet(ctx.Done())
				if len(idle) != size {
					t.Fatalf("run %d: %d idle workers, want %d", i, len(idle), size)
				}
				res := run(t, rt, `
					const seen = [typeof globalThis.leaked, typeof JSON.leaked, String(Array.prototype.leaked)];
					globalThis.leaked = 1; JSON.leaked = 2; Array.prototype.leaked = 3;
					setInterval(() => {}, 1000);
					return seen`, nil)
				wantValue(t, res, `["undefined","undefined","undefined"]`)
				// The run took the oldest idle worker, which is killed and soon reaped.
				testwait.Until(t, "the used worker to be reaped", func() bool {
					return errors.Is(syscall.Kill(idle[0], 0), syscall.ESRCH)
				})
				assertGone(t, idle[0])
				if slices.Contains(rt.pool.quiet(ctx.Done()), idle[0]) {
					t.Fatalf("run %d: worker %d is idle again", i, idle[0])
				}
			}
		})
	}
}

// A worker that dies while idle is reaped and replaced, and runs go on with live ones.
func TestPoolReplacesDeadIdleWorker(t *testing.T) {
	rt := newRuntime(t, Config{Pool: 1})
	ctx := testwait.Context(t)
	idle := rt.pool.quiet(ctx.Done())
	if len(idle) != 1 {
		t.Fatalf("idle workers %v", idle)
	}
	if !rt.pool.waitReady(ctx.Done()) {
		t.Fatal("the idle worker did not become ready")
	}
	if err := syscall.Kill(idle[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "a replacement for the killed worker", func() bool {
		ids := rt.pool.idleIDs()
		return len(ids) == 1 && ids[0] != idle[0]
	})
	assertGone(t, idle[0])
	wantValue(t, run(t, rt, "return 'after the death'", nil), `"after the death"`)
}

// A worker command that dies at once is not restarted without end: the pool gives up
// after as many idle deaths in a row as its size, and a run reports why the worker died.
func TestPoolBoundsRestartsOfDyingWorkers(t *testing.T) {
	var mu sync.Mutex
	spawned := 0
	rt, err := newWithSpawnHook(Config{Pool: 2, WorkerCommand: []string{testExe(t), forgeArg, "exit-at-once"}}, func(int) {
		mu.Lock()
		spawned++
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	stopped := func() bool {
		rt.pool.mu.Lock()
		defer rt.pool.mu.Unlock()
		return rt.pool.starting == 0 && len(rt.pool.idle) == 0 && rt.pool.deaths > rt.pool.size
	}
	testwait.Until(t, "the pool to give up on its dying workers", stopped)
	mu.Lock()
	n := spawned
	mu.Unlock()
	if n > 2*rt.pool.size {
		t.Errorf("%d workers started for a pool of %d whose workers all die", n, rt.pool.size)
	}
	wantFailure(t, run(t, rt, "return 1", nil), coderuntime.FailureWorkerExit, "worker exited with code 9 before completing")
	testwait.Until(t, "the pool to give up again", stopped)
}

// More runs at once than the pool holds all run, each in a worker of its own.
func TestPoolBurst(t *testing.T) {
	rt := newRuntime(t, Config{Pool: 1})
	const n = 5
	all := testwait.Barrier(t, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := rt.Run(context.Background(), coderuntime.Request{
				Program: fmt.Sprintf("globalThis.mine = %d; await tools.wait({}); return globalThis.mine", i),
				Bindings: tools(map[string]coderuntime.Func{"wait": func(ctx context.Context, _ any) (any, error) {
					return nil, all(ctx)
				}}),
			})
			if err != nil || res.Error != nil || jsonOf(t, res.Value) != strconv.Itoa(i) {
				t.Errorf("run %d: %+v %v", i, res, err)
			}
		}()
	}
	wg.Wait()
}

// A run whose worker has not prepared yet (here: never will) still ends at once when it is
// cancelled or the runtime closes, and the worker is killed.
func TestPoolCancelWhileWaitingForWorker(t *testing.T) {
	for _, pool := range []int{0, 1} {
		t.Run(fmt.Sprintf("pool=%d/cancel", pool), func(t *testing.T) {
			t.Parallel()
			rt := newRuntime(t, Config{Pool: pool, WorkerCommand: []string{testExe(t), forgeArg, "stall"}})
			rt.wallTimer = neverTimer
			ctx, cancel := context.WithCancelCause(testwait.Context(t))
			done := make(chan coderuntime.Result, 1)
			go func() {
				res, _ := rt.Run(ctx, coderuntime.Request{Program: "return 1"})
				done <- res
			}()
			cancel(errors.New("gave up waiting"))
			wantFailure(t, testwait.Recv(t, done, "the cancelled run"), coderuntime.FailureAbort, "gave up waiting")
		})
		t.Run(fmt.Sprintf("pool=%d/close", pool), func(t *testing.T) {
			t.Parallel()
			rt := newRuntime(t, Config{Pool: pool, WorkerCommand: []string{testExe(t), forgeArg, "stall"}})
			rt.wallTimer = neverTimer
			started := make(chan int, 1)
			prev := rt.onSpawn
			if pool == 0 {
				rt.onSpawn = func(pid int) { prev(pid); started <- pid }
			}
			// With a pool, the run must take the worker started ahead: wait until it is
			// idle, then until the run has taken it (a replacement becomes idle at once,
			// so "no idle worker" is not a state the test can count on seeing).
			var ahead int
			if pool > 0 {
				testwait.Until(t, "the worker started ahead to be idle", func() bool {
					ids := rt.pool.idleIDs()
					if len(ids) > 0 {
						ahead = ids[0]
					}
					return len(ids) > 0
				})
			}
			done := make(chan coderuntime.Result, 1)
			go func() {
				res, _ := rt.Run(testwait.Context(t), coderuntime.Request{Program: "return 1"})
				done <- res
			}()
			if pool == 0 {
				testwait.Recv(t, started, "the run's worker to start")
			} else {
				testwait.Until(t, "the run to take the idle worker", func() bool { return !slices.Contains(rt.pool.idleIDs(), ahead) })
			}
			rt.Close()
			wantFailure(t, testwait.Recv(t, done, "the disposed run"), coderuntime.FailureAbort, "runtime disposed")
		})
	}
}

// Close kills the idle workers and returns once they are reaped: no process of the pool
// is left, not even a zombie.
func TestPoolCloseStopsIdleWorkers(t *testing.T) {
	var mu sync.Mutex
	var pids []int
	rt, err := newWithSpawnHook(Config{Pool: 3}, func(pid int) {
		mu.Lock()
		pids = append(pids, pid)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testwait.Context(t)
	if idle := rt.pool.quiet(ctx.Done()); len(idle) != 3 {
		t.Fatalf("idle workers %v, want 3", idle)
	}
	wantValue(t, run(t, rt, "return 1", nil), "1")
	rt.pool.quiet(ctx.Done())
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pids) != 4 {
		t.Errorf("%d workers started, want 4 (three ahead, one replacement)", len(pids))
	}
	children := childProcesses(t)
	for _, pid := range pids {
		assertGone(t, pid)
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("/proc/%d: %v", pid, err)
		}
		if slices.Contains(children, pid) {
			t.Errorf("worker %d is still a child of this process", pid)
		}
	}
	// Closing again, and running after Close, start nothing.
	if err := rt.Close(); err != nil {
		t.Error(err)
	}
	if _, err := rt.Run(ctx, coderuntime.Request{Program: "return 1"}); !errors.Is(err, coderuntime.ErrDisposed) {
		t.Errorf("Run after Close = %v", err)
	}
	if len(pids) != 4 {
		t.Errorf("workers started after Close: %v", pids)
	}
}

// childProcesses lists the processes whose parent is this one, from /proc.
func childProcesses(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	var kids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(self) {
			kids = append(kids, pid)
		}
	}
	return kids
}

// The CPU time a worker spent starting up while idle is not charged to its run's compute
// backstop: after startRun the worker's measured CPU time starts again from zero (the
// kernel counts in ticks of 10 ms, and an idle worker uses no CPU).
func TestPoolStartUpNotCharged(t *testing.T) {
	p := takePrepared(t, newRuntime(t, Config{Pool: 1}))
	defer killAndReap(t, p)
	before, ok := p.cpuTime()
	if !ok {
		t.Fatal("no CPU time for a live worker")
	}
	p.startRun()
	after, ok := p.cpuTime()
	if !ok {
		t.Fatal("no CPU time for a live worker")
	}
	if after > 10*time.Millisecond || before > 10*time.Millisecond && after >= before {
		t.Errorf("CPU time %v after startRun (%v before): start-up is charged to the run", after, before)
	}
}

// A run's replacement worker starts once the run has settled, not while it runs: its
// start-up would compete with the run for the CPU. The pool is full again when Run returns
// (the replacement is starting), and the next run takes it.
func TestPoolRefillsAfterTheRun(t *testing.T) {
	rt := newRuntime(t, Config{Pool: 1})
	ctx := testwait.Context(t)
	for i := range 2 {
		idle := rt.pool.quiet(ctx.Done())
		if len(idle) != 1 {
			t.Fatalf("run %d: idle workers %v, want 1", i, idle)
		}
		res := run(t, rt, "return await tools.look({})", tools(map[string]coderuntime.Func{"look": func(context.Context, any) (any, error) {
			rt.pool.mu.Lock()
			defer rt.pool.mu.Unlock()
			return map[string]any{"idle": float64(len(rt.pool.idle)), "starting": float64(rt.pool.starting)}, nil
		}}))
		wantValue(t, res, `{"idle":0,"starting":0}`)
		rt.pool.mu.Lock()
		full := len(rt.pool.idle)+rt.pool.starting == 1
		rt.pool.mu.Unlock()
		if !full {
			t.Fatalf("run %d: no replacement started when the run returned", i)
		}
	}
}

// A worker that announced it had prepared had its start-up CPU time measured while it was
// idle: startRun reads nothing more, and the run is charged from that point on.
func TestPoolStartUpMeasuredWhenReady(t *testing.T) {
	p := takePrepared(t, newRuntime(t, Config{Pool: 1}))
	defer killAndReap(t, p)
	op := p.(*osProcess)
	op.mu.Lock()
	set, base := op.baseSet, op.cpuBase
	op.mu.Unlock()
	if !set {
		t.Fatal("a ready worker's start-up CPU time was not measured")
	}
	p.startRun()
	op.mu.Lock()
	after := op.cpuBase
	op.mu.Unlock()
	if after != base {
		t.Errorf("startRun moved the start-up CPU time of a ready worker from %v to %v", base, after)
	}
}

// takePrepared waits until rt's pool has a prepared worker and takes it. The caller ends it
// with killAndReap.
func takePrepared(t *testing.T, rt *Runtime) workerProcess {
	t.Helper()
	if err := rt.WaitReady(testwait.Context(t)); err != nil {
		t.Fatal(err)
	}
	p := rt.pool.take()
	if p == nil {
		t.Fatal("no idle worker")
	}
	return p
}

// killAndReap kills p and waits until it has been reaped.
func killAndReap(t *testing.T, p workerProcess) {
	t.Helper()
	p.kill()
	testwait.Recv(t, p.reaped(), "the worker to be reaped")
}
