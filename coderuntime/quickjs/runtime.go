// Package quickjs is the default Code Mode runtime: it runs a TypeScript program in
// QuickJS (modernc.org/quickjs, pure Go) under the budgets of docs/behaviour.md §10.8.
//
// Each Run type-strips the program on the host (package tsstrip; syntax errors and
// non-erasable TypeScript fail the run as an exception without starting anything), then
// starts a fresh worker: by default the current executable re-executed with the hidden
// argument WorkerArg, with an empty environment, in its own process group, with a parent
// death signal, and with its data segment limited (RLIMIT_DATA) to the heap budget plus a
// margin. Host and worker exchange newline-delimited JSON frames over the worker's stdin
// and stdout; the host treats the worker as hostile (frames are size-bounded and validated,
// each call id is answered at most once, unknown binding names are refused, nothing is
// accepted after completion) and kills the whole process group when the run settles.
//
// Starting a worker (exec, the Go runtime, a QuickJS VM and the prelude) costs far more than
// a small program, so with Config.Pool the runtime starts workers ahead of demand: each
// prepares its VM and prelude, announces it with a ready frame and waits for its start
// frame; a run takes one and a replacement starts in the background once the run has
// settled (not during it, where its start-up would compete with the run). Every worker still
// serves exactly one run.
//
// A program embedding this backend must route the hidden argument to WorkerMain:
//
//	func main() {
//		if quickjs.IsWorker(os.Args[1:]) {
//			os.Exit(quickjs.WorkerMain())
//		}
//		…
//	}
//
// With Config.InProcess the same engine runs in a goroutine of the host process instead.
// That mode is for trusted programs and tests: the compute budget still interrupts the
// program and the QuickJS heap limit still applies, but there is no process containment —
// no separate address space, no RLIMIT_DATA, no kill.
//
// Budgets: compute (busy time: time the worker spends running JavaScript, not time spent
// awaiting bindings or timers), wall clock, output bytes (see coderuntime.Ledger) and heap.
// The program body runs as a strict-mode async function whose parameters are the binding
// globals, their error classes and console; setTimeout, setInterval, their clear functions
// and queueMicrotask are provided, and of Node's `process` only what Node-style programs
// reach for: process.stdout.write and process.stderr.write add one log entry each (the
// text as written), process.env is an empty object, and process.exit(n) ends the run with
// FailureWorkerExit "worker exited with code n before completing". There is no module
// loader, no filesystem and no network.
//
// Outcomes: a throw is a FailureException whose message is the error's stack, limited to
// ten frames, with positions mapped back to the program as written ("program.ts:3:7");
// a busy-time overrun is a FailureTimeout (the worker interrupts itself, and the host also
// kills a worker whose CPU time passes twice the budget plus a second); reaching the heap
// limit is a FailureWorkerExit "worker error: JavaScript heap out of memory (limit N MiB)",
// as when a Node worker dies of it (an uncaught `throw null` reads the same, because null is
// what QuickJS throws when it cannot even allocate the error); a program awaiting something
// that can never happen runs into the wall-clock ceiling. Binding calls run concurrently,
// each in its own goroutine, with a context cancelled (cause coderuntime.ErrRunSettled)
// when the run settles; the context carries the call's place in the program's call order
// (coderuntime.CallSeq), numbered from 0 as the host receives the calls.
package quickjs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/coderuntime/tsstrip"
)

// Defaults of the reference worker-thread backend (those of package coderuntime).
const (
	DefaultComputeMs      = coderuntime.DefaultComputeMs
	DefaultMaxWallMs      = coderuntime.DefaultMaxWallMs
	DefaultMaxOutputBytes = coderuntime.DefaultMaxOutputBytes
	DefaultMaxHeapMB      = coderuntime.DefaultMaxHeapMB
)

// Config configures a Runtime. Zero numeric fields take the defaults above.
type Config struct {
	// ComputeMs is the busy-time budget in milliseconds.
	ComputeMs float64 `json:"computeMs"`
	// MaxWallMs is the wall-clock ceiling in milliseconds; it never pauses.
	MaxWallMs float64 `json:"maxWallMs"`
	// MaxOutputBytes caps the JSON bytes of the logs plus the completion or failure message.
	MaxOutputBytes int64 `json:"maxOutputBytes"`
	// MaxHeapMB is the JavaScript heap limit in MiB (the reference's maxOldGenerationSizeMb).
	MaxHeapMB float64 `json:"maxHeapMb"`
	// WorkerCommand is the worker's argv. Empty means the current executable followed by
	// WorkerArg; the command must end up calling WorkerMain.
	WorkerCommand []string `json:"-"`
	// InProcess runs programs in a goroutine of this process instead of a worker process,
	// without process containment. Only for trusted programs and tests.
	InProcess bool `json:"-"`
	// Pool is how many worker processes the runtime keeps started ahead of demand, from 0
	// to MaxPool. Each is used for exactly one run, so every run still gets a fresh
	// process; a run takes an idle one instead of waiting for a worker to start, and a
	// replacement starts in the background when the run has settled. New starts them at
	// once and Close stops them.
	// 0 starts each worker when its run begins. Ignored with InProcess.
	Pool int `json:"-"`
	// Stderr, when set, receives the first 64 KiB of each worker's standard error.
	Stderr io.Writer `json:"-"`
}

// Runtime runs TypeScript programs in QuickJS. It implements coderuntime.Runtime and is
// safe for concurrent use.
type Runtime struct {
	cfg     Config
	command []string

	mu       sync.Mutex
	disposed bool
	closing  chan struct{}
	runs     sync.WaitGroup
	reaps    sync.WaitGroup // killed workers not reaped yet
	pool     *pool          // nil without Config.Pool

	// onSpawn, when set (tests), is called with each worker's process id.
	onSpawn func(pid int)
	// onCarrier, when set (tests), is called when a run starts a goroutine to carry
	// binding calls.
	onCarrier func()
	// onReaderCarry, when set (tests), is called when a run's output reader carries a
	// binding call itself (the worker said it is idle until the reply).
	onReaderCarry func()
	// wallTimer and graceTimer start a run's wall-clock ceiling and its exit grace. They
	// are real timers; tests replace them to decide when a ceiling is reached instead of
	// racing a short real one against the machine's load.
	wallTimer, graceTimer timerFunc
	// busyClock measures an in-process worker's busy time (time.Now outside tests).
	busyClock func() time.Time
}

// timerFunc starts a timer of d and returns the channel it fires on and a function that
// stops it.
type timerFunc func(d time.Duration) (<-chan time.Time, func())

// realTimer is a timerFunc backed by time.NewTimer.
func realTimer(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

var _ coderuntime.Runtime = (*Runtime)(nil)

// New validates cfg, fills in defaults and returns a Runtime. The error messages are those
// of docs/behaviour.md §10.8, e.g. "config.computeMs must be a positive number, got -1".
func New(cfg Config) (*Runtime, error) {
	return newWithSpawnHook(cfg, nil)
}

// newWithSpawnHook is New with the onSpawn hook set before any worker starts (tests).
func newWithSpawnHook(cfg Config, onSpawn func(pid int)) (*Runtime, error) {
	if cfg.Pool < 0 || cfg.Pool > MaxPool {
		return nil, fmt.Errorf("quickjs: config.pool must be an integer from 0 to %d, got %d", MaxPool, cfg.Pool)
	}
	lim, err := coderuntime.Limits{ComputeMs: cfg.ComputeMs, MaxWallMs: cfg.MaxWallMs, MaxOutputBytes: cfg.MaxOutputBytes, MaxHeapMB: cfg.MaxHeapMB}.Resolve()
	if err != nil {
		return nil, err
	}
	cfg.ComputeMs, cfg.MaxWallMs, cfg.MaxOutputBytes, cfg.MaxHeapMB = lim.ComputeMs, lim.MaxWallMs, lim.MaxOutputBytes, lim.MaxHeapMB
	r := &Runtime{cfg: cfg, closing: make(chan struct{}), wallTimer: realTimer, graceTimer: realTimer, busyClock: time.Now, onSpawn: onSpawn}
	if !cfg.InProcess {
		r.command = cfg.WorkerCommand
		if len(r.command) == 0 {
			exe, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("quickjs: locate the worker executable: %w", err)
			}
			r.command = []string{exe, WorkerArg}
		}
		if cfg.Pool > 0 {
			r.pool = newPool(cfg.Pool, r.startWorker)
		}
	}
	return r, nil
}

// ErrNoPool is what WaitReady reports for a runtime that keeps no workers ahead of demand.
var ErrNoPool = errors.New("quickjs: the runtime keeps no workers started ahead (Config.Pool is 0 or InProcess is set)")

// WaitReady waits until the next run will take a worker that has already prepared (its
// VM made and its prelude evaluated): for a program that wants its first run_code to be as
// fast as the later ones, and for benchmarks. It fails with ErrNoPool without a pool, with
// the context's error when ctx ends first, and when the pool has no worker to offer (its
// workers keep dying, or the runtime is closed).
func (r *Runtime) WaitReady(ctx context.Context) error {
	if r.pool == nil {
		return ErrNoPool
	}
	if r.pool.waitReady(ctx.Done()) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("quickjs: no worker of the pool became ready (it died before preparing, or the runtime is closed)")
}

// startWorker starts a worker process.
func (r *Runtime) startWorker() (workerProcess, error) {
	return startProcess(r.command, r.cfg.Stderr, r.onSpawn)
}

// worker returns the worker process for one run: an idle one from the pool, or one
// started now.
func (r *Runtime) worker() (workerProcess, error) {
	if r.pool != nil {
		if p := r.pool.take(); p != nil {
			p.startRun()
			return p, nil
		}
	}
	return r.startWorker()
}

// Language reports "typescript".
func (r *Runtime) Language() string { return "typescript" }

// Isolation reports "process" for worker processes and "in-process" in InProcess mode.
func (r *Runtime) Isolation() string {
	if r.cfg.InProcess {
		return "in-process"
	}
	return "process"
}

// Close aborts every in-flight run with "runtime disposed", kills the idle workers of the
// pool, waits until every worker process has been reaped and every binding call has
// returned, and makes later runs fail with coderuntime.ErrDisposed. Close is idempotent.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if !r.disposed {
		r.disposed = true
		close(r.closing)
		if r.pool != nil {
			r.pool.close()
		}
	}
	r.mu.Unlock()
	r.runs.Wait()
	if r.pool != nil {
		r.pool.wait()
	}
	r.reaps.Wait()
	return nil
}

// Run executes one program; see coderuntime.Runtime. It returns only after every binding
// call it started has returned (their context is cancelled when the run settles) and the
// worker is stopped: its process group killed (SIGKILL) and its pipes closed, or, in
// process, its goroutine ended. Reaping the killed process — the kernel tearing down its
// address space, which on a loaded machine takes longer than the whole run — finishes in
// the background; Close waits for it.
func (r *Runtime) Run(ctx context.Context, req coderuntime.Request) (coderuntime.Result, error) {
	r.mu.Lock()
	if r.disposed {
		r.mu.Unlock()
		return coderuntime.Result{}, coderuntime.ErrDisposed
	}
	r.runs.Add(1)
	r.mu.Unlock()
	defer r.runs.Done()

	ledger, early, err := coderuntime.Begin(ctx, req, r.cfg.MaxOutputBytes)
	if err != nil {
		return coderuntime.Result{}, err
	}
	if early != nil {
		return *early, nil
	}
	code, positions, err := tsstrip.StripMapped(req.Program)
	if err != nil {
		return ledger.Failure(nil, coderuntime.Failure{Kind: coderuntime.FailureException, Message: err.Error()}).Normalized(), nil
	}
	if r.pool != nil {
		defer r.pool.refill()
	}
	s := newSession(r, ctx, req.Bindings, ledger)
	return s.run(code, encodePositions(positions)).Normalized(), nil
}

// frameLimit is the largest worker frame the host accepts: room for a completion or log
// that uses the whole output budget, and at least 16 MiB for binding arguments.
func (r *Runtime) frameLimit() int {
	n := r.cfg.MaxOutputBytes + 1<<20
	if n < 16<<20 {
		n = 16 << 20
	}
	return int(n)
}

// limits are the budgets sent to the worker.
func (r *Runtime) limits() startLimits {
	heap := int64(r.cfg.MaxHeapMB * (1 << 20))
	l := startLimits{
		ComputeMs:      r.cfg.ComputeMs,
		MaxOutputBytes: r.cfg.MaxOutputBytes,
		MaxHeapBytes:   heap,
		MaxFrameBytes:  int64(r.frameLimit()),
	}
	if !r.cfg.InProcess {
		// The Go runtime, QuickJS's allocator overhead and the frame buffers need room
		// beyond the JavaScript heap; a frame may be buffered twice.
		l.DataLimitBytes = heap + 3*l.MaxFrameBytes + 256<<20
	}
	return l
}

// computeBackstop is the worker CPU time after which the host kills a worker that failed to
// stop itself at its busy-time budget (for example inside a long native operation).
func (r *Runtime) computeBackstop() time.Duration {
	return 2*time.Duration(r.cfg.ComputeMs*float64(time.Millisecond)) + time.Second
}

// encodePositions renders a position map as the worker's flat JSON triples.
func encodePositions(m *tsstrip.PositionMap) []byte {
	b := []byte{'['}
	for i, line := range m.Lines() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for j, s := range line {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(s.GenColumn), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(s.Line), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(s.Column), 10)
		}
		b = append(b, ']')
	}
	return append(b, ']')
}
