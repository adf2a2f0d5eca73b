package tool

import (
	"fmt"

	"github.com/dsh-go/dsh/internal/contain"
)

// at is a step of a call's work after its arguments are checked. The steps that run code
// the registry does not own run on a goroutine of the call's own (see advance), so that a
// runtime.Goexit in that code ends only that goroutine; at then says where the call stopped
// and where it goes on.
type at uint8

const (
	atPrepare  at = iota // pre-execute hooks, approval and guards
	atDispatch           // the around-execute wrappers and the body
	atPost               // post-execute, when owed
	atFinalize           // materialization and finalize-content
	atNotify             // the result listeners
	atDone
)

// advance runs the call's steps up to until. Steps that run only the registry's own code run
// on the caller's goroutine; from the first step that runs anyone else's code on, all run
// on one goroutine of the call's own (package contain), one hand-off for all of them. When
// a runtime.Goexit ends that goroutine, the step it ended in gets its TOOL_PANIC failure
// (stopped) and the remaining steps go on on a new goroutine. advance returns only after
// every step has returned: nothing it started is abandoned.
func (inv *Invocation) advance(until at) {
	inv.until = until
	inv.onCall = false
	inv.run()
	for inv.at < until {
		inv.onCall = true
		if stop := inv.r.stages.Call(inv); stop != nil {
			inv.stopped(stop)
		}
	}
	inv.onCall = false
}

// run runs steps until inv.until, or, on the caller's goroutine, until the first step that
// runs code the registry does not own.
func (inv *Invocation) run() {
	for inv.at < inv.until {
		if inv.load() && !inv.onCall {
			return
		}
		inv.step()
	}
}

// load loads the hooks, guards or listeners the next step runs, once per step, and reports
// whether the step runs code the registry does not own. They are loaded when the step is
// about to run, as each step would load them, and kept for the step even when it goes on
// on another goroutine.
func (inv *Invocation) load() bool {
	if inv.loadedFor == inv.at+1 {
		return inv.needs
	}
	inv.loadedFor = inv.at + 1
	switch inv.at {
	case atPrepare:
		pre := admitted(inv.r.hooks.Load().pre, inv.exec.agent)
		guards := inv.r.guards(inv.exec)
		inv.needs = len(pre) > 0 || len(guards) > 0
		if inv.needs || inv.hk != nil {
			p := &inv.hooked().prep
			p.chain, p.guards = pre, guards
		}
	case atDispatch:
		inv.needs = inv.stage == stageDispatch
	case atPost:
		var hs []*hook[PostExecuteFunc]
		if inv.stage == stagePost {
			hs = admitted(inv.r.hooks.Load().post, inv.exec.agent)
		}
		inv.needs = len(hs) > 0
		if inv.needs || inv.hk != nil {
			inv.hooked().post.chain = hs
		}
	case atFinalize:
		inv.needs = inv.finalizer != nil
	case atNotify:
		ls := admitted(inv.r.hooks.Load().result, inv.exec.agent)
		inv.needs = len(ls) > 0
		if inv.needs || inv.hk != nil {
			inv.hooked().notify = notifyRun{ls: ls}
		}
	}
	return inv.needs
}

// step runs the next step and moves on to the one after it.
func (inv *Invocation) step() {
	switch inv.at {
	case atPrepare:
		if inv.stage == stageDispatch {
			var pre []*hook[PreExecuteFunc]
			var guards []CodedGuardFunc
			if inv.hk != nil {
				pre, guards = inv.hk.prep.chain, inv.hk.prep.guards
			}
			inv.prepared(inv.prepareHooks(pre, guards))
		}
		inv.at = atDispatch
	case atDispatch:
		if inv.stage == stageDispatch {
			inv.dispatchStep()
		}
		inv.at = atPost
	case atPost:
		if inv.stage == stagePost {
			var hs []*hook[PostExecuteFunc]
			if inv.hk != nil {
				hs = inv.hk.post.chain
			}
			inv.result = inv.postHooks(inv.result, hs)
		}
		inv.at = atFinalize
	case atFinalize:
		inv.finalizeStep()
		inv.at = atNotify
	case atNotify:
		inv.notifyStep()
		inv.at = atDone
	}
}

// stopped records a step that ended its goroutine with runtime.Goexit (or a panic that
// escaped its own recovery): the step's TOOL_PANIC failure, or, for a result listener, a
// warning; the call then goes on with the next step, or the next listener.
func (inv *Invocation) stopped(stop *contain.Stop) {
	name := inv.exec.name
	switch inv.at {
	case atPrepare:
		inv.prepared(nil, false, stopFailure(name, inv.where.String(), stop))
		inv.at = atDispatch
	case atDispatch:
		switch {
		case inv.wrapping:
			inv.wrapping = false
			inv.stage, inv.result = stageFinal, Fail(stopFailure(name, "an around-execute wrapper", stop))
		case inv.phase == phaseDeadline:
			inv.stage, inv.result = stageFinal, Fail(stopFailure(name, "a deadline hook", stop))
		case inv.phase == phaseAfter:
			inv.stage, inv.result = stageFinal, Fail(stopFailure(name, "an after-execute hook", stop))
		default:
			// The body ended the call's goroutine: the dispatch goes on with its failure
			// (the after-execute hooks, then post-execute) on a new one.
			inv.bodyStopped(stop)
			return
		}
		inv.phase = phaseNone
		inv.at = atPost
	case atPost:
		inv.result = Fail(stopFailure(name, "a post-execute hook", stop))
		inv.at = atFinalize
	case atFinalize:
		f := &inv.hooked().fin
		f.blocks, f.err = nil, stopFailure(name, "finalize-content", stop)
		inv.finalized()
		inv.at = atNotify
	case atNotify:
		inv.r.logger.Warn(fmt.Sprintf("tool \"%s\" (%s): tools/result observer called runtime.Goexit", name, inv.exec.callID))
		inv.hooked().notify.i++
	}
}
