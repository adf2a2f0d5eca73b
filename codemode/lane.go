package codemode

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// lane is the per-run sub-dispatch scheduler of docs/behaviour.md §10.6: it starts sub-calls
// strictly in submission order (their dispatch-start event and pre-execute stage run in the
// lane, one at a time), lets only their dispatch stages overlap, and commits them in
// submission order (post-execute, deferral to the outer call, the program's outcome).
//
// Steps (a start or a commit) are taken by whoever holds the stepping role (stepping, under
// mu), one at a time. A call submitted to a quiescent lane (nothing queued, started or
// stepping) is a solo call: its own binding goroutine takes the role and carries the call
// through the lane, start, dispatch and commit, so a program that awaits each call before
// making the next costs no goroutine hand-off in the lane at all. Every other call is queued
// for the driver goroutine, started the first time a call is queued, which starts queued
// calls when there is capacity (their dispatch stages on goroutines of their own) and
// commits settled calls in order, and leaves the role to a solo call that holds it.
//
// Capacity: no exclusive call active, and for an exclusive call an empty pool, for a
// parallel one fewer than maxParallel dispatches in flight. An exclusive call holds its
// barrier until its commit is done.
//
// Events: a start event is appended by the holder of the stepping role itself, before the
// call's pre-execute stage. A settle event is queued at the call's commit, after the
// program has its outcome, and appended by a second goroutine, so a slow log never delays a
// program's outcome and commits go on while it is written; at most maxParallel of them wait
// before the lane itself waits. Before appending a start event the stepper waits for the
// settle events queued so far. The log therefore shows the lane's own sequence of starts and
// commits: a program that awaits each call before making the next one logs start, settle,
// start, settle, whatever the timing. A solo call's commit, when nothing else is queued,
// holds its settle event back instead (held): the next start appends it first, on its own
// goroutine, or drain does, so a program that awaits each call wakes no second goroutine
// per call for its events; the next start waited for that event before as well.
type lane struct {
	r        *Runner
	ctx      context.Context // the run context: the caller context of every sub-call
	endRun   func()          // cancels the run context: the run settled
	shapeCtx context.Context // the outer context without its cancellation, for log shapers
	call     *tool.Call
	agent    *tool.Scope
	log      DispatchLog // nil when the run records no events
	stopWake func() bool

	wake chan struct{} // a pending state change for the driver; capacity 1

	turns turns // orders the submission of numbered binding calls

	mu         sync.Mutex
	submitted  int
	idPrefix   string     // "<callId>:code:", the sub-call ids' prefix
	pending    []*subCall // submitted, not started
	commits    []*subCall // started, not committed, in submission order
	inFlight   int        // dispatch stages running
	exclusive  bool       // an exclusive call holds the barrier
	closed     bool       // the run settled: no more submissions
	stepping   bool       // the driver or a solo call is taking a step
	driving    bool       // the driver goroutine was started
	driverDone chan struct{}
	solos      sync.WaitGroup // solo calls in the lane

	// Owned by the solo call in the lane, then by drain: the run's end follows the end of
	// watched, the context of a solo call's binding call.
	watched <-chan struct{}
	unwatch func() bool

	// Owned by the holder of the stepping role, then by drain.
	settles chan settle
	logDone chan struct{}
	queued  int          // settle events queued
	logged  atomic.Int64 // settle events recorded, by recordSettles
	held    settle       // a solo call's settle event, not queued yet (holding)
	holding bool
}

// subCall is one binding call of the program.
type subCall struct {
	id     string
	name   string
	in     tool.Input
	logged any // the independent snapshot of the arguments the events record

	mode    tool.ExecMode
	inv     *tool.Invocation // nil when the call failed before it had one
	res     *tool.Result     // the result when inv is nil
	settled bool             // guarded by lane.mu: ready to commit

	// done carries the outcome to the program's binding call, with capacity 1: the lane
	// never waits for the program. A solo call has none unless the driver commits it: its
	// own goroutine keeps the outcome in out.
	done chan outcome
	out  outcome
}

// outcome is what a binding call hands back to the program.
type outcome struct {
	value     any
	err       error
	abandoned bool
}

// settle is one entry of the settle-event queue: an event to record, or (flushed set) a
// marker that recordSettles closes once everything queued before it is recorded.
type settle struct {
	sub     *subCall
	res     *tool.Result
	flushed chan struct{}
}

func (r *Runner) newLane(outer, runCtx context.Context, cancel context.CancelCauseFunc, call *tool.Call) *lane {
	l := &lane{
		r:          r,
		ctx:        runCtx,
		endRun:     func() { cancel(errRunSettled) },
		shapeCtx:   context.WithoutCancel(outer),
		call:       call,
		agent:      call.Agent(),
		wake:       make(chan struct{}, 1),
		driverDone: make(chan struct{}),
	}
	if r.log != nil && l.agent != nil {
		l.log = r.log
	}
	// Queued calls are abandoned as soon as the run is cancelled, not at the next settle.
	l.stopWake = context.AfterFunc(runCtx, l.signal)
	return l
}

// signal tells the driver that something changed.
func (l *lane) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// over is the rejection of a call that the run's end overtook (docs/behaviour.md §10.5).
func (l *lane) over(ctx context.Context, name, what string) error {
	return fmt.Errorf("run_code run is over (%s); %s %s", coderuntime.AbortMessage(ctx), name, what)
}

// binding returns the program-side function of the tool name (docs/behaviour.md §10.5).
func (l *lane) binding(name string) coderuntime.Func {
	return func(ctx context.Context, args any) (any, error) {
		if h := l.r.hooks.enter; h != nil {
			h(name)
		}
		sub, solo, err := l.submit(ctx, name, args)
		if err != nil {
			return nil, err
		}
		if solo && l.runSolo(ctx, sub) {
			return l.answer(ctx, name, sub.out)
		}
		select {
		case o := <-sub.done:
			return l.answer(ctx, name, o)
		case <-ctx.Done():
			// The runtime settled the run (a budget, say) and waits for its binding calls:
			// leave the call to the drain.
			return nil, l.over(ctx, name, "result discarded")
		}
	}
}

// answer is what the program's binding call returns for the outcome o.
func (l *lane) answer(ctx context.Context, name string, o outcome) (any, error) {
	switch {
	case o.abandoned:
		return nil, o.err
	case ctx.Err() != nil:
		// The runtime settled the run while a solo call was in the lane.
		return nil, l.over(ctx, name, "result discarded")
	case l.ctx.Err() != nil:
		return nil, l.over(l.ctx, name, "result discarded")
	case o.err != nil:
		return nil, o.err
	}
	return o.value, nil
}

// deliver hands sub's outcome over: to its own goroutine's runSolo, or through done.
func (sub *subCall) deliver(o outcome) {
	if sub.done == nil {
		sub.out = o
		return
	}
	sub.done <- o
}

// submit queues a binding call into the lane, or rejects it before it is queued: when the
// run is over, or when its arguments are not lossless JSON (docs/behaviour.md §10.5 steps 1–3). A call
// the runtime numbered (coderuntime.CallSeq) is queued, and takes its submission number,
// only after every call numbered before it was queued or rejected, so that the lane sees the
// program's order even when the runtime invokes the bindings concurrently; a call without
// a number is queued at once. solo reports a call submitted to a quiescent lane, which the
// caller carries through the lane itself (runSolo) once its turn is released.
func (l *lane) submit(ctx context.Context, name string, args any) (sub *subCall, solo bool, err error) {
	seq, numbered := coderuntime.CallSeq(ctx)
	if numbered {
		defer l.release(seq)
	}
	if l.ctx.Err() != nil {
		return nil, false, l.over(l.ctx, name, "not dispatched")
	}
	args, err = normalizeArgs(args)
	if err != nil {
		return nil, false, err
	}
	if numbered {
		var parked func()
		if h := l.r.hooks.parked; h != nil {
			parked = func() { h(seq) }
		}
		if ended := l.turns.wait(ctx, l.ctx, seq, parked); ended != nil {
			return nil, false, l.over(ended, name, "not dispatched")
		}
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, false, l.over(l.ctx, name, "not dispatched")
	}
	l.submitted++
	if l.idPrefix == "" {
		l.idPrefix = l.call.CallID() + ":code:"
	}
	var buf [80]byte
	id := string(strconv.AppendInt(append(buf[:0], l.idPrefix...), int64(l.submitted), 10))
	sub = &subCall{
		id:     id,
		name:   name,
		logged: args,
		in: tool.Input{
			CallID:     id,
			RootCallID: l.call.RootCallID(),
			Name:       name,
			Args:       args, // Prepare takes its own copy: the input is not handed over
			Agent:      l.agent,
			Parent:     l.call.Token(),
		},
	}
	solo = !l.stepping && len(l.pending) == 0 && len(l.commits) == 0 && l.inFlight == 0
	if solo {
		l.stepping = true
		l.solos.Add(1)
		l.mu.Unlock()
	} else {
		sub.done = make(chan outcome, 1)
		l.pending = append(l.pending, sub)
		if !l.driving {
			l.driving = true
			go l.drive()
		}
		l.mu.Unlock()
		l.signal()
	}
	if h := l.r.hooks.submit; h != nil {
		h(id)
	}
	return sub, solo, nil
}

// release gives up a numbered call's turn, once it is queued or rejected.
func (l *lane) release(seq uint64) {
	l.turns.release(seq)
	if h := l.r.hooks.released; h != nil {
		h(seq)
	}
}

// normalizeArgs returns the lane's own lossless snapshot of the program's arguments. The
// events record it; the call's input carries it without handing it over, so the pipeline's
// preparation dispatches a copy of its own and a tool cannot change what the log says it
// received.
func normalizeArgs(args any) (snap any, err error) {
	defer func() {
		if p := recover(); p != nil {
			snap = nil
			err = fmt.Errorf("tool arguments must be lossless JSON: %s", tool.ErrorMessage(p))
		}
	}()
	snap, err = jsonv.Snapshot(args)
	if err != nil {
		return nil, errors.New("tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)")
	}
	return snap, nil
}

// runSolo carries a solo call through the lane on the program's binding goroutine, with the
// stepping role submit gave it: its start, its dispatch stage (the role let go meanwhile, so
// that the driver may start calls submitted behind it) and its commit, unless the driver is
// taking a step when the dispatch settles, in which case the driver commits it.
//
// The runtime waits for its binding calls before it returns. Should it settle the run while
// the call is in the lane, the run is over: the run context is cancelled then, as RunCode
// does once the runtime returns, so that the call is aborted instead of holding the runtime.
//
// It reports whether the call has its outcome (sub.out); otherwise the driver delivers it
// through sub.done.
func (l *lane) runSolo(ctx context.Context, sub *subCall) (answered bool) {
	defer l.solos.Done()
	l.watch(ctx)
	if l.ctx.Err() != nil {
		l.letGo()
		sub.out = outcome{err: l.over(l.ctx, sub.name, "tool call abandoned"), abandoned: true}
		return true
	}
	// Classified immediately before it starts, like a queued call; the lane is empty, so
	// either mode has capacity.
	if l.start(sub, l.r.reg.ExecutionMode(sub.in)) {
		l.letGo()
		l.dispatch(sub)
		l.mu.Lock()
		l.inFlight--
		sub.settled = true
		if l.stepping || l.commits[0] != sub {
			// The driver is taking a step: it commits the call once it is done.
			sub.done = make(chan outcome, 1)
			if !l.driving { // the driver holds the role, so it runs: never taken
				l.driving = true
				go l.drive()
			}
			l.mu.Unlock()
			l.signal()
			if h := l.r.hooks.handedOver; h != nil {
				h(sub.id)
			}
			return false
		}
		l.stepping = true
	} else {
		l.mu.Lock()
		if !sub.settled {
			// Not started (its start event failed): it already has its outcome.
			l.mu.Unlock()
			l.letGo()
			return true
		}
	}
	l.commits = l.commits[1:]
	l.mu.Unlock()
	l.commit(sub, true)
	if sub.mode == tool.Exclusive {
		l.mu.Lock()
		l.exclusive = false
		l.mu.Unlock()
	}
	l.letGo()
	return true
}

// watch makes the end of ctx, a binding call's context, end the run (see runSolo). The
// runtime gives every binding call of a run the same context, or contexts that end together
// when the run settles: the watch set for one serves every solo call whose context ends
// with the same channel. Only a solo call calls it.
func (l *lane) watch(ctx context.Context) {
	done := ctx.Done()
	if done == nil || done == l.watched {
		return
	}
	if l.unwatch != nil {
		l.unwatch()
	}
	l.watched, l.unwatch = done, context.AfterFunc(ctx, l.endRun)
}

// letGo gives up a solo call's stepping role, waking the driver when it has a step to take.
func (l *lane) letGo() {
	l.mu.Lock()
	l.stepping = false
	work := len(l.pending) > 0 || len(l.commits) > 0 && l.commits[0].settled
	l.mu.Unlock()
	if work {
		l.signal()
	}
}

// drive is the driver loop: commit the oldest started call once it settled, else start the
// oldest queued call when there is capacity, else wait for a change.
func (l *lane) drive() {
	defer close(l.driverDone)
	for {
		l.mu.Lock()
		if l.stepping {
			// A solo call holds the role; it wakes the driver when it lets go.
			l.mu.Unlock()
			<-l.wake
			continue
		}
		if len(l.commits) > 0 && l.commits[0].settled {
			sub := l.commits[0]
			l.commits = l.commits[1:]
			l.stepping = true
			l.mu.Unlock()
			l.commit(sub, false)
			l.mu.Lock()
			if sub.mode == tool.Exclusive {
				l.exclusive = false
			}
			l.stepping = false
			l.mu.Unlock()
			continue
		}
		if len(l.pending) > 0 {
			sub := l.pending[0]
			if l.ctx.Err() != nil {
				l.pending = l.pending[1:]
				l.mu.Unlock()
				sub.deliver(outcome{err: l.over(l.ctx, sub.name, "tool call abandoned"), abandoned: true})
				continue
			}
			busy, inFlight := l.exclusive, l.inFlight
			l.mu.Unlock()
			if !busy {
				// Classified immediately before it starts: a registry change made by an
				// earlier call counts (docs/behaviour.md §8.2).
				mode := l.r.reg.ExecutionMode(sub.in)
				if mode == tool.Exclusive && inFlight == 0 || mode == tool.Parallel && inFlight < l.r.maxParallel {
					l.mu.Lock()
					if l.stepping {
						// A solo call took the role to commit meanwhile: look again.
						l.mu.Unlock()
						continue
					}
					l.pending = l.pending[1:]
					l.stepping = true
					l.mu.Unlock()
					if l.start(sub, mode) {
						go func() {
							l.dispatch(sub)
							l.mu.Lock()
							l.inFlight--
							sub.settled = true
							l.mu.Unlock()
							l.signal()
						}()
					}
					l.mu.Lock()
					l.stepping = false
					l.mu.Unlock()
					continue
				}
			}
			l.mu.Lock()
		}
		if l.closed && len(l.pending) == 0 && len(l.commits) == 0 && l.inFlight == 0 {
			l.mu.Unlock()
			return
		}
		var pending, settled []string
		if l.r.hooks.idle != nil {
			for _, sub := range l.pending {
				pending = append(pending, sub.id)
			}
			for _, sub := range l.commits {
				if sub.settled {
					settled = append(settled, sub.id)
				}
			}
		}
		l.mu.Unlock()
		if h := l.r.hooks.idle; h != nil {
			h(pending, settled)
		}
		<-l.wake
	}
}

// start records the call's start event and runs its pre-dispatch stages, with the stepping
// role held. It reports whether the call's dispatch stage is still to run, counted in
// flight: the caller runs it (dispatch) and then marks the call settled.
func (l *lane) start(sub *subCall, mode tool.ExecMode) (dispatchNext bool) {
	if l.log != nil {
		l.flushSettles()
		p := session.CodeDispatchStart{RootCallID: l.call.RootCallID(), ParentCallID: l.call.CallID(), SubCallID: sub.id, Name: sub.name, Arguments: sub.logged}
		if err := callLog(func() error { return l.log.Start(l.agent, p) }); err != nil {
			// Nothing runs unrecorded.
			sub.deliver(outcome{err: fmt.Errorf("tool call %s was not started: recording tool/code-dispatch-start failed: %w", sub.id, err)})
			return false
		}
	}
	sub.mode = mode
	inv, err := prepare(l.r.reg, l.ctx, sub.in)
	l.mu.Lock()
	defer l.mu.Unlock()
	if mode == tool.Exclusive {
		l.exclusive = true
	}
	l.commits = append(l.commits, sub)
	switch {
	case err != nil:
		sub.res, sub.settled = tool.Fail(err), true
	case inv.NeedsDispatch():
		sub.inv = inv
		l.inFlight++
		return true
	default:
		sub.inv, sub.settled = inv, true
	}
	return false
}

// dispatch runs a started call's dispatch stage; a failure becomes the call's result.
func (l *lane) dispatch(sub *subCall) {
	if err := dispatch(sub.inv); err != nil {
		sub.inv, sub.res = nil, tool.Fail(err)
	}
}

// commit finalizes a settled call in submission order and hands its outcome to the outer
// call and to the program (docs/behaviour.md §10.6), then queues its settle event, or holds
// it back when solo (the call's own goroutine commits) and every queued event is recorded.
func (l *lane) commit(sub *subCall, solo bool) {
	res := sub.res
	if sub.inv != nil {
		var err error
		if res, err = finalize(sub.inv); err != nil {
			res = tool.Fail(err)
		}
	}
	if !res.IsError && hasImage(res.Content) {
		l.call.DeferContext(content.Message{
			Content: content.Clone(res.Content),
			Source:  &content.Source{Kind: "plugin", Plugin: ImagePlugin},
		})
	}
	for _, m := range res.AdditionalContexts {
		l.call.DeferContext(m)
	}
	if !res.IsError && res.ConcludesTurn {
		l.call.ConcludeTurn()
	}
	if res.IsError {
		msg := "tool call failed"
		if res.Error != nil {
			msg = res.Error.Message
		}
		sub.deliver(outcome{err: errors.New(msg)})
	} else {
		sub.deliver(outcome{value: res.Value})
	}
	if l.log == nil {
		return
	}
	s := settle{sub: sub, res: res}
	if solo && !l.holding && (l.settles == nil || l.logged.Load() == int64(l.queued)) {
		l.held, l.holding = s, true
		return
	}
	if l.holding {
		l.holding = false
		l.queue(l.held)
		l.held = settle{}
	}
	l.queue(s)
}

// queue hands a settle event to recordSettles, started with the first; it waits while
// maxParallel events are pending. Only the holder of the stepping role calls it.
func (l *lane) queue(s settle) {
	if l.settles == nil {
		l.settles = make(chan settle, l.r.maxParallel)
		l.logDone = make(chan struct{})
		go l.recordSettles()
	}
	l.queued++
	l.settles <- s
}

// flushSettles records the held settle event, or waits until every settle event queued so
// far is recorded, so that a call's settle event precedes the start event of every call
// started after its commit. Only the holder of the stepping role calls it.
func (l *lane) flushSettles() {
	if l.holding {
		// Held only while nothing queued is unrecorded, and queued after it if anything
		// was: the queue is empty.
		l.holding = false
		l.record(l.held)
		l.held = settle{}
		return
	}
	if l.settles == nil || l.logged.Load() == int64(l.queued) {
		return
	}
	done := make(chan struct{})
	l.settles <- settle{flushed: done}
	<-done
}

// recordSettles appends the queued settle events in commit order.
func (l *lane) recordSettles() {
	defer close(l.logDone)
	for s := range l.settles {
		if s.flushed != nil {
			close(s.flushed)
			continue
		}
		l.record(s)
		l.logged.Add(1)
	}
}

// record appends one settle event; a failure is logged as a warning.
func (l *lane) record(s settle) {
	p := session.CodeDispatch{
		RootCallID:   l.call.RootCallID(),
		ParentCallID: l.call.CallID(),
		SubCallID:    s.sub.id,
		Name:         s.sub.name,
		Arguments:    s.sub.logged,
		IsError:      s.res.IsError,
		Content:      l.shape(s.sub, s.res),
	}
	if err := callLog(func() error { return l.log.Settle(l.agent, p) }); err != nil {
		l.r.logger.Warn(fmt.Sprintf("tool \"%s\" (%s): recording tool/code-dispatch failed: %s", s.sub.name, s.sub.id, tool.ErrorMessage(err)))
	}
}

// shape runs the log shapers over a settled call's content; any failure records the
// original content.
func (l *lane) shape(sub *subCall, res *tool.Result) []content.Block {
	blocks := res.Content
	for _, fn := range l.r.shapers {
		c := SettledCall{Outer: l.call.Execution, Agent: l.agent, SubCallID: sub.id, Name: sub.name, IsError: res.IsError, Content: content.Clone(blocks)}
		out, err := callShaper(fn, l.shapeCtx, c)
		if err != nil {
			l.r.logger.Warn(fmt.Sprintf("tool \"%s\" (%s): tools/code-dispatch-log listener failed: %s", sub.name, sub.id, tool.ErrorMessage(err)))
			return res.Content
		}
		if out != nil {
			blocks = out
		}
	}
	return blocks
}

// drain ends the run's lane: no more submissions, queued calls abandoned (the run context
// is already cancelled), every started call committed and every event recorded.
func (l *lane) drain() {
	l.stopWake()
	l.mu.Lock()
	l.closed = true
	driving := l.driving
	l.mu.Unlock()
	l.solos.Wait()
	if l.unwatch != nil {
		l.unwatch()
	}
	if driving {
		l.signal()
		<-l.driverDone
	}
	if l.holding {
		// Held only while the queue is empty, so it comes after every queued event.
		l.holding = false
		l.record(l.held)
	}
	if l.settles != nil {
		close(l.settles)
		<-l.logDone
	}
}

func hasImage(blocks []content.Block) bool {
	for _, b := range blocks {
		if b.Type == content.TypeImage {
			return true
		}
	}
	return false
}

// The stage calls below turn a panic (an invariant violation of the pipeline, or a
// misbehaving hook that escaped the pipeline's own recovery) into an error, so that the
// lane goroutines never take the process down.

func prepare(reg *tool.Registry, ctx context.Context, in tool.Input) (inv *tool.Invocation, err error) {
	defer recoverInto(&err)
	return reg.Prepare(ctx, in), nil
}

func dispatch(inv *tool.Invocation) (err error) {
	defer recoverInto(&err)
	inv.Dispatch()
	return nil
}

func finalize(inv *tool.Invocation) (res *tool.Result, err error) {
	defer recoverInto(&err)
	return inv.Finalize(), nil
}

func callLog(fn func() error) (err error) {
	defer recoverInto(&err)
	return fn()
}

func callShaper(fn LogShaper, ctx context.Context, c SettledCall) (out []content.Block, err error) {
	defer recoverInto(&err)
	return fn(ctx, c)
}

func recoverInto(err *error) {
	if p := recover(); p != nil {
		if e, ok := p.(error); ok {
			*err = e
		} else {
			*err = errors.New(tool.ErrorMessage(p))
		}
	}
}
