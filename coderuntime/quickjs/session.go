package quickjs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/go-json-experiment/json"
)

// cpuPollInterval is how often the host samples a worker's CPU time for the backstop.
const cpuPollInterval = 25 * time.Millisecond

// exitGrace is how long the host waits for a worker's exit status after its output ended,
// and for the rest of its output after it exited, before settling anyway.
const exitGrace = time.Second

// session is the host side of one run.
type session struct {
	rt     *Runtime
	ctx    context.Context
	ns     map[string]coderuntime.Namespace
	order  []coderuntime.Namespace // as declared
	out    replyWriter
	calls  sync.WaitGroup // the run's goroutines that carry binding calls or write refusals
	cancel context.CancelCauseFunc
	// callCtx is the context of every binding call: cancelled (coderuntime.ErrRunSettled)
	// when the run settles.
	callCtx context.Context

	// mu guards what both the output reader, which handles the worker's frames itself,
	// and the loop, which handles the run's other events, change: the ledger, the logs,
	// the call bookkeeping and the outcome. The first outcome wins and closes stop; after
	// it no frame is handled.
	mu       sync.Mutex
	ledger   *coderuntime.Ledger
	logs     []string
	answered map[int64]bool
	nextSeq  uint64     // the sequence number of the next binding invocation
	refusals [][]byte   // replies to refused calls, not written yet
	refusing bool       // the goroutine writing them was started
	refused  *sync.Cond // on mu: a refusal was queued or the run settled
	// idle holds the hand-over channels (capacity 1, empty) of the carriers waiting for a
	// call: goroutines of this run that carried an earlier call (see carrier).
	idle   []chan bindingCall
	result *coderuntime.Result
	stop   chan struct{} // closed when the run settles
}

func newSession(rt *Runtime, ctx context.Context, bindings []coderuntime.Namespace, ledger *coderuntime.Ledger) *session {
	s := &session{
		rt:       rt,
		ctx:      ctx,
		ns:       make(map[string]coderuntime.Namespace, len(bindings)),
		order:    bindings,
		ledger:   ledger,
		answered: map[int64]bool{},
		stop:     make(chan struct{}),
	}
	s.refused = sync.NewCond(&s.mu)
	for _, n := range bindings {
		s.ns[n.Global] = n
	}
	s.callCtx, s.cancel = context.WithCancelCause(ctx)
	return s
}

// exitStatus is how a worker ended.
type exitStatus struct {
	code   int
	signal string // set when killed by a signal
	err    error  // set when it could not be started or waited for
}

// process is a running worker.
type process interface {
	stdin() io.WriteCloser
	stdout() io.ReadCloser
	// kill stops the worker hard; it is idempotent and safe after exit.
	kill()
	// exited delivers the exit status once.
	exited() <-chan exitStatus
	// cpuTime returns the worker's CPU time so far, if it can be measured.
	cpuTime() (time.Duration, bool)
}

// run starts the worker for the type-stripped code and drives the run to its result.
func (s *session) run(code string, positions []byte) coderuntime.Result {
	defer s.cancel(coderuntime.ErrRunSettled)
	start := startFrame{Type: "start", Program: code, Limits: s.rt.limits(), Positions: positions}
	for _, n := range s.order {
		w := wireNS{Global: n.Global, Names: make([]string, 0, len(n.Functions))}
		for name := range n.Functions {
			w.Names = append(w.Names, name)
		}
		slices.Sort(w.Names)
		if n.ErrorClass != nil {
			w.ErrorClass = &wireErrCls{Name: n.ErrorClass.Name, MemberNameProperty: n.ErrorClass.MemberNameProperty}
		}
		start.Namespaces = append(start.Namespaces, w)
	}
	startBytes, err := json.Marshal(start)
	if err != nil {
		return s.ledger.Failure(nil, coderuntime.Failure{Kind: coderuntime.FailureWorkerExit, Message: "worker error: " + err.Error()})
	}

	var proc process
	if s.rt.cfg.InProcess {
		proc = startInProcess(s.rt.busyClock)
	} else {
		proc, err = s.rt.worker()
		if err != nil {
			return s.ledger.Failure(nil, coderuntime.Failure{Kind: coderuntime.FailureWorkerExit, Message: "worker error: " + err.Error()})
		}
	}

	// Two goroutines besides the loop: the reader handles the worker's frames as they
	// arrive (a binding call starts from it, without a hand-off to the loop), and the start
	// frame is written by a goroutine of its own because a worker that never reads would
	// block it. Replies are written by the goroutine of the binding call that produced
	// them (replyWriter), so a reply reaches the worker without another hand-off.
	s.out.w = proc.stdin()
	var wg sync.WaitGroup
	readerDone := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(readerDone)
		s.read(proc.stdout())
	}()
	go func() {
		defer wg.Done()
		s.out.write(s.stop, append(startBytes, '\n'))
	}()

	pending := s.loop(proc, readerDone)

	// Settled: stop everything, then wait for every goroutine of this run. A worker process
	// was killed and its pipes closed; the kernel reaps it in the background (Close waits).
	s.cancel(coderuntime.ErrRunSettled)
	proc.kill()
	if pending {
		if wp, ok := proc.(workerProcess); ok {
			s.rt.reaps.Add(1)
			go func() {
				defer s.rt.reaps.Done()
				<-wp.reaped()
			}()
		} else {
			<-proc.exited()
		}
	}
	wg.Wait()
	proc.stdout().Close()
	s.calls.Wait()
	proc.stdin().Close()
	return *s.result
}

// loop handles the run's events — the end of the worker's output, its exit, the budgets'
// timers, cancellation — until the run settles (the reader settles it on the frames that
// end a run), then kills the worker. It reports whether the worker's exit status is still
// to come.
func (s *session) loop(proc process, readerDone <-chan struct{}) (pending bool) {
	wall, stopWall := s.rt.wallTimer(time.Duration(s.rt.cfg.MaxWallMs * float64(time.Millisecond)))
	defer stopWall()
	var cpuTick <-chan time.Time
	if !s.rt.cfg.InProcess {
		t := time.NewTicker(cpuPollInterval)
		defer t.Stop()
		cpuTick = t.C
	}
	var grace <-chan time.Time
	stopGrace := func() {}
	defer func() { stopGrace() }()
	startGrace := func() { grace, stopGrace = s.rt.graceTimer(exitGrace) }
	exited := proc.exited()
	var status *exitStatus
	framesDone := false

	exitFailure := func() coderuntime.Failure {
		switch {
		case status == nil:
			return coderuntime.Failure{Kind: coderuntime.FailureWorkerExit, Message: "worker error: the worker closed its output without completing"}
		case status.err != nil:
			return coderuntime.Failure{Kind: coderuntime.FailureWorkerExit, Message: "worker error: " + status.err.Error()}
		case status.signal != "":
			return coderuntime.Failure{Kind: coderuntime.FailureWorkerExit, Message: "worker error: terminated by signal " + status.signal}
		}
		return coderuntime.Failure{Kind: coderuntime.FailureWorkerExit, Message: fmt.Sprintf("worker exited with code %d before completing", status.code)}
	}

	for settled := false; !settled; {
		select {
		case <-s.stop:
			settled = true
		case <-readerDone:
			framesDone, readerDone = true, nil
			if status != nil {
				s.settleWith(func() coderuntime.Result { return s.ledger.Failure(s.logs, exitFailure()) })
			} else if grace == nil {
				startGrace()
			}
		case st := <-exited:
			status, exited = &st, nil
			if framesDone {
				s.settleWith(func() coderuntime.Result { return s.ledger.Failure(s.logs, exitFailure()) })
			} else if grace == nil {
				startGrace()
			}
		case <-grace:
			s.settleWith(func() coderuntime.Result { return s.ledger.Failure(s.logs, exitFailure()) })
		case <-s.ctx.Done():
			s.settleWith(func() coderuntime.Result {
				return s.ledger.Failure(s.logs, coderuntime.Failure{Kind: coderuntime.FailureAbort, Message: coderuntime.AbortMessage(s.ctx)})
			})
		case <-s.rt.closing:
			s.settleWith(func() coderuntime.Result {
				return s.ledger.Failure(s.logs, coderuntime.Failure{Kind: coderuntime.FailureAbort, Message: coderuntime.DisposedMessage})
			})
		case <-wall:
			s.settleWith(func() coderuntime.Result {
				return s.ledger.Failure(s.logs, coderuntime.Failure{Kind: coderuntime.FailureTimeout,
					Message: "wall-clock ceiling reached (" + coderuntime.FormatNumber(s.rt.cfg.MaxWallMs) + "ms)"})
			})
		case <-cpuTick:
			if cpu, ok := proc.cpuTime(); ok && cpu > s.rt.computeBackstop() {
				s.settleWith(s.computeTimeout)
			}
		}
	}
	proc.kill()
	return exited != nil
}

func (s *session) computeTimeout() coderuntime.Result {
	return s.ledger.Failure(s.logs, coderuntime.Failure{Kind: coderuntime.FailureTimeout,
		Message: "compute budget exhausted (" + coderuntime.FormatNumber(s.rt.cfg.ComputeMs) + "ms busy)"})
}

// settleWith records the outcome res builds, unless the run has settled already; res
// runs with mu held, so it may read the ledger and the logs.
func (s *session) settleWith(res func() coderuntime.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.result == nil {
		s.settle(res())
	}
}

// settle records the outcome; the first one wins. mu is held.
func (s *session) settle(res coderuntime.Result) {
	if s.result != nil {
		return
	}
	s.result = &res
	close(s.stop)
	s.refused.Signal()
}

// handle applies one validated worker frame. mu is held and the run has not settled.
// Once the run's context has ended, the run is aborted whatever the worker reports next:
// a frame then is the program reacting to the abort (a binding call refused as "run is
// over", say), read here before the run loop has seen the context end. A binding call
// that idle (see call) says the caller should carry itself is returned with true.
func (s *session) handle(f inbound, idle func(id int64) bool) (bindingCall, bool) {
	if s.ctx.Err() != nil {
		s.settle(s.ledger.Failure(s.logs, coderuntime.Failure{Kind: coderuntime.FailureAbort, Message: coderuntime.AbortMessage(s.ctx)}))
		return bindingCall{}, false
	}
	switch f.kind {
	case frameLog:
		if !s.ledger.Admit(f.text) {
			s.settle(s.ledger.Limit(append(s.logs, f.text)))
			return bindingCall{}, false
		}
		s.logs = append(s.logs, f.text)
	case frameOutputLimit:
		s.settle(s.ledger.Limit(s.logs))
	case frameBudget:
		s.settle(s.computeTimeout())
	case frameOOM:
		s.settle(s.ledger.Failure(s.logs, coderuntime.Failure{Kind: coderuntime.FailureWorkerExit,
			Message: "worker error: JavaScript heap out of memory (limit " + coderuntime.FormatNumber(s.rt.cfg.MaxHeapMB) + " MiB)"}))
	case frameExit:
		s.settle(s.ledger.Failure(s.logs, coderuntime.Failure{Kind: coderuntime.FailureWorkerExit,
			Message: fmt.Sprintf("worker exited with code %d before completing", f.code)}))
	case frameTooLarge:
		s.settle(s.ledger.Failure(s.logs, coderuntime.Failure{Kind: coderuntime.FailureWorkerExit,
			Message: "worker error: protocol frame exceeds " + strconv.Itoa(s.rt.frameLimit()) + " bytes"}))
	case frameDone:
		switch {
		case f.errKind == string(coderuntime.FailureOutputLimit):
			s.settle(s.ledger.Limit(s.logs))
		case f.errKind != "":
			s.settle(s.ledger.Failure(s.logs, coderuntime.Failure{Kind: coderuntime.FailureKind(f.errKind), Message: f.errMsg}))
		case len(f.value) == 0:
			s.settle(s.ledger.Success(s.logs, nil, false))
		default:
			v, err := jsonv.Parse(f.value)
			if err != nil {
				s.settle(s.ledger.Failure(s.logs, coderuntime.Failure{Kind: coderuntime.FailureInvalidOutput, Message: "program completion must be lossless JSON"}))
				return bindingCall{}, false
			}
			s.settle(s.ledger.Success(s.logs, v, true))
		}
	case frameCall:
		return s.call(f, idle)
	case frameIdle:
		// Only meaningful right after its call, where the reader looks for it (idle); a
		// stray one (late, repeated, for an unknown or answered call) says nothing.
	}
	return bindingCall{}, false
}

// call answers one binding call: at most once per id, unknown names refused, arguments
// validated again, the binding invoked on a goroutine of its own, a carrier (see carrier),
// unless idle reports that the worker said it is idle until this call's reply: then the
// call is returned with true for the reader to carry itself (see read). A call that
// reaches its binding gets the next sequence number (coderuntime.WithCallSeq): frames are
// handled one at a time in the order the program made the calls, so the numbers keep that
// order even though the goroutines race.
func (s *session) call(f inbound, idle func(id int64) bool) (bindingCall, bool) {
	if s.answered[f.id] {
		return bindingCall{}, false
	}
	s.answered[f.id] = true
	n, ok := s.ns[f.global]
	fn := n.Functions[f.name]
	if !ok || fn == nil {
		s.refuse(replyFailure(f.id, "unknown binding "+string(appendString(nil, f.global+"."+f.name))))
		return bindingCall{}, false
	}
	args, err := jsonv.Parse(f.args)
	if err != nil {
		s.refuse(replyFailure(f.id, "binding arguments must be lossless JSON"))
		return bindingCall{}, false
	}
	c := bindingCall{ctx: coderuntime.WithCallSeq(s.callCtx, s.nextSeq), fn: fn, id: f.id, args: args}
	s.nextSeq++
	if idle != nil && idle(f.id) {
		return c, true
	}
	if n := len(s.idle); n > 0 {
		next := s.idle[n-1]
		s.idle = s.idle[:n-1]
		next <- c // never blocks: an idle carrier's channel is empty
		return bindingCall{}, false
	}
	s.calls.Add(1)
	if h := s.rt.onCarrier; h != nil {
		h()
	}
	go s.carrier(c)
	return bindingCall{}, false
}

// bindingCall is one binding invocation, handed to a carrier.
type bindingCall struct {
	ctx  context.Context
	fn   coderuntime.Func
	id   int64
	args any
}

// maxIdleCarriers is how many carriers of a run may wait for a call at once; a carrier
// that finishes its call when that many wait ends.
const maxIdleCarriers = 2

// carrier invokes the binding call c and writes its reply, then waits for the next call
// the reader hands it, until the run settles. A carrier with a small reply counts as idle
// from before the reply is written, so a program that awaits each call, whose next call can
// only follow the reply, is served by one carrier for the whole run: no goroutine is started
// per call, and the carrier keeps the stack the pipeline grew, where a fresh goroutine grew
// its stack anew on every call. A larger reply may block its write until the worker reads
// it, so its carrier counts as idle only once the reply is out, and a call made meanwhile
// does not wait for that. A call that arrives while no carrier is idle starts a new one, so
// concurrent calls still run at once; at most maxIdleCarriers wait at a time.
func (s *session) carrier(c bindingCall) {
	defer s.calls.Done()
	next := make(chan bindingCall, 1)
	for {
		frame := s.invoke(c.ctx, c.fn, c.id, c.args)
		c = bindingCall{}
		var idle bool
		early := len(frame) <= earlyIdleMax
		if early {
			idle = s.goIdle(next)
		}
		s.out.write(s.stop, frame)
		if !early {
			idle = s.goIdle(next)
		}
		if !idle {
			return
		}
		select {
		case c = <-next:
		case <-s.stop:
			// A call handed over before the run settled (under mu, as the settling) is
			// in the channel already; it is invoked, as every numbered call is.
			select {
			case c = <-next:
			default:
				return
			}
		}
	}
}

// earlyIdleMax is the largest reply after which a carrier counts as idle before writing
// it: far below what a pipe holds, so that the write does not wait for the worker.
const earlyIdleMax = 4 << 10

// goIdle offers a carrier's hand-over channel to the reader, unless the run settled or
// maxIdleCarriers wait already; it reports whether the carrier is idle.
func (s *session) goIdle(next chan bindingCall) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.result != nil || len(s.idle) >= maxIdleCarriers {
		return false
	}
	s.idle = append(s.idle, next)
	return true
}

// refuse queues the reply of a refused call. The refusals go out in the order of their
// calls, from a goroutine of their own (started with the first), so the reader never waits
// for the worker to take its input.
func (s *session) refuse(frame []byte) {
	s.refusals = append(s.refusals, frame)
	if s.refusing {
		s.refused.Signal()
		return
	}
	s.refusing = true
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		for {
			for len(s.refusals) > 0 && s.result == nil {
				f := s.refusals[0]
				s.refusals = s.refusals[1:]
				s.mu.Unlock()
				s.out.write(s.stop, f)
				s.mu.Lock()
			}
			if s.result != nil {
				return
			}
			s.refused.Wait()
		}
	}()
}

// invoke runs one binding and builds its reply frame. A panic is contained as a failure.
func (s *session) invoke(ctx context.Context, fn coderuntime.Func, id int64, args any) (frame []byte) {
	defer func() {
		if p := recover(); p != nil {
			frame = replyFailure(id, fmt.Sprintf("binding panicked: %v", p))
		}
	}()
	v, err := fn(ctx, args)
	if err != nil {
		return replyFailure(id, err.Error())
	}
	b := make([]byte, 0, 128)
	b = append(b, `{"type":"reply","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"ok":true,"value":`...)
	// A jsonv value, which is what the pipeline returns, is encoded as it is: Marshal
	// checks it as Snapshot would. Other Go types (a map, an int) are snapshotted first,
	// as before.
	out, err := jsonv.AppendMarshal(b, v)
	if err != nil {
		snap, serr := jsonv.Snapshot(v)
		if serr != nil {
			return replyFailure(id, "binding resolution must be lossless JSON")
		}
		if out, err = jsonv.AppendMarshal(b, snap); err != nil {
			return replyFailure(id, "binding resolution must be lossless JSON")
		}
	}
	return append(out, '}', '\n')
}

func replyFailure(id int64, message string) []byte {
	b := []byte(`{"type":"reply","id":`)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"ok":false,"message":`...)
	b = appendString(b, message)
	return append(b, '}', '\n')
}

// idleWaitMax bounds how long the output reader waits, after a binding call frame that
// came alone, for what follows it, before it hands the call to a carrier: the worker's
// idle frame for the call comes when the worker's turn ends, tens of microseconds after
// the call frame on a machine of two cores. Any frame ends the wait; a program that
// computes after a call sees the call start at most this much later (plus the kernel's
// timer slack, 50 µs by default).
const idleWaitMax = 50 * time.Microsecond

// read handles the worker's frames until its output ends or the run settles. Junk is
// dropped; an oversized frame settles the run and ends the reading.
//
// A binding call whose idle frame (the worker will send nothing more until the call's
// reply) follows it — read with it, or arrived within idleWaitMax — is carried by the
// reader itself: it invokes the binding and writes the reply as a carrier would, with no
// hand-off to another goroutine, and reads on afterwards. Nothing is lost meanwhile: an
// honest worker sends nothing until the reply, a lying one only delays its own frames, and
// the run loop still settles the run on its budgets, cancellation and the worker's exit.
func (s *session) read(out io.Reader) {
	fr := newFrameReader(out, s.rt.frameLimit())
	idle := func(id int64) bool {
		line, ok := fr.tryLine(out)
		if !ok || !isIdleFor(line, id) {
			return false
		}
		fr.skipLine(line)
		return true
	}
	for {
		line, err := fr.next()
		var f inbound
		switch {
		case errors.Is(err, errFrameTooLarge):
			f = inbound{kind: frameTooLarge}
		case err != nil:
			return
		default:
			var ok bool
			if f, ok = decodeWorkerFrame(line); !ok {
				continue
			}
			// The frame's raw values point into the reader's buffer; handle parses them
			// into fresh values (jsonv.Parse keeps nothing of its input) before the next read.
			if f.kind == frameCall && !fr.hasLine() {
				// The worker writes a call's idle frame when its turn ends, a little after
				// the call: give it that long to come, without reading (the buffer holds
				// the call's arguments), before the call goes to a carrier.
				if t, ok := out.(tryReader); ok {
					t.waitReadable(idleWaitMax)
				}
			}
		}
		s.mu.Lock()
		var c bindingCall
		carry := false
		if s.result == nil {
			c, carry = s.handle(f, idle)
		}
		settled := s.result != nil
		s.mu.Unlock()
		if carry {
			if h := s.rt.onReaderCarry; h != nil {
				h()
			}
			s.out.write(s.stop, s.invoke(c.ctx, c.fn, c.id, c.args))
			select {
			case <-s.stop:
				settled = true
			default:
			}
		}
		if settled || f.kind == frameTooLarge {
			return
		}
	}
}

// replyWriter writes host frames to the worker: the start frame, then each reply from the
// goroutine that produced it. Nothing is written once the run settled; a write the
// worker does not take blocks only its own goroutine until the run settles and the pipe
// is closed.
type replyWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// write sends one frame unless stop is closed.
func (o *replyWriter) write(stop <-chan struct{}, frame []byte) {
	select {
	case <-stop:
		return
	default:
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	select {
	case <-stop:
		return
	default:
	}
	o.w.Write(frame)
}
