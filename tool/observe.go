package tool

import "context"

// CallObserver watches every call of a registry from the start of Prepare to the end of
// Finalize, for tracing. It sees each call's identity, the decisions the policies took on
// the way and the final result; it cannot change any of them. Install one with
// Registry.ObserveCalls. Its methods run on the call's path, so they must be quick and must
// not panic.
type CallObserver interface {
	// CallStarted is called first thing in Prepare. The context it returns becomes the
	// call's context for everything that follows (hooks, approval, guards, wrappers, the
	// body, result listeners), so a span it carries is the parent of whatever the call
	// starts — Code Mode sub-calls, MCP requests. It must be derived from ctx without
	// changing its cancellation (context.WithValue, or a tracer's ContextWithSpan).
	CallStarted(ctx context.Context, c ObservedCall) (context.Context, CallTrace)
}

// ObservedCall identifies a call as it starts.
type ObservedCall struct {
	CallID, RootCallID, Name string
	// Nested reports a Code Mode sub-call (its Input had a Parent).
	Nested bool
}

// CallTrace records one call. Its methods are called on the goroutines running the call's
// stages, never concurrently for one call.
type CallTrace interface {
	// Decision records a decision a stage took: stage is one of the Stage constants,
	// decision what was decided ("allow", "deny", "ask", "approved", "block", …) and reason
	// why, when the policy said.
	Decision(stage, decision, reason string)
	// Finished is called once, at the end of Finalize, with the execution and the final
	// result (a private copy).
	Finished(exec *Execution, res *Result)
}

// The stages a CallTrace.Decision names.
const (
	StagePreExecute  = "pre_execute"  // the pre-execute hooks: allow, deny or ask
	StageApproval    = "approval"     // the approver's answer to an ask: approved or denied
	StageGuard       = "guard"        // a guard's denial
	StagePostExecute = "post_execute" // the post-execute hooks: accept, replace_content, replace_value or block
)

// observerBox holds the installed observer, so that removing it compares identities.
type observerBox struct{ o CallObserver }

// ObserveCalls installs o as the registry's call observer, replacing any other, and returns
// its removal. Calls already started keep the observer they started with. With no observer
// installed a call pays one atomic load for this seam.
func (r *Registry) ObserveCalls(o CallObserver) (remove func()) {
	box := &observerBox{o: o}
	r.observer.Store(box)
	return func() { r.observer.CompareAndSwap(box, nil) }
}

// startTrace tells the installed observer, if any, that inv starts, and takes the context
// it returns as the call's.
func (inv *Invocation) startTrace(in *Input) {
	box := inv.r.observer.Load()
	if box == nil || box.o == nil {
		return
	}
	ctx, tr := box.o.CallStarted(inv.ctx, ObservedCall{CallID: in.CallID, RootCallID: inv.execVal.rootCallID, Name: in.Name, Nested: in.Parent != nil})
	if ctx != nil {
		inv.ctx = ctx
	}
	if tr != nil {
		inv.hooked().trace = tr
	}
}

// decided records a stage's decision on the call's trace, if it has one.
func (inv *Invocation) decided(stage, decision, reason string) {
	if inv.hk != nil && inv.hk.trace != nil {
		inv.hk.trace.Decision(stage, decision, reason)
	}
}

// endTrace ends the call's trace, if it has one, with the final result.
func (inv *Invocation) endTrace(out *Result) {
	if inv.hk != nil && inv.hk.trace != nil {
		inv.hk.trace.Finished(inv.exec, out.Clone())
	}
}

// preDecisionName names a pre-execute decision kind for a trace.
func preDecisionName(k PreDecisionKind) string {
	switch k {
	case PreAllow:
		return "allow"
	case PreDeny:
		return "deny"
	case PreAsk:
		return "ask"
	}
	return "unknown"
}

// postDecisionName names a post-execute decision for a trace.
func postDecisionName(d PostDecision) string {
	switch {
	case d.Block:
		return "block"
	case d.ReplaceValue:
		return "replace_value"
	case d.ReplaceContent:
		return "replace_content"
	}
	return "accept"
}

// approvalName names the approver's answer for a trace.
func approvalName(deny string, cancelled bool) string {
	switch {
	case cancelled:
		return "cancelled"
	case deny != "":
		return "denied"
	}
	return "approved"
}
