package starlark

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/jsonv"
	star "go.starlark.net/starlark"
)

// runKey is the thread-local key under which a thread's run is stored.
const runKey = "dsh.coderuntime.starlark.run"

// checkInterval is how many Starlark steps run between budget checks (the busy-time clock
// and the call depth). A step is a few tens of nanoseconds, so the budgets are checked
// every few tens of microseconds of busy time.
const checkInterval = 1024

// maxTracebackFrames is the number of frames a traceback shows; deeper stacks show their
// outermost and innermost frames around a count of the omitted ones.
const maxTracebackFrames = 10

// errRunOver stops a binding call the program makes after the run settled; the run's
// outcome is already decided, so the program never sees it.
var errRunOver = errors.New("code run is over")

// execution is the state of one Run.
type execution struct {
	rt     *Runtime
	thread *star.Thread
	cols   columnMap

	callCtx     context.Context
	cancelCalls context.CancelCauseFunc

	// Budgets, used only by the goroutine that runs the program.
	start     time.Time
	waited    time.Duration // time spent in binding calls, which is not busy time
	nextClock uint64        // the step count at which to read the clock next
	nextSeq   uint64        // the sequence number of the next binding call (coderuntime.WithCallSeq)
	heapLimit uint64        // MaxHeapMB in bytes
	nextHeap  uint64        // the step count at which to size the program's heap next
	nextAlloc uint64        // the step count at which to read the allocation counter next
	allocBase uint64        // the allocation counter at the last heap measurement
	heapSlack uint64        // allocation since the last measurement that triggers the next

	mu       sync.Mutex
	finished bool                 // the program returned: later outcomes lose
	outcome  *coderuntime.Failure // the first outcome imposed from outside the program
	overflow *string              // the log entry that passed the output cap
	ledger   *coderuntime.Ledger
	logs     []string
}

func runOf(thread *star.Thread) *execution {
	r, _ := thread.Local(runKey).(*execution)
	return r
}

// settle imposes an outcome (a budget, an abort, the output cap): the first one wins, the
// program is cancelled at its next step and binding calls see their context cancelled.
func (r *execution) settle(f coderuntime.Failure) {
	r.mu.Lock()
	first := r.outcome == nil && !r.finished
	if first {
		r.outcome = &f
	}
	r.mu.Unlock()
	if first {
		r.thread.Cancel(f.Message)
		r.cancelCalls(settledBy(f))
	}
}

// settledBy is the cancellation cause binding calls see when an outcome is imposed: it
// matches coderuntime.ErrRunSettled and says what settled the run.
func settledBy(f coderuntime.Failure) error {
	return fmt.Errorf("%w: %s", coderuntime.ErrRunSettled, f.Message)
}

// over reports whether the run's outcome is decided.
func (r *execution) over() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcome != nil || r.finished
}

// log charges one printed entry to the output ledger. The entry that does not fit ends the
// run with an output-limit failure that keeps the longest prefix that fits.
func (r *execution) log(text string) {
	text = validUTF8(text)
	r.mu.Lock()
	if r.outcome != nil || r.finished {
		r.mu.Unlock()
		return
	}
	if r.ledger.Admit(text) {
		r.logs = append(r.logs, text)
		r.mu.Unlock()
		return
	}
	f := coderuntime.Failure{Kind: coderuntime.FailureOutputLimit, Message: coderuntime.OutputLimitMessage(r.ledger.Max())}
	r.outcome, r.overflow = &f, &text
	r.mu.Unlock()
	r.thread.Cancel(f.Message)
	r.cancelCalls(settledBy(f))
}

// onSteps is the thread's step hook: it enforces the step cap, the busy-time budget and
// the call depth, and arms the next check.
func (r *execution) onSteps(thread *star.Thread) {
	cfg := &r.rt.cfg
	steps := thread.Steps
	if cfg.MaxSteps > 0 && steps > cfg.MaxSteps {
		r.settle(coderuntime.Failure{Kind: coderuntime.FailureTimeout,
			Message: "compute budget exhausted (" + strconv.FormatUint(cfg.MaxSteps, 10) + " steps)"})
		return
	}
	if steps >= r.nextClock {
		if busy := r.rt.now().Sub(r.start) - r.waited; busy > r.rt.computeBudget() {
			r.settle(r.rt.computeTimeout())
			return
		}
		r.nextClock = steps + checkInterval
	}
	if depth := thread.CallStackDepth(); depth > cfg.MaxCallDepth {
		r.settle(coderuntime.Failure{Kind: coderuntime.FailureException,
			Message: r.traceback(thread.CallStack()) + "Error: maximum call depth exceeded (" + strconv.Itoa(cfg.MaxCallDepth) + " frames)"})
		return
	}
	due := steps >= r.nextHeap
	if !due && steps >= r.nextAlloc {
		// Much allocation (by anyone in the process) since the last measurement brings the
		// next one forward: the allocation is only a trigger, what counts is what this
		// program holds.
		due = allocated()-r.allocBase > r.heapSlack
		r.nextAlloc = steps + allocCheckInterval
	}
	if due {
		m := measureHeap(thread)
		if m.bytes > r.heapLimit {
			r.settle(coderuntime.Failure{Kind: coderuntime.FailureWorkerExit,
				Message: "worker error: heap limit exceeded (the program holds more than " + coderuntime.FormatNumber(cfg.MaxHeapMB) + " MiB)"})
			return
		}
		r.nextHeap = steps + max(heapCheckInterval, m.visited)
		r.nextAlloc = steps + allocCheckInterval
		r.allocBase = allocated()
		r.heapSlack = max((r.heapLimit-m.bytes)/2, 1<<20)
	}
	r.arm(thread)
}

// arm sets the step count of the next check: the next clock reading, sooner when the call
// stack is near its limit (a step adds at most two frames, when a built-in calls back into
// a function, so the check comes before the stack can pass it), and no later than the step
// cap.
func (r *execution) arm(thread *star.Thread) {
	cfg := &r.rt.cfg
	steps := thread.Steps
	next := min(r.nextClock, r.nextHeap, r.nextAlloc)
	room := max(uint64(cfg.MaxCallDepth-thread.CallStackDepth())/2, 1)
	next = min(next, steps+room)
	if cfg.MaxSteps > 0 {
		next = min(next, cfg.MaxSteps+1)
	}
	thread.SetMaxExecutionSteps(next)
}

// call invokes one binding: the program waits for it, and the time it takes is not busy
// time. The host function's error, a panic, or a result that is not lossless JSON fails
// the call.
func (r *execution) call(f *bindingFunc, args any) (any, error) {
	if r.over() {
		return nil, errRunOver
	}
	ctx := coderuntime.WithCallSeq(r.callCtx, r.nextSeq)
	r.nextSeq++
	began := r.rt.now()
	value, failed, message := r.invoke(ctx, f.fn, args)
	r.waited += r.rt.now().Sub(began)
	if r.over() {
		return nil, errRunOver
	}
	if failed {
		return nil, f.failure(message)
	}
	return value, nil
}

// invoke runs a host function and reports whether it failed, and with which message.
func (r *execution) invoke(ctx context.Context, fn coderuntime.Func, args any) (value any, failed bool, message string) {
	defer func() {
		if p := recover(); p != nil {
			value, failed, message = nil, true, fmt.Sprintf("binding panicked: %v", p)
		}
	}()
	v, err := fn(ctx, args)
	if err != nil {
		return nil, true, err.Error()
	}
	snap, err := jsonv.Snapshot(v)
	if err != nil {
		return nil, true, "binding resolution must be lossless JSON"
	}
	return snap, false, ""
}

// execute runs the compiled program on the current goroutine and returns its completion
// value or error. A Go panic (a bug in the interpreter or a built-in) is recovered and
// returned as panicked.
func (r *execution) execute(prog *star.Program, predeclared star.StringDict) (value star.Value, panicked any, err error) {
	defer func() {
		if p := recover(); p != nil {
			value, panicked, err = nil, p, nil
		}
	}()
	globals, err := prog.Init(r.thread, predeclared)
	if err != nil {
		return nil, nil, err
	}
	value, err = star.Call(r.thread, globals[mainName], nil, nil)
	return value, nil, err
}

// result builds the run's Result once the program stopped.
func (r *execution) result(value star.Value, panicked any, err error) coderuntime.Result {
	r.mu.Lock()
	r.finished = true
	outcome, overflow := r.outcome, r.overflow
	r.mu.Unlock()
	switch {
	case overflow != nil:
		return r.ledger.Limit(append(r.logs, *overflow))
	case outcome != nil:
		return r.ledger.Failure(r.logs, *outcome)
	case panicked != nil:
		return r.ledger.Failure(r.logs, coderuntime.Failure{Kind: coderuntime.FailureWorkerExit,
			Message: fmt.Sprintf("worker error: the Starlark interpreter panicked: %v", panicked)})
	case err != nil:
		return r.ledger.Failure(r.logs, coderuntime.Failure{Kind: coderuntime.FailureException, Message: r.renderError(err)})
	case value == star.None:
		return r.ledger.Success(r.logs, nil, false)
	}
	v, err := toJSON(value)
	if err != nil {
		return r.ledger.Failure(r.logs, coderuntime.Failure{Kind: coderuntime.FailureInvalidOutput, Message: "program completion must be lossless JSON"})
	}
	return r.ledger.Success(r.logs, v, true)
}

// renderError renders a program error the way Python prints an uncaught exception: the
// traceback of program positions, then the error line. A failed binding call's line is
// "<ErrorClass>: <function name>: <message>".
func (r *execution) renderError(err error) string {
	var inner *star.EvalError
	var failed *callError
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch e := e.(type) {
		case *star.EvalError:
			inner = e
		case *callError:
			failed = e
		}
	}
	if inner == nil {
		return err.Error()
	}
	stack := inner.CallStack
	builtin := ""
	if n := len(stack); n > 0 && stack[n-1].Pos.Filename() == "<builtin>" {
		builtin = stack[n-1].Name
		stack = stack[:n-1]
	}
	var last string
	switch {
	case failed != nil:
		last = failed.Error()
	case builtin != "":
		last = "Error in " + builtin + ": " + inner.Msg
	default:
		last = "Error: " + inner.Msg
	}
	return r.traceback(stack) + last
}

// traceback renders frames, outermost first, at program positions.
func (r *execution) traceback(stack star.CallStack) string {
	if len(stack) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Traceback (most recent call last):\n")
	frame := func(fr star.CallFrame) {
		name := fr.Name
		if name == mainName {
			name = programName
		}
		pos := "<builtin>"
		if fr.Pos.Filename() != "<builtin>" {
			pos = r.cols.position(fr.Pos)
		}
		b.WriteString("  " + pos + ": in " + name + "\n")
	}
	if len(stack) <= maxTracebackFrames {
		for _, fr := range stack {
			frame(fr)
		}
		return b.String()
	}
	head := maxTracebackFrames / 2
	tail := maxTracebackFrames - head
	for _, fr := range stack[:head] {
		frame(fr)
	}
	fmt.Fprintf(&b, "  ... %d more frames ...\n", len(stack)-head-tail)
	for _, fr := range stack[len(stack)-tail:] {
		frame(fr)
	}
	return b.String()
}

// validUTF8 replaces each byte that is not part of valid UTF-8 with U+FFFD, which is how
// the output ledger counts it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+w])
		}
		i += w
	}
	return b.String()
}
