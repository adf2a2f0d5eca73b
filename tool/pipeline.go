package tool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/contain"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/schema"
)

// stage says what an Invocation still owes.
type stage uint8

const (
	stageDispatch stage = iota // owes Dispatch, then post-execute
	stagePost                  // has a result that still owes post-execute
	stageFinal                 // has a result that skips post-execute
	stageDone                  // finalized
)

// Invocation is one call in progress through the staged pipeline (docs/behaviour.md §4.3). A scheduler
// calls Registry.Prepare in model order, Dispatch (possibly concurrently with other
// invocations' dispatches) when NeedsDispatch reports true, and Finalize in model order.
// Registry.Execute does all three.
type Invocation struct {
	r         *Registry
	ctx       context.Context // the caller's context
	exec      *Execution
	finalizer func(*Execution, *Result) ([]content.Block, error)
	result    *Result
	call      *Call   // the body's view, once dispatched
	out       *Result // the final result, once finalized

	// The contained work of the call (see advance): the next step, the step to stop
	// before, whether the work runs on a goroutine of its own, which step's hooks are
	// loaded (plus one; zero for none) and whether that step runs code the registry does
	// not own, and whether the dispatch is running the around-execute wrappers.
	at        at
	until     at
	onCall    bool
	loadedFor at
	needs     bool
	wrapping  bool
	// What the dispatch is running, for a Goexit (see dispatchPhase).
	phase dispatchPhase
	stage stage
	// What prepare is running (a hook, the approver, a guard), for a Goexit.
	where   prepWhere
	tokVal  Token       // the storage of the execution's token
	invoked atomic.Bool // the body was invoked

	// Storage for the execution, the body's view and the run of the body when no wrapper
	// runs it, allocated with the invocation instead of separately.
	execVal Execution
	callVal Call
	bodyVal bodyRun

	// The state of the steps that run hooks, guards, wrappers, finalize-content or result
	// listeners, the dispatch's deadlines and the observer's trace (see hooked); nil until
	// the call needs it, so that a call on a registry without any of them allocates a
	// smaller invocation. The small fields above are packed for the same reason.
	hk *hookState
}

// prepWhere names the kind of code prepare is running, for the failure of a Goexit in it.
type prepWhere uint8

const (
	wherePreHook prepWhere = iota
	whereApprover
	whereGuard
)

func (w prepWhere) String() string {
	switch w {
	case whereApprover:
		return "the approver"
	case whereGuard:
		return "a guard"
	}
	return "a pre-execute hook"
}

// hookState is the state of an invocation's steps that run code other than the body.
type hookState struct {
	// The dispatch's deadlines (see OnDeadline); nil for none.
	deadlines []Deadline
	// The observer's record of the call; nil when none is installed.
	trace CallTrace

	prep   prepareRun
	post   postRun
	fin    finalizeRun
	notify notifyRun
	wrap   wrapState
}

// invocationWithHooks is an invocation allocated together with its hookState, for a
// registry whose hooks every call runs.
type invocationWithHooks struct {
	inv Invocation
	hk  hookState
}

// hooked returns the invocation's hookState, allocating it on first use. Only the
// goroutine running the invocation's steps calls it, one step at a time.
func (inv *Invocation) hooked() *hookState {
	if inv.hk == nil {
		inv.hk = new(hookState)
	}
	return inv.hk
}

// newInvocation allocates an invocation for a call on r: with its hookState when r has
// hooks that run around every call (pre-execute, deadline, around-execute, post-execute or
// result listeners) or an observer, so that such a call still allocates once; without
// otherwise.
func (r *Registry) newInvocation() *Invocation {
	hs := r.hooks.Load()
	if len(hs.pre) > 0 || len(hs.deadline) > 0 || len(hs.exec) > 0 || len(hs.post) > 0 || len(hs.result) > 0 || r.observer.Load() != nil {
		both := new(invocationWithHooks)
		both.inv.hk = &both.hk
		return &both.inv
	}
	return new(Invocation)
}

// Execution returns the invocation's immutable execution.
func (inv *Invocation) Execution() *Execution { return inv.exec }

// NeedsDispatch reports whether Dispatch must run before Finalize.
func (inv *Invocation) NeedsDispatch() bool { return inv.stage == stageDispatch }

// Execute runs one call through the whole pipeline and returns its final result. ctx is the
// caller's cancellation: a call cancelled before its body runs ends ABORTED_BEFORE_DISPATCH,
// a successful call cancelled after its body ran ends ABORTED. Execute always waits for a
// started body to return; it never abandons it.
//
// All of a call's steps that run code the registry does not own (hooks, approver, guards,
// wrappers, the body, finalize-content, result listeners) run on one goroutine of the
// call's own, so that a runtime.Goexit ends only that goroutine: the step it ended becomes
// its TOOL_PANIC failure and the remaining steps go on on a new goroutine. A body under
// around-execute wrappers runs on a goroutine of its own again, so that the wrappers
// always see its result.
func (r *Registry) Execute(ctx context.Context, in Input) *Result {
	inv := r.prepareInput(ctx, in, false)
	inv.advance(atDone)
	return inv.done()
}

// Prepare creates the execution and runs the pre-dispatch stages: argument snapshot, Code
// Mode collapse, pre-execute hooks, approval and guards (docs/behaviour.md §4.4, §4.5).
func (r *Registry) Prepare(ctx context.Context, in Input) *Invocation {
	inv := r.prepareInput(ctx, in, false)
	inv.advance(atDispatch)
	return inv
}

// PrepareAdmitted is Prepare for a call whose pre-dispatch decision was already made
// elsewhere, such as a durable workflow that ran this registry's pre-execute hooks,
// approval and guards before handing the call to a worker: it snapshots and checks the
// arguments and resolves the definition like Prepare, but runs no pre-execute hook,
// approver or guard, so the decision is not taken twice. Dispatch and Finalize follow as
// after Prepare.
func (r *Registry) PrepareAdmitted(ctx context.Context, in Input) *Invocation {
	inv := r.prepareInput(ctx, in, true)
	inv.advance(atDispatch)
	return inv
}

// prepareInput creates the invocation and checks its arguments; what it leaves to do
// (pre-execute hooks, approval and guards unless admitted, the dispatch and the
// finalization) is advance's.
func (r *Registry) prepareInput(ctx context.Context, in Input, admitted bool) *Invocation {
	root := in.RootCallID
	if root == "" {
		root = in.CallID
	}
	agent := in.Agent
	if agent != nil && agent.global {
		agent = nil
	}
	inv := r.newInvocation()
	inv.r, inv.ctx = r, ctx
	// Field by field: a composite literal would be built aside and copied in whole.
	exec := &inv.execVal
	exec.callID, exec.rootCallID, exec.name = in.CallID, root, in.Name
	exec.agent, exec.parent, exec.token = agent, in.Parent, &inv.tokVal
	inv.exec = exec
	inv.startTrace(&in)

	r.mu.RLock()
	visible := r.lookupLocked(in.Name, agent)
	collapsed := visible != nil && in.Parent == nil && in.Name != RunCodeName && r.modeForLocked(agent) == ModeCode
	r.mu.RUnlock()
	if visible != nil && !(collapsed && ctx.Err() == nil) {
		inv.finalizer = visible.def.FinalizeContent
	}

	// Arguments kept as raw text (see Registry.ParseArguments) are measured before any
	// copy is made of them.
	if raw, ok := in.Args.(string); ok && len(raw) > r.maxArgs {
		return inv.final(Fail(argsTooLarge(len(raw), r.maxArgs)))
	}
	args := in.Args
	if !in.OwnArgs || !parsedValue(args, 0) {
		var err error
		if args, err = jsonv.Snapshot(in.Args); err != nil {
			return inv.final(Denied("tool execution arguments must be losslessly JSON-serializable"))
		}
	}
	exec.args, exec.argsOK = args, true
	if err := r.checkArgs(args); err != nil {
		return inv.final(Fail(err))
	}

	if collapsed {
		if ctx.Err() != nil {
			return inv.final(abortResult(false))
		}
		return inv.final(Fail(&Error{Name: "ToolNotFoundError", Code: CodeUnknownTool, Message: fmt.Sprintf(
			"unknown tool \"%s\": only `run_code` is callable directly — call `%s` from inside a `run_code` program instead", in.Name, in.Name)}))
	}
	if ctx.Err() != nil {
		return inv.final(abortResult(false))
	}
	inv.stage = stageDispatch
	if admitted {
		inv.at = atDispatch
	}
	return inv
}

// final ends the invocation's preparation with res, which owes no post-execute.
func (inv *Invocation) final(res *Result) *Invocation {
	inv.stage, inv.result, inv.at = stageFinal, res, atPost
	return inv
}

// prepared applies what prepareHooks returned.
func (inv *Invocation) prepared(res *Result, post bool, err error) {
	switch {
	case err != nil:
		inv.stage, inv.result = stageFinal, Fail(err)
	case res != nil && post:
		inv.stage, inv.result = stagePost, res
	case res != nil:
		inv.stage, inv.result = stageFinal, res
	default:
		inv.stage = stageDispatch
	}
}

// prepareRun holds what the pre-dispatch step runs: the admitted pre-execute hooks and the
// guards.
type prepareRun struct {
	guards []CodedGuardFunc

	// The chain runPre runs: the step's pre-execute hooks, loaded with the guards.
	ctx   context.Context
	exec  *Execution
	chain []*hook[PreExecuteFunc]
}

// prepareHooks runs the pre-execute hooks, approval and guards; inv.where names the kind of code running, for a Goexit.
func (inv *Invocation) prepareHooks(pre []*hook[PreExecuteFunc], guards []CodedGuardFunc) (res *Result, post bool, err error) {
	where := &inv.where
	defer func() {
		if p := recover(); p != nil {
			res, post, err = nil, false, panicFailure(inv.exec.name, where.String(), p)
		}
	}()
	ctx, exec, r := inv.ctx, inv.exec, inv.r
	*where = wherePreHook
	d := Allow()
	if len(pre) > 0 {
		d, err = inv.hooked().prep.runPre(ctx, exec, pre)
	}
	if err != nil {
		return nil, false, err
	}
	if len(pre) > 0 {
		inv.decided(StagePreExecute, preDecisionName(d.Kind), d.Reason)
	}
	switch d.Kind {
	case PreAllow:
	case PreDeny:
		return deniedWith(d.Reason, d.Info), true, nil
	case PreAsk:
		*where = whereApprover
		reason, approvalCancelled, err := r.resolveAsk(ctx, exec, d)
		if err != nil {
			return nil, false, err
		}
		inv.decided(StageApproval, approvalName(reason, approvalCancelled), reason)
		if ctx.Err() != nil && approvalCancelled {
			return abortResult(false), true, nil
		}
		if reason != "" {
			return Denied(reason), true, nil
		}
	default:
		return nil, false, fmt.Errorf("tools/pre-execute returned unknown decision kind %d", d.Kind)
	}
	*where = whereGuard
	for _, g := range guards {
		if reason, info := g(exec); reason != "" {
			inv.decided(StageGuard, "deny", reason)
			return deniedWith(reason, info), true, nil
		}
	}
	if ctx.Err() != nil {
		return abortResult(false), true, nil
	}
	return nil, false, nil
}

// runPre runs the pre-execute hooks hs as a chain, each deciding around the ones after it.
// The chain's state is p's, so that a call allocates only each PreExecuteFunc's next (a
// PreCheckFunc needs none).
func (p *prepareRun) runPre(ctx context.Context, exec *Execution, hs []*hook[PreExecuteFunc]) (PreDecision, error) {
	if len(hs) == 0 {
		return Allow(), nil
	}
	p.ctx, p.exec, p.chain = ctx, exec, hs
	return p.step(0)
}

// step runs pre-execute hooks i onwards of the chain, or allows at its end. A run of
// hooks registered with OnPreCheck needs no frame of its own around the hooks after it:
// the run's checks go in order, each with its own recovery, and the first of them to
// decide anything but a denial keeps its verdict unless a later hook denies or fails,
// which is what the nested calls of the classic form would decide.
func (p *prepareRun) step(i int) (PreDecision, error) {
	var first PreDecision
	decidedAny := false
	j := i
	for ; j < len(p.chain) && p.chain[j].check != nil; j++ {
		d, decided, err := p.check(j)
		switch {
		case err != nil:
			return d, err
		case !decided:
			continue
		case d.Kind == PreDeny:
			return d, nil
		case !decidedAny:
			first, decidedAny = d, true
		}
	}
	later := Allow()
	if j < len(p.chain) {
		var err error
		if later, err = p.classic(j); err != nil {
			return later, err
		}
	}
	if decidedAny && later.Kind != PreDeny {
		return first, nil
	}
	return later, nil
}

// check runs hook k of the chain, one registered with OnPreCheck.
func (p *prepareRun) check(k int) (d PreDecision, decided bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			d, decided, err = PreDecision{}, false, panicFailure(p.exec.name, "a pre-execute hook", v)
		}
	}()
	return p.chain[k].check(p.ctx, p.exec)
}

// classic runs hook k of the chain, a PreExecuteFunc that calls next for the verdict of
// the hooks after it.
func (p *prepareRun) classic(k int) (d PreDecision, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicFailure(p.exec.name, "a pre-execute hook", v)
		}
	}()
	return p.chain[k].fn(p.ctx, p.exec, func() (PreDecision, error) { return p.step(k + 1) })
}

// panicError turns a recovered panic value into an error, keeping a coded error's code: for
// the renderers, whose failures are INVALID_TOOL_OUTPUT, and the result listeners, whose
// failures are only logged.
func panicError(p any) error {
	if err, ok := p.(error); ok {
		return err
	}
	return errors.New(ErrorMessage(p))
}

// stopFailure is the TOOL_PANIC error of contained code that stopped in where.
func stopFailure(name, where string, stop *contain.Stop) *Error {
	if stop.Goexit {
		return goexitFailure(name, where)
	}
	return panicFailure(name, where, stop.Value)
}

// Dispatch runs the around-execute wrappers and the body (docs/behaviour.md §4.6). It blocks until the
// body returns. Call it only when NeedsDispatch reports true; it may run on any goroutine.
func (inv *Invocation) Dispatch() {
	if inv.stage != stageDispatch {
		panic("tool: Dispatch called on an invocation that does not need dispatch")
	}
	inv.advance(atPost)
}

// dispatchStep is the dispatch: the wrappers and the body, run on the call's goroutine.
func (inv *Invocation) dispatchStep() {
	res, err := func() (res *Result, err error) {
		defer func() {
			if p := recover(); p != nil {
				res, err = nil, panicFailure(inv.exec.name, "the dispatch", p)
			}
		}()
		return inv.dispatch()
	}()
	if err != nil {
		inv.stage, inv.result = stageFinal, Fail(err)
		return
	}
	inv.stage, inv.result = stagePost, res
}

// dispatchPhase says what a dispatch is running, so that a runtime.Goexit that ends the
// call's goroutine is told apart: in a deadline hook or an after-execute hook it fails the
// call; in a body run without wrappers the dispatch goes on with the body's TOOL_PANIC.
type dispatchPhase uint8

const (
	phaseNone     dispatchPhase = iota
	phaseDeadline               // the deadline hooks
	phaseBody                   // a body without wrappers, on the call's goroutine
	phaseResume                 // that body ended its goroutine: go on with inv.resume
	phaseAfter                  // the after-execute hooks
)

func (inv *Invocation) dispatch() (*Result, error) {
	if inv.phase == phaseResume {
		return inv.afterBody(inv.result)
	}
	r, exec := inv.r, inv.exec
	inv.callVal.Execution = exec
	inv.call = &inv.callVal
	hooks := r.hooks.Load()
	if len(hooks.deadline) > 0 {
		inv.phase = phaseDeadline
		err := inv.loadDeadlines(admitted(hooks.deadline, exec.agent))
		inv.phase = phaseNone
		if err != nil {
			return nil, err
		}
	}
	hs := admitted(hooks.exec, exec.agent)
	if len(hs) == 0 {
		// No wrapper can see or replace the result: the body's result is authoritative.
		// This is the only run of the body, so its state lives in the invocation, and it
		// runs on the call's goroutine: a Goexit in it ends that goroutine and the
		// dispatch goes on from afterBody on a new one (see stopped).
		b := &inv.bodyVal
		*b = bodyRun{inv: inv, ctx: inv.ctx, where: "the body"}
		inv.phase = phaseBody
		b.run()
		return inv.afterBody(b.res)
	}
	inv.wrapping = true
	res, err := inv.wrapped(hs)
	inv.wrapping = false
	if err != nil {
		return nil, err
	}
	return inv.afterBody(res)
}

// afterBody runs the after-execute hooks on the result of the body or the wrappers, and
// completes it.
func (inv *Invocation) afterBody(res *Result) (*Result, error) {
	if after := admitted(inv.r.hooks.Load().after, inv.exec.agent); len(after) > 0 {
		inv.phase = phaseAfter
		var err error
		res, err = inv.afterExecute(res, after)
		if err != nil {
			inv.phase = phaseNone
			return nil, err
		}
	}
	inv.phase = phaseNone
	return inv.dispatched(res), nil
}

// bodyStopped is the result of a body run without wrappers that ended the call's goroutine
// (stop): its TOOL_PANIC failure, or the expiry of a deadline that elapsed first. The
// dispatch goes on from there, with that result kept in inv.result until then.
func (inv *Invocation) bodyStopped(stop *contain.Stop) {
	b := &inv.bodyVal
	inv.result = b.timed(Fail(stopFailure(inv.exec.name, b.where, stop)))
	inv.phase = phaseResume
}

// dispatched completes the dispatch's result res: the contexts the body deferred, and
// the cancellation that replaces a success.
func (inv *Invocation) dispatched(res *Result) *Result {
	deferred, _ := inv.call.state()
	if len(deferred) > 0 {
		res.AdditionalContexts = append(content.CloneMessages(deferred), res.AdditionalContexts...)
	}
	if inv.ctx.Err() != nil && !res.IsError {
		res = inv.cancelled(res)
	}
	return res
}

// wrapState is the state of the around-execute wrapper chain of one dispatch: the
// invocation and its wrappers, whether they all only read (shared: the body's result is
// handed to them without a copy), the bodies it started (wg), whether it has returned
// (closed: a later next is refused) and the results handed to the wrappers, with the
// storage for the first of them.
type wrapState struct {
	inv       *Invocation
	hs        []*hook[ExecuteFunc]
	mu        sync.Mutex
	wg        sync.WaitGroup
	shared    bool
	closed    bool
	bodyTaken bool // the invocation's body storage is in use
	handoffs  []handoff
	first     [1]handoff
}

// handoff pairs the copy of a core dispatch result handed to a wrapper with the
// authoritative original.
type handoff struct{ handed, produced *Result }

// wrapped runs the around-execute wrappers with the body innermost (docs/behaviour.md §4.6
// steps 1–3). Each wrapper receives a private copy of the core result (the result itself
// when every wrapper is ReadOnly); returning that copy keeps the authoritative result (what
// the wrapper did to its copy does not matter), and any other result is normalized again.
// wrapped returns only after every body a wrapper started has returned, and a wrapper that
// calls next after the chain returned gets an error instead of a body run: the registry
// never abandons a started body.
func (inv *Invocation) wrapped(hs []*hook[ExecuteFunc]) (*Result, error) {
	w := &inv.hooked().wrap
	w.inv, w.hs = inv, hs
	w.handoffs = w.first[:0]
	w.shared = true
	for _, h := range hs {
		if !h.readOnly {
			w.shared = false
			break
		}
	}
	res, err := w.run()
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, fmt.Errorf("tool \"%s\": tools/execute wrapper returned no result", inv.exec.name)
	}
	for _, h := range w.handoffs {
		if h.handed == res {
			return h.produced, nil
		}
	}
	return inv.renormalize(res)
}

// run runs the wrapper chain from the outermost wrapper, and then waits for every body it
// started.
func (w *wrapState) run() (*Result, error) {
	// Deferred, so that it also runs when a wrapper ends its goroutine with
	// runtime.Goexit: no started body is abandoned.
	defer func() {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		w.wg.Wait()
	}()
	return w.step(0, w.inv.ctx)
}

// step runs wrapper i of the chain under ctx, or the body after the last one.
func (w *wrapState) step(i int, ctx context.Context) (res *Result, err error) {
	if i == len(w.hs) {
		return w.inner(ctx)
	}
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, panicFailure(w.inv.exec.name, "an around-execute wrapper", p)
		}
	}()
	return w.hs[i].fn(ctx, w.inv.exec, func(next context.Context) (*Result, error) {
		if next == nil {
			next = ctx
		}
		return w.step(i+1, next)
	})
}

// inner is the innermost next of the chain: one run of the body, whose result is handed
// to the wrappers (a copy of it, unless every wrapper only reads).
func (w *wrapState) inner(ctx context.Context) (*Result, error) {
	inv := w.inv
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, fmt.Errorf("tool \"%s\": tools/execute wrapper called next after the wrapper chain returned", inv.exec.name)
	}
	w.wg.Add(1)
	b := &inv.bodyVal // the first run's state lives in the invocation
	if w.bodyTaken {
		b = new(bodyRun)
	}
	w.bodyTaken = true
	w.mu.Unlock()
	defer w.wg.Done()
	produced := inv.body(ctx, b)
	handed := produced
	if !w.shared {
		handed = produced.Clone()
	}
	w.mu.Lock()
	w.handoffs = append(w.handoffs, handoff{handed: handed, produced: produced})
	w.mu.Unlock()
	return handed, nil
}

// cancelled returns the cancellation result that replaces a success, keeping its contexts.
func (inv *Invocation) cancelled(res *Result) *Result {
	a := abortResult(inv.invoked.Load())
	a.AdditionalContexts = res.AdditionalContexts
	return a
}

// body is the innermost dispatch under around-execute wrappers: fuse contexts, resolve the
// definition, run the body and normalize its value or error. It never panics, and it runs
// the body and its output projections on a goroutine of their own (package contain), so
// that a body calling runtime.Goexit ends in a TOOL_PANIC result the wrappers see instead of
// ending the wrappers' goroutine.
// b is the state of this run, which the caller provides (a body may run several times
// concurrently when a wrapper calls next more than once).
func (inv *Invocation) body(ctx context.Context, b *bodyRun) *Result {
	*b = bodyRun{inv: inv, ctx: ctx, where: "the body"}
	if stop := inv.r.bodies.Call(b); stop != nil {
		return b.timed(Fail(stopFailure(inv.exec.name, b.where, stop)))
	}
	return b.res
}

// bodyRun is one contained run of a body: its inputs, what it is running (for a Goexit)
// and its result.
type bodyRun struct {
	inv   *Invocation
	ctx   context.Context
	where string
	res   *Result

	// The call's deadlines armed around this run (see arm); nil when it has none.
	dl *armedRun
}

func (b *bodyRun) run() { b.res = b.timed(b.inv.bodyContained(b.ctx, b)) }

// bodyContained is body's work; b.where names the code running, for a Goexit.
func (inv *Invocation) bodyContained(ctx context.Context, b *bodyRun) (res *Result) {
	where := &b.where
	defer func() {
		if p := recover(); p != nil {
			res = Fail(panicFailure(inv.exec.name, *where, p))
		}
	}()
	caller := inv.ctx
	if ctx != caller {
		// A wrapper replaced the context: the body sees one cancelled by either. Both are
		// checked here because context.AfterFunc propagates asynchronously.
		if ctx.Err() != nil || caller.Err() != nil {
			return abortResult(false)
		}
		fused, cancel := context.WithCancelCause(ctx)
		stop := context.AfterFunc(caller, func() { cancel(context.Cause(caller)) })
		defer func() {
			stop()
			cancel(nil)
		}()
		ctx = fused
	}
	if ctx.Err() != nil {
		return abortResult(false)
	}
	if inv.hk != nil && len(inv.hk.deadlines) > 0 {
		// Deferred, so that the timers stop and an expiry is recorded even when the body
		// panics or ends its goroutine.
		*where = "a deadline's clock"
		defer b.disarm()
		ctx = b.arm(ctx, inv.hk.deadlines)
		*where = "the body"
	}
	e := inv.r.resolve(inv.exec)
	if e == nil {
		return Fail(unknownTool(inv.exec.name))
	}
	inv.invoked.Store(true)
	value, owned, flat, err := runBody(ctx, e.def, inv.call)
	if err != nil {
		return Fail(err)
	}
	*where = "the output projection"
	res, err = inv.success(e, value, owned, flat)
	if err != nil {
		return Fail(err)
	}
	if ctx.Err() != nil {
		return abortResult(true)
	}
	return res
}

// runBody runs the definition's body; owned reports a value the body built itself (a
// typed tool's), which the pipeline adopts without a snapshot, and flat one the flat output
// conversion built (see ownedValue).
func runBody(ctx context.Context, def *Definition, call *Call) (v any, owned, flat bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, owned, flat, err = nil, false, false, panicFailure(def.Name, "the body", p)
		}
	}()
	if def.Execute == nil {
		return nil, false, false, fmt.Errorf("tool %q has no body", def.Name)
	}
	if v, err = def.Execute(ctx, call); err != nil {
		return nil, false, false, err
	}
	if ov, ok := v.(*ownedValue); ok && ov != nil {
		return ov.v, true, ov.flat, nil
	}
	return v, false, false, nil
}

func unknownTool(name string) error {
	return &Error{Name: "ToolNotFoundError", Code: CodeUnknownTool, Message: fmt.Sprintf("unknown tool \"%s\"", name)}
}

// resolve returns the definition that may execute for exec (view + collapse), or nil.
func (r *Registry) resolve(exec *Execution) *entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e := r.lookupLocked(exec.name, exec.agent)
	if e != nil && exec.parent == nil && exec.name != RunCodeName && r.modeForLocked(exec.agent) == ModeCode {
		return nil
	}
	return e
}

// outputError is the INVALID_TOOL_OUTPUT error for tool name.
func outputError(name string, violations ...string) error {
	return &Error{Name: "ToolOutputError", Code: CodeInvalidToolOutput,
		Message: fmt.Sprintf("tool \"%s\" returned invalid output: %s", name, strings.Join(violations, "; "))}
}

// success builds the success result of value for entry e (docs/behaviour.md §2.4): snapshot, validate,
// render and, for top-level calls, project the presentation meta. owned reports a value
// the pipeline's own body call built, adopted as it is; flat an owned value the flat output
// conversion built, which needs no validation when e's output schema is one every such
// value satisfies (entry.flatOut).
func (inv *Invocation) success(e *entry, value any, owned, flat bool) (*Result, error) {
	def := e.def
	var v any
	if owned {
		v = value
	} else if ov, ok := value.(*ownedValue); ok && ov != nil {
		v = ov.v
	} else {
		var err error
		if v, err = jsonv.Snapshot(value); err != nil {
			return nil, outputError(def.Name, "value is not lossless JSON")
		}
	}
	if !(owned && flat && e.flatOut) {
		if vs := e.out.Validate(v, schema.RootValue); len(vs) > 0 {
			return nil, outputError(def.Name, vs...)
		}
	}
	// The projections get their own copies: what they do to them cannot reach the value,
	// the arguments or another projection.
	args := inv.exec.args
	copyOf := jsonv.Clone
	if def.trusted {
		copyOf = func(x any) any { return x }
	}
	var res *Result
	if e.defaultRender {
		// DefaultRender itself, run directly: it reads the value and changes nothing, so it
		// needs no copy of it, and its one block is allocated with the result.
		text, err := defaultText(v)
		if err != nil {
			return nil, outputError(def.Name, "output.render failed: "+ErrorMessage(err))
		}
		// Filled in place rather than from composite literals, which would be built aside
		// and copied in. The block holds only its type and the text, so checkBlocks comes
		// down to the text's UTF-8.
		rb := new(renderedResult)
		b := &rb.block[0]
		b.Type, b.Text = content.TypeText, text
		if !utf8.ValidString(text) {
			return nil, outputError(def.Name, "output.render returned non-lossless JSON")
		}
		rb.res.Value, rb.res.Content = v, rb.block[:]
		res = &rb.res
	} else {
		blocks, err := callRender(def.Output.Render, copyOf(args), copyOf(v))
		if err != nil {
			return nil, outputError(def.Name, "output.render failed: "+ErrorMessage(err))
		}
		if checkBlocks(blocks) != nil {
			return nil, outputError(def.Name, "output.render returned non-lossless JSON")
		}
		if !def.trusted {
			blocks = content.Clone(blocks)
		}
		res = &Result{Value: v, Content: blocks}
	}
	if inv.exec.parent == nil && def.Output.PresentationMeta != nil {
		meta, err := callRender(def.Output.PresentationMeta, copyOf(args), copyOf(v))
		if err != nil {
			return nil, outputError(def.Name, "output.presentationMeta failed: "+ErrorMessage(err))
		}
		if meta != nil {
			if meta, err = jsonv.Snapshot(meta); err != nil {
				return nil, outputError(def.Name, "output.presentationMeta returned non-lossless JSON")
			}
		}
		res.Meta = meta
	}
	if inv.call != nil {
		if _, concluded := inv.call.state(); concluded {
			res.ConcludesTurn = true
		}
	}
	return res, nil
}

// renderedResult is a success result and its one content block, allocated together.
type renderedResult struct {
	res   Result
	block [1]content.Block
}

func callRender[T any](fn func(args, value any) (T, error), args, value any) (out T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	return fn(args, value)
}

// renormalize rebuilds a result that this dispatch did not produce (docs/behaviour.md §4.6 step 3): a
// failure from its error, content, meta and contexts; a success by validating and
// rendering its value again with the definition that may execute now, keeping only its
// contexts. A success that cannot be rebuilt (the tool is gone, the value violates the
// output contract) is an error, which fails the call without post-execute as in the
// reference.
func (inv *Invocation) renormalize(res *Result) (*Result, error) {
	if res.IsError {
		out := &Result{IsError: true, Content: content.Clone(res.Content), AdditionalContexts: content.CloneMessages(res.AdditionalContexts)}
		if res.Error != nil { // a failure without an error fails materialization later
			f := *res.Error
			if f.Info != nil {
				info := *f.Info
				f.Info = &info
			}
			out.Error = &f
		}
		if res.Meta != nil {
			out.Meta = detach(res.Meta)
		}
		return out, nil
	}
	e := inv.r.resolve(inv.exec)
	if e == nil {
		return nil, unknownTool(inv.exec.name)
	}
	out, err := inv.success(e, res.Value, false, false)
	if err != nil {
		return nil, err
	}
	out.AdditionalContexts = content.CloneMessages(res.AdditionalContexts)
	return out, nil
}

// detach returns a snapshot of v, or v itself when it is not lossless JSON (materialization
// then rejects the result that holds it).
func detach(v any) any {
	if s, err := jsonv.Snapshot(v); err == nil {
		return s
	}
	return v
}

// Finalize runs post-execute when it is owed, the cancellation check, finalize-content and
// the result listeners (docs/behaviour.md §4.7, §4.8), and returns the final result. Call it exactly once.
func (inv *Invocation) Finalize() *Result {
	switch inv.stage {
	case stageDispatch:
		panic("tool: Finalize called before Dispatch")
	case stageDone:
		panic("tool: Finalize called twice")
	}
	inv.advance(atDone)
	return inv.done()
}

// done ends the invocation and returns its final result.
func (inv *Invocation) done() *Result {
	inv.stage = stageDone
	inv.endTrace(inv.out)
	return inv.out
}

// postRun holds the post-execute hooks the post-execute step runs.
type postRun struct {
	// The chain step runs, the step's post-execute hooks (loaded before the step): each
	// hook gets its own copy of res.
	ctx   context.Context
	exec  *Execution
	res   *Result
	chain []*hook[PostExecuteFunc]
}

// step runs post-execute hooks i onwards of the chain, or accepts at its end. A run of
// hooks registered with OnPostDecision needs no frame of its own around the hooks after
// it: the hooks after the run decide first, then the run's hooks are handed the decision
// in a loop, the last first, each with its own recovery, which is what the nested calls
// of the next-first form would do without a recursion that copies the decision at every
// level.
func (c *postRun) step(i int) (d PostDecision, err error) {
	j := i
	for j < len(c.chain) && c.chain[j].decide != nil {
		j++
	}
	if j < len(c.chain) {
		d, err = c.next(j)
	}
	for k := j - 1; k >= i; k-- {
		d, err = c.decide(k, d, err)
	}
	return d, err
}

// decide runs hook k of the chain, one registered with OnPostDecision, on the decision d
// (or the failure err) of the hooks after it.
func (c *postRun) decide(k int, d PostDecision, err error) (out PostDecision, outErr error) {
	defer func() {
		if p := recover(); p != nil {
			out, outErr = PostDecision{}, panicFailure(c.exec.name, "a post-execute hook", p)
		}
	}()
	h := c.chain[k]
	res := c.res
	if !h.readOnly {
		res = res.Clone()
	}
	return h.decide(c.ctx, c.exec, res, d, err)
}

// next runs hook k of the chain, one that calls next for the decision of the hooks after it.
func (c *postRun) next(k int) (d PostDecision, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicFailure(c.exec.name, "a post-execute hook", p)
		}
	}()
	h := c.chain[k]
	res := c.res
	if !h.readOnly {
		res = res.Clone()
	}
	return h.fn(c.ctx, c.exec, res, func() (PostDecision, error) { return c.step(k + 1) })
}

// postHooks is post's work.
func (inv *Invocation) postHooks(res *Result, hs []*hook[PostExecuteFunc]) (out *Result) {
	defer func() {
		if p := recover(); p != nil {
			out = Fail(panicFailure(inv.exec.name, "a post-execute hook", p))
		}
	}()
	ctx, exec := inv.ctx, inv.exec
	var d PostDecision
	if len(hs) > 0 {
		c := &inv.hooked().post
		c.ctx, c.exec, c.res, c.chain = ctx, exec, res, hs
		var err error
		if d, err = c.step(0); err != nil {
			return Fail(err)
		}
		inv.decided(StagePostExecute, postDecisionName(d), "")
	}
	out, err := inv.apply(res, d)
	if err != nil {
		return Fail(err)
	}
	if ctx.Err() != nil && !out.IsError {
		out = inv.cancelled(out)
	}
	return out
}

func (inv *Invocation) apply(res *Result, d PostDecision) (*Result, error) {
	extra := content.CloneMessages(d.AdditionalContexts)
	switch {
	case d.Block:
		msg := blockMessage(d.Feedback)
		return &Result{IsError: true, Error: &Failure{Message: msg}, Content: content.Clone(d.Feedback), AdditionalContexts: extra}, nil
	case d.ReplaceContent && d.ReplaceValue:
		return nil, errors.New("tools/post-execute accept decision cannot replace both value and content")
	case d.ReplaceValue && res.IsError:
		return nil, errors.New("tools/post-execute cannot replace the value of a failed result")
	case d.ReplaceValue:
		e := inv.r.resolve(inv.exec)
		if e == nil {
			return nil, unknownTool(inv.exec.name)
		}
		out, err := inv.success(e, d.Value, false, false)
		if err != nil {
			return nil, err
		}
		out.AdditionalContexts = slices.Concat(res.AdditionalContexts, extra)
		return out, nil
	case d.ReplaceContent:
		out := *res
		out.Content = content.Clone(d.Content)
		out.AdditionalContexts = slices.Concat(res.AdditionalContexts, extra)
		return &out, nil
	default:
		if len(extra) == 0 {
			return res, nil
		}
		out := *res
		out.AdditionalContexts = slices.Concat(res.AdditionalContexts, extra)
		return &out, nil
	}
}

// blockMessage derives a block's error message from its feedback (docs/behaviour.md §4.7).
func blockMessage(feedback []content.Block) string {
	parts := make([]string, 0, len(feedback))
	for _, b := range feedback {
		if b.Type == content.TypeText {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, "["+b.Type+" content]")
		}
	}
	msg := strings.Join(parts, "\n")
	if msg == "" {
		return "tool result blocked by post-execute policy"
	}
	return msg
}

// materialize enforces the result invariants (docs/behaviour.md §4.8 step 1): the durable projection
// (content, meta, contexts, error) must be lossless JSON, a failure must say why it failed,
// a failure never carries a value or concludesTurn and a success never carries an error.
// It copies nothing and normalizes res in place: every stage that takes data from a body,
// hook or wrapper copies it on the way in, and every observer gets its own copy on the way
// out, so res is the pipeline's own and the result it returns is aliased by no one outside
// the pipeline. On an error res is left as it was.
func materialize(res *Result) (*Result, error) {
	if res.IsError && res.Error == nil {
		return nil, errors.New("a failed result has no error")
	}
	if err := checkDurable(res); err != nil {
		return nil, err
	}
	out := res
	if res.Meta != nil && jsonv.Check(res.Meta) != nil {
		m, err := jsonv.Snapshot(res.Meta)
		if err != nil {
			return nil, err
		}
		out.Meta = m
	}
	if out.IsError {
		out.Value = nil
		out.ConcludesTurn = false
	} else {
		out.Error = nil
	}
	if len(out.AdditionalContexts) == 0 {
		out.AdditionalContexts = nil
	}
	if out.Content == nil {
		out.Content = []content.Block{}
	}
	return out, nil
}

var errNotSerializable = errors.New("tool result must be losslessly JSON-serializable")

// finalizeStep materializes the result and applies finalize-content once (docs/behaviour.md §4.8).
func (inv *Invocation) finalizeStep() {
	inv.out = materializeOr(inv.result, errNotSerializable)
	if fin := inv.finalizer; fin != nil {
		f := &inv.hooked().fin
		*f = finalizeRun{res: inv.out.Clone()}
		f.blocks, f.err = callFinalizer(fin, inv.exec, f.res)
		inv.finalized()
	}
}

// finalized applies what finalize-content returned.
func (inv *Invocation) finalized() {
	f := &inv.hooked().fin
	switch {
	case f.err != nil:
		inv.out = materializeOr(Fail(f.err), errNotSerializable)
	case f.blocks != nil:
		next := *inv.out
		next.Content = content.Clone(f.blocks)
		inv.out = materializeOr(&next, errNotSerializable)
	}
	f.res, f.blocks = nil, nil
}

// finalizeRun is the run of finalize-content, with its input and results.
type finalizeRun struct {
	res    *Result
	blocks []content.Block
	err    error
}

// notifyRun is the run of the result listeners; i is the next to notify.
type notifyRun struct {
	ls []*hook[ResultFunc]
	i  int
}

// notifyStep notifies the result listeners from the next one on; a listener's failure is
// logged and changes nothing.
func (inv *Invocation) notifyStep() {
	if inv.hk == nil {
		return // no listener
	}
	n := &inv.hk.notify
	for ; n.i < len(n.ls); n.i++ {
		l, res := n.ls[n.i], inv.out
		if !l.readOnly {
			res = res.Clone()
		}
		if err := callResult(l.fn, inv.ctx, inv.exec, res); err != nil {
			inv.r.logger.Warn(fmt.Sprintf("tool \"%s\" (%s): tools/result observer failed: %s", inv.exec.name, inv.exec.callID, ErrorMessage(err)))
		}
	}
}

// materializeOr materializes res, or, when res cannot be materialized, the generic failure
// for fallback (whose message is valid UTF-8, so it always materializes).
func materializeOr(res *Result, fallback error) *Result {
	out, err := materialize(res)
	if err != nil {
		out, _ = materialize(Fail(fallback))
	}
	return out
}

func callFinalizer(fin func(*Execution, *Result) ([]content.Block, error), exec *Execution, res *Result) (blocks []content.Block, err error) {
	defer func() {
		if p := recover(); p != nil {
			blocks, err = nil, panicFailure(exec.Name(), "finalize-content", p)
		}
	}()
	return fin(exec, res)
}

func callResult(fn ResultFunc, ctx context.Context, exec *Execution, res *Result) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	return fn(ctx, exec, res)
}
