package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/openai"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// runRun implements "dsh run": one agent turn on a task, in a persisted session. The live
// transcript (the assistant's text, a card per tool call and result) goes to standard error,
// the final answer to standard output; with --json standard output carries the session's
// events as JSON lines instead. The exit status is 0 when the turn completed.
func runRun(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "run", `run [flags] "task"`)
	asJSON := fs.Bool("json", false, "print the session events as JSON lines on standard output")
	resume := fs.String("resume", "", "continue the session with this id")
	workspace := fs.String("workspace", e.cwd, "the workspace the file and shell tools are confined to")
	maxTokens := fs.Int("max-tokens", 0, "cap on each reply's tokens (0: the server's default)")
	scriptFile := fs.String("script", "", "replay the assistant replies of this JSONL script instead of calling a model (see go doc ./llm/script)")
	preset := approvalFlag(fs)
	cf := addConfigFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		fs.Usage()
		return &usageError{`want the task as one argument, e.g. dsh run "summarize README.md"`}
	}
	if err := checkApproval(*preset); err != nil {
		return err
	}
	ws, err := workspaceDir(*workspace)
	if err != nil {
		return err
	}
	c, err := loadConfig(e, ws, cf)
	if err != nil {
		return err
	}
	if *maxTokens < 0 {
		return &usageError{fmt.Sprintf("--max-tokens must not be negative, got %d", *maxTokens)}
	}
	var model llm.Model
	banner := ""
	if *scriptFile != "" {
		// A scripted model replays recorded replies: reproducible runs of the real tools and
		// policies, for tests and demonstrations. The transcript says so.
		sm, err := script.Load(*scriptFile, script.Options{})
		if err != nil {
			return err
		}
		model, banner = sm, fmt.Sprintf("dsh · scripted model (%s) — replies replayed from a file, not generated", *scriptFile)
	} else {
		om, err := openai.New(c.ModelConfig())
		if err != nil {
			return err
		}
		model, banner = om, fmt.Sprintf("dsh · %s via %s", om.Name(), om.Provider())
	}
	return runAgent(ctx, e, agentRun{
		config:    c,
		workspace: ws,
		model:     model,
		task:      pos[0],
		resume:    *resume,
		json:      *asJSON,
		banner:    banner,
		maxTokens: *maxTokens,
		approval:  *preset,
	})
}

// agentRun is one turn for runAgent.
type agentRun struct {
	config    *loadedConfig
	workspace string
	model     llm.Model
	task      string
	resume    string // a session id to continue, or ""
	json      bool
	banner    string            // the first line of the transcript
	prompter  approval.Prompter // nil: the terminal when there is one
	noPrompt  bool              // never ask a person
	scripted  bool              // the model is the demo's script: a session not worth resuming
	maxTokens int               // cap on each reply, 0 for the server's default
	approval  string            // the approval preset, "" for none
}

// runAgent runs one turn in a new or resumed session and reports it.
func runAgent(ctx context.Context, e *env, ar agentRun) (err error) {
	c := ar.config
	store, err := openStore(c)
	if err != nil {
		return err
	}
	var flog *session.FileLog
	if ar.resume != "" {
		flog, err = store.Resume(ctx, ar.resume)
		if errors.Is(err, session.ErrNotFound) {
			return fmt.Errorf("no session %q in %s (list them with \"dsh session ls\")", ar.resume, store.Root())
		}
	} else {
		flog, err = store.Create(ctx, session.Header{Cwd: ar.workspace})
	}
	if err != nil {
		return err
	}
	defer func() {
		if cerr := flog.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("session log: %w", cerr)
		}
	}()
	id := flog.Header().ID

	// The transcript goes to standard error; with --json only the events, to standard output.
	r := term.For(e.stderr, e.getenv)
	live := !ar.json && term.IsTerminal(e.stderr)
	mode := c.Mode
	log := &teeLog{Log: flog}
	prompter := ar.prompter
	if prompter == nil && !ar.noPrompt {
		if !ar.json {
			prompter = terminalPrompter(e, c, stderrFile(e))
		}
	}
	_, prompting := prompter.(*approval.Terminal)
	var holder *holdingPrompter
	if prompter != nil {
		holder = &holdingPrompter{inner: prompter}
		prompter = holder
	}
	rt, err := newRuntime(ctx, runtimeConfig{Workspace: ar.workspace, Mode: mode, Config: c.Config, Log: log, Prompter: prompter, Session: id, Approval: ar.approval,
		MCPLog:   filepath.Join(filepath.Dir(flog.Path()), "mcp.log"),
		MCPDepth: mcp.Depth(e.getenv), Stderr: e.stderr})
	if err != nil {
		return err
	}
	defer rt.Close()
	tr := newTranscript(e.stderr, r, live, rt.reg)
	tr.model = ar.model.Name()
	tr.prompting = prompting
	if holder != nil {
		holder.setStatus(tr.out)
	}
	if live {
		// A running command's output reaches the status region as it is written.
		ctx = tool.WithProgress(ctx, tr.prog.output)
	}
	defer tr.stop()
	// The banner (which model, which session) always goes to standard error, so even
	// --json output says when its model is a script.
	fmt.Fprintln(e.stderr, r.Dim(term.Sanitize(ar.banner+" · session "+id)))
	if ar.json {
		log.fn = jsonLines(e.stdout)
	} else {
		log.fn = tr.event
	}
	obs := agent.Observer{}
	if !ar.json {
		obs.StepStart = func(int, int) { tr.stepStart() }
		obs.ReasoningDelta = tr.reasoningDelta
		obs.TextDelta = tr.textDelta
	}
	a, err := agent.New(agent.Config{
		Registry:             rt.reg,
		Model:                ar.model,
		Log:                  log,
		Workspace:            ar.workspace,
		PromptSections:       rt.promptSections(),
		ToolOrder:            c.ToolOrder,
		MaxParallelToolCalls: c.MaxParallelToolCalls,
		MaxSteps:             c.MaxSteps,
		MaxTokens:            ar.maxTokens,
		Observer:             obs,
	})
	if err != nil {
		return err
	}
	defer a.Close()
	rt.attach(a)

	res, runErr := a.Run(ctx, ar.task)
	tr.stop()
	if !ar.json {
		where := flog.Path()
		fmt.Fprintln(e.stderr, r.Dim(fmt.Sprintf("session %s · log %s", id, where)))
		hint := fmt.Sprintf("replay: dsh session show %s", id)
		if !ar.scripted {
			hint += fmt.Sprintf(" · continue: dsh run --resume %s \"…\"", id)
		}
		fmt.Fprintln(e.stderr, r.Dim(hint))
		// The answer was streamed with the transcript; print it again on standard output
		// unless both streams are the same terminal.
		if answer := strings.TrimSpace(res.Text()); answer != "" && !(term.IsTerminal(e.stdout) && live) {
			fmt.Fprintln(e.stdout, answer)
		}
	}
	switch {
	case runErr != nil && ctx.Err() != nil:
		return &exitError{code: 130, err: fmt.Errorf("interrupted; the session %s was saved (continue it with --resume %s)", id, id)}
	case runErr != nil:
		return fmt.Errorf("the turn failed: %w", runErr)
	case res.Reason.Kind != session.EndCompleted:
		return fmt.Errorf("the turn did not complete: %s", describeEnd(res.Reason))
	}
	return nil
}
