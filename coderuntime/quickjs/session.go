package quickjs

import (
	"bytes"
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
	ledger *coderuntime.Ledger
	logs   []string

	answered map[int64]bool
	nextSeq  uint64 // the sequence number of the next binding invocation; loop-owned
	replies  *replyQueue
	calls    sync.WaitGroup
	callCtx  context.Context
	cancel   context.CancelCauseFunc

	stop   chan struct{} // closed when the run settles
	result *coderuntime.Result
}

func newSession(rt *Runtime, ctx context.Context, bindings []coderuntime.Namespace, ledger *coderuntime.Ledger) *session {
	s := &session{
		rt:       rt,
		ctx:      ctx,
		ns:       make(map[string]coderuntime.Namespace, len(bindings)),
		order:    bindings,
		ledger:   ledger,
		answered: map[int64]bool{},
		replies:  newReplyQueue(),
		stop:     make(chan struct{}),
	}
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

	var wg sync.WaitGroup
	frames := make(chan inbound)
	wg.Add(2)
	go func() { // reader: validated frames to the loop
		defer wg.Done()
		defer close(frames)
		s.read(proc.stdout(), frames)
	}()
	go func() { // writer: the start frame, then replies in order
		defer wg.Done()
		s.write(proc.stdin(), append(startBytes, '\n'))
	}()

	pending := s.loop(proc, frames)

	// Settled: stop everything, then wait for every goroutine of this run. A worker process
	// was killed and its pipes closed; the kernel reaps it in the background (Close waits).
	s.cancel(coderuntime.ErrRunSettled)
	s.replies.close()
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
	return *s.result
}

// loop handles worker frames and run events until the run settles, then kills the worker.
// It reports whether the worker's exit status is still to come.
func (s *session) loop(proc process, frames <-chan inbound) (pending bool) {
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

	for s.result == nil {
		select {
		case f, ok := <-frames:
			if !ok {
				framesDone, frames = true, nil
				if status != nil {
					s.settle(s.ledger.Failure(s.logs, exitFailure()))
				} else if grace == nil {
					startGrace()
				}
				continue
			}
			s.handle(f)
		case st := <-exited:
			status, exited = &st, nil
			if framesDone {
				s.settle(s.ledger.Failure(s.logs, exitFailure()))
			} else if grace == nil {
				startGrace()
			}
		case <-grace:
			s.settle(s.ledger.Failure(s.logs, exitFailure()))
		case <-s.ctx.Done():
			s.settle(s.ledger.Failure(s.logs, coderuntime.Failure{Kind: coderuntime.FailureAbort, Message: coderuntime.AbortMessage(s.ctx)}))
		case <-s.rt.closing:
			s.settle(s.ledger.Failure(s.logs, coderuntime.Failure{Kind: coderuntime.FailureAbort, Message: coderuntime.DisposedMessage}))
		case <-wall:
			s.settle(s.ledger.Failure(s.logs, coderuntime.Failure{Kind: coderuntime.FailureTimeout,
				Message: "wall-clock ceiling reached (" + coderuntime.FormatNumber(s.rt.cfg.MaxWallMs) + "ms)"}))
		case <-cpuTick:
			if cpu, ok := proc.cpuTime(); ok && cpu > s.rt.computeBackstop() {
				s.settle(s.computeTimeout())
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

// settle records the outcome; the first one wins.
func (s *session) settle(res coderuntime.Result) {
	if s.result != nil {
		return
	}
	s.result = &res
	close(s.stop)
}

// handle applies one validated worker frame.
func (s *session) handle(f inbound) {
	switch f.kind {
	case frameLog:
		if !s.ledger.Admit(f.text) {
			s.settle(s.ledger.Limit(append(s.logs, f.text)))
			return
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
				return
			}
			s.settle(s.ledger.Success(s.logs, v, true))
		}
	case frameCall:
		s.call(f)
	}
}

// call answers one binding call: at most once per id, unknown names refused, arguments
// validated again, the binding invoked in its own goroutine. A call that reaches its
// binding gets the next sequence number (coderuntime.WithCallSeq): frames are handled one
// at a time in the order the program made the calls, so the numbers keep that order even
// though the goroutines race.
func (s *session) call(f inbound) {
	if s.answered[f.id] {
		return
	}
	s.answered[f.id] = true
	n, ok := s.ns[f.global]
	fn := n.Functions[f.name]
	if !ok || fn == nil {
		s.replies.put(replyFailure(f.id, "unknown binding "+string(appendString(nil, f.global+"."+f.name))))
		return
	}
	args, err := jsonv.Parse(f.args)
	if err != nil {
		s.replies.put(replyFailure(f.id, "binding arguments must be lossless JSON"))
		return
	}
	ctx := coderuntime.WithCallSeq(s.callCtx, s.nextSeq)
	s.nextSeq++
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		s.replies.put(s.invoke(ctx, fn, f.id, args))
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
	snap, err := jsonv.Snapshot(v)
	if err != nil {
		return replyFailure(id, "binding resolution must be lossless JSON")
	}
	text, err := jsonv.Marshal(snap)
	if err != nil {
		return replyFailure(id, "binding resolution must be lossless JSON")
	}
	b := make([]byte, 0, len(text)+48)
	b = append(b, `{"type":"reply","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"ok":true,"value":`...)
	b = append(b, text...)
	return append(b, '}', '\n')
}

func replyFailure(id int64, message string) []byte {
	b := []byte(`{"type":"reply","id":`)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"ok":false,"message":`...)
	b = appendString(b, message)
	return append(b, '}', '\n')
}

// read forwards validated frames from the worker's output until it ends or the run
// settles. Junk is dropped; an oversized frame is reported and ends the reading.
func (s *session) read(out io.Reader, frames chan<- inbound) {
	fr := newFrameReader(out, s.rt.frameLimit())
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
			f.args = bytes.Clone(f.args)
			f.value = bytes.Clone(f.value)
		}
		select {
		case frames <- f:
		case <-s.stop:
			return
		}
		if f.kind == frameTooLarge {
			return
		}
	}
}

// write sends the start frame and then queued replies until the run settles.
func (s *session) write(in io.WriteCloser, start []byte) {
	defer in.Close()
	if _, err := in.Write(start); err != nil {
		return
	}
	for {
		frames, ok := s.replies.wait(s.stop)
		if !ok {
			return
		}
		for _, f := range frames {
			if _, err := in.Write(f); err != nil {
				return
			}
		}
	}
}

// replyQueue holds reply frames for the writer; puts never block and are dropped once
// the run settled.
type replyQueue struct {
	mu     sync.Mutex
	frames [][]byte
	closed bool
	ready  chan struct{}
}

func newReplyQueue() *replyQueue { return &replyQueue{ready: make(chan struct{}, 1)} }

func (q *replyQueue) put(f []byte) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.frames = append(q.frames, f)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *replyQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.frames = nil
	q.mu.Unlock()
}

// wait returns the queued frames, blocking until there are some; it reports false once
// stop is closed.
func (q *replyQueue) wait(stop <-chan struct{}) ([][]byte, bool) {
	for {
		q.mu.Lock()
		f := q.frames
		q.frames = nil
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return nil, false
		}
		if len(f) > 0 {
			return f, true
		}
		select {
		case <-q.ready:
		case <-stop:
			return nil, false
		}
	}
}
