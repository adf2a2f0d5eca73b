package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
	dshfs "github.com/dsh-go/dsh/tools/fs"
)

// callSynopsis is the command line of "dsh call".
const callSynopsis = "call [flags] TOOL ['JSON'] [TOOL 'JSON']..."

// callHelp explains what the calls of one invocation share, printed by "dsh call -h".
const callHelp = `Runs tool calls through the whole pipeline (permission rules, approval, guards, timeout,
output validation, spill), one after another, exactly as an agent's calls would run, and
stops at the first call that fails (exit status 1). A command that exits non-zero or is
killed counts as failed here, though its result is a success for a model. Several calls are given as TOOL 'JSON'
pairs; a single call's arguments default to {}.

The calls of one invocation run for one agent and share what it has seen: the file tools
refuse to edit, or to overwrite, an existing file the agent has not read (FS_NOT_OBSERVED),
so read it in the same invocation:

  dsh call read '{"file_path":"main.go"}' edit '{"file_path":"main.go","old_string":"a","new_string":"b"}'

Nothing carries over from one invocation to the next.
`

// commandStatus says how a failed command ended: "exited with status 3", "was killed by
// SIGTERM".
func commandStatus(c card.Result) string {
	if c.Signal != "" {
		return "was killed by " + term.Sanitize(c.Signal)
	}
	if c.ExitCode != nil {
		return fmt.Sprintf("exited with status %d", *c.ExitCode)
	}
	return "failed"
}

// callSpec is one call of a "dsh call" command line.
type callSpec struct{ name, raw string }

// parseCalls reads the positional arguments of "dsh call": TOOL, TOOL 'JSON', or several
// TOOL 'JSON' pairs.
func parseCalls(pos []string) ([]callSpec, error) {
	switch {
	case len(pos) == 1:
		return []callSpec{{pos[0], "{}"}}, nil
	case len(pos) == 0 || len(pos)%2 != 0:
		return nil, &usageError{"want a tool name and optionally its arguments as JSON, or several calls as TOOL 'JSON' pairs"}
	}
	calls := make([]callSpec, 0, len(pos)/2)
	for i := 0; i < len(pos); i += 2 {
		calls = append(calls, callSpec{pos[i], pos[i+1]})
	}
	return calls, nil
}

// checkJSON reports arguments that are not JSON at all, naming the syntax error and where it
// is, before any call runs. (Valid JSON of the wrong shape, such as an array, is left to
// the tool's argument validation, which says what it wanted.)
func checkJSON(c callSpec) error {
	if strings.TrimSpace(c.raw) == "" {
		return nil
	}
	_, err := jsonv.Parse([]byte(c.raw))
	if err == nil {
		return nil
	}
	msg := strings.TrimPrefix(err.Error(), "jsonv: ")
	if strings.Contains(msg, "unexpected end of input") {
		msg = fmt.Sprintf("invalid JSON at offset %d: the text ends before the value is complete", len(c.raw))
	}
	raw := c.raw
	if r := []rune(raw); len(r) > 80 {
		raw = string(r[:79]) + "…"
	}
	return &usageError{fmt.Sprintf("the arguments of %s are not valid JSON: %s, in %s", c.name, msg, term.Sanitize(raw))}
}

// runCall implements "dsh call TOOL 'JSON' …": tool calls through the whole pipeline — the
// permission rules, approval, guards, the timeout policy, the tool, output validation, the
// post-execute policies — exactly as an agent's calls would run, one after another for one
// agent scope, so that later calls see what earlier ones observed (a read authorizes an
// edit). It prints each call's card and its result's card, or with --json each result
// object of docs/behaviour.md §5.1 on a line of its own. The first failed call ends the command with
// exit status 1; the calls after it do not run.
func runCall(ctx context.Context, e *env, args []string) (err error) {
	fs := newFlags(e, "call", callSynopsis)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: dsh %s\n\n%s\nFlags:\n", callSynopsis, callHelp)
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print each result object as a JSON line instead of cards")
	workspace := fs.String("workspace", e.cwd, "the workspace the file and shell tools are confined to")
	preset := approvalFlag(fs)
	cf := addConfigFlags(fs, "mode", "permissions.allow", "permissions.ask", "permissions.deny", "permissions.openProtected", "shell.sandbox")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkApproval(*preset); err != nil {
		return err
	}
	calls, err := parseCalls(pos)
	if err != nil {
		fs.Usage()
		return err
	}
	for _, c := range calls {
		if err := checkJSON(c); err != nil {
			return err
		}
	}
	ws, err := workspaceDir(*workspace)
	if err != nil {
		return err
	}
	c, err := loadConfig(e, ws, cf)
	if err != nil {
		return err
	}
	prompter := terminalPrompter(e, c, stderrFile(e))
	// Every invocation is one session: its calls, results, sub-calls and approvals are
	// logged like an agent's.
	store, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer closeStore(store)
	flog, err := store.Create(ctx, session.Header{Cwd: ws, Client: "dsh call"})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := flog.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("session log: %w", cerr)
		}
	}()
	id := flog.Header().ID
	rec, err := newCallRecorder(flog)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := rec.close(ctx.Err() != nil); cerr != nil && err == nil {
			err = cerr
		}
	}()
	rt, err := newRuntime(ctx, runtimeConfig{Workspace: ws, Mode: c.Mode, Config: c.Config, Log: flog, Prompter: prompter, Session: id, Approval: *preset,
		NoMCP: !callsNeedMCP(calls), RunsCode: callsRunCode(calls), MCPLog: sessionMCPLog(c, flog),
		MCPDepth: mcp.Depth(e.getenv), Stderr: e.stderr})
	if err != nil {
		return err
	}
	defer rt.Close()
	// The calls run for an agent scope of their own, so policies that route by agent
	// (approval, the observation policy) treat them as one agent's calls.
	scope := rt.reg.NewScope("dsh call", nil)
	defer scope.Close()
	r := term.For(e.stdout, e.getenv)
	for i, call := range calls {
		in := tool.Input{CallID: fmt.Sprintf("call_%d", i+1), Name: call.name, Args: rt.reg.ParseArguments(call.raw), Agent: scope}
		def := rt.reg.Get(call.name, scope)
		if !*asJSON {
			fmt.Fprint(e.stdout, r.Call(call.name, agent.CallCard(def, call.name, in.Args)))
		}
		if err := rec.started(in.CallID, call.name, call.raw); err != nil {
			return fmt.Errorf("call %d (%s) was not started: %w", i+1, call.name, err)
		}
		res := rt.reg.Execute(ctx, in)
		if err := rec.finished(in.CallID, res); err != nil {
			return err
		}
		rc := agent.ResultCard(def, call.name, in.Args, card.ToolResult{Content: res.Content, IsError: res.IsError, Meta: res.Meta})
		if *asJSON {
			b, err := jsonv.Marshal(res.JSON())
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s\n", b)
		} else {
			fmt.Fprint(e.stdout, r.Result(call.name, rc, res.IsError))
		}
		if !res.IsError && !term.FailedCommand(rc) {
			continue
		}
		if !res.IsError {
			// The result is a success for a model (it reads the exit status), but a command
			// that failed fails the invocation, as it would in a shell script.
			fmt.Fprintf(e.stderr, "dsh call: call %d (%s): the command %s\n", i+1, call.name, commandStatus(rc))
		}
		if res.Error != nil && res.Error.Info != nil && res.Error.Info.Code == dshfs.CodeNotObserved {
			fmt.Fprintf(e.stderr, "dsh call: %s needs the file read first, in the same invocation: dsh call read '{\"file_path\":…}' %s '…' (see dsh call -h)\n", call.name, call.name)
		}
		if left := len(calls) - i - 1; left > 0 {
			fmt.Fprintf(e.stderr, "dsh call: call %d (%s) failed; the %d call(s) after it did not run\n", i+1, call.name, left)
		}
		return &exitError{code: 1, err: silentError}
	}
	return nil
}
