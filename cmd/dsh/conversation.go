package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/internal/projectdoc"
	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/openai"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// convOptions says which session a conversation continues and how it is shown.
type convOptions struct {
	config    *loadedConfig
	workspace string
	model     llm.Model
	banner    string // says which model answers; the first line of the transcript
	// resume is a session id or unique prefix to continue; continueLast continues the
	// workspace's most recently active session instead; neither starts a new one.
	resume       string
	continueLast bool
	// moveHere allows continuing a session that last ran in another directory: its tools
	// then work in workspace, and the move is logged.
	moveHere  bool
	json      bool              // events as JSON lines on standard output, no transcript
	prompter  approval.Prompter // nil: the terminal when there is one
	noPrompt  bool              // never ask a person
	maxTokens int               // cap on each reply, 0 for the server's default
	// showHistory renders a resumed session's earlier turns before the first new one.
	showHistory bool
	// typedInput says the user's messages are on the screen already (the chat's prompt
	// line), so the live transcript does not repeat them.
	typedInput bool
	// tools are registered for this conversation only (the demo's own).
	tools []*tool.Definition
	// approval is the approval preset (--approval), "" for none.
	approval string
	// approveFromWeb answers approval questions from the session viewer and dsh approve,
	// through the session's socket under the dsh home, instead of the terminal.
	approveFromWeb bool
}

// conversation is an open session with the governed tool set and an agent over it: "dsh
// run" drives one turn through it, the chat loop many.
type conversation struct {
	e     *env
	opts  convOptions
	store session.Store
	flog  session.Writer
	id    string
	isNew bool // the session was created by this conversation
	log   *teeLog
	rt    *runtime
	tr    *transcript
	a     *agent.Agent
	r     term.Renderer
	live  bool
	model llm.Model
	// instructions are the project's AGENTS.md files, read once when the conversation
	// opens (edits apply to the next conversation, as in Codex).
	instructions projectdoc.Doc

	// What the log holds, kept current by observe.
	hasContent bool   // an assistant message or a tool call was logged
	lastEnd    string // the kind of the last turn/end
	usage      usageSum
	turnUsage  usageSum // the usage of the current (or last) turn
	// restoreMode undoes the presentation mode set by setMode (nil: none set).
	restoreMode func()
	emit        func(session.Event)
}

// errNoSession reports a session id that names no stored session.
func errNoSession(store session.Store, id string) error {
	return fmt.Errorf("no session %q in %s (list them with \"dsh session ls\")", id, store.Root())
}

// resolveID turns a session id or unique prefix into the stored session's id.
func resolveID(ctx context.Context, store session.Store, id string) (string, error) {
	full, err := store.Resolve(ctx, id)
	if errors.Is(err, session.ErrNotFound) {
		return "", errNoSession(store, id)
	}
	return full, err
}

// lastSession returns the id of the session of workspace that was active last ("" when it
// has none).
func lastSession(ctx context.Context, store session.Store, workspace string) (string, error) {
	sums, err := listSessions(ctx, store)
	if err != nil {
		return "", err
	}
	best := -1
	for i, s := range sums {
		if s.err == nil && s.sum.Cwd == workspace && (best < 0 || s.sum.Updated >= sums[best].sum.Updated) {
			best = i
		}
	}
	if best < 0 {
		return "", nil
	}
	return sums[best].info.Header.ID, nil
}

// openConversation opens (or creates) the session opts name, assembles the runtime and the
// agent, and prints the banner. A new session's directory is checked for writing first,
// so that an unwritable store fails before any model is called.
func openConversation(ctx context.Context, e *env, opts convOptions) (_ *conversation, err error) {
	c := opts.config
	store, err := openStore(ctx, c)
	if err != nil {
		return nil, err
	}
	cv := &conversation{e: e, opts: opts, store: store, model: opts.model}
	defer func() {
		if err != nil {
			cv.close(false)
		}
	}()
	doc, err := projectdoc.Load(opts.workspace, 0)
	if err != nil {
		return nil, err
	}
	cv.instructions = doc
	id := opts.resume
	switch {
	case opts.resume != "" && opts.continueLast:
		return nil, &usageError{"--resume and --continue exclude each other"}
	case opts.resume != "":
		if id, err = resolveID(ctx, store, opts.resume); err != nil {
			return nil, err
		}
	case opts.continueLast:
		if id, err = lastSession(ctx, store, opts.workspace); err != nil {
			return nil, err
		}
		if id == "" {
			return nil, fmt.Errorf("no earlier session in %s to continue (dsh session ls --all lists every workspace's)", opts.workspace)
		}
	}
	var earlier []session.Event
	var moveFrom string
	if id != "" {
		l, err := store.Load(ctx, id)
		if err != nil {
			return nil, err
		}
		if l.Header.Client != "" {
			return nil, fmt.Errorf("session %s records the tool calls of %s, not a conversation: there is nothing to continue (see it with \"dsh session show %s\")", id, l.Header.Client, id)
		}
		if ran := session.Summarize(l.Header, l.Events).Cwd; ran != opts.workspace {
			if !opts.moveHere {
				return nil, fmt.Errorf("session %s ran in %s, not here (%s): continue it from there, or pass --cd to continue it here, where its tools will work from now on", id, ran, opts.workspace)
			}
			moveFrom = ran
		}
		if cv.flog, err = store.Resume(ctx, id); err != nil {
			return nil, err
		}
		earlier = cv.flog.Events()
	} else {
		if err := store.CheckWritable(opts.workspace); err != nil {
			return nil, err
		}
		if cv.flog, err = store.Create(ctx, session.Header{Cwd: opts.workspace}); err != nil {
			return nil, err
		}
		cv.isNew = true
	}
	cv.id = cv.flog.Header().ID
	for _, ev := range earlier {
		cv.observe(ev)
	}

	// The transcript goes to standard error; with --json only the events, to standard output.
	cv.r = term.For(e.stderr, e.getenv)
	cv.live = !opts.json && term.IsTerminal(e.stderr)
	cv.log = &teeLog{Log: cv.flog, fn: func(ev session.Event) {
		cv.observe(ev)
		if cv.emit != nil && !(opts.typedInput && !opts.json && typedMessage(ev)) {
			cv.emit(ev)
		}
	}}
	prompter := opts.prompter
	if opts.approveFromWeb {
		ch, err := webApprovals(e, c.home, cv.flog.Header().ID)
		if err != nil {
			return nil, err
		}
		defer func() {
			if cv.rt == nil {
				ch.Close() // the runtime, which closes its prompter, was not made
			}
		}()
		prompter = ch
	}
	if prompter == nil && !opts.noPrompt && !opts.json {
		prompter = terminalPrompter(e, c, stderrFile(e))
	}
	// The terminal prompter and the chat's show the question and the answer themselves.
	prompting := false
	switch prompter.(type) {
	case *approval.Terminal, *chatPrompter:
		prompting = true
	}
	// A question pauses the live status region while it is on the screen.
	var holder *holdingPrompter
	if prompter != nil {
		holder = &holdingPrompter{inner: prompter}
		prompter = holder
	}
	cv.rt, err = newRuntime(ctx, runtimeConfig{Workspace: opts.workspace, Mode: c.Mode, Config: c.Config, Log: cv.log, Prompter: prompter, Session: cv.id,
		Approval: opts.approval, RunsCode: true, MCPLog: sessionMCPLog(c, cv.flog),
		MCPDepth: mcp.Depth(e.getenv), Stderr: e.stderr, Attachments: cv.flog.Attachments(), ImageRefusal: imageRefusal(cv.model)})
	if err != nil {
		return nil, err
	}
	for _, def := range opts.tools {
		if _, err := cv.rt.reg.Register(def); err != nil {
			return nil, err
		}
	}
	cv.tr = newTranscript(e.stderr, cv.r, cv.live, cv.rt.reg)
	cv.tr.model = cv.model.Name()
	cv.tr.prompting = prompting
	if holder != nil {
		holder.setStatus(cv.tr.out)
	}
	// The banner (which model, which session) always goes to standard error, so even
	// --json output says when its model is a script.
	fmt.Fprintln(e.stderr, cv.r.Dim(term.Sanitize(opts.banner+" · session "+cv.id)))
	if opts.showHistory && len(earlier) > 0 && !opts.json {
		for _, ev := range earlier {
			cv.tr.event(ev)
		}
	}
	if moveFrom != "" {
		fmt.Fprintln(e.stderr, cv.r.Yellow(term.Sanitize(fmt.Sprintf("session %s moves from %s to %s", cv.id, moveFrom, opts.workspace))))
	}
	if opts.json {
		cv.emit = jsonLines(e.stdout)
	} else {
		cv.emit = cv.tr.event
	}
	if moveFrom != "" {
		if _, err := cv.log.AppendDurable(session.WorkspaceMoved{From: moveFrom, To: opts.workspace}.Event()); err != nil {
			return nil, fmt.Errorf("session log: %w", err)
		}
	}
	if err := cv.newAgent(); err != nil {
		return nil, err
	}
	return cv, nil
}

// typedMessage reports whether an event is a message the user typed.
func typedMessage(ev session.Event) bool {
	if ev.Type != session.TypeUserMessage {
		return false
	}
	p, err := session.DecodeUserMessage(ev)
	return err == nil && (p.Message.Source == nil || p.Message.Source.Kind == "" || p.Message.Source.Kind == "user")
}

// newAgent (re)creates the agent over the conversation's log, with its current model.
func (cv *conversation) newAgent() error {
	var mode tool.Mode
	if cv.a != nil {
		mode = cv.rt.reg.ModeFor(cv.a.Scope())
		cv.a.Close()
		cv.a, cv.restoreMode = nil, nil
	}
	obs := agent.Observer{}
	if !cv.opts.json {
		obs.StepStart = func(int, int) { cv.tr.stepStart() }
		obs.ReasoningDelta = cv.tr.reasoningDelta
		obs.TextDelta = cv.tr.textDelta
	}
	c := cv.opts.config
	a, err := agent.New(agent.Config{
		Registry:             cv.rt.reg,
		Model:                cv.rt.tracing.Model(cv.model),
		Tracer:               cv.rt.tracing.TurnTracer(cv.id),
		Log:                  cv.log,
		Workspace:            cv.opts.workspace,
		PromptSections:       append(cv.rt.promptSections(), cv.instructionSection()),
		ToolOrder:            c.ToolOrder,
		MaxParallelToolCalls: c.MaxParallelToolCalls,
		MaxSteps:             c.MaxSteps,
		MaxTokens:            cv.opts.maxTokens,
		Attachments:          cv.flog.Attachments(),
		Observer:             obs,
	})
	if err != nil {
		return err
	}
	cv.a = a
	cv.rt.attach(a)
	if mode != "" {
		if err := cv.setMode(mode); err != nil {
			return err
		}
	}
	cv.tr.model = cv.model.Name()
	return nil
}

// setMode presents the tools to the agent in mode from the next step on.
func (cv *conversation) setMode(mode tool.Mode) error {
	if cv.restoreMode != nil {
		cv.restoreMode()
		cv.restoreMode = nil
	}
	if mode == cv.rt.reg.ModeFor(cv.a.Scope()) {
		return nil
	}
	restore, err := cv.a.Scope().PresentAs(mode)
	if err != nil {
		return err
	}
	cv.restoreMode = restore
	return nil
}

// instructionSection adds the project's AGENTS.md files to the system prompt, after the
// environment and before the tools' sections.
func (cv *conversation) instructionSection() agent.PromptSectionFunc {
	text := cv.instructions.Text
	return func(context.Context, agent.PromptInfo) ([]agent.PromptSection, error) {
		if text == "" {
			return nil, nil
		}
		return []agent.PromptSection{{Name: "project:instructions", Order: orderInstructions, Text: instructionsPreamble + text}}, nil
	}
}

// orderInstructions places the project instructions after the environment section.
const orderInstructions = agent.OrderEnvironment + 10

// instructionsPreamble introduces the AGENTS.md files in the system prompt.
const instructionsPreamble = "The project gives these instructions in AGENTS.md files, the repository root's first and the workspace's last; where they disagree, the later file wins.\n\n"

// observe keeps the conversation's view of its log current.
func (cv *conversation) observe(ev session.Event) {
	switch ev.Type {
	case session.TypeTurnStart:
		cv.turnUsage = usageSum{}
	case session.TypeAssistantMessage, session.TypeToolCall:
		cv.hasContent = true
		if ev.Type == session.TypeAssistantMessage {
			if p, err := session.DecodeAssistantMessage(ev); err == nil && p.Usage != nil {
				cv.usage.add(p.Usage)
				cv.turnUsage.add(p.Usage)
			}
		}
	case session.TypeTurnEnd:
		if p, err := session.DecodeTurnEnd(ev); err == nil {
			cv.lastEnd = p.Reason.Kind
		}
	}
}

// turn runs one turn on the user's text.
func (cv *conversation) turn(ctx context.Context, text string) (agent.TurnResult, error) {
	if cv.live {
		// A running command's output reaches the status region as it is written.
		ctx = tool.WithProgress(ctx, cv.tr.prog.output)
	}
	res, err := cv.a.Run(ctx, text)
	cv.tr.stop()
	return res, err
}

// discardable reports whether the session holds nothing worth keeping: it was created by
// this conversation, no reply or tool call was logged, and its last turn failed.
func (cv *conversation) discardable() bool {
	return cv.isNew && !cv.hasContent && cv.lastEnd == session.EndError
}

// close releases the agent, the runtime and the log; with discard it also removes the
// session from the store.
func (cv *conversation) close(discard bool) error {
	var errs []error
	if cv.tr != nil {
		cv.tr.stop()
	}
	if cv.a != nil {
		cv.a.Close()
		cv.a = nil
	}
	if cv.rt != nil {
		cv.rt.Close()
		cv.rt = nil
	}
	if cv.flog != nil {
		if err := cv.flog.Close(); err != nil {
			errs = append(errs, fmt.Errorf("session log: %w", err))
		}
		cv.flog = nil
		if discard {
			if err := cv.store.Remove(context.Background(), cv.id); err != nil && !errors.Is(err, session.ErrNotFound) {
				errs = append(errs, err)
			}
		}
	}
	if cv.store != nil {
		closeStore(cv.store)
		cv.store = nil
	}
	return errors.Join(errs...)
}

// newModel returns the model a command line names: the script's replies, or the
// configured OpenAI-compatible server with model (the configured one when "").
func newModel(c *loadedConfig, scriptFile, model string) (llm.Model, string, error) {
	if scriptFile != "" {
		// A scripted model replays recorded replies: reproducible runs of the real tools and
		// policies, for tests and demonstrations. The transcript says so.
		sm, err := script.Load(scriptFile, script.Options{})
		if err != nil {
			return nil, "", err
		}
		return sm, fmt.Sprintf("dsh · scripted model (%s) — replies replayed from a file, not generated", scriptFile), nil
	}
	mc := c.ModelConfig()
	if model != "" {
		mc.Model = model
	}
	om, err := openai.New(mc)
	if err != nil {
		return nil, "", err
	}
	return om, fmt.Sprintf("dsh · %s via %s", om.Name(), om.Provider()), nil
}

// usageSum adds up the usage objects of assistant messages member by member: every numeric
// member, whatever the adapter records (token counts, and any other figure it adds).
type usageSum struct {
	names []string
	vals  map[string]float64
}

func (u *usageSum) add(v any) {
	o, ok := v.(*jsonv.Object)
	if !ok {
		return
	}
	for _, m := range o.Members() {
		n, ok := number(m.Value)
		if !ok {
			continue
		}
		if u.vals == nil {
			u.vals = map[string]float64{}
		}
		if _, seen := u.vals[m.Name]; !seen {
			u.names = append(u.names, m.Name)
		}
		u.vals[m.Name] += n
	}
}

// number returns a jsonv number (a float64) as one.
func number(v any) (float64, bool) {
	n, ok := v.(float64)
	return n, ok
}

func (u *usageSum) empty() bool { return len(u.names) == 0 }

// String renders the sums on one line, "inputTokens 1200 · outputTokens 85".
func (u *usageSum) String() string {
	parts := make([]string, 0, len(u.names))
	for _, n := range u.names {
		parts = append(parts, fmt.Sprintf("%s %s", n, formatNumber(u.vals[n])))
	}
	return strings.Join(parts, " · ")
}

// value returns the sums as a JSON object in first-seen order.
func (u *usageSum) value() *jsonv.Object {
	o := jsonv.NewObject()
	for _, n := range u.names {
		o.Set(n, u.vals[n])
	}
	return o
}

func formatNumber(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%.4g", f)
}

// summaryLine writes the --json summary object: how the turn ended, its answer, its usage
// and the session that holds it.
func summaryLine(w io.Writer, res agent.TurnResult, kept bool, id string, usage *usageSum, failure string) error {
	status := res.Reason.Kind
	if status == "" {
		status = session.EndError
	}
	o := jsonv.NewObject(
		jsonv.Member{Name: "type", Value: "summary"},
		jsonv.Member{Name: "status", Value: status},
		jsonv.Member{Name: "answer", Value: strings.TrimSpace(res.Text())},
	)
	if kept {
		o.Set("sessionId", id)
		o.Set("turn", float64(res.Turn))
	}
	if !usage.empty() {
		o.Set("usage", usage.value())
	}
	if failure != "" {
		o.Set("error", failure)
	}
	b, err := jsonv.Marshal(o)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// sessionEntry is one stored session with its summary, for listings.
type sessionEntry struct {
	info session.Info
	sum  session.Summary
	err  error // the log could not be read
}

// listSessions reads every stored session's summary, oldest first.
func listSessions(ctx context.Context, store session.Store) ([]sessionEntry, error) {
	infos, err := store.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]sessionEntry, 0, len(infos))
	for _, in := range infos {
		en := sessionEntry{info: in, err: in.Err}
		// A store's own summary serves unless the last turn is open: loading closes that
		// turn as interrupted, as resuming would.
		if sum := in.Summary; en.err == nil && sum != nil && (sum.Turns == 0 || sum.LastEnd.Kind != "") {
			en.sum = *sum
		} else if en.err == nil {
			l, err := store.Load(ctx, in.Header.ID)
			if err != nil {
				en.err = err
			} else {
				en.sum = session.Summarize(l.Header, l.Events)
			}
		}
		out = append(out, en)
	}
	slices.SortStableFunc(out, func(a, b sessionEntry) int {
		return compareInt(a.sum.Updated, b.sum.Updated)
	})
	return out, nil
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
