// Command dsh runs an LLM agent's tool calls through dsh's governed pipeline.
//
// Usage:
//
//	dsh run [flags] "task"          run one agent turn in a persisted session
//	dsh demo [flags]                the agent loop with a scripted model, offline
//	dsh call [flags] TOOL 'JSON'    one tool call through the whole pipeline
//	dsh tools [flags]               the tools the model would see
//	dsh session ls | show ID        read the session logs
//	dsh mcp serve | ls              serve the tools over MCP; list the configured MCP servers
//	dsh config [flags]              the effective configuration and its sources
//
// Run "dsh help" for the list of commands and "dsh <command> -h" for a command's flags.
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
	"syscall"

	"github.com/dsh-go/dsh/coderuntime/quickjs"
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
		{name: "run", summary: "run one agent turn on a task in a persisted session", run: runRun},
		{name: "demo", summary: "watch the agent loop offline, driven by a scripted model", run: runDemo},
		{name: "call", summary: "run tool calls through the whole pipeline (TOOL 'JSON' …)", run: runCall},
		{name: "tools", summary: "list the tools the model would see", run: runTools},
		{name: "session", summary: "list sessions (ls) or render one from its log (show ID)", run: runSession},
		{name: "mcp", summary: "serve the governed tools over MCP (serve) or list the configured servers (ls)", run: runMCP},
		{name: "config", summary: "print the effective configuration and where each value came from", run: runConfig},
	}
}

func main() {
	// The Code Mode worker is this binary re-executed in a hidden mode: dispatch it before
	// anything else runs.
	if quickjs.IsWorker(os.Args[1:]) {
		os.Exit(quickjs.WorkerMain())
	}
	os.Exit(runMain(os.Args[1:]))
}

// runMain runs dsh with the process's streams and signal handling and returns its exit
// status.
func runMain(args []string) int {
	// SIGINT, SIGTERM and SIGHUP (the terminal went away) all end dsh the same way: the
	// first cancels the work — a turn ends "aborted" and its session is saved, and every
	// running command is stopped with everything it started — and a second one, should a
	// tool not stop, terminates dsh at once. Even then, and after a SIGKILL, nothing a
	// command started survives: see tools/shell's containment.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	context.AfterFunc(ctx, stop)
	defer stop()
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh:", err)
		return 1
	}
	return run(ctx, &env{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin, cwd: cwd, getenv: os.Getenv}, args)
}

// run executes one dsh invocation and returns its exit status.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) == 0 {
			usage(e.stderr)
			return 2
		}
		usage(e.stdout)
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, e, args[1:])
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
	fmt.Fprintf(e.stderr, "dsh: unknown command %q (run \"dsh help\")\n", args[0])
	return 2
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
