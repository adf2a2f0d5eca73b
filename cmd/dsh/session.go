package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dsh-go/dsh/internal/suggest"
	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// runSession implements "dsh session ls | show | rm | prune".
func runSession(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return &usageError{"want a subcommand: ls, show ID, rm ID…, prune or serve"}
	}
	switch args[0] {
	case "ls", "list":
		return runSessionList(ctx, e, args[1:])
	case "show":
		return runSessionShow(ctx, e, args[1:])
	case "rm", "remove":
		return runSessionRemove(ctx, e, args[1:])
	case "prune":
		return runSessionPrune(ctx, e, args[1:])
	case "export":
		return runSessionExport(ctx, e, args[1:])
	case "import":
		return runSessionImport(ctx, e, args[1:])
	case "serve":
		return runSessionServe(ctx, e, args[1:])
	case "-h", "-help", "--help":
		fmt.Fprintln(e.stderr, "Usage: dsh session ls [--all] [--json] | show [--json] ID | rm ID… | prune [--older-than AGE] [--keep N] [--all] [--dry-run] | export [--out FILE] ID | import FILE | serve [--addr 127.0.0.1:8377]\n\nA session ID may be shortened to any prefix that names one session. --store postgres://… uses a PostgreSQL session store.")
		return errHelp
	}
	hint := ""
	if s := suggest.Closest(args[0], []string{"ls", "show", "rm", "prune", "export", "import", "serve"}); s != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", s)
	}
	return &usageError{fmt.Sprintf("unknown subcommand %q%s; want ls, show ID, rm ID…, prune, export ID, import FILE or serve", args[0], hint)}
}

// sessionStore loads the configuration for the current directory and opens its store.
func sessionStore(ctx context.Context, e *env, cf *configFlags) (session.Store, error) {
	c, err := loadConfig(e, e.cwd, cf)
	if err != nil {
		return nil, err
	}
	return openStore(ctx, c)
}

// parseSessionID parses the arguments of a subcommand that works on one stored session and
// returns the session's id (or prefix) as given.
func parseSessionID(fs *flag.FlagSet, args []string) (string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", &usageError{"want one session id (list them with \"dsh session ls\")"}
	}
	return pos[0], nil
}

// openSession loads the configuration for the current directory, opens its store and
// resolves id (a full id or a unique prefix) there. The caller closes the store with
// closeStore; on error nothing is left open.
func openSession(ctx context.Context, e *env, cf *configFlags, id string) (*loadedConfig, session.Store, string, error) {
	c, err := loadConfig(e, e.cwd, cf)
	if err != nil {
		return nil, nil, "", err
	}
	store, err := openStore(ctx, c)
	if err != nil {
		return nil, nil, "", err
	}
	full, err := resolveID(ctx, store, id)
	if err != nil {
		closeStore(store)
		return nil, nil, "", err
	}
	return c, store, full, nil
}

// runSessionList lists the sessions of the current directory (every directory's with
// --all), least recently active first: id, last activity, turns, how the last turn ended
// and the first prompt.
func runSessionList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "session ls", "session ls [--all] [--json] [--sessions-dir DIR]")
	asJSON := fs.Bool("json", false, "print the sessions as JSON lines")
	all := fs.Bool("all", false, "list the sessions of every workspace, not only this directory's")
	cf := addConfigFlags(fs, "sessions.root", "sessions.store")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	store, err := sessionStore(ctx, e, cf)
	if err != nil {
		return err
	}
	defer closeStore(store)
	entries, err := listSessions(ctx, store)
	if err != nil {
		return err
	}
	if !*all {
		entries = slices.DeleteFunc(entries, func(s sessionEntry) bool { return s.err != nil || s.sum.Cwd != e.cwd })
	}
	if *asJSON {
		for _, s := range entries {
			in := s.info
			o := jsonv.NewObject(
				jsonv.Member{Name: "id", Value: in.Header.ID},
				jsonv.Member{Name: "createdAt", Value: float64(in.Header.CreatedAt)},
				jsonv.Member{Name: "updatedAt", Value: float64(s.sum.Updated)},
				jsonv.Member{Name: "cwd", Value: s.sum.Cwd},
				jsonv.Member{Name: "turns", Value: float64(s.sum.Turns)},
				jsonv.Member{Name: "status", Value: sessionStatus(s)},
				jsonv.Member{Name: "firstPrompt", Value: s.sum.FirstPrompt},
				jsonv.Member{Name: "path", Value: in.Path},
				jsonv.Member{Name: "size", Value: float64(in.Size)},
			)
			if s.info.Header.Client != "" {
				o.Set("client", s.info.Header.Client)
			}
			if s.err != nil {
				o.Set("error", s.err.Error())
			}
			b, err := jsonv.Marshal(o)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s\n", b)
		}
		return nil
	}
	if len(entries) == 0 {
		if *all {
			fmt.Fprintf(e.stdout, "no sessions in %s\n", store.Root())
		} else {
			fmt.Fprintf(e.stdout, "no sessions in this directory (%s); dsh session ls --all lists every one\n", term.Sanitize(e.cwd))
		}
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	head := "ID\tACTIVE\tTURNS\tSTATUS\tBY\tFIRST PROMPT"
	if *all {
		head += "\tWORKSPACE"
	}
	fmt.Fprintln(tw, head)
	for _, s := range entries {
		if s.err != nil {
			fmt.Fprintf(tw, "%s\t-\t-\tunreadable\t-\t%s\n", orDash(s.info.Header.ID), term.Sanitize(oneLine(s.err.Error())))
			continue
		}
		active := time.UnixMilli(s.sum.Updated).Local().Format("2006-01-02 15:04")
		by := s.info.Header.Client
		if by == "" {
			by = "agent" // dsh run, dsh demo or a library agent
		}
		line := fmt.Sprintf("%s\t%s\t%d\t%s\t%s\t%s", s.info.Header.ID, active, s.sum.Turns, sessionStatus(s), term.Sanitize(by), term.Sanitize(clip(s.sum.FirstPrompt, 48)))
		if *all {
			line += "\t" + term.Sanitize(s.sum.Cwd)
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// sessionStatus says how a session's last turn ended, in one word.
func sessionStatus(s sessionEntry) string {
	switch {
	case s.err != nil:
		return "unreadable"
	case s.sum.Turns == 0:
		return "empty"
	case s.sum.LastEnd.Kind == "":
		return "open"
	}
	return s.sum.LastEnd.Kind
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// runSessionRemove deletes the named sessions (ids or unique prefixes), printing each one
// removed. Every id is resolved before anything is removed, so a typo removes nothing.
func runSessionRemove(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "session rm", "session rm [--sessions-dir DIR] ID…")
	cf := addConfigFlags(fs, "sessions.root", "sessions.store")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return &usageError{"want the ids of the sessions to remove (list them with \"dsh session ls\")"}
	}
	store, err := sessionStore(ctx, e, cf)
	if err != nil {
		return err
	}
	defer closeStore(store)
	ids := make([]string, 0, len(pos))
	for _, p := range pos {
		id, err := resolveID(ctx, store, p)
		if err != nil {
			return err
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		if err := store.Remove(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "removed %s\n", id)
	}
	return nil
}

// runSessionPrune removes old sessions of the current directory (every directory's with
// --all): those inactive for longer than --older-than, except the --keep most recently
// active ones. It prints what it removes (with --dry-run, what it would remove).
func runSessionPrune(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "session prune", "session prune [--older-than AGE] [--keep N] [--all] [--dry-run] [--sessions-dir DIR]")
	olderThan := fs.String("older-than", "30d", "remove sessions inactive for longer than this: a number of days (30d) or a Go duration (12h)")
	keep := fs.Int("keep", 0, "always keep this many of the most recently active sessions")
	all := fs.Bool("all", false, "prune every workspace's sessions, not only this directory's")
	dryRun := fs.Bool("dry-run", false, "print what would be removed and remove nothing")
	cf := addConfigFlags(fs, "sessions.root", "sessions.store")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	age, err := parseAge(*olderThan)
	if err != nil {
		return &usageError{fmt.Sprintf("--older-than: %v", err)}
	}
	if *keep < 0 {
		return &usageError{fmt.Sprintf("--keep must not be negative, got %d", *keep)}
	}
	store, err := sessionStore(ctx, e, cf)
	if err != nil {
		return err
	}
	defer closeStore(store)
	entries, err := listSessions(ctx, store)
	if err != nil {
		return err
	}
	entries = slices.DeleteFunc(entries, func(s sessionEntry) bool { return s.err != nil || (!*all && s.sum.Cwd != e.cwd) })
	victims := pruneVictims(entries, time.Now(), age, *keep)
	verb := "removed"
	if *dryRun {
		verb = "would remove"
	}
	for _, s := range victims {
		if !*dryRun {
			if err := store.Remove(ctx, s.info.Header.ID); err != nil {
				return err
			}
		}
		fmt.Fprintf(e.stdout, "%s %s (active %s: %s)\n", verb, s.info.Header.ID,
			time.UnixMilli(s.sum.Updated).Local().Format("2006-01-02 15:04"), term.Sanitize(clip(s.sum.FirstPrompt, 48)))
	}
	if len(victims) == 0 {
		fmt.Fprintln(e.stdout, "nothing to prune")
	}
	return nil
}

// pruneVictims picks, from entries ordered by activity (oldest first), the ones inactive
// for longer than age, sparing the keep most recent of all.
func pruneVictims(entries []sessionEntry, now time.Time, age time.Duration, keep int) []sessionEntry {
	limit := max(len(entries)-keep, 0)
	var out []sessionEntry
	for _, s := range entries[:limit] {
		if now.Sub(time.UnixMilli(s.sum.Updated)) > age {
			out = append(out, s)
		}
	}
	return out
}

// maxAgeDays bounds an age in days (about 270 years), far below a Duration's overflow.
const maxAgeDays = 100000

// parseAge reads an age: whole days ("30d") or a Go duration ("12h", "90m").
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 || n > maxAgeDays {
			return 0, fmt.Errorf("want a number of days such as 30d or a duration such as 12h, got %q", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a number of days such as 30d or a duration such as 12h, got %q", s)
	}
	return d, nil
}

// runSessionShow renders a stored session from its log alone: the same cards the live run
// showed, in order. With --json it prints the events as JSON lines.
func runSessionShow(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "session show", "session show [--json] [--sessions-dir DIR] ID")
	asJSON := fs.Bool("json", false, "print the events as JSON lines")
	cf := addConfigFlags(fs, "sessions.root", "sessions.store")
	arg, err := parseSessionID(fs, args)
	if err != nil {
		return err
	}
	c, store, id, err := openSession(ctx, e, cf, arg)
	if err != nil {
		return err
	}
	defer closeStore(store)
	l, err := loadSession(ctx, store, id)
	if err != nil {
		return err
	}
	if *asJSON {
		emit := jsonLines(e.stdout)
		for _, ev := range l.Events {
			emit(ev)
		}
		return nil
	}
	// The cards come from the tools' presenters, which depend only on the arguments and the
	// durable result; a registry over the session's workspace (or any directory, when it is
	// gone) presents them. Mode both makes run_code's card available too.
	ws := l.Header.Cwd
	if _, err := workspaceDir(ws); ws == "" || err != nil {
		ws = os.TempDir()
	}
	rt, err := newRuntime(ctx, runtimeConfig{Workspace: ws, Mode: tool.ModeBoth, Config: c.Config, NoMCP: true})
	if err != nil {
		return err
	}
	defer rt.Close()
	tr := newTranscript(e.stdout, term.For(e.stdout, e.getenv), false, rt.reg)
	for _, ev := range l.Events {
		tr.event(ev)
	}
	if lines, err := usageLines(l.Events, c.Pricing); err != nil {
		fmt.Fprintf(e.stdout, "(the recorded usage cannot be read: %v)\n", err)
	} else {
		for _, line := range lines {
			fmt.Fprintln(e.stdout, line)
		}
	}
	if l.Recovered > 0 {
		fmt.Fprintf(e.stdout, "(%d recovery events close a turn that was interrupted; they are written when the session is resumed)\n", l.Recovered)
	}
	if l.TornBytes > 0 {
		fmt.Fprintf(e.stdout, "(a damaged final batch of %d bytes was ignored)\n", l.TornBytes)
	}
	return nil
}
