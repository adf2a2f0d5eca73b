package tool

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dsh-go/dsh/internal/contain"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/schema"
)

// Mode is a presentation mode (docs/behaviour.md §3.7): how a scope's tools reach the model.
type Mode string

// Presentation modes.
const (
	// ModeNative presents every visible tool as a native tool schema.
	ModeNative Mode = "native"
	// ModeCode presents only run_code; every other tool is reachable from a program.
	ModeCode Mode = "code"
	// ModeBoth presents every visible tool and run_code.
	ModeBoth Mode = "both"
)

// Valid reports whether m is one of the three modes.
func (m Mode) Valid() bool { return m == ModeNative || m == ModeCode || m == ModeBoth }

// RunCodeName is the name reserved for the Code Mode transport tool.
const RunCodeName = "run_code"

// Config configures a Registry.
type Config struct {
	// Mode is the deployment's default presentation mode; empty means native.
	Mode Mode
	// Logger receives warnings such as failed result listeners; nil means slog.Default().
	Logger *slog.Logger
	// MaxArgBytes caps the size of one call's arguments as compact JSON; a call over it
	// fails INVALID_ARGS before any hook or body sees it. Zero means DefaultMaxArgBytes;
	// negative values are refused.
	MaxArgBytes int
	// Workers is how many goroutines the registry keeps waiting between calls to run the
	// calls' hooks, wrappers and bodies. A call's steps run on a goroutine other than the
	// caller's, so that a runtime.Goexit in them ends in a TOOL_PANIC result instead of the
	// caller's goroutine; a kept goroutine saves starting one per call (about half of that
	// hand-off's cost). Zero keeps none: every call starts a goroutine of its own. A
	// registry with Workers is to be closed with Close, which ends them (one dropped without
	// Close ends them when the garbage collector finds it unreachable); negative values are
	// refused.
	Workers int
	// DirectSwitch makes the Workers' goroutines take each step of a call by a direct switch
	// between goroutines, as iter.Pull's coroutines do, instead of through the scheduler.
	// A hand-off through the scheduler wakes a second thread for each step while a
	// processor is idle, which on a machine with few cores takes the core that other work
	// (a Code Mode worker process, say) was waiting for; a switch wakes nothing. It follows
	// Go's rule for such switches: a goroutine locked to its OS thread
	// (runtime.LockOSThread) must not call Execute, which would end the process with a
	// fatal error, and a body, hook or wrapper that ends (returns, panics or calls
	// runtime.Goexit) with its thread locked is unlocked once before the switch back (locked
	// twice or more, it ends the process). It needs Workers.
	DirectSwitch bool
}

// DefaultMaxArgBytes is the default of Config.MaxArgBytes: 1 MiB.
const DefaultMaxArgBytes = 1 << 20

// Registry holds tools in a global layer and per-scope layers, and runs every call through
// the pipeline. It is safe for concurrent use; create one with NewRegistry.
type Registry struct {
	mode    Mode
	logger  *slog.Logger
	maxArgs int // Config.MaxArgBytes with its default

	mu      sync.RWMutex
	global  *layer
	layers  map[*Scope]*layer
	nextID  uint64
	changes []*changeListener

	root     *Scope
	hooks    atomic.Pointer[hookSet]
	approver atomic.Pointer[approverBox]
	runner   atomic.Pointer[runnerBox]
	observer atomic.Pointer[observerBox]

	transportOnce sync.Once
	transport     *entry

	// The contained runs of a call's steps and of a body under around-execute wrappers,
	// kept warm so that a call allocates no goroutine start-up state.
	stages  *contain.Runner[*Invocation]
	bodies  *contain.Runner[*bodyRun]
	workers *contain.Workers // Config.Workers' goroutines; nil without
}

// NewRegistry returns an empty registry. It returns an error for an invalid mode.
func NewRegistry(cfg Config) (*Registry, error) {
	mode := cfg.Mode
	if mode == "" {
		mode = ModeNative
	}
	if !mode.Valid() {
		return nil, fmt.Errorf("tools mode must be \"native\", \"code\" or \"both\", got %q", cfg.Mode)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	maxArgs := cfg.MaxArgBytes
	if maxArgs < 0 {
		return nil, fmt.Errorf("tool: MaxArgBytes must not be negative, got %d", maxArgs)
	}
	if maxArgs == 0 {
		maxArgs = DefaultMaxArgBytes
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("tool: Workers must not be negative, got %d", cfg.Workers)
	}
	if cfg.DirectSwitch && cfg.Workers == 0 {
		return nil, fmt.Errorf("tool: DirectSwitch needs Workers, got Workers %d", cfg.Workers)
	}
	r := &Registry{mode: mode, logger: logger, maxArgs: maxArgs, global: &layer{}, layers: map[*Scope]*layer{}}
	r.root = &Scope{reg: r, name: "global", global: true}
	r.hooks.Store(&hookSet{})
	if cfg.Workers > 0 {
		newWorkers := contain.NewWorkers
		if cfg.DirectSwitch {
			newWorkers = contain.NewSwitchWorkers
		}
		ws, err := newWorkers(cfg.Workers)
		if err != nil {
			return nil, fmt.Errorf("tool: %w", err)
		}
		r.workers = ws
		// A registry dropped without Close still ends its goroutines once it is collected:
		// they hold nothing of the registry, only ws does.
		runtime.AddCleanup(r, (*contain.Workers).Close, ws)
	}
	r.stages = contain.NewRunnerOn(r.workers, (*Invocation).run)
	r.bodies = contain.NewRunnerOn(r.workers, (*bodyRun).run)
	return r, nil
}

// Close ends the goroutines the registry keeps for calls (Config.Workers) and waits until
// the idle ones have returned; one running a call ends when the call has. The registry stays
// usable: a later call starts a goroutine of its own, as without Workers. Close is
// idempotent, and does nothing for a registry without Workers.
func (r *Registry) Close() {
	if r.workers != nil {
		r.workers.Close()
	}
}

// MaxArgBytes returns the cap on one call's arguments (Config.MaxArgBytes with its default).
func (r *Registry) MaxArgBytes() int { return r.maxArgs }

// ParseArguments is the package's ParseArguments with the registry's argument cap applied
// first: text longer than the cap is not parsed at all but kept as the raw string, which
// the pipeline then refuses with INVALID_ARGS naming its size and the cap.
func (r *Registry) ParseArguments(raw string) any {
	if len(raw) > r.maxArgs {
		return raw
	}
	return ParseArguments(raw)
}

// Mode returns the deployment's default presentation mode.
func (r *Registry) Mode() Mode { return r.mode }

// Global returns the global scope: registrations through it file into the global layer and
// its hooks see every call.
func (r *Registry) Global() *Scope { return r.root }

// Register adds a tool to the global layer; see Scope.Register.
func (r *Registry) Register(def *Definition) (unregister func(), err error) {
	return r.root.Register(def)
}

// Guard adds a global guard; see Scope.Guard.
func (r *Registry) Guard(fn GuardFunc) (remove func()) { return r.root.Guard(fn) }

// GuardCoded adds a global guard whose denials carry a code; see Scope.GuardCoded.
func (r *Registry) GuardCoded(fn CodedGuardFunc) (remove func()) { return r.root.GuardCoded(fn) }

// layer is one set of contributions: the global layer or one scope's own layer.
type layer struct {
	tools        []*entry
	byName       map[string]*entry // tools by name, once the layer holds more than findScan
	restrictions []*restriction
	guards       []*guardEntry
	guardFns     []CodedGuardFunc // the guards' functions: replaced, never changed, when guards change
	mode         Mode
}

func (l *layer) empty() bool {
	return len(l.tools) == 0 && len(l.restrictions) == 0 && len(l.guards) == 0 && l.mode == ""
}

// findScan is the number of tools up to which find scans the layer's list instead of
// looking the name up in byName: a registry such as dsh's holds a few dozen tools, which
// every call looks up two or three times.
const findScan = 8

func (l *layer) find(name string) *entry {
	if l.byName != nil {
		return l.byName[name]
	}
	for _, e := range l.tools {
		if e.def.Name == name {
			return e
		}
	}
	return nil
}

// add appends e to the layer's tools and keeps byName.
func (l *layer) add(e *entry) {
	l.tools = append(l.tools, e)
	if l.byName == nil && len(l.tools) > findScan {
		l.byName = make(map[string]*entry, 2*len(l.tools))
		for _, t := range l.tools {
			l.byName[t.def.Name] = t
		}
	} else if l.byName != nil {
		l.byName[e.def.Name] = e
	}
}

// remove deletes e from the layer's tools, and reports whether it was there.
func (l *layer) remove(e *entry) bool {
	i := slices.Index(l.tools, e)
	if i < 0 {
		return false
	}
	l.tools = slices.Delete(l.tools, i, i+1)
	if l.byName != nil {
		delete(l.byName, e.def.Name)
	}
	return true
}

// entry is one registered definition with what the registry derived from it.
type entry struct {
	id        uint64
	def       *Definition
	out       *schema.Schema
	params    any   // the lossless snapshot of def.Parameters
	paramsErr error // set when def.Parameters is not lossless JSON
	// flatOut reports that every value the definition's flat output conversion builds
	// satisfies out, so that such a value needs no validation (flatCodec.schemaHolds).
	flatOut bool
	// defaultRender reports that the definition renders with DefaultRender itself, which
	// the pipeline then runs directly (see Invocation.success).
	defaultRender bool
}

type restriction struct {
	allow, deny map[string]struct{} // nil when not given
}

func (x *restriction) admits(name string) bool {
	if x.allow != nil {
		if _, ok := x.allow[name]; !ok {
			return false
		}
	}
	if x.deny != nil {
		if _, ok := x.deny[name]; ok {
			return false
		}
	}
	return true
}

type guardEntry struct{ fn CodedGuardFunc }

// GuardFunc is a monotonic guard: it returns a non-empty reason to deny a call, or "" to let
// it through. Guards run after every pre-execute hook and after approval, so no hook can undo
// their denial. A guard must not modify the execution it is given.
type GuardFunc func(exec *Execution) string

// CodedGuardFunc is a guard whose denial may carry error info (name and code), as DenyWith
// gives a pre-execute denial; a nil info denies without a code.
type CodedGuardFunc func(exec *Execution) (reason string, info *Info)

// Filter is a restriction of the tools a scope inherits. A nil list is "not given"; an empty
// non-nil Allow admits nothing.
type Filter struct {
	Allow []string
	Deny  []string
}

// ChangeKind says what changed in a registry.
type ChangeKind string

// Change kinds.
const (
	ChangeRegistered   ChangeKind = "registered"
	ChangeUnregistered ChangeKind = "unregistered"
	ChangeRestricted   ChangeKind = "restricted"
	ChangeUnrestricted ChangeKind = "unrestricted"
	ChangeMode         ChangeKind = "mode"
)

// Change describes one registry change.
type Change struct {
	Kind  ChangeKind
	Name  string // the tool, for registrations
	Scope *Scope // the scope whose layer changed; the global scope for global changes
}

type changeListener struct{ fn func(Change) error }

// OnChange adds a listener called after every tool registration or removal, restriction
// change and presentation-mode change (not for guards). A listener that returns an error
// rolls back the registration that triggered it, and Register returns that error.
func (r *Registry) OnChange(fn func(Change) error) (remove func()) {
	l := &changeListener{fn: fn}
	r.mu.Lock()
	r.changes = append(r.changes, l)
	r.mu.Unlock()
	return sync.OnceFunc(func() {
		r.mu.Lock()
		r.changes = slices.DeleteFunc(r.changes, func(x *changeListener) bool { return x == l })
		r.mu.Unlock()
	})
}

// notify calls the change listeners in order and returns the first error.
func (r *Registry) notify(c Change) (err error) {
	r.mu.RLock()
	ls := slices.Clone(r.changes)
	r.mu.RUnlock()
	for _, l := range ls {
		if err := callChange(l.fn, c); err != nil {
			return err
		}
	}
	return nil
}

func callChange(fn func(Change) error, c Change) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tools/change listener panicked: %s", ErrorMessage(p))
		}
	}()
	return fn(c)
}

// layerFor returns s's layer, creating it when create is set. r.mu must be held.
func (r *Registry) layerFor(s *Scope, create bool) *layer {
	if s.global {
		return r.global
	}
	l := r.layers[s]
	if l == nil && create {
		l = &layer{}
		r.layers[s] = l
	}
	return l
}

// reclaim drops s's layer when it holds nothing. r.mu must be held.
func (r *Registry) reclaim(s *Scope) {
	if s.global {
		return
	}
	if l := r.layers[s]; l != nil && l.empty() {
		delete(r.layers, s)
	}
}

// Scope is a registration context and a visibility key: the global scope, or one agent (or
// agent preset) with an optional parent. Tools, restrictions, guards, a presentation mode and
// hooks registered through a scope are undone together by Close.
type Scope struct {
	reg    *Registry
	name   string
	parent *Scope
	global bool

	mu     sync.Mutex
	undos  []func()
	closed bool
}

// NewScope returns a scope named name (for messages only) whose parent is parent; a nil or
// global parent makes a top-level scope.
func (r *Registry) NewScope(name string, parent *Scope) *Scope {
	if parent != nil && parent.global {
		parent = nil
	}
	if parent != nil && parent.reg != r {
		panic("tool: NewScope parent belongs to another registry")
	}
	return &Scope{reg: r, name: name, parent: parent}
}

// Name returns the scope's name.
func (s *Scope) Name() string { return s.name }

// Parent returns the scope's parent, or nil.
func (s *Scope) Parent() *Scope { return s.parent }

// Registry returns the registry the scope belongs to.
func (s *Scope) Registry() *Registry { return s.reg }

// IsGlobal reports whether s is the registry's global scope.
func (s *Scope) IsGlobal() bool { return s.global }

// within reports whether s is the scope a or an ancestor of a; the global scope is within
// every call, including calls without an agent.
func (s *Scope) within(a *Scope) bool {
	if s == nil || s.global {
		return true
	}
	for x := a; x != nil; x = x.parent {
		if x == s {
			return true
		}
	}
	return false
}

func (s *Scope) track(undo func()) (func(), error) {
	once := sync.OnceFunc(undo)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		once()
		return nil, fmt.Errorf("scope \"%s\" is closed", s.name)
	}
	s.undos = append(s.undos, once)
	return once, nil
}

func (s *Scope) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close undoes everything registered through the scope, newest first. It is idempotent.
// Closing the global scope is allowed and clears the global layer's contributions.
func (s *Scope) Close() {
	s.mu.Lock()
	undos := s.undos
	s.undos = nil
	s.closed = !s.global
	s.mu.Unlock()
	for i := len(undos) - 1; i >= 0; i-- {
		undos[i]()
	}
}

// Register adds def to this scope's layer (docs/behaviour.md §3.3). A scoped tool shadows an inherited
// tool of the same name and is exempt from the scope's restrictions. The returned function
// removes exactly this registration. Register checks, in order: an output renderer is
// declared, the output schema lies in the supported subset, the timeout is not negative,
// the name is not run_code, and the name is free in this layer; then it notifies the change
// listeners, and a listener's error rolls the registration back and is returned.
// The registry keeps a shallow copy of def; the returned and listed definitions must not be
// modified.
func (s *Scope) Register(def *Definition) (unregister func(), err error) {
	if def == nil {
		return nil, errors.New("tool definition is nil")
	}
	d := *def
	if err := d.checkOutput(); err != nil {
		return nil, err
	}
	out, err := schema.Compile(d.Output.Schema)
	if err != nil {
		return nil, err
	}
	if err := d.checkTimeout(); err != nil {
		return nil, err
	}
	if d.Name == RunCodeName {
		return nil, errors.New(`tool name "run_code" is reserved for the Code Mode presentation transport and cannot be registered or shadowed`)
	}
	if s.isClosed() {
		return nil, fmt.Errorf("scope \"%s\" is closed", s.name)
	}
	e := &entry{def: &d, out: out, flatOut: d.flatOut != nil && d.flatOut.schemaHolds(out.Raw()),
		defaultRender: reflect.ValueOf(d.Output.Render).Pointer() == reflect.ValueOf(DefaultRender).Pointer()}
	e.params, e.paramsErr = jsonv.Snapshot(d.Parameters)

	r := s.reg
	r.mu.Lock()
	l := r.layerFor(s, true)
	if l.find(d.Name) != nil {
		r.reclaim(s)
		r.mu.Unlock()
		if s.global {
			return nil, fmt.Errorf("tool \"%s\" is already registered (for a per-agent variant, register through that agent's `agent.ctx` instead)", d.Name)
		}
		return nil, fmt.Errorf("tool \"%s\" is already registered in this scope", d.Name)
	}
	r.nextID++
	e.id = r.nextID
	l.add(e)
	r.mu.Unlock()

	remove := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		l := r.layerFor(s, false)
		if l == nil {
			return false
		}
		if !l.remove(e) {
			return false
		}
		r.reclaim(s)
		return true
	}
	if err := r.notify(Change{Kind: ChangeRegistered, Name: d.Name, Scope: s}); err != nil {
		remove()
		return nil, err
	}
	return s.track(func() {
		if remove() {
			r.logNotify(Change{Kind: ChangeUnregistered, Name: d.Name, Scope: s})
		}
	})
}

// logNotify notifies listeners of a change that cannot be rolled back, logging a failure.
func (r *Registry) logNotify(c Change) {
	if err := r.notify(c); err != nil {
		r.logger.Warn("tools/change listener failed", "change", string(c.Kind), "tool", c.Name, "error", err)
	}
}

// Restrict masks the tools this scope inherits (docs/behaviour.md §3.5): only names in Allow (when given)
// and not in Deny (when given) stay visible here and in every descendant scope. The scope's
// own tools are never filtered. Restrictions along a chain intersect.
func (s *Scope) Restrict(f Filter) (lift func(), err error) {
	if s.global {
		return nil, errors.New("tools.restrict() requires a scoped context (agent.ctx): a context-global restriction would mask every agent — deny the tool for the intended agent instead")
	}
	if f.Allow == nil && f.Deny == nil {
		return nil, errors.New("tools.restrict({}) is a no-op: pass `allow` and/or `deny` (an empty filter is almost always a materialized-empty-config bug)")
	}
	if slices.Contains(f.Allow, RunCodeName) || slices.Contains(f.Deny, RunCodeName) {
		return nil, errors.New(`tools.restrict() cannot name reserved Code Mode presentation transport "run_code"; restrict end-capability tools instead`)
	}
	if s.isClosed() {
		return nil, fmt.Errorf("scope \"%s\" is closed", s.name)
	}
	r := s.reg
	r.mu.Lock()
	known := r.restrictableLocked(s)
	var unknown []string
	// Every unknown occurrence is listed, duplicates included, as the reference does.
	for _, n := range slices.Concat(f.Allow, f.Deny) {
		if _, ok := known[n]; !ok {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		r.mu.Unlock()
		names := make([]string, 0, len(known))
		for n := range known {
			names = append(names, n)
		}
		slices.Sort(names)
		list := "(none)"
		if len(names) > 0 {
			list = strings.Join(names, ", ")
		}
		quoted := make([]string, len(unknown))
		for i, n := range unknown {
			quoted[i] = fmt.Sprintf("\"%s\"", n)
		}
		noun := "tool"
		if len(unknown) > 1 {
			noun = "tools"
		}
		return nil, fmt.Errorf("tools.restrict() names unknown global %s %s; known global tools: %s", noun, strings.Join(quoted, ", "), list)
	}
	x := &restriction{allow: toSet(f.Allow), deny: toSet(f.Deny)}
	l := r.layerFor(s, true)
	l.restrictions = append(l.restrictions, x)
	r.mu.Unlock()
	r.logNotify(Change{Kind: ChangeRestricted, Scope: s})
	return s.track(func() {
		r.mu.Lock()
		removed := false
		if l := r.layerFor(s, false); l != nil {
			if i := slices.Index(l.restrictions, x); i >= 0 {
				l.restrictions = slices.Delete(l.restrictions, i, i+1)
				removed = true
			}
			r.reclaim(s)
		}
		r.mu.Unlock()
		if removed {
			r.logNotify(Change{Kind: ChangeUnrestricted, Scope: s})
		}
	})
}

func toSet(names []string) map[string]struct{} {
	if names == nil {
		return nil
	}
	m := make(map[string]struct{}, len(names))
	for _, n := range names {
		m[n] = struct{}{}
	}
	return m
}

// Guard adds a monotonic guard to this scope's layer (docs/behaviour.md §3.6). Global guards see every
// call; a scope's guards see calls of that scope and its descendants.
func (s *Scope) Guard(fn GuardFunc) (remove func()) {
	return s.GuardCoded(func(exec *Execution) (string, *Info) { return fn(exec), nil })
}

// GuardCoded adds a guard as Guard does, whose denial carries the info it returns (name
// and code) in the failure's error.
func (s *Scope) GuardCoded(fn CodedGuardFunc) (remove func()) {
	g := &guardEntry{fn: fn}
	r := s.reg
	r.mu.Lock()
	l := r.layerFor(s, true)
	l.guards = append(l.guards, g)
	l.guardFns = guardFuncs(l.guards)
	r.mu.Unlock()
	undo, err := s.track(func() {
		r.mu.Lock()
		if l := r.layerFor(s, false); l != nil {
			l.guards = slices.DeleteFunc(l.guards, func(x *guardEntry) bool { return x == g })
			l.guardFns = guardFuncs(l.guards)
			r.reclaim(s)
		}
		r.mu.Unlock()
	})
	if err != nil {
		return func() {}
	}
	return undo
}

// PresentAs selects this scope's presentation mode (docs/behaviour.md §3.7). It covers every descendant
// scope that does not declare its own. The returned function restores the default.
func (s *Scope) PresentAs(mode Mode) (restore func(), err error) {
	if s.global {
		return nil, errors.New("tools.presentAs() requires a scoped context (agent.ctx): a context-global presentation is the `mode` config field on the tools row")
	}
	if !mode.Valid() {
		return nil, fmt.Errorf("tools.presentAs() mode must be \"native\", \"code\" or \"both\", got %q", mode)
	}
	if s.isClosed() {
		return nil, fmt.Errorf("scope \"%s\" is closed", s.name)
	}
	r := s.reg
	r.mu.Lock()
	l := r.layerFor(s, true)
	if l.mode != "" {
		old := l.mode
		r.mu.Unlock()
		return nil, fmt.Errorf("tools.presentAs(\"%s\") conflicts with \"%s\" already declared for this scope; one composition selects one presentation", mode, old)
	}
	l.mode = mode
	r.mu.Unlock()
	r.logNotify(Change{Kind: ChangeMode, Scope: s})
	return s.track(func() {
		r.mu.Lock()
		if l := r.layerFor(s, false); l != nil && l.mode == mode {
			l.mode = ""
			r.reclaim(s)
		}
		r.mu.Unlock()
		r.logNotify(Change{Kind: ChangeMode, Scope: s})
	})
}

// ModeFor returns the effective presentation mode of scope: the nearest declaration along its
// chain, else the deployment default. A nil scope has the default.
func (r *Registry) ModeFor(scope *Scope) Mode {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.modeForLocked(scope)
}

func (r *Registry) modeForLocked(scope *Scope) Mode {
	for s := scope; s != nil && !s.global; s = s.parent {
		if l := r.layers[s]; l != nil && l.mode != "" {
			return l.mode
		}
	}
	return r.mode
}

// restrictableLocked returns the names scope inherits (global and ancestor tools).
func (r *Registry) restrictableLocked(scope *Scope) map[string]struct{} {
	names := map[string]struct{}{}
	for _, e := range r.global.tools {
		names[e.def.Name] = struct{}{}
	}
	for s := scope.parent; s != nil; s = s.parent {
		if l := r.layers[s]; l != nil {
			for _, e := range l.tools {
				names[e.def.Name] = struct{}{}
			}
		}
	}
	return names
}

// lookupLocked resolves the visible definition of name for scope without building a view:
// the scope's own tool, else the nearest inherited one admitted by every layer of the chain,
// else run_code when the scope presents it.
func (r *Registry) lookupLocked(name string, scope *Scope) *entry {
	if scope != nil && scope.global {
		scope = nil
	}
	if name == RunCodeName {
		if r.modeForLocked(scope) != ModeNative {
			return r.transportEntry()
		}
		return nil
	}
	if scope == nil {
		return r.global.find(name)
	}
	// The scope's own layer is looked up once, for its tool and for its restrictions.
	own := r.layers[scope]
	if own != nil {
		if e := own.find(name); e != nil {
			return e
		}
	}
	var e *entry
	for s := scope.parent; s != nil && e == nil; s = s.parent {
		if l := r.layers[s]; l != nil {
			e = l.find(name)
		}
	}
	if e == nil {
		e = r.global.find(name)
	}
	if e == nil {
		return nil
	}
	for s := scope; s != nil; s = s.parent {
		l := own
		if s != scope {
			l = r.layers[s]
		}
		if l != nil {
			for _, x := range l.restrictions {
				if !x.admits(name) {
					return nil
				}
			}
		}
	}
	return e
}

// view is the ordered visible set of a scope (docs/behaviour.md §3.4).
type view struct {
	names   []string
	entries map[string]*entry
	known   []string // every name the scope knows, before restriction
}

func (r *Registry) viewLocked(scope *Scope) *view {
	if scope != nil && scope.global {
		scope = nil
	}
	v := &view{entries: map[string]*entry{}}
	knownSet := map[string]struct{}{}
	put := func(e *entry) {
		if _, ok := v.entries[e.def.Name]; !ok {
			v.names = append(v.names, e.def.Name)
		}
		v.entries[e.def.Name] = e
	}
	addKnown := func(n string) {
		if _, ok := knownSet[n]; !ok {
			knownSet[n] = struct{}{}
			v.known = append(v.known, n)
		}
	}
	// Inherited: global, then ancestors farthest first (nearer wins), all filtered by every
	// layer of the chain.
	var chain []*Scope
	for s := scope; s != nil; s = s.parent {
		chain = append(chain, s)
	}
	slices.Reverse(chain)
	inherited := &view{entries: map[string]*entry{}}
	inh := func(e *entry) {
		if _, ok := inherited.entries[e.def.Name]; !ok {
			inherited.names = append(inherited.names, e.def.Name)
		}
		inherited.entries[e.def.Name] = e
	}
	for _, e := range r.global.tools {
		inh(e)
	}
	for _, s := range chain {
		if s == scope {
			break
		}
		if l := r.layers[s]; l != nil {
			for _, e := range l.tools {
				inh(e)
			}
		}
	}
	for _, n := range inherited.names {
		addKnown(n)
		admitted := true
		for _, s := range chain {
			if l := r.layers[s]; l != nil {
				for _, x := range l.restrictions {
					if !x.admits(n) {
						admitted = false
					}
				}
			}
		}
		if admitted {
			put(inherited.entries[n])
		}
	}
	if scope != nil {
		if l := r.layers[scope]; l != nil {
			for _, e := range l.tools {
				addKnown(e.def.Name)
				put(e)
			}
		}
	}
	if r.modeForLocked(scope) != ModeNative {
		put(r.transportEntry())
	}
	return v
}

// Get returns the definition visible as name in scope (nil scope: global), or nil. It ignores
// the Code Mode collapse: a native tool is still visible to a code-mode scope.
func (r *Registry) Get(name string, scope *Scope) *Definition {
	r.mu.RLock()
	e := r.lookupLocked(name, scope)
	r.mu.RUnlock()
	if e == nil {
		return nil
	}
	return e.def
}

// Names returns the names visible in scope, in view order.
func (r *Registry) Names(scope *Scope) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.viewLocked(scope).names
}

// KnownNames returns every tool name scope knows before restrictions (its inherited and own
// tools), in view order. Prompt assembly validates tool ordering against it.
func (r *Registry) KnownNames(scope *Scope) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.viewLocked(scope).known
}

// Schemas returns the model-visible projection of every tool visible in scope, in view order
// (docs/behaviour.md §3.4). Each schema is a detached copy. It includes run_code when the scope's mode is
// code or both.
func (r *Registry) Schemas(scope *Scope) ([]Schema, error) {
	r.mu.RLock()
	v := r.viewLocked(scope)
	r.mu.RUnlock()
	return projectSchemas(v, v.names)
}

// SchemaNames returns the names of the tools visible in scope, in view order: those of
// Schemas, with its error, without projecting (copying) any schema. Code Mode asks for it
// on every run.
func (r *Registry) SchemaNames(scope *Scope) ([]string, error) {
	r.mu.RLock()
	v := r.viewLocked(scope)
	r.mu.RUnlock()
	out := make([]string, 0, len(v.names))
	for _, n := range v.names {
		if err := v.entries[n].schemaErr(n); err != nil {
			return nil, err
		}
		out = append(out, v.entries[n].def.Name)
	}
	return out, nil
}

// schemaErr is why the entry named n has no model-visible schema, nil when it has one.
func (e *entry) schemaErr(n string) error {
	if e.paramsErr == nil {
		return nil
	}
	if n == RunCodeName { // the transport has no flavour for the runner's language
		return e.paramsErr
	}
	return fmt.Errorf("tool \"%s\" parameters must be lossless JSON before schema projection", n)
}

// projectSchemas projects the named entries of v onto detached model-visible schemas.
func projectSchemas(v *view, names []string) ([]Schema, error) {
	out := make([]Schema, 0, len(names))
	for _, n := range names {
		e := v.entries[n]
		if err := e.schemaErr(n); err != nil {
			return nil, err
		}
		out = append(out, Schema{Name: e.def.Name, Description: e.def.Description, Parameters: jsonv.Clone(e.params), Strict: e.def.Strict})
	}
	return out, nil
}

// Definitions returns the definitions visible in scope, in view order.
func (r *Registry) Definitions(scope *Scope) []*Definition {
	r.mu.RLock()
	v := r.viewLocked(scope)
	r.mu.RUnlock()
	out := make([]*Definition, len(v.names))
	for i, n := range v.names {
		out[i] = v.entries[n].def
	}
	return out
}

// guardFuncs returns a new slice of the functions of gs (nil for none).
func guardFuncs(gs []*guardEntry) []CodedGuardFunc {
	if len(gs) == 0 {
		return nil
	}
	fns := make([]CodedGuardFunc, len(gs))
	for i, g := range gs {
		fns[i] = g.fn
	}
	return fns
}

// scopeGuardsLocked reports whether a scope of agent's chain has guards of its own.
// r.mu must be held.
func (r *Registry) scopeGuardsLocked(agent *Scope) bool {
	for s := agent; s != nil; s = s.parent {
		if l := r.layers[s]; l != nil && len(l.guards) > 0 {
			return true
		}
	}
	return false
}

// guards returns a snapshot of the guards for exec in the order they are evaluated: global
// guards, then, for a call with an agent, each layer of its chain farthest first.
//
// A call no scope guard applies to (the common case) gets the global layer's own snapshot,
// which guard changes replace instead of changing: nothing is copied per call.
func (r *Registry) guards(exec *Execution) []CodedGuardFunc {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.scopeGuardsLocked(exec.agent) {
		return r.global.guardFns
	}
	gs := slices.Clone(r.global.guardFns)
	if exec.agent != nil {
		var chain []*Scope
		for s := exec.agent; s != nil; s = s.parent {
			chain = append(chain, s)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			if l := r.layers[chain[i]]; l != nil {
				for _, g := range l.guards {
					gs = append(gs, g.fn)
				}
			}
		}
	}
	return gs
}
