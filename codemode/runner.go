package codemode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// DefaultMaxParallelSubCalls is how many concurrency-safe sub-calls of one program run at
// once when Config.MaxParallelSubCalls is zero.
const DefaultMaxParallelSubCalls = 10

// ImagePlugin is the plugin id attributed to the user message that carries the content of
// an image-bearing successful sub-call to the model after the run (docs/behaviour.md §10.6).
const ImagePlugin = "tools-code-mode"

// Binding names of the program namespace (docs/behaviour.md §10.4): every tool is a function of the
// global Global, and a failed call raises ErrorClass whose MemberProperty names the tool.
const (
	Global         = "tools"
	ErrorClass     = "ToolCallError"
	MemberProperty = "toolName"
)

// errRunSettled is the cancellation cause of a run's context once the run has settled.
var errRunSettled = errors.New("run_code settled")

// Config configures Code Mode.
type Config struct {
	// MaxParallelSubCalls bounds how many concurrency-safe sub-calls of one program run at
	// once; exclusive sub-calls always run alone. Zero means DefaultMaxParallelSubCalls,
	// negative is an error.
	MaxParallelSubCalls int
	// Log records the tool/code-dispatch-start and tool/code-dispatch events of the
	// sub-calls of a run_code call made for an agent (a call with a scope). Nil records
	// nothing; calls without an agent are never recorded.
	Log DispatchLog
	// ShapeLog transforms the content recorded in a tool/code-dispatch event, in order,
	// each receiving the previous one's output (the tools/code-dispatch-log waterfall). The
	// program's value and the model-visible results are never affected. A shaper that fails
	// is logged as a warning and the original content is recorded.
	ShapeLog []LogShaper
	// Logger receives warnings; nil means slog.Default().
	Logger *slog.Logger
}

// DispatchLog records the sub-dispatches of run_code programs (docs/behaviour.md §9.1). The agent loop
// implements it with the session log of the agent whose scope is given; ScopeLogs and
// SessionLog are ready-made implementations.
//
// Start is called in submission order, immediately before a sub-call's pre-execute stage;
// when it fails the sub-call does not run and the program's call rejects with the error.
// Settle is called once per started sub-call, in submission order, after the program
// received its outcome and before run_code returns; its error is logged as a warning. Calls
// for one run never overlap, and their order is the lane's: a sub-call's Settle comes before
// the Start of every sub-call started after it committed, so a program that awaits each call
// before making the next logs start, settle, start, settle.
//
// p.Arguments is the lane's own snapshot of the sub-call's arguments, the same value for
// both events, which nothing changes afterwards: a log may keep it without a copy
// (session's OwnedEvent constructors, which SessionLog and ScopeLogs use).
type DispatchLog interface {
	Start(agent *tool.Scope, p session.CodeDispatchStart) error
	Settle(agent *tool.Scope, p session.CodeDispatch) error
}

// SettledCall is one settled sub-call whose content is about to be recorded.
type SettledCall struct {
	Outer     *tool.Execution // the run_code call
	Agent     *tool.Scope     // the agent the call runs for
	SubCallID string
	Name      string
	IsError   bool
	Content   []content.Block // the sub-call's final content; a private copy
}

// LogShaper returns the content to record for a settled sub-call, for example a bounded
// preview of a huge text (policy/spill's BoundDispatchLog). Returning nil keeps the content.
type LogShaper func(ctx context.Context, c SettledCall) ([]content.Block, error)

// SessionLog returns a DispatchLog that appends every event to log, whatever the agent.
// It suits a registry that serves a single agent. The events are handed over to the log
// (OwnedEvent, built through a session.DispatchBoxes): it keeps p.Arguments without a
// copy, so a caller other than the lane must not change them afterwards.
func SessionLog(log session.Log) DispatchLog { return &sessionLog{log: log} }

type sessionLog struct {
	log   session.Log
	boxes session.DispatchBoxes // the events' ids and names, shared between events
}

func (l *sessionLog) Start(_ *tool.Scope, p session.CodeDispatchStart) error {
	_, err := l.log.Append(l.boxes.StartEvent(p))
	return err
}

func (l *sessionLog) Settle(_ *tool.Scope, p session.CodeDispatch) error {
	_, err := l.log.Append(l.boxes.SettleEvent(p))
	return err
}

// ScopeLogs is a DispatchLog that routes events to the session log attached to the call's
// agent, for a registry shared by several agents. Events of an agent without an attached
// log (or of one of its descendants without their own) go to the nearest attached
// ancestor's log, and are dropped when there is none. The zero value is ready to use and
// safe for concurrent use. Like SessionLog it hands the events over (OwnedEvent, through a
// session.DispatchBoxes).
type ScopeLogs struct {
	mu    sync.RWMutex
	logs  map[*tool.Scope]session.Log
	boxes session.DispatchBoxes // the events' ids and names, shared between events
}

// Attach routes the events of agent's calls to log until the returned function is called.
func (s *ScopeLogs) Attach(agent *tool.Scope, log session.Log) (detach func()) {
	s.mu.Lock()
	if s.logs == nil {
		s.logs = map[*tool.Scope]session.Log{}
	}
	s.logs[agent] = log
	s.mu.Unlock()
	return sync.OnceFunc(func() {
		s.mu.Lock()
		if s.logs[agent] == log {
			delete(s.logs, agent)
		}
		s.mu.Unlock()
	})
}

// Log returns the log agent's events go to: the one attached to agent or its nearest
// attached ancestor, or nil.
func (s *ScopeLogs) Log(agent *tool.Scope) session.Log { return s.find(agent) }

func (s *ScopeLogs) find(agent *tool.Scope) session.Log {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for a := agent; a != nil; a = a.Parent() {
		if l := s.logs[a]; l != nil {
			return l
		}
	}
	return nil
}

// Start appends a tool/code-dispatch-start event to agent's log.
func (s *ScopeLogs) Start(agent *tool.Scope, p session.CodeDispatchStart) error {
	if l := s.find(agent); l != nil {
		_, err := l.Append(s.boxes.StartEvent(p))
		return err
	}
	return nil
}

// Settle appends a tool/code-dispatch event to agent's log.
func (s *ScopeLogs) Settle(agent *tool.Scope, p session.CodeDispatch) error {
	if l := s.find(agent); l != nil {
		_, err := l.Append(s.boxes.SettleEvent(p))
		return err
	}
	return nil
}

// Runner runs run_code programs with a code runtime: it implements tool.CodeRunner. Each
// call binds the tools visible to the calling agent, runs the program and bridges every
// tool call the program makes through the registry's full pipeline (docs/behaviour.md §10.4–§10.6).
type Runner struct {
	reg         *tool.Registry
	rt          coderuntime.Runtime
	maxParallel int
	log         DispatchLog
	shapers     []LogShaper
	logger      *slog.Logger
	hooks       hooks // test hooks; all nil outside tests
}

// hooks let tests observe a run's binding calls, and perturb their timing.
type hooks struct {
	enter    func(name string) // a binding call began, before anything else
	submit   func(id string)   // a call was queued, under its sub-call id
	parked   func(seq uint64)  // a numbered call waits for its turn
	released func(seq uint64)  // a numbered call was queued or rejected
	// idle: the lane driver is about to wait for a change, leaving pending (submitted, not
	// started) and settled (awaiting an earlier call's commit) calls, by sub-call id.
	idle func(pending, settled []string)
	// handedOver: a solo call settled while the driver was taking a step and left its
	// commit to the driver.
	handedOver func(id string)
}

var _ tool.CodeRunner = (*Runner)(nil)

// New returns a Runner for reg and rt. It does not install it; see Install.
func New(reg *tool.Registry, rt coderuntime.Runtime, cfg Config) (*Runner, error) {
	if reg == nil {
		return nil, errors.New("codemode: registry is nil")
	}
	if rt == nil {
		return nil, errors.New("codemode: code runtime is nil")
	}
	n := cfg.MaxParallelSubCalls
	if n == 0 {
		n = DefaultMaxParallelSubCalls
	}
	if n < 0 {
		return nil, errors.New("maxParallelSubCalls must be a positive integer")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &Runner{reg: reg, rt: rt, maxParallel: n, log: cfg.Log, shapers: cfg.ShapeLog, logger: logger}, nil
}

// Install makes reg run run_code programs with rt: it builds a Runner and sets it as the
// registry's code runner. The returned function uninstalls it.
func Install(reg *tool.Registry, rt coderuntime.Runtime, cfg Config) (undo func(), err error) {
	r, err := New(reg, rt, cfg)
	if err != nil {
		return nil, err
	}
	return reg.SetCodeRunner(r), nil
}

// Language returns the runtime's language, which selects the run_code schema flavour and
// the SDK.
func (r *Runner) Language() string { return r.rt.Language() }

// Runtime returns the code runtime.
func (r *Runner) Runtime() coderuntime.Runtime { return r.rt }

// RunCode runs one program for the run_code call (docs/behaviour.md §10.4). The program sees one function
// per tool visible to the call's agent (run_code excepted) in the `tools` namespace. Every
// sub-call it makes has settled, and every dispatch event has been recorded, before RunCode
// returns. A failed run is a CODE_RUN_FAILED error carrying the failure kind, its message
// and the captured output; a runtime that refuses the request returns its error as is.
func (r *Runner) RunCode(ctx context.Context, call *tool.Call, code string) (any, error) {
	names, err := r.reg.SchemaNames(call.Agent())
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	lane := r.newLane(ctx, runCtx, cancel, call)
	defer func() {
		// Settlement, whatever the outcome (a panicking runtime included): abort the
		// sub-calls still in flight, abandon the queued ones and wait for every commit and
		// every dispatch event.
		cancel(errRunSettled)
		lane.drain()
	}()
	fns := make(map[string]coderuntime.Func, len(names))
	for _, name := range names {
		if name == tool.RunCodeName {
			continue
		}
		fns[name] = lane.binding(name)
	}
	res, err := r.rt.Run(runCtx, coderuntime.Request{
		Program: code,
		Bindings: []coderuntime.Namespace{{
			Global:     Global,
			Functions:  fns,
			ErrorClass: &coderuntime.ErrorClass{Name: ErrorClass, MemberNameProperty: MemberProperty},
		}},
	})
	if err != nil {
		return nil, err
	}
	if res.Error != nil {
		return nil, runFailed(res)
	}
	logs := make([]any, len(res.Logs))
	for i, l := range res.Logs {
		logs[i] = l
	}
	out := jsonv.NewObject(jsonv.Member{Name: "logs", Value: logs})
	if res.HasValue {
		out.Set("result", res.Value)
	}
	return out, nil
}

// runFailed is the CODE_RUN_FAILED error of a failed run (docs/behaviour.md §10.4 step 7).
func runFailed(res coderuntime.Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "code run failed (%s): %s", res.Error.Kind, res.Error.Message)
	if len(res.Logs) > 0 {
		b.WriteString("\nCaptured output:\n")
		b.WriteString(strings.Join(res.Logs, "\n"))
	}
	return &tool.Error{Name: "CodeRunFailedError", Code: tool.CodeCodeRunFailed, Message: b.String()}
}
