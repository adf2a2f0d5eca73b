package codemode_test

import (
	"slices"

	"context"
	"errors"
	"fmt"
	"github.com/dsh-go/dsh/internal/testwait"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// fakeRuntime is an in-process coderuntime.Runtime whose "program" is a Go function: it
// calls the binding functions the way a real program would (sequentially, concurrently,
// with bad arguments, after the run settled …) and returns the run's result. Like every
// runtime it cancels the bindings' context when the program settles and waits for the
// binding calls it started before Run returns.
type fakeRuntime struct {
	lang string

	mu      sync.Mutex
	program func(p *program) (coderuntime.Result, error)
	runs    int
	last    *program
}

func (f *fakeRuntime) Language() string {
	if f.lang == "" {
		return "typescript"
	}
	return f.lang
}

func (f *fakeRuntime) Isolation() string { return "fake" }
func (f *fakeRuntime) Close() error      { return nil }

func (f *fakeRuntime) setProgram(fn func(p *program) (coderuntime.Result, error)) {
	f.mu.Lock()
	f.program = fn
	f.mu.Unlock()
}

func (f *fakeRuntime) Run(ctx context.Context, req coderuntime.Request) (coderuntime.Result, error) {
	if err := coderuntime.ValidateBindings(req.Bindings); err != nil {
		return coderuntime.Result{}, err
	}
	bctx, cancel := context.WithCancelCause(ctx)
	p := &program{ctx: ctx, bctx: bctx, req: req, fns: req.Bindings[0].Functions}
	f.mu.Lock()
	f.runs++
	f.last = p
	fn := f.program
	f.mu.Unlock()
	if fn == nil {
		fn = func(*program) (coderuntime.Result, error) { return coderuntime.Result{}, nil }
	}
	res, err := fn(p)
	cancel(errors.New("program settled"))
	p.wg.Wait()
	return res, err
}

func (f *fakeRuntime) lastProgram() *program {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// program is what a fake program sees.
type program struct {
	ctx  context.Context // the run's context
	bctx context.Context // the bindings' context, cancelled when the program settles
	req  coderuntime.Request
	fns  map[string]coderuntime.Func
	wg   sync.WaitGroup
}

// call calls a binding and waits for it, like `await tools.name(args)`.
func (p *program) call(name string, args any) (any, error) {
	fn, ok := p.fns[name]
	if !ok {
		return nil, fmt.Errorf("unknown binding %q", name)
	}
	return fn(p.bctx, args)
}

// message calls a binding and returns its value as text or its error message.
func (p *program) message(name string, args any) string {
	v, err := p.call(name, args)
	if err != nil {
		return "error: " + err.Error()
	}
	b, _ := jsonv.Marshal(v)
	return string(b)
}

// pending is a binding call in flight, like an un-awaited promise.
type pending struct {
	done  chan struct{}
	value any
	err   error
}

// spawn starts a binding call without waiting for it.
func (p *program) spawn(name string, args any) *pending {
	c := &pending{done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(c.done)
		c.value, c.err = p.call(name, args)
	}()
	return c
}

func (c *pending) wait() (any, error) {
	<-c.done
	return c.value, c.err
}

// recLog is a DispatchLog that records events in order.
type recLog struct {
	mu        sync.Mutex
	events    []logEvent
	failStart error
	failSet   error
}

type logEvent struct {
	kind   string // "start" or "settle"
	agent  *tool.Scope
	start  session.CodeDispatchStart
	settle session.CodeDispatch
}

func (l *recLog) Start(agent *tool.Scope, p session.CodeDispatchStart) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failStart != nil {
		return l.failStart
	}
	l.events = append(l.events, logEvent{kind: "start", agent: agent, start: p})
	return nil
}

func (l *recLog) Settle(agent *tool.Scope, p session.CodeDispatch) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failSet != nil {
		return l.failSet
	}
	l.events = append(l.events, logEvent{kind: "settle", agent: agent, settle: p})
	return nil
}

func (l *recLog) reset() {
	l.mu.Lock()
	l.events = nil
	l.mu.Unlock()
}

func (l *recLog) all() []logEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]logEvent(nil), l.events...)
}

// lines renders the events as "<type> <data JSON>", checking that each was recorded for
// agent.
func (l *recLog) lines(tb testing.TB, agent *tool.Scope) []string {
	tb.Helper()
	var out []string
	for _, e := range l.all() {
		if e.agent != agent {
			tb.Errorf("event recorded for scope %v, want %v", e.agent, agent)
		}
		ev := e.start.Event()
		if e.kind == "settle" {
			ev = e.settle.Event()
		}
		b, err := jsonv.Marshal(ev.Data)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, ev.Type+" "+string(b))
	}
	return out
}

// ids lists the sub-call ids of the events of kind.
func (l *recLog) ids(kind string) []string {
	var out []string
	for _, e := range l.all() {
		switch {
		case e.kind != kind:
		case kind == "start":
			out = append(out, e.start.SubCallID)
		default:
			out = append(out, e.settle.SubCallID)
		}
	}
	return out
}

// env is a registry with a fake runtime installed.
type env struct {
	reg   *tool.Registry
	rt    *fakeRuntime
	log   *recLog
	agent *tool.Scope
}

func newEnv(tb testing.TB, mode tool.Mode, cfg codemode.Config) *env {
	tb.Helper()
	reg, err := tool.NewRegistry(tool.Config{Mode: mode})
	if err != nil {
		tb.Fatal(err)
	}
	e := &env{reg: reg, rt: &fakeRuntime{}, log: &recLog{}}
	if cfg.Log == nil {
		cfg.Log = e.log
	}
	undo, err := codemode.Install(reg, e.rt, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(undo)
	e.agent = reg.NewScope("agent", nil)
	return e
}

// runner returns the installed Runner.
func (e *env) runner() *codemode.Runner { return e.reg.CodeRunner().(*codemode.Runner) }

// run executes run_code through the whole pipeline as the loop would, for agent (nil: a
// direct call).
func (e *env) run(ctx context.Context, agent *tool.Scope, code string) *tool.Result {
	return e.reg.Execute(ctx, tool.Input{
		CallID: "call-1",
		Name:   tool.RunCodeName,
		Args:   jsonv.NewObject(jsonv.Member{Name: "code", Value: code}, jsonv.Member{Name: "description", Value: "Run the test program"}),
		Agent:  agent,
	})
}

func (e *env) register(tb testing.TB, def *tool.Definition, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := e.reg.Register(def); err != nil {
		tb.Fatal(err)
	}
}

type echoIn struct {
	Value string `json:"value"`
}

// echo registers a typed tool that returns "<name>:<value>" and records its arguments.
func (e *env) echo(tb testing.TB, name string) *calls {
	c := &calls{}
	def, err := tool.New(name, "Echo tool "+name+".", func(_ context.Context, _ *tool.Call, in echoIn) (string, error) {
		c.add(in.Value)
		return name + ":" + in.Value, nil
	})
	e.register(tb, def, err)
	return c
}

// calls records what a tool body saw.
type calls struct {
	mu   sync.Mutex
	seen []string
}

func (c *calls) add(s string) {
	c.mu.Lock()
	c.seen = append(c.seen, s)
	c.mu.Unlock()
}

func (c *calls) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

type idIn struct {
	ID string `json:"id"`
}

// gatedTool is a tool whose calls block until the test releases them (or their context is
// cancelled), recording their order and overlap.
type gatedTool struct {
	onStart func(id string) // set before the run; called as each call starts
	mu      sync.Mutex
	order   []string
	waiting map[string]chan struct{}
	live    int
	peak    int
	aborted int
}

func (e *env) gated(tb testing.TB, name string, safe bool) *gatedTool {
	g := &gatedTool{waiting: map[string]chan struct{}{}}
	var opts []tool.Option
	if safe {
		opts = append(opts, tool.ConcurrencySafe())
	}
	def, err := tool.New(name, "Gated tool "+name+".", func(ctx context.Context, _ *tool.Call, in idIn) (string, error) {
		gate := make(chan struct{})
		g.mu.Lock()
		g.order = append(g.order, "start:"+in.ID)
		if g.onStart != nil {
			g.onStart(in.ID)
		}
		g.waiting[in.ID] = gate
		g.live++
		g.peak = max(g.peak, g.live)
		g.mu.Unlock()
		select {
		case <-gate:
		case <-ctx.Done():
			g.mu.Lock()
			g.aborted++
			g.mu.Unlock()
		}
		g.mu.Lock()
		g.live--
		delete(g.waiting, in.ID)
		g.order = append(g.order, "end:"+in.ID)
		g.mu.Unlock()
		return name + ":" + in.ID, nil
	}, opts...)
	e.register(tb, def, err)
	return g
}

// pending returns how many calls are blocked.
func (g *gatedTool) pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiting)
}

func (g *gatedTool) release(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ch, ok := g.waiting[id]; ok {
		close(ch)
		delete(g.waiting, id)
	}
}

func (g *gatedTool) releaseAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, ch := range g.waiting {
		close(ch)
		delete(g.waiting, id)
	}
}

func (g *gatedTool) snapshot() (order []string, peak, aborted int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.order...), g.peak, g.aborted
}

// waitFor polls cond until it holds, failing the test when the wait outlasts its deadline.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	testwait.Until(tb, what, cond)
}

// idleProbe records each state in which a run's lane driver went idle: the calls it left
// pending (not started) and settled (awaiting an earlier call's commit).
type idleProbe struct {
	mu     sync.Mutex
	states [][2][]string
}

func (e *env) probeIdle() *idleProbe {
	p := &idleProbe{}
	codemode.SetIdleHook(e.runner(), func(pending, settled []string) {
		p.mu.Lock()
		p.states = append(p.states, [2][]string{pending, settled})
		p.mu.Unlock()
	})
	return p
}

// seen reports whether the driver went idle with id pending (settled false) or settled.
func (p *idleProbe) seen(id string, settled bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := 0
	if settled {
		i = 1
	}
	for _, st := range p.states {
		if slices.Contains(st[i], id) {
			return true
		}
	}
	return false
}

// declined shows that the lane decided against something: it waits until the driver went
// idle leaving call id pending (or, with settled, settled but uncommitted), or until
// happened reports the thing that must not happen, and fails the test if it did happen.
// No wall-clock pause is involved: the driver going idle is the decision.
func (p *idleProbe) declined(tb testing.TB, what, id string, settled bool, happened func() bool) {
	tb.Helper()
	waitFor(tb, "the lane to leave "+id+" waiting", func() bool { return happened() || p.seen(id, settled) })
	if happened() {
		tb.Fatalf("%s happened", what)
	}
}

func obj(kv ...any) *jsonv.Object {
	o := &jsonv.Object{}
	for i := 0; i < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1])
	}
	return o
}

func text(res *tool.Result) string {
	var parts []string
	for _, b := range res.Content {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "")
}

func value(tb testing.TB, res *tool.Result) string {
	tb.Helper()
	if res.IsError {
		tb.Fatalf("run_code failed: %s", res.Error.Message)
	}
	b, err := jsonv.Marshal(res.Value)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func ok(v any) (coderuntime.Result, error) {
	if v == nil {
		return coderuntime.Result{Logs: []string{}}, nil
	}
	s, err := jsonv.Snapshot(v)
	if err != nil {
		return coderuntime.Result{}, err
	}
	return coderuntime.Result{Logs: []string{}, Value: s, HasValue: true}, nil
}

func mustRunner(tb testing.TB, reg *tool.Registry, rt coderuntime.Runtime) *codemode.Runner {
	tb.Helper()
	r, err := codemode.New(reg, rt, codemode.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
