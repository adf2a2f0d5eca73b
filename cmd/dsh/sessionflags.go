package main

import (
	"flag"
	"fmt"
)

// sessionFlags are the flags "dsh run" and the chat share: which session to continue,
// where, with which model and under which approval preset.
type sessionFlags struct {
	resume     *string
	cont       *bool
	moveHere   *bool
	workspace  *string
	maxTokens  *int
	scriptFile *string
	preset     *string
	// approveFrom is where approval questions are answered: "terminal" or "web".
	approveFrom *string
	config      *configFlags
}

// addSessionFlags declares the session flags, and every configuration flag, on fs.
func addSessionFlags(fs *flag.FlagSet, e *env) sessionFlags {
	return sessionFlags{
		resume:      fs.String("resume", "", "continue the session with this id (or a unique prefix of it)"),
		cont:        fs.Bool("continue", false, "continue this workspace's most recently active session"),
		moveHere:    fs.Bool("cd", false, "with --resume/--continue: continue a session that ran in another directory here, and log the move"),
		workspace:   fs.String("workspace", e.cwd, "the workspace the file and shell tools are confined to"),
		maxTokens:   fs.Int("max-tokens", 0, "cap on each reply's tokens (0: the server's default)"),
		scriptFile:  fs.String("script", "", "replay the assistant replies of this JSONL script instead of calling a model (see go doc ./llm/script)"),
		preset:      approvalFlag(fs),
		approveFrom: fs.String("approve-from", "terminal", "where approval questions are answered: terminal, or web (the session viewer's page, dsh session serve, and dsh approve)"),
		config:      addConfigFlags(fs),
	}
}

// conversation checks the flags, loads the configuration of the workspace they name and
// the model, and returns the options of the conversation they ask for.
func (f sessionFlags) conversation(e *env) (convOptions, error) {
	if *f.resume != "" && *f.cont {
		return convOptions{}, &usageError{"--resume and --continue exclude each other"}
	}
	if err := checkApproval(*f.preset); err != nil {
		return convOptions{}, err
	}
	if *f.approveFrom != "terminal" && *f.approveFrom != "web" {
		return convOptions{}, &usageError{fmt.Sprintf("--approve-from must be terminal or web, got %q", *f.approveFrom)}
	}
	if *f.maxTokens < 0 {
		return convOptions{}, &usageError{fmt.Sprintf("--max-tokens must not be negative, got %d", *f.maxTokens)}
	}
	ws, err := workspaceDir(*f.workspace)
	if err != nil {
		return convOptions{}, err
	}
	c, err := loadConfig(e, ws, f.config)
	if err != nil {
		return convOptions{}, err
	}
	model, banner, err := newModel(c, *f.scriptFile, "")
	if err != nil {
		return convOptions{}, err
	}
	return convOptions{config: c, workspace: ws, model: model, banner: banner, maxTokens: *f.maxTokens,
		resume: *f.resume, continueLast: *f.cont, moveHere: *f.moveHere, approval: *f.preset, approveFromWeb: *f.approveFrom == "web"}, nil
}
