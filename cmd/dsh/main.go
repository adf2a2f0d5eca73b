// Command dsh runs an LLM agent's tool calls through dsh's governed pipeline.
//
// Usage:
//
//	dsh [flags]                     chat with the agent in this workspace (dsh chat)
//	dsh run [flags] "task"          run one agent turn in a persisted session
//	dsh demo [flags]                the agent loop with a scripted model, offline
//	dsh call [flags] TOOL 'JSON'    one tool call through the whole pipeline
//	dsh tools [flags]               the tools the model would see
//	dsh session ls | show | rm | prune  list, replay and remove sessions (ids may be shortened to a unique prefix)
//	dsh session serve [--addr A]    the session viewer in the browser
//	dsh approve SESSION CALL yes|no answer an approval of a session run with --approve-from web
//	dsh mcp serve | ls              serve the tools over MCP; list the configured MCP servers
//	dsh config [flags]              the effective configuration and its sources
//
// "dsh --version" prints the module version and commit. Run "dsh help" for the list of commands and "dsh <command> -h" for a command's flags.
//
// Exit status: 0 on success, 1 when the command failed (a failed tool call, a turn that did
// not complete), 2 for a usage error, 130 when interrupted.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/dsh-go/dsh/coderuntime/quickjs"
	"github.com/dsh-go/dsh/internal/suggest"
)

// command is one dsh subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what a command may touch: its streams, working directory and environment.
type env struct {
	stdout, stderr io.Writer
	// stdin is the terminal approval questions are answered on; nil means none (every
	// approval is unavailable).
	stdin  *os.File
	cwd    string
	getenv func(string) string
}

// usageError marks an error caused by how dsh was invoked (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// exitError ends a command with a specific status after its message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// silentError is a failure whose explanation the command has already printed.
var silentError = errors.New("")

func commands() []command {
	return []command{
		{name: "chat", summary: "chat with the agent in this workspace (also: dsh with no command)", run: runChat},
		{name: "run", summary: "run one agent turn on a task in a persisted session", run: runRun},
		{name: "demo", summary: "watch the agent loop offline, driven by a scripted model", run: runDemo},
		{name: "call", summary: "run tool calls through the whole pipeline (TOOL 'JSON' …)", run: runCall},
		{name: "tools", summary: "list the tools the model would see", run: runTools},
		{name: "session", summary: "list sessions (ls) or render one from its log (show ID)", run: runSession},
		{name: "approve", summary: "answer a pending approval of a session started with --approve-from web (or, with --temporal, of a durable session)", run: runApprove},
		{name: "mcp", summary: "serve the governed tools over MCP (serve) or list the configured servers (ls)", run: runMCP},
		{name: "config", summary: "print the effective configuration and where each value came from", run: runConfig},
		{name: "worker", summary: "serve durable sessions' model and tool activities on a Temporal task queue", run: runWorker},
	}
}

func main() {
	// The Code Mode worker is this binary re-executed in a hidden mode: dispatch it before
	// anything else runs.
	if quickjs.IsWorker(os.Args[1:]) {
		os.Exit(quickjs.WorkerMain())
	}
	os.Exit(mainArgs(os.Args[1:]))
}

// mainArgs runs dsh as a process: it wires the signals, the standard streams and the
// working directory, runs the command line and returns the exit status.
func mainArgs(args []string) int {
	// SIGINT, SIGTERM and SIGHUP (the terminal went away) all end dsh the same way: the
	// first cancels the work — a turn ends "aborted" and its session is saved, and every
	// running command is stopped with everything it started — and a second one, should a
	// tool not stop, terminates dsh at once. Even then, and after a SIGKILL, nothing a
	// command started survives: see tools/shell's containment. The chat loop handles
	// interrupts itself: one cancels the running turn, not the program.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	context.AfterFunc(ctx, stop)
	defer stop()
	if !isChat(args) {
		var stopInt context.CancelFunc
		ctx, stopInt = signal.NotifyContext(ctx, os.Interrupt)
		context.AfterFunc(ctx, stopInt)
		defer stopInt()
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh:", err)
		return 1
	}
	ctx, flushTraces, err := startTracing(ctx, os.Getenv, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh:", err)
		return 2
	}
	defer flushTraces()
	return run(ctx, &env{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin, cwd: cwd, getenv: os.Getenv}, args)
}

// isChat reports whether a command line opens the interactive chat: no command, only
// flags (dsh --continue, dsh --model M), or "dsh chat".
func isChat(args []string) bool {
	if len(args) == 0 || args[0] == "chat" {
		return true
	}
	switch args[0] {
	case "-h", "-help", "--help", "-version", "--version":
		return false
	}
	return strings.HasPrefix(args[0], "-")
}

// run executes one dsh invocation and returns its exit status.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "help", "-h", "-help", "--help":
			usage(e.stdout)
			return 0
		case "version", "-version", "--version":
			fmt.Fprintln(e.stdout, versionLine())
			return 0
		}
	}
	name, cmdArgs := "", args
	if isChat(args) {
		name = "chat"
		if len(args) > 0 && args[0] == "chat" {
			cmdArgs = args[1:]
		}
	} else {
		name, cmdArgs = args[0], args[1:]
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		err := c.run(ctx, e, cmdArgs)
		if err == nil {
			return 0
		}
		var ee *exitError
		code := 1
		if errors.As(err, &ee) {
			code = ee.code
		}
		var ue *usageError
		if errors.As(err, &ue) {
			code = 2
		}
		if errors.Is(err, errHelp) {
			return 0
		}
		if ctx.Err() != nil && code == 1 {
			code = 130 // interrupted, as a shell reports SIGINT
			if errors.Is(err, context.Canceled) && ee == nil {
				err = errors.New("interrupted")
			}
		}
		if !errors.Is(err, silentError) {
			fmt.Fprintf(e.stderr, "dsh %s: %v\n", c.name, err)
		}
		return code
	}
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	hint := ""
	if s := suggest.Closest(name, names); s != "" {
		hint = fmt.Sprintf("did you mean %q? ", s)
	}
	fmt.Fprintf(e.stderr, "dsh: unknown command %q (%srun \"dsh help\" for the commands)\n", name, hint)
	return 2
}

// versionLine describes this build: the module version and the VCS commit it was built
// from, as the Go toolchain recorded them.
func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dsh (no build information)"
	}
	return formatVersion(bi)
}

// formatVersion renders build information as versionLine does.
func formatVersion(bi *debug.BuildInfo) string {
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	line := "dsh " + version
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		line += " · commit " + rev
		if at != "" {
			line += " (" + at + ")"
		}
		if modified == "true" {
			line += " with uncommitted changes"
		}
	} else {
		line += " · commit unknown (built without version control information)"
	}
	return line + " · " + bi.GoVersion
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "dsh — a governed tool runtime for LLM agents")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: dsh <command> [flags] [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun \"dsh <command> -h\" for a command's flags.")
}
