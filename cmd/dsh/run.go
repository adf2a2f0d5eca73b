package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// runRun implements "dsh run": one agent turn on a task, in a persisted session. The live
// transcript (the assistant's text, a card per tool call and result) goes to standard error,
// the final answer to standard output; with --json standard output carries the session's
// events as JSON lines and then one summary object. The exit status is 0 when the turn
// completed.
func runRun(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "run", `run [flags] "task" | -`)
	asJSON := fs.Bool("json", false, "print the session events as JSON lines on standard output, then a summary object {\"type\":\"summary\",…}")
	sf := addSessionFlags(fs, e)
	tf := addTemporalFlags(fs)
	queue := fs.String("queue", "", "with --temporal: the task queue of the worker that keeps the session and calls the model")
	toolQueue := fs.String("tool-queue", "", "with --temporal: the task queue of the worker of the workspace, where the tools run (default --queue)")
	approvalWait := fs.Duration("approval-timeout", 0, "with --temporal: how long a call waits for an answer before it is denied (default 24h)")
	heartbeat := fs.Duration("heartbeat-timeout", 0, "with --temporal: how long a silent tool worker is presumed lost (default 10s)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		return &usageError{`want the task as one argument, e.g. dsh run "summarize README.md", or "-" to read it from standard input; run "dsh run -h" for the flags`}
	}
	task := pos[0]
	if task == "-" {
		if task, err = readTask(e); err != nil {
			return err
		}
	}
	if *tf.addr != "" {
		return runTemporal(ctx, e, durableRun{temporal: tf, queue: *queue, toolQueue: *toolQueue, resume: *sf.resume,
			workspace: *sf.workspace, task: task, approval: *approvalWait, heartbeat: *heartbeat, json: *asJSON})
	}
	o, err := sf.conversation(e)
	if err != nil {
		return err
	}
	return runAgent(ctx, e, agentRun{
		config:       o.config,
		workspace:    o.workspace,
		model:        o.model,
		task:         task,
		resume:       o.resume,
		cont:         o.continueLast,
		moveHere:     o.moveHere,
		json:         *asJSON,
		summary:      *asJSON,
		banner:       o.banner,
		maxTokens:    o.maxTokens,
		approval:     o.approval,
		webApprovals: o.approveFromWeb,
	})
}

// readTask reads "dsh run -"'s task from standard input.
func readTask(e *env) (string, error) {
	if e.stdin == nil {
		return "", &usageError{`"-" reads the task from standard input, but there is none`}
	}
	b, err := io.ReadAll(io.LimitReader(e.stdin, maxTaskBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading the task from standard input: %w", err)
	}
	if len(b) > maxTaskBytes {
		return "", &usageError{fmt.Sprintf("the task on standard input is longer than %d bytes", maxTaskBytes)}
	}
	task := strings.TrimSpace(string(b))
	if task == "" {
		return "", &usageError{"the task on standard input is empty"}
	}
	return task, nil
}

// maxTaskBytes bounds a task read from standard input.
const maxTaskBytes = 4 << 20

// agentRun is one turn for runAgent.
type agentRun struct {
	config    *loadedConfig
	workspace string
	model     llm.Model
	task      string
	resume    string // a session id (or unique prefix) to continue, or ""
	cont      bool   // continue the workspace's last session
	moveHere  bool   // --cd
	json      bool
	summary   bool                   // with json: end with the summary object
	banner    string                 // the first line of the transcript
	prompter  approval.Prompter      // nil: the terminal when there is one
	noPrompt  bool                   // never ask a person
	scripted  bool                   // the model is the demo's script: a session not worth resuming
	maxTokens int                    // cap on each reply, 0 for the server's default
	replay    func(id string) string // the replay hint, when the default does not apply
	tools     []*tool.Definition     // extra tools for this run (the demo's own)
	approval  string                 // the approval preset, "" for none
	// webApprovals answers approval questions from the session viewer and dsh approve.
	webApprovals bool
}

// runAgent runs one turn in a new or resumed session and reports it. A first turn that
// failed before anything was logged but the prompt leaves no session behind.
func runAgent(ctx context.Context, e *env, ar agentRun) (err error) {
	cv, err := openConversation(ctx, e, convOptions{
		config: ar.config, workspace: ar.workspace, model: ar.model, banner: ar.banner,
		resume: ar.resume, continueLast: ar.cont, moveHere: ar.moveHere, json: ar.json,
		prompter: ar.prompter, noPrompt: ar.noPrompt, maxTokens: ar.maxTokens, tools: ar.tools,
		approval: ar.approval, approveFromWeb: ar.webApprovals,
	})
	if err != nil {
		return err
	}
	res, runErr := cv.turn(ctx, ar.task)
	discard := runErr != nil && ctx.Err() == nil && cv.discardable()
	id, r := cv.id, cv.r
	where := cv.flog.Path()
	usage := cv.turnUsage
	spend, spendErr := lastTurnLine(cv.flog.Events(), ar.config.Pricing)
	if cerr := cv.close(discard); cerr != nil && runErr == nil {
		return cerr
	}
	failure := ""
	if res.Reason.Kind == session.EndError && res.Reason.Error != nil {
		failure = res.Reason.Error.Message
	} else if runErr != nil && res.Reason.Kind == "" {
		failure = runErr.Error()
	}
	if ar.json && ar.summary {
		if err := summaryLine(e.stdout, res, !discard, id, &usage, failure); err != nil {
			return err
		}
	} else if !ar.json {
		if discard {
			fmt.Fprintln(e.stderr, r.Dim("nothing was saved: the session had no reply"))
		} else {
			if spendErr == nil && spend != "" {
				fmt.Fprintln(e.stderr, r.Dim(spend))
			}
			fmt.Fprintln(e.stderr, r.Dim(fmt.Sprintf("session %s · log %s", id, where)))
			hint := fmt.Sprintf("replay: dsh session show %s", id)
			if ar.replay != nil {
				hint = ar.replay(id)
			}
			if !ar.scripted {
				hint += fmt.Sprintf(" · continue: dsh run --continue \"…\" (or --resume %s)", shortID(id))
			}
			fmt.Fprintln(e.stderr, r.Dim(hint))
		}
		// The answer was streamed with the transcript; print it again on standard output
		// unless both streams are the same terminal.
		if answer := strings.TrimSpace(res.Text()); answer != "" && !(term.IsTerminal(e.stdout) && cv.live) {
			fmt.Fprintln(e.stdout, answer)
		}
	}
	switch {
	case runErr != nil && ctx.Err() != nil:
		return &exitError{code: 130, err: fmt.Errorf("interrupted; the session %s was saved (continue it with --resume %s)", id, shortID(id))}
	case res.Reason.Kind == session.EndError && !ar.json:
		// The transcript's last line already says why the turn failed.
		return &exitError{code: 1, err: silentError}
	case failure != "":
		return errors.New(failure)
	case runErr != nil:
		return runErr
	case res.Reason.Kind != session.EndCompleted:
		return fmt.Errorf("the turn did not complete: %s", agent.DescribeEnd(res.Reason))
	}
	return nil
}

// shortID returns the part of a session id that is usually enough to name it: its date and
// time ("20261201T103900Z-3f9a2c1d" → "20261201T103900Z-3f9a"); ids of another form are
// returned whole.
func shortID(id string) string {
	if len(id) == len("20261201T103900Z-3f9a2c1d") && id[8] == 'T' && id[15] == 'Z' && id[16] == '-' {
		return id[:21]
	}
	return id
}

// imageRefusal says why read_image should refuse for model, or "" when the model can see
// images: reading one for a model that takes text only would fill the session with images
// it never sees.
func imageRefusal(model llm.Model) string {
	if m, ok := model.(interface{ AcceptsImages() bool }); ok && !m.AcceptsImages() {
		return fmt.Sprintf("model %q does not accept image input; switch to a model that does to read images", model.Name())
	}
	return ""
}
