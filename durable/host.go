package durable

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// HostConfig is what a worker serves.
type HostConfig struct {
	// Registry runs the tool calls: its pre-execute hooks, approval and guards run in the
	// workflow (they must be deterministic: decisions from the call and the configuration
	// only), its bodies, around- and post-execute stages in the tool activity. Required.
	Registry *tool.Registry
	// Scope is the agent scope every session's calls are made for. Nil gives each session
	// a top-level scope of its own on this worker (created on first use, closed by Close),
	// so that per-agent state, such as the repeat reminder's, does not leak between the
	// sessions a worker serves.
	Scope *tool.Scope
	// Store keeps the session logs; required on a worker that serves session queues.
	Store session.Store
	// Results is the directory where tool results are kept by call id (the idempotency
	// record and the spill store for large results). Workers that share sessions must share
	// it. Required.
	Results string
	// Model answers the model requests; nil means this worker serves tools only.
	Model llm.Model
	// System is the system prompt of every model request.
	System string
	// MaxTokens caps each reply (0 leaves it to the server).
	MaxTokens int
	// SpillThreshold is the encoded result size above which a result passes by reference
	// (default DefaultSpillThreshold).
	SpillThreshold int
	// KeepApprover leaves the registry's own approval service in place (one that answers
	// by policy, such as full-auto's); by default the host installs the workflow's, which
	// waits for an UpdateApprove answer.
	KeepApprover bool
	// HeartbeatInterval is how often a running tool activity reports that it is alive, and
	// so how soon it learns of a cancellation (default one second).
	HeartbeatInterval time.Duration
	// MaxOpenLogs bounds the session logs kept open between activities (each holds a file,
	// its events in memory and a writer goroutine), so a long-lived worker's footprint does
	// not grow with every session it has served. Beyond it, the logs idle longest whose
	// last turn has ended are closed; they are reopened when their session goes on. Default
	// DefaultMaxOpenLogs.
	MaxOpenLogs int
}

// DefaultMaxOpenLogs is HostConfig.MaxOpenLogs's default.
const DefaultMaxOpenLogs = 256

// Host serves the session workflow and its activities on a Temporal worker.
type Host struct {
	cfg HostConfig

	mu       sync.Mutex
	logs     map[string]*openLog
	tick     uint64                 // advances on every release: the logs' recency
	closeErr []error                // errors closing logs to keep within MaxOpenLogs, for Close
	scopes   map[string]*tool.Scope // by session id, when cfg.Scope is nil

	leaseWait time.Duration // between two attempts to take a held session (waitLog)
	waiting   func()        // called before each such pause (tests)
}

// openLog is a session log the host holds, opened once however many activities of the
// session ask for it at the same time.
type openLog struct {
	ready chan struct{} // closed when w or err is set
	w     session.Writer
	err   error
	refs  int    // activities using the log; it is closed only at zero
	used  uint64 // the host's tick at the last release
}

// NewHost checks cfg and returns a host; Close closes the session logs it opened.
func NewHost(cfg HostConfig) (*Host, error) {
	if cfg.Registry == nil {
		return nil, errors.New("durable: HostConfig.Registry is required")
	}
	if cfg.Results == "" {
		return nil, errors.New("durable: HostConfig.Results is required")
	}
	if cfg.SpillThreshold <= 0 {
		cfg.SpillThreshold = DefaultSpillThreshold
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = time.Second
	}
	if cfg.MaxOpenLogs <= 0 {
		cfg.MaxOpenLogs = DefaultMaxOpenLogs
	}
	h := &Host{cfg: cfg, logs: map[string]*openLog{}, scopes: map[string]*tool.Scope{}, leaseWait: time.Second, waiting: func() {}}
	if !cfg.KeepApprover {
		cfg.Registry.SetApprover(workflowApprover{})
	}
	return h, nil
}

// Registrar is where Register registers: a worker.Worker, or a test environment.
type Registrar interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers the workflow and the activities on w.
func (h *Host) Register(w Registrar) {
	w.RegisterWorkflowWithOptions(h.Session, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterActivityWithOptions(h.Open, activity.RegisterOptions{Name: activityOpen})
	w.RegisterActivityWithOptions(h.Append, activity.RegisterOptions{Name: activityAppend})
	w.RegisterActivityWithOptions(h.Model, activity.RegisterOptions{Name: activityModel})
	w.RegisterActivityWithOptions(h.Tool, activity.RegisterOptions{Name: activityTool})
}

// scope returns the agent scope of a session's calls.
func (h *Host) scope(sessionID string) *tool.Scope {
	if h.cfg.Scope != nil {
		return h.cfg.Scope
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.scopes[sessionID]
	if !ok {
		s = h.cfg.Registry.NewScope("durable:"+sessionID, nil)
		h.scopes[sessionID] = s
	}
	return s
}

// Close flushes and closes every session log the host holds open, closes the sessions'
// scopes, and reports any error closing a log earlier to stay within MaxOpenLogs.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, s := range h.scopes {
		s.Close()
		delete(h.scopes, id)
	}
	errs := h.closeErr
	h.closeErr = nil
	for id, e := range h.logs {
		if e.w != nil {
			if err := e.w.Close(); err != nil {
				errs = append(errs, fmt.Errorf("durable: close session %q: %w", id, err))
			}
		}
		delete(h.logs, id)
	}
	return errors.Join(errs...)
}

// OpenInput is the argument of the open activity.
type OpenInput struct {
	SessionID, Workspace string
}

// OpenOutput reports the log's next seq and last turn.
type OpenOutput struct {
	NextSeq int64
	Turn    int
}

// Open creates the session log, or opens an existing one for appending, and reports where
// it stands.
func (h *Host) Open(ctx context.Context, in OpenInput) (OpenOutput, error) {
	l, release, err := h.log(ctx, in.SessionID, in.Workspace, true)
	if err != nil {
		return OpenOutput{}, err
	}
	defer release()
	out := OpenOutput{NextSeq: int64(l.Len())}
	for _, e := range l.Events() {
		if e.Type == session.TypeTurnStart {
			if p, err := session.DecodeTurnStart(e); err == nil {
				out.Turn = p.Turn
			}
		}
	}
	return out, nil
}

// log returns the open log of a session and the function that gives it back when the
// activity is done with it. With create (the workflow's open) it creates the session, or
// resumes it with recovery; without, it reopens it without recovery. Sessions open in
// parallel: the host's lock is not held while a store loads a log.
func (h *Host) log(ctx context.Context, id, workspace string, create bool) (session.Writer, func(), error) {
	if h.cfg.Store == nil {
		return nil, nil, temporal.NewNonRetryableApplicationError("durable: this worker has no session store", "NoStore", nil)
	}
	h.mu.Lock()
	e, ok := h.logs[id]
	if !ok {
		e = &openLog{ready: make(chan struct{})}
		h.logs[id] = e
	}
	e.refs++
	h.mu.Unlock()
	release := func() { h.release(e) }
	if ok {
		select {
		case <-e.ready:
		case <-ctx.Done():
			release()
			return nil, nil, ctx.Err()
		}
		if e.err != nil {
			release()
			return nil, nil, e.err
		}
		return e.w, release, nil
	}
	// Opening a session for a new workflow closes a turn an earlier run left open (recovery,
	// as in process); any later open takes over from a crashed session worker mid-turn: the
	// workflow owns that turn and writes its remaining events at the seqs it expects, so the
	// log is reopened as it stands.
	reopen := h.cfg.Store.Reopen
	if create {
		reopen = h.cfg.Store.Resume
	}
	l, err := reopen(ctx, id)
	if errors.Is(err, session.ErrNotFound) && create {
		l, err = h.cfg.Store.Create(ctx, session.Header{ID: id, Cwd: workspace})
	}
	if err != nil {
		e.err = fmt.Errorf("durable: open session %q: %w", id, err)
		h.mu.Lock()
		delete(h.logs, id) // the next activity of the session tries again
		h.mu.Unlock()
		close(e.ready)
		release()
		return nil, nil, e.err
	}
	e.w = l
	close(e.ready)
	return l, release, nil
}

// release gives back a log log returned. When the host holds more than MaxOpenLogs logs, it
// closes those no activity is using whose last turn has ended, least recently used first.
// A log with a turn still open stays: reopening it would run the store's crash recovery.
func (h *Host) release(e *openLog) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e.refs--
	h.tick++
	e.used = h.tick
	if len(h.logs) <= h.cfg.MaxOpenLogs {
		return
	}
	var idle []string
	for id, o := range h.logs {
		if o.refs == 0 && o.w != nil && atRest(o.w) {
			idle = append(idle, id)
		}
	}
	slices.SortFunc(idle, func(a, b string) int { return cmp.Compare(h.logs[a].used, h.logs[b].used) })
	for _, id := range idle[:min(len(idle), len(h.logs)-h.cfg.MaxOpenLogs)] {
		if err := h.logs[id].w.Close(); err != nil {
			h.closeErr = append(h.closeErr, fmt.Errorf("durable: close idle session %q: %w", id, err))
		}
		delete(h.logs, id)
	}
}

// atRest reports whether a log can be closed and reopened without change: it exists in the
// store, every event is on stable storage, and its last turn has ended.
func atRest(l session.Writer) bool {
	n := l.Len()
	if n == 0 || l.Durable() != n {
		return false
	}
	return l.Events()[n-1].Type == session.TypeTurnEnd
}

// waitLog returns a session's log for a model request, waiting while another writer holds
// the session: after a session worker crashed, its PostgreSQL lease lapses only after the
// lease's time to live, and the request (heartbeating meanwhile) would otherwise use up its
// few attempts before then. It gives up when ctx ends.
func (h *Host) waitLog(ctx context.Context, id string) (session.Writer, func(), error) {
	for {
		l, release, err := h.log(ctx, id, "", false)
		if !errors.Is(err, session.ErrConflict) {
			return l, release, err
		}
		h.waiting()
		t := time.NewTimer(h.leaseWait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("%w (gave up waiting: %v)", err, context.Cause(ctx))
		}
	}
}

// AppendInput is the argument of the append activity: events that must land at seq Expect
// and after.
type AppendInput struct {
	SessionID string
	Expect    int64
	Events    []LogEvent
}

// Append appends events to the session log durably and returns their seqs. It is
// idempotent: when the log already holds events of the same types at Expect (a retry after
// a lost reply), it returns their seqs without appending again.
func (h *Host) Append(ctx context.Context, in AppendInput) ([]int64, error) {
	l, release, err := h.log(ctx, in.SessionID, "", false)
	if err != nil {
		return nil, err
	}
	defer release()
	evs := make([]session.Event, len(in.Events))
	for i, le := range in.Events {
		if evs[i], err = h.event(le); err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), "BadEvent", nil)
		}
	}
	seqs, err := appendAt(l, in.Expect, evs)
	if err != nil {
		return nil, err
	}
	return seqs, nil
}

// appendAt appends evs at seq expect, or returns the seqs of the same events already there.
func appendAt(l session.Writer, expect int64, evs []session.Event) ([]int64, error) {
	n := int64(l.Len())
	seqs := make([]int64, len(evs))
	if n > expect {
		have := l.Events()
		for i, e := range evs {
			at := expect + int64(i)
			if at >= n || have[at].Type != e.Type {
				return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
					"durable: session %q diverged from its workflow: seq %d holds %d events, the workflow expected %d", l.Header().ID, expect, n, expect), "LogDiverged", nil)
			}
			seqs[i] = at
		}
		return seqs, nil
	}
	if n < expect {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"durable: session %q has %d events, the workflow expected %d", l.Header().ID, n, expect), "LogDiverged", nil)
	}
	for i, e := range evs {
		out, err := l.AppendDurable(e)
		if err != nil {
			return nil, fmt.Errorf("durable: append %s to session %q: %w", e.Type, l.Header().ID, err)
		}
		seqs[i] = out.Seq
	}
	return seqs, nil
}

// event builds the session event of le, with a result passed by reference read back from
// the result store.
func (h *Host) event(le LogEvent) (session.Event, error) {
	switch le.Kind {
	case session.TypeAssistantMessage:
		return session.Event{}, fmt.Errorf("durable: cannot log an event of kind %q: the model activity appends it", le.Kind)
	case session.TypeToolResult:
		if le.Outcome != nil && le.Outcome.Ref != "" {
			o, err := h.loadRef(le.Outcome.Ref)
			if err != nil {
				return session.Event{}, err
			}
			le.Outcome = &o
		}
	}
	return le.Event()
}

// ModelInput asks for one model request of a step; its assistant/message lands at Expect.
type ModelInput struct {
	SessionID  string
	Turn, Step int
	Expect     int64
}

// ModelOutput is the step's reply: the calls in model order and the reply's text.
type ModelOutput struct {
	Seq   int64
	Calls []Call
	Text  string
}

// Model sends the session's history to the model and appends the reply as the step's
// assistant/message. A retry after the reply was logged returns the logged reply instead of
// asking again.
func (h *Host) Model(ctx context.Context, in ModelInput) (ModelOutput, error) {
	if h.cfg.Model == nil {
		return ModelOutput{}, temporal.NewNonRetryableApplicationError("durable: this worker has no model", "NoModel", nil)
	}
	stop := h.heartbeat(ctx)
	defer stop()
	l, release, err := h.waitLog(ctx, in.SessionID)
	if err != nil {
		return ModelOutput{}, err
	}
	defer release()
	events := l.Events()
	if int64(len(events)) > in.Expect {
		if events[in.Expect].Type != session.TypeAssistantMessage {
			return ModelOutput{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"durable: session %q holds %s at seq %d where the model's reply belongs", in.SessionID, events[in.Expect].Type, in.Expect), "LogDiverged", nil)
		}
		p, err := session.DecodeAssistantMessage(events[in.Expect])
		if err != nil {
			return ModelOutput{}, err
		}
		return replyOf(in.Expect, p.Message), nil
	}
	msgs, err := session.DeriveMessages(events)
	if err != nil {
		return ModelOutput{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("durable: derive the history of session %q: %v", in.SessionID, err), "BadLog", nil)
	}
	schemas, _, err := h.cfg.Registry.WireTools(h.scope(in.SessionID))
	if err != nil {
		return ModelOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), "BadTools", nil)
	}
	req := llm.Request{System: h.cfg.System, Messages: msgs, MaxTokens: h.cfg.MaxTokens, Attachments: l.Attachments()}
	for _, s := range schemas {
		req.Tools = append(req.Tools, llm.ToolSchema{Name: s.Name, Description: s.Description, Parameters: s.Parameters, Strict: s.Strict})
	}
	resp, err := llm.Generate(ctx, h.cfg.Model, req)
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) && !le.Retryable() {
			return ModelOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), le.Code, err)
		}
		return ModelOutput{}, err
	}
	ev, err := l.AppendDurable(session.AssistantMessage{Turn: in.Turn, Step: in.Step, Message: resp.Message}.Event())
	if err != nil {
		return ModelOutput{}, fmt.Errorf("durable: append the reply of turn %d step %d: %w", in.Turn, in.Step, err)
	}
	return replyOf(ev.Seq, resp.Message), nil
}

func replyOf(seq int64, m content.Message) ModelOutput {
	out := ModelOutput{Seq: seq}
	for _, b := range m.Content {
		switch b.Type {
		case content.TypeToolCall:
			out.Calls = append(out.Calls, Call{ID: b.ID, Name: b.Name, RawArgs: b.Arguments})
		case content.TypeText:
			out.Text += b.Text
		}
	}
	return out
}

// ToolInput is one admitted tool call.
type ToolInput struct {
	SessionID  string
	Turn, Step int
	Call       Call
}

// Tool runs an admitted call's body with its around- and post-execute stages and returns
// the final result. The call id is the idempotency key: a result already recorded for it
// (the activity ran before and its reply was lost) is returned without running the body
// again. While the body runs, the activity heartbeats, so a cancelled workflow cancels the
// body and the result is ABORTED as in process.
func (h *Host) Tool(ctx context.Context, in ToolInput) (Outcome, error) {
	key := resultKey(in.SessionID, in.Turn, in.Step, in.Call.ID)
	if o, err := h.loadRef(key); err == nil {
		return h.reply(key, o)
	} else if !errors.Is(err, os.ErrNotExist) {
		return Outcome{}, err
	}
	stop := h.heartbeat(ctx)
	reg := h.cfg.Registry
	inv := reg.PrepareAdmitted(ctx, tool.Input{CallID: in.Call.ID, Name: in.Call.Name, Args: reg.ParseArguments(in.Call.RawArgs), OwnArgs: true, Agent: h.scope(in.SessionID)})
	if inv.NeedsDispatch() {
		inv.Dispatch()
	}
	res := inv.Finalize()
	stop()
	o, err := outcomeOf(res)
	if err != nil {
		return Outcome{}, temporal.NewNonRetryableApplicationError(err.Error(), "BadResult", nil)
	}
	if err := h.storeRef(key, o); err != nil {
		return Outcome{}, err
	}
	return h.reply(key, o)
}

// reply returns o inline, or by reference when it is larger than the spill threshold.
func (h *Host) reply(key string, o Outcome) (Outcome, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return Outcome{}, err
	}
	if len(b) > h.cfg.SpillThreshold {
		return Outcome{IsError: o.IsError, ConcludesTurn: o.ConcludesTurn, Contexts: o.Contexts, Ref: key}, nil
	}
	return o, nil
}

// heartbeat reports the activity alive until the returned function is called.
func (h *Host) heartbeat(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(h.cfg.HeartbeatInterval)
		defer t.Stop()
		activity.RecordHeartbeat(ctx)
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// resultKey is the file name of a call's recorded result: the call id within its session,
// turn and step (a model may reuse a call id in a later step).
func resultKey(sessionID string, turn, step int, callID string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d\x00%s", sessionID, turn, step, callID)))
	return hex.EncodeToString(sum[:16]) + ".json"
}

// storeRef records a call's result under key, atomically.
func (h *Host) storeRef(key string, o Outcome) error {
	if err := os.MkdirAll(h.cfg.Results, 0o700); err != nil {
		return fmt.Errorf("durable: result store %q: %w", h.cfg.Results, err)
	}
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	path := filepath.Join(h.cfg.Results, key)
	tmp, err := os.CreateTemp(h.cfg.Results, ".tmp-*")
	if err != nil {
		return fmt.Errorf("durable: record result %q: %w", path, err)
	}
	_, werr := tmp.Write(b)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("durable: record result %q: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("durable: record result %q: %w", path, err)
	}
	return nil
}

// loadRef reads a recorded result.
func (h *Host) loadRef(key string) (Outcome, error) {
	if filepath.Base(key) != key {
		return Outcome{}, fmt.Errorf("durable: bad result reference %q", key)
	}
	b, err := os.ReadFile(filepath.Join(h.cfg.Results, key))
	if err != nil {
		return Outcome{}, err
	}
	var o Outcome
	if err := json.Unmarshal(b, &o); err != nil {
		return Outcome{}, fmt.Errorf("durable: recorded result %q: %w", key, err)
	}
	return o, nil
}
