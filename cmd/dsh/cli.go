package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/dsh-go/dsh/internal/suggest"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session"
)

// errHelp reports that a command printed its help on request (exit status 0).
var errHelp = flag.ErrHelp

// newFlags returns a flag set for a command whose usage line is synopsis.
func newFlags(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: dsh %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags anywhere on the command line (dsh run "task" --json works) and
// returns the positional arguments; everything after "--" is positional.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	if i := indexOf(args, "--"); i >= 0 {
		args, rest = args[:i], args[i+1:]
	}
	var pos []string
	for {
		if err := parseQuiet(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return append(pos, rest...), nil
}

// parseQuiet parses args with fs, turning the flag package's failures into one short usage
// error (the flag package would print the error and the whole usage, and dsh the error
// again): an unknown flag names the closest known one. -h prints the usage.
func parseQuiet(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return errHelp
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		var known []string
		fs.VisitAll(func(f *flag.Flag) { known = append(known, f.Name) })
		msg = fmt.Sprintf("unknown flag --%s", name)
		if s := suggest.Closest(name, known); s != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", s)
		}
	} else if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		msg = fmt.Sprintf("flag --%s needs a value", strings.TrimLeft(name, "-"))
	}
	return &usageError{fmt.Sprintf("%s; run \"dsh %s -h\" for the flags", msg, fs.Name())}
}

func indexOf(args []string, s string) int {
	for i, a := range args {
		if a == s {
			return i
		}
	}
	return -1
}

// loadSession reads a stored session, with a message that says where dsh looked.
func loadSession(ctx context.Context, store session.Store, id string) (*session.Loaded, error) {
	l, err := store.Load(ctx, id)
	if errors.Is(err, session.ErrNotFound) {
		return nil, fmt.Errorf("no session %q in %s (list them with \"dsh session ls\")", id, store.Root())
	}
	return l, err
}

// teeLog is a session log that hands every event it appends, as logged (with its seq and
// time), to a function — in log order, since appends are serialized.
type teeLog struct {
	session.Log
	mu sync.Mutex
	fn func(session.Event)
}

func (t *teeLog) Append(e session.Event) (session.Event, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ev, err := t.Log.Append(e)
	if err == nil {
		t.fn(ev)
	}
	return ev, err
}

func (t *teeLog) AppendDurable(e session.Event) (session.Event, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ev, err := t.Log.AppendDurable(e)
	if err == nil || ev.Type != "" {
		t.fn(ev)
	}
	return ev, err
}

// jsonLines returns a function writing each event to w as one JSON line.
func jsonLines(w io.Writer) func(session.Event) {
	return func(e session.Event) {
		b, err := e.MarshalJSON()
		if err != nil {
			fmt.Fprintf(w, "{\"error\":%q}\n", err.Error())
			return
		}
		w.Write(append(b, '\n'))
	}
}

// jsonText renders a jsonv value compactly ("" when it cannot).
func jsonText(v any) string {
	b, err := jsonv.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// oneLine shortens s to its first line.
func oneLine(s string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return first
}

// stderrFile returns the standard error as a file when it is one (for terminal prompts).
func stderrFile(e *env) *os.File {
	f, _ := e.stderr.(*os.File)
	return f
}

// parseNoArgs parses the flags of a command that takes no positional arguments.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	return nil
}

// workspaceConfig resolves the workspace directory and loads the configuration that applies
// in it.
func workspaceConfig(e *env, workspace string, cf *configFlags) (string, *loadedConfig, error) {
	ws, err := workspaceDir(workspace)
	if err != nil {
		return "", nil, err
	}
	c, err := loadConfig(e, ws, cf)
	if err != nil {
		return "", nil, err
	}
	return ws, c, nil
}
