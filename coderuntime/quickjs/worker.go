package quickjs

import (
	"bufio"
	"bytes"
	"container/heap"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	qjs "modernc.org/quickjs"
)

// WorkerArg is the hidden first command-line argument that makes the dsh binary (or a test
// binary) run as a code worker instead of its normal main. See IsWorker and WorkerMain.
const WorkerArg = "__dsh_quickjs_worker__"

// IsWorker reports whether args (os.Args[1:]) ask the process to be a code worker. A
// program that embeds this backend calls it first thing in main:
//
//	if quickjs.IsWorker(os.Args[1:]) {
//		os.Exit(quickjs.WorkerMain())
//	}
func IsWorker(args []string) bool {
	return len(args) > 0 && args[0] == WorkerArg
}

// WorkerMain runs one program as a worker process: it reads the start frame from standard
// input, limits its own data segment (RLIMIT_DATA) to the heap budget plus a margin, runs
// the program in a fresh QuickJS VM, streams frames to standard output and returns the
// process exit status. It is only meant to be called when IsWorker is true.
func WorkerMain() int {
	// The worker runs one JavaScript program on one goroutine, which also reads the replies
	// (waitDirect); on one P no second thread is ever woken for a reply (a futex round trip
	// per binding call).
	runtime.GOMAXPROCS(1)
	return runWorker(workerInput(), workerOutput(), true, time.Now)
}

//go:embed worker.js
var preludeJS string

// maxStartFrame bounds the start frame a worker accepts (the program text and binding
// names); the host is trusted, this only guards against a runaway peer.
const maxStartFrame = 1 << 30

// runWorker is the worker: it returns once the program settled (the done frame is
// written), a budget stopped it, or the host closed the input. process says whether this
// is a dedicated worker process (which may set process limits and need not wait for its
// input reader). now is the clock that measures busy time (time.Now outside tests).
func runWorker(in io.Reader, out io.Writer, process bool, now func() time.Time) int {
	// Everything that does not depend on the program — a fresh VM, the host functions, the
	// evaluated prelude, the frame writer — is made before the start frame is read, so that
	// a worker started ahead of its run (Config.Pool) has done it by the time the program
	// arrives.
	w := &worker{
		timerIDs: map[int]uint64{},
		inbox:    newInbox(),
		process:  process,
		now:      now,
	}
	prepErr := w.prepare()
	defer w.release()
	// The frame writer (its buffer and its flusher goroutine) does not depend on the
	// program either.
	w.out = newFrameWriter(out)
	w.out.start()
	defer w.out.stop()
	fr := newFrameReader(in, maxStartFrame)
	if prepErr == nil {
		warmIfIdle(in, process)
	}
	// Tell the host the worker is ready for its program (a pool waits for this line; a run
	// drops it). Written directly, ahead of any frame of the run.
	if _, err := out.Write([]byte("{\"type\":\"ready\"}\n")); err != nil {
		return 3
	}

	line, err := fr.next()
	if err != nil {
		return 3
	}
	var start startFrame
	if err := json.Unmarshal(line, &start); err != nil || start.Type != "start" {
		return 3
	}
	if prepErr != nil {
		if w.process {
			fmt.Fprintln(os.Stderr, "quickjs worker:", prepErr)
		}
		return 4
	}
	if process && start.Limits.DataLimitBytes > 0 && !raceEnabled {
		// Best effort: a failure leaves the QuickJS memory limit as the only heap cap.
		_ = setDataLimit(start.Limits.DataLimitBytes)
	}
	w.limits = start.Limits
	w.callHeads = callFrameHeads(start.Namespaces)
	w.ledger = coderuntime.NewLedger(int(start.Limits.MaxOutputBytes))
	w.remaining = time.Duration(start.Limits.ComputeMs * float64(time.Millisecond))

	if d, ok := in.(waitReader); ok && process {
		// A worker process reads its replies itself, on this goroutine, when it waits for
		// them (waitDirect). Nothing needs to notice a closed input while the program runs:
		// the host ends a worker process by killing it.
		w.fr, w.direct = fr, d
		return w.run(start)
	}
	// The reader keeps reading so that a closed input interrupts even a busy program.
	// Replies carry binding resolutions, which have no size cap of their own; the frame
	// bound stays at maxStartFrame (the host is trusted).
	readerDone := make(chan struct{})
	if !process {
		// In-process there is no process exit to end the reader: when the run is over,
		// also after a panic, close both pipe ends this side holds (when they are
		// closers) and wait for it.
		defer func() {
			w.out.stop()
			if c, ok := out.(io.Closer); ok {
				c.Close()
			}
			if c, ok := in.(io.Closer); ok {
				c.Close()
			}
			<-readerDone
		}()
	}
	go func() {
		defer close(readerDone)
		for {
			line, err := fr.next()
			if err != nil {
				w.interrupt() // closed first: a wait woken by the close must see it
				w.inbox.close()
				return
			}
			if f, ok := decodeReply(line); ok {
				w.inbox.put(f)
			}
		}
	}()
	return w.run(start)
}

// worker is the state of one run inside the worker. Only the goroutine running run uses
// it, except interrupt, the inbox and the frame writer.
type worker struct {
	vm        *qjs.VM
	vmMu      sync.Mutex // guards vm for interrupt from other goroutines
	limits    startLimits
	ledger    *coderuntime.Ledger
	remaining time.Duration    // compute budget left
	now       func() time.Time // measures busy time; tests of in-process runs replace it
	out       *frameWriter
	inbox     *inbox
	// direct, when set, is the input the worker reads its replies from itself, through fr,
	// instead of an input reader goroutine filling the inbox (a worker process on Linux).
	direct waitReader
	fr     *frameReader

	nextID int64
	// outstanding holds the ids of the calls sent and not answered yet; idleSaid is the
	// call the last idle frame named (0: none, call ids start at 1).
	outstanding map[int64]struct{}
	idleSaid    int64
	callHeads   []string // per binding: its call frame from the id to the arguments
	callBuf     []byte   // the last call frame, reused for the next
	timers      timerHeap
	timerIDs    map[int]uint64 // armed timer id → its current sequence number
	timerSeq    uint64

	bootFn   qjs.Value // the prelude's boot function, until the program starts
	haveBoot bool
	// The prelude's functions that settle a call (resolve, reject) and run a timer.
	resolveFn, rejectFn, fireFn qjs.Value
	haveHandles                 bool

	process bool // a dedicated worker process (not in-process)

	done    bool // a done frame was produced
	stopped bool // no more JavaScript runs: done, budget, output limit or closed input
	closed  atomic.Bool
}

func (w *worker) interrupt() {
	w.closed.Store(true)
	w.vmMu.Lock()
	if w.vm != nil {
		w.vm.Interrupt()
	}
	w.vmMu.Unlock()
}

// prepare makes the VM, registers the host functions and evaluates the prelude: the
// part of a run that does not depend on the program.
func (w *worker) prepare() error {
	vm, err := qjs.NewVM()
	if err != nil {
		return fmt.Errorf("create the VM: %w", err)
	}
	w.vmMu.Lock()
	w.vm = vm
	w.vmMu.Unlock()
	for name, fn := range map[string]any{
		"__dsh_log":   w.hostLog,
		"__dsh_call":  w.hostCall,
		"__dsh_done":  w.hostDone,
		"__dsh_timer": w.hostTimer,
		"__dsh_clear": w.hostClearTimer,
	} {
		if err := vm.RegisterFunc(name, fn, false); err != nil {
			return fmt.Errorf("register %s: %w", name, err)
		}
	}
	script := "(() => { const boot = " + preludeJS + "(__dsh_log, __dsh_call, __dsh_done, __dsh_timer, __dsh_clear);\n" +
		"delete globalThis.__dsh_log; delete globalThis.__dsh_call; delete globalThis.__dsh_done;\n" +
		"delete globalThis.__dsh_timer; delete globalThis.__dsh_clear; return boot; })()"
	if w.bootFn, err = vm.EvalValue(script, qjs.EvalGlobal); err != nil {
		return fmt.Errorf("evaluate the prelude: %w", err)
	}
	w.haveBoot = true
	return nil
}

// warmStartFrame is the start frame of the warm-up run: a program that goes through what
// a run goes through (bindings with an error class, a position map, console output, a
// completion value to encode) without calling a binding, which would wait for a reply.
var warmStartFrame = []byte(`{"type":"start","program":"const o = { n: 1, s: \"two\", l: [true, null] };\nconsole.log(\"warm\", o);\nreturn o",` +
	`"namespaces":[{"global":"tools","names":["read","write"],"errorClass":{"name":"ToolError","memberNameProperty":"tool"}}],` +
	`"limits":{"computeMs":10000,"maxOutputBytes":65536,"maxHeapBytes":67108864,"maxFrameBytes":16777216},` +
	`"positions":[[0,1,0],[0,2,0],[0,3,0]]}`)

// warmUpDone is the completion frame the warm-up run must end with.
const warmUpDone = `{"type":"done","value":{"n":1,"s":"two","l":[true,null]}}`

// warmUp runs the program of start frame once, from the frame to its completion, in a VM
// of its own that it then closes, writing the run's frames to out; want is the completion
// frame the run must end with. An idle worker process does it with warmStartFrame after it
// prepared the VM of its run: the first pass through code (decoding a start
// frame, making bindings, compiling and running a program, encoding its completion) costs
// several times the later ones in a fresh process (code pages faulted in, the JSON
// decoder's per-type set-up), and a pooled worker does it while idle instead of on its
// run's critical path. The run's own VM is still fresh: it has never run a program. It
// reports an error when the run did not end with want.
func warmUp(out io.Writer, frame []byte, want string) error {
	var start startFrame
	if err := json.Unmarshal(frame, &start); err != nil {
		return fmt.Errorf("decode the warm-up start frame: %w", err)
	}
	var frames bytes.Buffer
	w := &worker{timerIDs: map[int]uint64{}, inbox: newInbox(), now: time.Now}
	defer w.release()
	if err := w.prepare(); err != nil {
		return err
	}
	w.limits = start.Limits
	w.callHeads = callFrameHeads(start.Namespaces)
	w.ledger = coderuntime.NewLedger(int(start.Limits.MaxOutputBytes))
	w.remaining = time.Duration(start.Limits.ComputeMs * float64(time.Millisecond))
	// No flusher goroutine: the completion is written with a flush.
	w.out = newFrameWriter(&frames)
	w.vm.SetMemoryLimit(uintptr(start.Limits.MaxHeapBytes))
	if err := w.boot(start); err != nil {
		return err
	}
	w.enter(func() error {
		_, err := w.vm.ExecutePendingJobs()
		return err
	})
	w.out.flush()
	text := frames.Bytes()
	out.Write(text)
	if !w.done || !bytes.HasSuffix(text, []byte(want+"\n")) {
		return fmt.Errorf("the warm-up run did not complete as expected: %q", text)
	}
	return nil
}

// warmIfIdle makes the warm-up run (warmUp with warmStartFrame) in a worker process whose
// program is not waiting on in yet, and reports whether it did. A worker started ahead of
// its run (Config.Pool) has time to spare before its program arrives; one started for its
// run finds the program waiting and goes straight to it. Only a worker process that reads
// its input itself (a waitReader) can tell; a failed warm-up leaves the run as it would
// have been without one.
func warmIfIdle(in io.Reader, process bool) bool {
	d, ok := in.(waitReader)
	if !ok || !process {
		return false
	}
	if waiting, err := d.wait(0); err != nil || waiting {
		return false
	}
	_ = warmUp(io.Discard, warmStartFrame, warmUpDone)
	return true
}

// release frees the VM and every handle the worker holds.
func (w *worker) release() {
	if w.haveBoot {
		w.bootFn.Free()
		w.haveBoot = false
	}
	if w.haveHandles {
		w.resolveFn.Free()
		w.rejectFn.Free()
		w.fireFn.Free()
		w.haveHandles = false
	}
	w.vmMu.Lock()
	vm := w.vm
	w.vm = nil
	w.vmMu.Unlock()
	if vm != nil {
		vm.Close()
	}
}

// run executes the program to completion and returns the exit status. The VM is
// prepared (see prepare).
func (w *worker) run(start startFrame) int {
	vm := w.vm
	if w.closed.Load() {
		return 0
	}
	if start.Limits.MaxHeapBytes > 0 {
		vm.SetMemoryLimit(uintptr(start.Limits.MaxHeapBytes))
	}
	if err := w.boot(start); err != nil {
		if w.closed.Load() {
			return 0 // the host went away while the program started
		}
		if w.process {
			fmt.Fprintln(os.Stderr, "quickjs worker:", err)
		}
		return 5
	}
	for !w.stopped {
		jobsLeft := false
		w.enter(func() error {
			_, err := vm.ExecutePendingJobs()
			if err != nil && strings.HasPrefix(err.Error(), "quickjs: aborted draining") {
				jobsLeft = true
				return nil // a self-feeding job queue: keep draining on the next turn
			}
			return err
		})
		if w.stopped {
			break
		}
		if !jobsLeft {
			w.sayIdle()
		}
		w.out.flush()
		if !w.wait() {
			break
		}
	}
	w.out.flush()
	return 0
}

// boot starts the program through the prelude's boot function.
func (w *worker) boot(start startFrame) error {
	vm := w.vm
	ns, err := json.Marshal(start.Namespaces)
	if err != nil {
		return err
	}
	positions := []byte(start.Positions)
	if len(positions) == 0 {
		positions = []byte("[]")
	}
	var handle qjs.Value
	var bootErr error
	w.enter(func() error {
		handle, bootErr = w.bootFn.CallValue(qjs.UndefinedValue, start.Program, string(ns), string(positions))
		return bootErr
	})
	if bootErr != nil {
		return nil // enter reported it (budget, interrupt or exception)
	}
	defer handle.Free()
	if w.stopped {
		return nil
	}
	handles := []*qjs.Value{&w.resolveFn, &w.rejectFn, &w.fireFn}
	for i, name := range []string{"resolve", "reject", "fire"} {
		atom, err := vm.NewAtom(name)
		if err == nil {
			*handles[i], err = handle.GetPropertyValue(atom)
		}
		if err != nil {
			for _, h := range handles[:i] {
				h.Free()
			}
			return fmt.Errorf("the prelude's %s: %w", name, err)
		}
	}
	w.haveHandles = true
	return nil
}

// enter runs one top-level call into JavaScript under the compute budget: busy time is
// the time spent inside such calls, never the time spent waiting for replies or timers.
func (w *worker) enter(f func() error) {
	if w.stopped {
		return
	}
	if w.remaining <= 0 {
		w.budget()
		return
	}
	_ = w.vm.SetEvalTimeout(w.remaining)
	began := w.now()
	err := f()
	w.remaining -= w.now().Sub(began)
	switch {
	case w.stopped:
	case w.closed.Load():
		w.stopped = true
	case err != nil && isInterrupt(err):
		w.budget()
	case err != nil && isOutOfMemory(err):
		w.hostDone("oom", "")
	case err != nil:
		// A failure no promise took (for example out of memory in a job).
		w.hostDone("exception", err.Error())
	case w.remaining <= 0:
		w.budget()
	}
}

func isInterrupt(err error) bool {
	var e *qjs.Error
	return errors.As(err, &e) && e.Name == "InternalError" && e.Message == "interrupted"
}

func isOutOfMemory(err error) bool {
	var e *qjs.Error
	return errors.As(err, &e) && e.Name == "InternalError" && e.Message == "out of memory"
}

// budget reports that the busy-time budget is spent and stops the run.
func (w *worker) budget() {
	w.stopped = true
	w.out.write([]byte(`{"type":"budget"}`), true)
}

// waitReader is an input that can wait until it is readable, with a timeout (directPipe).
type waitReader interface {
	io.Reader
	// wait blocks until the input is readable or closed (true) or timeout has passed
	// (false); a negative timeout never passes.
	wait(timeout time.Duration) (bool, error)
}

// wait blocks until a reply arrives or a timer is due, then runs it. It reports false
// when the input closed.
func (w *worker) wait() bool {
	if w.direct != nil {
		return w.waitDirect()
	}
	var timer *time.Timer
	var due <-chan time.Time
	if w.timers.Len() > 0 {
		timer = time.NewTimer(time.Until(w.timers[0].at))
		due = timer.C
		defer timer.Stop()
	}
	select {
	case <-w.inbox.ready:
	case <-w.inbox.done:
	case <-due:
	}
	if w.closed.Load() {
		return false
	}
	for _, f := range w.inbox.take() {
		if w.stopped {
			return true
		}
		w.settle(f)
	}
	w.fireTimers()
	return true
}

// waitDirect is wait for a worker that reads its input itself: it reads frames until one
// is a reply or a timer is due, then runs what is due. A frame that is not a reply is
// dropped, as the input reader drops it.
func (w *worker) waitDirect() bool {
	// Pass through the scheduler: the program's goroutine never parks while it reads its
	// input itself, and a goroutine that the scheduler has not seen for 10 ms is preempted
	// by a signal, which also keeps the runtime's monitor thread polling.
	runtime.Gosched()
	for {
		if w.fr.buffered() == 0 {
			timeout := time.Duration(-1)
			if w.timers.Len() > 0 {
				timeout = max(time.Until(w.timers[0].at), 0)
			}
			ready, err := w.direct.wait(timeout)
			if err != nil {
				w.closed.Store(true)
				return false
			}
			if !ready {
				break // a timer is due
			}
		}
		line, err := w.fr.next()
		if err != nil {
			w.closed.Store(true)
			return false
		}
		f, ok := decodeReply(line)
		if !ok {
			continue
		}
		w.settle(f)
		break
	}
	w.fireTimers()
	return true
}

// sayIdle writes the idle frame for the one outstanding binding call, once for that call,
// when the worker is about to wait with nothing else to run: no job left in the queue (the
// caller knows), no timer armed (a cleared timer's entry may stay in the heap, but firing
// it runs nothing), exactly one call outstanding. It tells the host that the worker will
// send nothing more until that call's reply, so the host's output reader may carry the
// call itself instead of handing it to another goroutine (see session.read).
func (w *worker) sayIdle() {
	if w.stopped || w.done || len(w.outstanding) != 1 || len(w.timerIDs) > 0 {
		return
	}
	for id := range w.outstanding {
		if id == w.idleSaid {
			return
		}
		w.idleSaid = id
		w.out.write(strconv.AppendInt([]byte(idleHead), id, 10), true, '}')
	}
}

// settle resolves or rejects the promise of the call a reply answers.
func (w *worker) settle(f hostFrame) {
	delete(w.outstanding, f.ID)
	w.enter(func() error {
		var err error
		if f.OK {
			_, err = w.resolveFn.Call(qjs.UndefinedValue, f.ID, string(f.Value))
		} else {
			_, err = w.rejectFn.Call(qjs.UndefinedValue, f.ID, f.Message)
		}
		return err
	})
}

// fireTimers runs the timers that are due.
func (w *worker) fireTimers() {
	now := time.Now()
	for w.timers.Len() > 0 && !w.timers[0].at.After(now) && !w.stopped {
		t := heap.Pop(&w.timers).(timerEntry)
		if w.timerIDs[t.id] != t.seq {
			continue // cleared or re-armed
		}
		delete(w.timerIDs, t.id)
		w.enter(func() error {
			_, err := w.fireFn.Call(qjs.UndefinedValue, t.id)
			return err
		})
	}
}

// hostLog is console output: one log entry, charged to the worker's copy of the ledger.
// When it does not fit, the fitting prefix is sent, then output-limit, and the run stops.
func (w *worker) hostLog(text string) {
	if w.stopped || w.done {
		return
	}
	if w.ledger.Admit(text) {
		w.out.write(appendString([]byte(`{"type":"log","text":`), text), false, '}')
		return
	}
	if prefix := w.ledger.Fit(text); prefix != "" {
		w.ledger.Admit(prefix)
		w.out.write(appendString([]byte(`{"type":"log","text":`), prefix), false, '}')
	}
	w.out.write([]byte(`{"type":"output-limit"}`), true)
	w.stopped = true
	w.vm.Interrupt()
}

// hostCall sends one call of binding number binding (see callHeads) and returns its id,
// or -1 when the frame would exceed the frame bound.
func (w *worker) hostCall(binding int, args string) int64 {
	if w.stopped || w.done || binding < 0 || binding >= len(w.callHeads) {
		return -1
	}
	head := w.callHeads[binding]
	if len(args)+len(head)+64 > int(w.limits.MaxFrameBytes) || strings.ContainsAny(args, "\n\r") {
		return -1
	}
	w.nextID++
	id := w.nextID
	b := append(w.callBuf[:0], `{"type":"call","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, head...)
	b = append(b, args...)
	w.out.write(b, true, '}')
	if w.outstanding == nil {
		w.outstanding = make(map[int64]struct{}, 4)
	}
	w.outstanding[id] = struct{}{}
	if cap(b) <= maxKeptCallBuf {
		w.callBuf = b
	}
	return id
}

// maxKeptCallBuf bounds the call frame buffer the worker keeps for the next call.
const maxKeptCallBuf = 64 << 10

// callFrameHeads returns, for each binding in the order the prelude numbers them
// (namespace by namespace, names in order), the part of its call frame between the id
// and the arguments.
func callFrameHeads(namespaces []wireNS) []string {
	var heads []string
	for _, ns := range namespaces {
		for _, name := range ns.Names {
			b := appendString([]byte(`,"global":`), ns.Global)
			b = append(b, `,"name":`...)
			b = appendString(b, name)
			b = append(b, `,"args":`...)
			heads = append(heads, string(b))
		}
	}
	return heads
}

// hostDone records the program's completion. kind is "undefined", "value" (text is the
// JSON), "invalid-output", "exception" (text is the message), "oom" (the heap limit was
// reached; the host reports the substrate failure as worker-exit, as for a dead worker) or
// "exit" (the program called process.exit; text is the exit code in decimal, and the host
// reports the run as a worker that exited with that code). What does not fit the
// remaining output budget becomes output-limit here, so an oversized stack is never sent.
func (w *worker) hostDone(kind, text string) {
	if w.stopped || w.done {
		return
	}
	w.done, w.stopped = true, true
	defer func() {
		if w.vm != nil {
			w.vm.Interrupt() // run nothing after completion
		}
	}()
	limit := func() {
		w.out.write(appendString([]byte(`{"type":"done","error":{"kind":"output-limit","message":`),
			coderuntime.OutputLimitMessage(w.ledger.Max())), true, '}', '}')
	}
	failure := func(kind, message string) {
		if _, ok := coderuntime.JSONStringBytesUpTo(message, w.ledger.Remaining()); !ok {
			limit()
			return
		}
		b := appendString([]byte(`{"type":"done","error":{"kind":`), kind)
		b = append(b, `,"message":`...)
		w.out.write(appendString(b, message), true, '}', '}')
	}
	switch kind {
	case "undefined":
		w.out.write([]byte(`{"type":"done"}`), true)
	case "value":
		if len(text) > w.ledger.Remaining() || strings.ContainsAny(text, "\n\r") {
			limit()
			return
		}
		b := make([]byte, 0, len(text)+32)
		b = append(b, `{"type":"done","value":`...)
		b = append(b, text...)
		w.out.write(b, true, '}')
	case "invalid-output":
		failure("invalid-output", "program completion must be lossless JSON")
	case "oom":
		w.out.write([]byte(`{"type":"oom"}`), true)
	case "exit":
		code, err := strconv.ParseInt(text, 10, 32)
		if err != nil {
			failure("exception", "process.exit: invalid exit code "+strconv.Quote(text))
			return
		}
		w.out.write(strconv.AppendInt([]byte(`{"type":"exit","code":`), code, 10), true, '}')
	default:
		failure("exception", text)
	}
}

// hostTimer arms timer id to fire in ms milliseconds.
func (w *worker) hostTimer(id, ms int) {
	w.timerSeq++
	w.timerIDs[id] = w.timerSeq
	heap.Push(&w.timers, timerEntry{at: time.Now().Add(time.Duration(ms) * time.Millisecond), id: id, seq: w.timerSeq})
}

// hostClearTimer disarms timer id.
func (w *worker) hostClearTimer(id int) {
	delete(w.timerIDs, id)
}

// timerEntry is one armed timer; seq tells a current entry from a cleared one.
type timerEntry struct {
	at  time.Time
	id  int
	seq uint64
}

type timerHeap []timerEntry

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	return h[i].at.Before(h[j].at) || h[i].at.Equal(h[j].at) && h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// inbox is an unbounded queue of host replies, so the input reader never blocks.
type inbox struct {
	mu     sync.Mutex
	frames []hostFrame
	ready  chan struct{} // has a token while frames is non-empty
	done   chan struct{} // closed with the input, so every later wait wakes too
	once   sync.Once
}

func newInbox() *inbox {
	return &inbox{ready: make(chan struct{}, 1), done: make(chan struct{})}
}

func (ib *inbox) put(f hostFrame) {
	ib.mu.Lock()
	ib.frames = append(ib.frames, f)
	ib.mu.Unlock()
	select {
	case ib.ready <- struct{}{}:
	default:
	}
}

func (ib *inbox) close() { ib.once.Do(func() { close(ib.done) }) }

func (ib *inbox) take() []hostFrame {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	f := ib.frames
	ib.frames = nil
	return f
}

// frameWriter writes frames to the host. Frames are buffered; a frame written with flush
// (calls, completion, limits) goes out at once, with whatever was buffered before it, and
// buffered output (console logs) is flushed by a timer within flushEvery, so that it
// streams even while the program computes. The timer is armed only while something waits
// in the buffer: a program that makes binding calls and logs nothing wakes no timer.
type frameWriter struct {
	mu    sync.Mutex
	w     *bufio.Writer
	err   error
	dirty bool
	armed bool          // the flusher goroutine was asked to flush within flushEvery
	arm   chan struct{} // capacity 1: wakes the flusher goroutine
	quit  chan struct{}
	wg    sync.WaitGroup

	stopOnce sync.Once
}

const flushEvery = 5 * time.Millisecond

func newFrameWriter(out io.Writer) *frameWriter {
	return &frameWriter{w: bufio.NewWriterSize(out, 64<<10), arm: make(chan struct{}, 1), quit: make(chan struct{})}
}

// start starts the flusher goroutine; stop ends it and flushes.
func (fw *frameWriter) start() {
	fw.wg.Add(1)
	go func() {
		defer fw.wg.Done()
		for {
			select {
			case <-fw.quit:
				return
			case <-fw.arm:
			}
			t := time.NewTimer(flushEvery)
			select {
			case <-fw.quit:
				t.Stop()
				return
			case <-t.C:
			}
			fw.mu.Lock()
			fw.armed = false
			fw.flushLocked()
			fw.mu.Unlock()
		}
	}()
}

func (fw *frameWriter) stop() {
	fw.stopOnce.Do(func() {
		close(fw.quit)
		fw.wg.Wait()
		fw.flush()
	})
}

// write writes frame followed by tail and a newline; flush forces it out now.
func (fw *frameWriter) write(frame []byte, flush bool, tail ...byte) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.err != nil {
		return
	}
	fw.w.Write(frame)
	fw.w.Write(tail)
	if err := fw.w.WriteByte('\n'); err != nil {
		fw.err = err
		return
	}
	fw.dirty = true
	switch {
	case flush:
		fw.flushLocked()
	case !fw.armed:
		fw.armed = true
		select {
		case fw.arm <- struct{}{}:
		default:
		}
	}
}

func (fw *frameWriter) flush() {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.flushLocked()
}

func (fw *frameWriter) flushLocked() {
	if fw.err == nil && fw.dirty {
		fw.err = fw.w.Flush()
		fw.dirty = false
	}
}

// decodeReply decodes a host frame that is a reply. The value of a successful reply does
// not alias line.
func decodeReply(line []byte) (hostFrame, bool) {
	if f, ok := scanReply(line); ok {
		return f, true
	}
	var f hostFrame
	if json.Unmarshal(line, &f) != nil || f.Type != "reply" {
		return hostFrame{}, false
	}
	return f, true
}

// The successful reply as the host writes it (session.invoke): the fields in this order,
// no white space, the value last.
const (
	replyHead  = `{"type":"reply","id":`
	replyValue = `,"ok":true,"value":`
)

// scanReply decodes the successful reply exactly as the host writes it, without the
// reflection of a generic decoder: this is the frame of every binding call. It reports
// false for anything else (a failure reply, other field orders or spacing), which
// decodeReply then decodes generically; where it reports true, the generic decoder
// decodes the same frame (the fuzz target FuzzScanReply checks that).
func scanReply(line []byte) (hostFrame, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(replyHead))
	if !ok {
		return hostFrame{}, false
	}
	id, rest, ok := cutDecimalID(rest, 15)
	if !ok {
		return hostFrame{}, false
	}
	value, ok := bytes.CutPrefix(rest, []byte(replyValue))
	if !ok || len(value) < 2 || value[len(value)-1] != '}' {
		return hostFrame{}, false
	}
	value = value[:len(value)-1]
	if !jsontext.Value(value).IsValid() {
		return hostFrame{}, false
	}
	return hostFrame{Type: "reply", ID: id, OK: true, Value: jsontext.Value(bytes.Clone(value))}, true
}
