// Package starlark is the Code Mode runtime for the Python flavour: it runs a program in
// Starlark (go.starlark.net), a small, deterministic dialect of Python, inside the host
// process, under the budgets and output rules of docs/behaviour.md §10.8.
//
// # The program
//
// A program is the body of a function, as on every backend: top-level `return <value>`
// produces the completion value. The body is parsed as a Starlark file (so indentation,
// continuation lines and multi-line strings keep their meaning), then its statements
// become the body of a function, so the program's variables are locals of one call; a
// program indented as a whole is dedented first. Error positions are reported as
// program.star:<line>:<column> of the text as written.
//
// The dialect is Starlark with while loops, recursion and the set type enabled. Starlark
// is not Python: there is no try/except/raise (fail("msg") stops the program), no class,
// no import, no with, no generators, no `is`, no `**` operator, no type annotations, no
// chained comparisons; strings are not iterable (use s.elems()), lists have no sort()
// (use sorted()), integers are arbitrary precision, and repr() quotes strings with double
// quotes. Compile errors caused by Python syntax or built-ins that Starlark lacks carry a
// one-line hint. For Python-flavoured programs the runtime also accepts, as rewrites
// before parsing that keep line numbers:
//
//   - `await <expr>`, which is `<expr>`: a binding call returns only once the host
//     function has completed, so there is nothing to wait for; `async def` is `def`;
//   - `import asyncio`, `import json` and `import math`, which do nothing: those modules
//     are predeclared;
//   - f-strings, including conversions (!r, !s, !a), self-documenting fields ({x=}) and
//     Python's format-spec mini-language (fill, alignment, sign, z, #, 0, width, grouping,
//     precision and the b c d e E f F g G n o s x X % types); a field without a spec reads
//     as str() shows the value. Nested fields inside a format spec are not supported.
//
// and predeclares, besides Starlark's built-ins:
//
//   - asyncio.gather(*values), which returns its arguments as a list (the calls in them
//     have already run, one after another);
//   - json.dumps(value, indent=None) and json.loads(text), with JSON.stringify output;
//   - math (go.starlark.net/lib/math), sum(iterable, start=0), and print(*values, sep=" ",
//     end="\n", flush=False), one log entry per call.
//
// # Bindings
//
// Each binding namespace is a global whose functions are reached as `tools.name(args)` or
// `tools["my-tool"](args)`; `"name" in tools` and dir(tools) work. A call takes the
// arguments value (positionally or as the keyword args), which must be lossless JSON:
// None, bools, strings, ints a float64 holds exactly, finite floats other than -0.0,
// lists, tuples and dicts with string keys. The result comes back as Starlark values:
// integral numbers of magnitude up to 2^53 as int, other numbers as float, arrays as
// lists, objects as dicts in member order. Binding calls run one at a time, in program
// order, on the program's goroutine, numbered from 0 on their context (coderuntime.CallSeq);
// the time a program waits for one is not busy time.
//
// Starlark cannot catch an error, so a failed call (the host function's error, arguments
// or a result that are not lossless JSON) ends the program with an exception whose last
// traceback line is "<ErrorClass>: <function name>: <message>", for example
// "ToolCallError: read: no such file". The error class name is bound to an inert value so
// that the name the SDK declares exists.
//
// # Budgets
//
// Compute is busy time: the wall time the program has run minus the time it waited for
// binding calls, read every 1024 interpreter steps; past ComputeMs the run fails with
// "compute budget exhausted (<computeMs>ms busy)". MaxSteps optionally caps interpreter
// steps as well, deterministically. The wall-clock ceiling, cancellation and Close stop
// the program at its next step and cancel the context of a binding call in progress.
// MaxCallDepth bounds recursion (Starlark frames cost Go stack). Output follows
// coderuntime.Ledger exactly.
//
// Starlark has no heap of its own to limit. MaxHeapMB bounds what each program holds:
// at its step checkpoints a run sizes the values reachable from the program's globals and
// from the locals and captured variables of its active frames (strings and bytes by their
// length, containers by their slots), at intervals that grow with what it holds, and fails
// with a worker-exit "heap limit exceeded" once the estimate passes the budget. Other runs
// and the host are never counted. A value held only on the interpreter's operand stack (a
// list comprehension still being built) is counted once it is bound to a name. Starlark
// itself caps a single repetition ("x" * n, list * n) at 2^30 elements, and the
// compute budget bounds how long a program can keep allocating. A single built-in call
// (sorting a huge list, say) is not interrupted until it returns.
//
// The isolation is that of the interpreter: a program reaches nothing but its bindings and
// the predeclared names (no file system, network, clock or randomness), but it shares the
// host's address space and memory.
package starlark

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dsh-go/dsh/coderuntime"
	star "go.starlark.net/starlark"
)

// Defaults of the reference worker-thread backend (those of package coderuntime), and of
// the call depth.
const (
	DefaultComputeMs      = coderuntime.DefaultComputeMs
	DefaultMaxWallMs      = coderuntime.DefaultMaxWallMs
	DefaultMaxOutputBytes = coderuntime.DefaultMaxOutputBytes
	DefaultMaxCallDepth   = 10000
	DefaultMaxHeapMB      = coderuntime.DefaultMaxHeapMB
)

// maxCallDepth is Starlark's own limit on recursion (it reports "Starlark stack overflow").
const maxCallDepth = 100000

// Config configures a Runtime. Zero fields take the defaults above.
type Config struct {
	// ComputeMs is the busy-time budget in milliseconds.
	ComputeMs float64 `json:"computeMs"`
	// MaxSteps, when positive, also caps the Starlark interpreter steps a run may take, a
	// deterministic compute budget; a run that needs more fails with
	// "compute budget exhausted (<n> steps)".
	MaxSteps uint64 `json:"maxSteps"`
	// MaxWallMs is the wall-clock ceiling in milliseconds.
	MaxWallMs float64 `json:"maxWallMs"`
	// MaxOutputBytes caps the JSON bytes of the logs plus the completion or failure message.
	MaxOutputBytes int64 `json:"maxOutputBytes"`
	// MaxCallDepth caps the call stack (Starlark functions and built-ins) of a run; deeper
	// recursion fails the run with an exception.
	MaxCallDepth int `json:"maxCallDepth"`
	// MaxHeapMB bounds, in MiB, the values a program holds (Starlark has no heap of its
	// own to limit): each run is measured on its own, see the package documentation.
	MaxHeapMB float64 `json:"maxHeapMb"`
}

// Runtime runs Starlark programs. It implements coderuntime.Runtime and is safe for
// concurrent use; runs share nothing but immutable predeclared modules.
type Runtime struct {
	cfg     Config
	modules star.StringDict // the predeclared names every run gets

	mu       sync.Mutex
	disposed bool
	closing  chan struct{}
	runs     sync.WaitGroup

	// now measures busy time and wallTimer starts the wall-clock ceiling; both are real
	// (time.Now, time.NewTimer) and replaced by tests that must decide when time passes
	// rather than race real intervals against the machine's load.
	now       func() time.Time
	wallTimer func(d time.Duration) (<-chan time.Time, func())
}

// realTimer starts a time.NewTimer of d and returns its channel and its stop function.
func realTimer(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

var _ coderuntime.Runtime = (*Runtime)(nil)

// New validates cfg, fills in defaults and returns a Runtime. The error messages are those
// of docs/behaviour.md §10.8, e.g. "config.computeMs must be a positive number, got -1".
func New(cfg Config) (*Runtime, error) {
	lim, err := coderuntime.Limits{ComputeMs: cfg.ComputeMs, MaxWallMs: cfg.MaxWallMs, MaxOutputBytes: cfg.MaxOutputBytes, MaxHeapMB: cfg.MaxHeapMB}.Resolve()
	if err != nil {
		return nil, err
	}
	cfg.ComputeMs, cfg.MaxWallMs, cfg.MaxOutputBytes, cfg.MaxHeapMB = lim.ComputeMs, lim.MaxWallMs, lim.MaxOutputBytes, lim.MaxHeapMB
	if cfg.MaxCallDepth == 0 {
		cfg.MaxCallDepth = DefaultMaxCallDepth
	}
	if err := coderuntime.CheckPositive("maxCallDepth", float64(cfg.MaxCallDepth)); err != nil {
		return nil, err
	}
	if cfg.MaxCallDepth > maxCallDepth {
		return nil, fmt.Errorf("config.maxCallDepth must be at most %d, got %d", maxCallDepth, cfg.MaxCallDepth)
	}
	return &Runtime{cfg: cfg, modules: predeclared(), closing: make(chan struct{}), now: time.Now, wallTimer: realTimer}, nil
}

// Language reports "python": the runtime serves the Python-flavoured SDK.
func (r *Runtime) Language() string { return "python" }

// Isolation reports "in-process (starlark)".
func (r *Runtime) Isolation() string { return "in-process (starlark)" }

// Close aborts every in-flight run with "runtime disposed", waits until they have stopped,
// and makes later runs fail with coderuntime.ErrDisposed. Close is idempotent.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if !r.disposed {
		r.disposed = true
		close(r.closing)
	}
	r.mu.Unlock()
	r.runs.Wait()
	return nil
}

func (r *Runtime) computeBudget() time.Duration {
	return time.Duration(r.cfg.ComputeMs * float64(time.Millisecond))
}

func (r *Runtime) computeTimeout() coderuntime.Failure {
	return coderuntime.Failure{Kind: coderuntime.FailureTimeout,
		Message: "compute budget exhausted (" + coderuntime.FormatNumber(r.cfg.ComputeMs) + "ms busy)"}
}

// Run executes one program; see coderuntime.Runtime and the package documentation. It
// returns once the program stopped; binding calls run on the program's goroutine, so none
// is left running.
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
	env := r.environment(req.Bindings)
	c, err := compileProgram(req.Program, env.Has)
	if err != nil {
		return ledger.Failure(nil, coderuntime.Failure{Kind: coderuntime.FailureException, Message: err.Error()}).Normalized(), nil
	}

	state := &execution{rt: r, cols: c.cols, ledger: ledger, nextClock: checkInterval,
		heapLimit: uint64(r.cfg.MaxHeapMB * (1 << 20)), nextHeap: heapCheckInterval, nextAlloc: allocCheckInterval}
	state.heapSlack = max(state.heapLimit/2, 1<<20)
	state.allocBase = allocated()
	state.callCtx, state.cancelCalls = context.WithCancelCause(ctx)
	defer state.cancelCalls(coderuntime.ErrRunSettled)
	state.thread = &star.Thread{
		Name:       "dsh code run",
		Print:      func(_ *star.Thread, msg string) { state.log(msg) },
		OnMaxSteps: state.onSteps,
	}
	state.thread.SetLocal(runKey, state)
	state.arm(state.thread)

	// The program runs on its own goroutine (its stack grows with the program's recursion
	// and goes away with it); this one watches the run's deadlines.
	type outcome struct {
		value    star.Value
		panicked any
		err      error
	}
	done := make(chan outcome, 1)
	state.start = r.now()
	go func() {
		value, panicked, err := state.execute(c.prog, env)
		done <- outcome{value, panicked, err}
	}()
	wall, stopWall := r.wallTimer(time.Duration(r.cfg.MaxWallMs * float64(time.Millisecond)))
	defer stopWall()
	var o outcome
	for wait := true; wait; {
		select {
		case o = <-done:
			wait = false
		case <-ctx.Done():
			state.settle(coderuntime.Failure{Kind: coderuntime.FailureAbort, Message: coderuntime.AbortMessage(ctx)})
			o, wait = <-done, false
		case <-r.closing:
			state.settle(coderuntime.Failure{Kind: coderuntime.FailureAbort, Message: coderuntime.DisposedMessage})
			o, wait = <-done, false
		case <-wall:
			state.settle(coderuntime.Failure{Kind: coderuntime.FailureTimeout,
				Message: "wall-clock ceiling reached (" + coderuntime.FormatNumber(r.cfg.MaxWallMs) + "ms)"})
			o, wait = <-done, false
		}
	}
	return state.result(o.value, o.panicked, o.err).Normalized(), nil
}

// environment returns the predeclared names of a run: the shared modules, then the
// binding namespaces and their error classes, which shadow a module of the same name.
func (r *Runtime) environment(bindings []coderuntime.Namespace) star.StringDict {
	env := make(star.StringDict, len(r.modules)+2*len(bindings))
	for k, v := range r.modules {
		env[k] = v
	}
	for _, ns := range bindings {
		env[ns.Global] = newNamespace(ns)
		if ns.ErrorClass != nil {
			env[ns.ErrorClass.Name] = &errorClass{class: *ns.ErrorClass}
		}
	}
	return env
}
