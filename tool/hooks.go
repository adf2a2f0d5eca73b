package tool

import (
	"context"
	"slices"

	"github.com/dsh-go/dsh/content"
)

// PreDecisionKind is the verdict of a pre-execute hook.
type PreDecisionKind int

// Pre-execute verdicts. The zero value allows.
const (
	PreAllow PreDecisionKind = iota
	PreDeny
	PreAsk
)

// PreDecision is a pre-execute verdict: allow, deny with a reason, or ask for approval with an
// optional reason. There is deliberately no argument rewrite. A denial may carry Info, a
// stable code for callers that tell refusals apart (DenyWith); without it a denial has no
// code.
type PreDecision struct {
	Kind   PreDecisionKind
	Reason string
	Info   *Info
}

// Allow lets the call proceed.
func Allow() PreDecision { return PreDecision{} }

// Deny refuses the call; the model reads "Error: <reason>".
func Deny(reason string) PreDecision { return PreDecision{Kind: PreDeny, Reason: reason} }

// DenyWith refuses the call as Deny does, and gives the failure the error info (name and
// code) of info, so that a policy's refusals have a stable code (the permission rules'
// PERMISSION_DENIED, say).
func DenyWith(reason string, info Info) PreDecision {
	return PreDecision{Kind: PreDeny, Reason: reason, Info: &info}
}

// Ask sends the call to the approval service; reason is shown to the person asked.
func Ask(reason string) PreDecision { return PreDecision{Kind: PreAsk, Reason: reason} }

// PostDecision is a post-execute verdict. The zero value accepts the result unchanged.
// Block turns the result into a failure whose content is Feedback. ReplaceContent swaps the
// content (keeping the value); ReplaceValue swaps the canonical value of a success, which is
// validated and rendered again. Setting both replacements is an error.
type PostDecision struct {
	Block              bool
	Feedback           []content.Block
	ReplaceContent     bool
	Content            []content.Block
	ReplaceValue       bool
	Value              any
	AdditionalContexts []content.Message
}

// Accept returns the accepting decision with additional contexts appended.
func Accept(contexts ...content.Message) PostDecision {
	return PostDecision{AdditionalContexts: contexts}
}

// BlockWith returns a blocking decision with the given feedback.
func BlockWith(feedback []content.Block, contexts ...content.Message) PostDecision {
	return PostDecision{Block: true, Feedback: feedback, AdditionalContexts: contexts}
}

// PreExecuteFunc is a pre-execute hook. It returns its own verdict or calls next for the
// verdict of the hooks after it (the innermost default is allow). An error fails the call.
type PreExecuteFunc func(ctx context.Context, exec *Execution, next func() (PreDecision, error)) (PreDecision, error)

// PreCheckFunc is a pre-execute hook that gives its verdict before the hooks after it, and
// needs no closure for next. With decided false it has no opinion and the later hooks
// decide, as a PreExecuteFunc that returns next() would. A decided deny refuses the call
// at once: the later hooks do not run. A decided allow or ask runs the later hooks and
// stands unless one of them denies or fails, whose deny or error is then the verdict (so a
// decided allow turns a later ask into an allow). An error fails the call at once.
type PreCheckFunc func(ctx context.Context, exec *Execution) (d PreDecision, decided bool, err error)

// ExecuteFunc is an around-execute wrapper. It may call next with a replacement context
// (the body then sees a context cancelled when either the caller's or the replacement is;
// nil keeps the current one), or short-circuit with its own result. Errors of the body
// arrive as failure results; an error returned by a wrapper fails the call without
// post-execute.
//
// The result next returns is the wrapper's own copy (unless every wrapper of the call is
// ReadOnly, when it is the registry's result itself): returning it unchanged (that very
// pointer) keeps the registry's result whatever the wrapper did to the copy, while any
// other result is validated and rendered again as the wrapper's. The registry waits for
// every body a wrapper started before the call moves on, and a next called after the
// wrapper chain returned fails without running the body.
//
// With any wrapper installed the body runs on a goroutine of its own. A wrapper that only
// sets a deadline is better a DeadlineFunc, and one that only looks at the result next
// returned an AfterExecuteFunc: neither needs a frame around the body.
type ExecuteFunc func(ctx context.Context, exec *Execution, next func(ctx context.Context) (*Result, error)) (*Result, error)

// PostExecuteFunc is a post-execute hook. res is a private copy (the call's own result for a
// hook registered ReadOnly). It returns its own verdict or calls next (the innermost default
// accepts).
type PostExecuteFunc func(ctx context.Context, exec *Execution, res *Result, next func() (PostDecision, error)) (PostDecision, error)

// PostDecisionFunc is a post-execute hook that decides after the hooks after it: it
// receives their decision d and error err (its own result when they failed: return them
// unchanged to pass the failure on) and returns its verdict. It is the PostExecuteFunc
// that calls next first, and saves the closure a call allocates for each PostExecuteFunc's
// next. res is as for a PostExecuteFunc.
type PostDecisionFunc func(ctx context.Context, exec *Execution, res *Result, d PostDecision, err error) (PostDecision, error)

// ResultFunc observes a final result. It receives private copies (the final result itself
// for a listener registered ReadOnly); its error or panic is logged and never changes the
// result.
type ResultFunc func(ctx context.Context, exec *Execution, res *Result) error

// HookOption configures a hook registration.
type HookOption func(*hookOpts)

type hookOpts struct{ prepend, readOnly bool }

// Prepend places the hook before the hooks already registered.
func Prepend() HookOption { return func(o *hookOpts) { o.prepend = true } }

// ReadOnly declares that the hook only reads the result it is given and keeps no reference
// to it, or to anything it holds, once it has returned: a post-execute hook or a result
// listener then receives the call's own result instead of a private deep copy, and a body's
// result is handed to the around-execute wrappers without a copy when every wrapper of the
// call is ReadOnly (such a wrapper may still return a result of its own, or the one next
// returned, unchanged). It saves a deep copy of the result per hook and call; a hook that
// changes or keeps what it was given must not declare it, since what it did would reach
// the caller. It does not apply to pre-execute hooks, which see no result.
func ReadOnly() HookOption { return func(o *hookOpts) { o.readOnly = true } }

type hook[F any] struct {
	scope    *Scope // nil or global: sees every call
	fn       F
	readOnly bool // registered ReadOnly: given the result itself, not a copy

	// decide is a post-execute hook registered with OnPostDecision (fn is then nil).
	decide PostDecisionFunc
	// check is a pre-execute hook registered with OnPreCheck (fn is then nil).
	check PreCheckFunc
}

type hookSet struct {
	pre      []*hook[PreExecuteFunc]
	deadline []*hook[DeadlineFunc]
	exec     []*hook[ExecuteFunc]
	after    []*hook[AfterExecuteFunc]
	post     []*hook[PostExecuteFunc]
	result   []*hook[ResultFunc]
}

// admitted filters hooks to those whose scope is the call's agent or an ancestor of it.
func admitted[F any](hs []*hook[F], agent *Scope) []*hook[F] {
	all := true
	for _, h := range hs {
		if !h.scope.within(agent) {
			all = false
			break
		}
	}
	if all {
		return hs
	}
	out := make([]*hook[F], 0, len(hs))
	for _, h := range hs {
		if h.scope.within(agent) {
			out = append(out, h)
		}
	}
	return out
}

// addHook registers h in the list selected by sel, copy-on-write.
func addHook[F any](s *Scope, sel func(*hookSet) *[]*hook[F], fn F, opts []HookOption) func() {
	return addBuilt(s, sel, &hook[F]{fn: fn}, opts)
}

// addBuilt registers h, completed with its scope and options, as addHook does.
func addBuilt[F any](s *Scope, sel func(*hookSet) *[]*hook[F], h *hook[F], opts []HookOption) func() {
	var o hookOpts
	for _, opt := range opts {
		opt(&o)
	}
	h.scope, h.readOnly = s, o.readOnly
	r := s.reg
	r.mu.Lock()
	next := *r.hooks.Load()
	list := sel(&next)
	if o.prepend {
		*list = append([]*hook[F]{h}, *list...)
	} else {
		*list = append(slices.Clone(*list), h)
	}
	r.hooks.Store(&next)
	r.mu.Unlock()
	undo, err := s.track(func() {
		r.mu.Lock()
		next := *r.hooks.Load()
		list := sel(&next)
		*list = slices.DeleteFunc(slices.Clone(*list), func(x *hook[F]) bool { return x == h })
		r.hooks.Store(&next)
		r.mu.Unlock()
	})
	if err != nil {
		return func() {}
	}
	return undo
}

// OnPreExecute adds a pre-execute hook that sees calls of this scope and its descendants
// (every call, for the global scope).
func (s *Scope) OnPreExecute(fn PreExecuteFunc, opts ...HookOption) (remove func()) {
	return addHook(s, func(h *hookSet) *[]*hook[PreExecuteFunc] { return &h.pre }, fn, opts)
}

// OnPreCheck adds a pre-execute hook that decides before the hooks after it (see
// PreCheckFunc); it takes its place in the pre-execute chain as OnPreExecute's do.
func (s *Scope) OnPreCheck(fn PreCheckFunc, opts ...HookOption) (remove func()) {
	return addBuilt(s, func(h *hookSet) *[]*hook[PreExecuteFunc] { return &h.pre }, &hook[PreExecuteFunc]{check: fn}, opts)
}

// WrapExecute adds an around-execute wrapper; the first registered is the outermost.
func (s *Scope) WrapExecute(fn ExecuteFunc, opts ...HookOption) (remove func()) {
	return addHook(s, func(h *hookSet) *[]*hook[ExecuteFunc] { return &h.exec }, fn, opts)
}

// OnPostExecute adds a post-execute hook.
func (s *Scope) OnPostExecute(fn PostExecuteFunc, opts ...HookOption) (remove func()) {
	return addHook(s, func(h *hookSet) *[]*hook[PostExecuteFunc] { return &h.post }, fn, opts)
}

// OnPostDecision adds a post-execute hook that decides after the hooks after it (see
// PostDecisionFunc); it takes its place in the post-execute chain as OnPostExecute's do.
func (s *Scope) OnPostDecision(fn PostDecisionFunc, opts ...HookOption) (remove func()) {
	return addBuilt(s, func(h *hookSet) *[]*hook[PostExecuteFunc] { return &h.post }, &hook[PostExecuteFunc]{decide: fn}, opts)
}

// OnResult adds an observe-only result listener.
func (s *Scope) OnResult(fn ResultFunc, opts ...HookOption) (remove func()) {
	return addHook(s, func(h *hookSet) *[]*hook[ResultFunc] { return &h.result }, fn, opts)
}

// OnPreExecute adds a global pre-execute hook; see Scope.OnPreExecute.
func (r *Registry) OnPreExecute(fn PreExecuteFunc, opts ...HookOption) func() {
	return r.root.OnPreExecute(fn, opts...)
}

// OnPreCheck adds a global pre-execute hook that decides before the hooks after it; see
// Scope.OnPreCheck.
func (r *Registry) OnPreCheck(fn PreCheckFunc, opts ...HookOption) func() {
	return r.root.OnPreCheck(fn, opts...)
}

// WrapExecute adds a global around-execute wrapper; see Scope.WrapExecute.
func (r *Registry) WrapExecute(fn ExecuteFunc, opts ...HookOption) func() {
	return r.root.WrapExecute(fn, opts...)
}

// OnPostExecute adds a global post-execute hook; see Scope.OnPostExecute.
func (r *Registry) OnPostExecute(fn PostExecuteFunc, opts ...HookOption) func() {
	return r.root.OnPostExecute(fn, opts...)
}

// OnPostDecision adds a global post-execute hook that decides after the hooks after it;
// see Scope.OnPostDecision.
func (r *Registry) OnPostDecision(fn PostDecisionFunc, opts ...HookOption) func() {
	return r.root.OnPostDecision(fn, opts...)
}

// OnResult adds a global result listener; see Scope.OnResult.
func (r *Registry) OnResult(fn ResultFunc, opts ...HookOption) func() {
	return r.root.OnResult(fn, opts...)
}
