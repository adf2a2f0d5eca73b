// Command dsh runs an LLM agent's tool calls through dsh's governed pipeline.
//
// Usage:
//
//	dsh tools [--json] [--mode native|code|both] [--workspace DIR]
//
// Run "dsh help" for the list of commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one dsh subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what a command may touch: its streams and working directory.
type env struct {
	stdout, stderr io.Writer
	cwd            string
	getenv         func(string) string
}

// usageError marks an error caused by how dsh was invoked (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func commands() []command {
	return []command{
		{name: "tools", summary: "list the tools the model would see", run: runTools},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh:", err)
		os.Exit(1)
	}
	code := run(ctx, &env{stdout: os.Stdout, stderr: os.Stderr, cwd: cwd, getenv: os.Getenv}, os.Args[1:])
	stop()
	os.Exit(code)
}

// run executes one dsh invocation and returns its exit status.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(e.stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, e, args[1:])
			if err == nil {
				return 0
			}
			fmt.Fprintf(e.stderr, "dsh %s: %v\n", c.name, err)
			var ue *usageError
			if errors.As(err, &ue) {
				return 2
			}
			return 1
		}
	}
	fmt.Fprintf(e.stderr, "dsh: unknown command %q (run \"dsh help\")\n", args[0])
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "dsh — a governed tool runtime for LLM agents")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: dsh <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun \"dsh <command> -h\" for a command's flags.")
}
