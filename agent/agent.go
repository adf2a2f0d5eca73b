package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// Defaults of Config.
const (
	DefaultMaxParallelToolCalls = 10
	DefaultMaxSteps             = 50
)

// EndMaxSteps is the turn end reason kind of a turn stopped by Config.MaxSteps.
const EndMaxSteps = "max-steps"

// CodeUnknown is the error code of a turn that failed for a reason without its own code
// (a log failure, a prompt that cannot be assembled, a failing hook), as in the reference.
const CodeUnknown = "UNKNOWN"

// Config configures an Agent.
type Config struct {
	// Registry runs the tool calls; required.
	Registry *tool.Registry
	// Model answers the requests; required.
	Model llm.Model
	// Log records the session. Nil means a fresh in-memory log. A log that already holds
	// events is continued: turn numbers go on from its last turn, and the history of every
	// request is derived from all of it.
	Log session.Log
	// Scope is the agent's tool scope (the visibility key and the owner of per-agent
	// policy state). Nil means a new top-level scope, closed by Agent.Close. It must
	// belong to Registry.
	Scope *tool.Scope

	// Workspace is the directory the agent works in, stated in the system prompt.
	Workspace string
	// SystemPrompt replaces the base prompt (BasePrompt); the workspace, date and tool
	// sections are still added.
	SystemPrompt string
	// PromptSections add sections to the system prompt of every step (the Code Mode SDK,
	// project instructions, …).
	PromptSections []PromptSectionFunc
	// ToolOrder orders the tools offered to the model: listed names first in their
	// places, every other tool by name where the UnlistedTools entry stands. It must list
	// UnlistedTools exactly once and no name twice; a name the agent's scope does not
	// know fails the turn before its step. Nil orders by name.
	ToolOrder []string

	// MaxParallelToolCalls bounds the concurrent dispatches of one step's
	// concurrency-safe calls. Zero means DefaultMaxParallelToolCalls; negative is an
	// error.
	MaxParallelToolCalls int
	// MaxSteps bounds the steps of one turn. Zero means DefaultMaxSteps; negative is an
	// error.
	MaxSteps int
	// MaxTokens caps each reply (0 leaves it to the server); Temperature sets the sampling
	// temperature (nil leaves it to the server).
	MaxTokens   int
	Temperature *float64
	// Attachments reads the images the session's content references (a session's
	// attachment store, e.g. session.FileLog.Attachments), so that the model receives the
	// images themselves. Nil means the model sees image blocks as text notes only.
	Attachments llm.AttachmentReader

	// Observer receives the turn's progress as it happens.
	Observer Observer
	// Tracer, when set, wraps each turn in a trace (package telemetry provides one).
	Tracer TurnTracer
	// Now supplies the date stated in the prompt (default time.Now).
	Now func() time.Time
}

// CancelCause is a cancellation cause the loop understands. Cancel a turn with it through
// context.WithCancelCause to say who cancelled (logged as the aborted reason's kind) and
// whether the contexts already waiting in the inbox survive. Any other cause is logged as
// kind "user" and clears the inbox.
type CancelCause struct {
	// Kind says who cancelled: "user", "parent", "hook" or "disposed"; empty means "user".
	Kind string
	// Reason is a hook's explanation.
	Reason string
	// KeepInbox keeps the contexts accepted before the cancellation for the next turn.
	KeepInbox bool
}

// Error describes the cancellation.
func (c *CancelCause) Error() string {
	k := c.Kind
	if k == "" {
		k = "user"
	}
	if c.Reason != "" {
		return "turn cancelled by " + k + ": " + c.Reason
	}
	return "turn cancelled by " + k
}

// PreStep is what a pre-step hook sees: the step about to start and the messages it claimed
// from the inbox (on a turn's first step, the parked contexts and then the user's input).
type PreStep struct {
	Scope      *tool.Scope
	Turn, Step int
	Claimed    []content.Message
}

// PreStepFunc runs before a step starts, after its messages were claimed (the reference's
// agent/pre-step). The repeat-tool reminder resets its chain here when the user spoke. An
// error ends the turn before the step.
type PreStepFunc func(ctx context.Context, s PreStep) error

// TurnResult is how a turn ended.
type TurnResult struct {
	// Turn is the turn's number in the session (from 1).
	Turn int
	// Steps is how many steps the turn ran.
	Steps int
	// Reason is the logged turn/end reason.
	Reason session.EndReason
	// Message is the last assistant message of the turn (zero when there was none).
	Message content.Message
}

// Text returns the concatenated text blocks of the turn's last assistant message: the
// answer of a completed turn.
func (r TurnResult) Text() string {
	var s string
	for _, b := range r.Message.Content {
		if b.Type == content.TypeText {
			s += b.Text
		}
	}
	return s
}

// Agent runs turns for one session. Its methods are safe for concurrent use, but it runs
// one turn at a time.
type Agent struct {
	cfg      Config
	reg      *tool.Registry
	scope    *tool.Scope
	ownScope bool
	log      session.Log
	ownLog   bool
	model    llm.Model
	sched    *Scheduler
	maxSteps int

	mu       sync.Mutex
	running  bool
	lastTurn int
	inbox    []content.Message
	hooks    []*preStepHook
}

type preStepHook struct{ fn PreStepFunc }

// New returns an agent for cfg. It continues the turn numbering of cfg.Log and refuses a
// log whose last turn is still open (a crashed session must be loaded through
// session.Store.Resume, which closes the interrupted turn).
func New(cfg Config) (*Agent, error) {
	if cfg.Registry == nil {
		return nil, errors.New("agent: Config.Registry is required")
	}
	if cfg.Model == nil {
		return nil, errors.New("agent: Config.Model is required")
	}
	if cfg.MaxParallelToolCalls == 0 {
		cfg.MaxParallelToolCalls = DefaultMaxParallelToolCalls
	}
	sched, err := NewScheduler(cfg.Registry, cfg.MaxParallelToolCalls)
	if err != nil {
		return nil, err
	}
	if cfg.MaxSteps == 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.MaxSteps < 0 {
		return nil, errors.New("maxSteps must be a positive integer")
	}
	if err := CheckToolOrder(cfg.ToolOrder); err != nil {
		return nil, err
	}
	cfg.ToolOrder = slices.Clone(cfg.ToolOrder)
	cfg.PromptSections = slices.Clone(cfg.PromptSections)
	if cfg.Scope != nil && cfg.Scope.Registry() != cfg.Registry {
		return nil, fmt.Errorf("agent: scope %q belongs to another registry", cfg.Scope.Name())
	}
	if cfg.Log == nil {
		cfg.Log = session.NewMemory(cfg.Now)
	}
	last, err := lastTurn(cfg.Log.Events())
	if err != nil {
		return nil, err
	}
	a := &Agent{
		cfg: cfg, reg: cfg.Registry, scope: cfg.Scope, log: cfg.Log, model: cfg.Model,
		sched: sched, maxSteps: cfg.MaxSteps, lastTurn: last,
	}
	if a.scope == nil {
		a.scope = cfg.Registry.NewScope("agent", nil)
		a.ownScope = true
	}
	return a, nil
}

// Resume reopens the stored session id (store.Resume closes a crash-interrupted turn with
// recovery results) and returns an agent continuing it with cfg; cfg.Log is ignored, and
// a nil cfg.Attachments is the session's attachment store, so the images of its history
// are sent again. Agent.Close closes the log.
func Resume(ctx context.Context, store session.Store, id string, cfg Config) (*Agent, error) {
	log, err := store.Resume(ctx, id)
	if err != nil {
		return nil, err
	}
	cfg.Log = log
	if cfg.Attachments == nil {
		cfg.Attachments = log.Attachments()
	}
	a, err := New(cfg)
	if err != nil {
		return nil, errors.Join(err, log.Close())
	}
	a.ownLog = true
	return a, nil
}

// lastTurn returns the number of the log's last turn, or an error when it is still open.
func lastTurn(events []session.Event) (int, error) {
	last, open := 0, false
	for _, e := range events {
		switch e.Type {
		case session.TypeTurnStart:
			p, err := session.DecodeTurnStart(e)
			if err != nil {
				return 0, fmt.Errorf("agent: session log: %w", err)
			}
			last, open = p.Turn, true
		case session.TypeTurnEnd:
			open = false
		}
	}
	if open {
		return 0, fmt.Errorf("agent: session log has an open turn %d; load the session through session.Store.Resume, which closes an interrupted turn", last)
	}
	return last, nil
}

// Scope returns the agent's tool scope.
func (a *Agent) Scope() *tool.Scope { return a.scope }

// Log returns the agent's session log.
func (a *Agent) Log() session.Log { return a.log }

// Turns returns the number of the last turn started (0 before the first).
func (a *Agent) Turns() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastTurn
}

// OnPreStep adds a hook that runs before every step (see PreStepFunc); hooks run in the
// order they were added. The returned function removes it.
func (a *Agent) OnPreStep(fn PreStepFunc) (remove func()) {
	h := &preStepHook{fn: fn}
	a.mu.Lock()
	a.hooks = append(a.hooks, h)
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.hooks = slices.DeleteFunc(a.hooks, func(x *preStepHook) bool { return x == h })
	}
}

// Steer adds a user message to the next-step inbox: a running turn takes it at its next
// step boundary (and does not end while it waits, even if a tool concluded the turn); an
// idle agent takes it at the start of its next turn, before that turn's input. An empty
// source means {kind:"user"}.
func (a *Agent) Steer(m content.Message) {
	m = userMessage(m)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inbox = append(a.inbox, m)
}

// Pending returns copies of the messages waiting in the next-step inbox.
func (a *Agent) Pending() []content.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return content.CloneMessages(a.inbox)
}

// Close releases what the agent owns: the scope it created (undoing everything registered
// through it) and the log Resume opened. It does not stop a running turn; cancel its
// context first.
func (a *Agent) Close() error {
	if a.ownScope {
		a.scope.Close()
	}
	if a.ownLog {
		return a.log.Close()
	}
	return nil
}

// Run runs one turn for the user's text; see RunMessage.
func (a *Agent) Run(ctx context.Context, text string) (TurnResult, error) {
	return a.RunMessage(ctx, content.Message{Content: content.Texts(text)})
}

// RunMessage runs one turn whose input is m (a user-role message; an empty source means
// {kind:"user"}). It returns when the turn has ended and its turn/end is logged (and the
// log flushed). The error is non-nil when the turn ended "error" or "aborted" (it then
// wraps the model error, the cancellation cause or the failure) and when the turn could
// not be started or logged; "completed", "max-tokens" and "max-steps" turns return nil and
// say which in TurnResult.Reason. A context already cancelled starts no turn.
func (a *Agent) RunMessage(ctx context.Context, m content.Message) (TurnResult, error) {
	if ctx.Err() != nil {
		return TurnResult{}, fmt.Errorf("agent: turn not started: %w", context.Cause(ctx))
	}
	a.mu.Lock()
	if a.running {
		a.mu.Unlock()
		return TurnResult{}, errors.New("agent: a turn is already running")
	}
	a.running = true
	turn := a.lastTurn + 1
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.running = false
		a.mu.Unlock()
	}()
	if _, err := a.log.Append(session.TurnStart{Turn: turn}.Event()); err != nil {
		return TurnResult{}, fmt.Errorf("agent: log turn/start: %w", err)
	}
	a.mu.Lock()
	a.lastTurn = turn
	a.mu.Unlock()
	ctx, endTrace := a.traceTurn(ctx, turn)
	t := &turnRun{a: a, ctx: ctx, turn: turn}
	res, err := t.run(userMessage(m))
	if endTrace != nil {
		endTrace(res, err)
	}
	return res, err
}

// userMessage normalizes a message entering the history as user input.
func userMessage(m content.Message) content.Message {
	m = m.Clone()
	m.Role = content.RoleUser
	if m.ID == "" {
		m.ID = session.NewMessageID()
	}
	if m.Source == nil {
		m.Source = &content.Source{Kind: "user"}
	}
	return m
}

// claimInbox takes every message waiting in the inbox.
func (a *Agent) claimInbox() []content.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	msgs := a.inbox
	a.inbox = nil
	return msgs
}

// inboxEmpty reports whether no message waits for the next step.
func (a *Agent) inboxEmpty() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.inbox) == 0
}

func (a *Agent) now() time.Time {
	if a.cfg.Now != nil {
		return a.cfg.Now()
	}
	return time.Now()
}

// preStepHooks returns a snapshot of the hooks.
func (a *Agent) preStepHooks() []*preStepHook {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.hooks)
}
