package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// runSession implements "dsh session ls" and "dsh session show ID".
func runSession(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return &usageError{"want a subcommand: ls or show ID"}
	}
	switch args[0] {
	case "ls", "list":
		return runSessionList(ctx, e, args[1:])
	case "show":
		return runSessionShow(ctx, e, args[1:])
	case "-h", "-help", "--help":
		fmt.Fprintln(e.stderr, "Usage: dsh session ls [--json] | dsh session show [--json] ID")
		return errHelp
	}
	return &usageError{fmt.Sprintf("unknown subcommand %q (want ls or show ID)", args[0])}
}

// runSessionList lists the stored sessions, oldest first.
func runSessionList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "session ls", "session ls [--json] [--sessions-dir DIR]")
	asJSON := fs.Bool("json", false, "print the sessions as JSON lines")
	cf := addConfigFlags(fs, "sessions.root")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	c, err := loadConfig(e, e.cwd, cf)
	if err != nil {
		return err
	}
	store, err := openStore(c)
	if err != nil {
		return err
	}
	infos, err := store.List(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		for _, in := range infos {
			o := jsonv.NewObject(
				jsonv.Member{Name: "id", Value: in.Header.ID},
				jsonv.Member{Name: "createdAt", Value: float64(in.Header.CreatedAt)},
				jsonv.Member{Name: "cwd", Value: in.Header.Cwd},
				jsonv.Member{Name: "path", Value: in.Path},
				jsonv.Member{Name: "size", Value: float64(in.Size)},
			)
			if in.Header.Client != "" {
				o.Set("client", in.Header.Client)
			}
			if in.Err != nil {
				o.Set("error", in.Err.Error())
			}
			b, err := jsonv.Marshal(o)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s\n", b)
		}
		return nil
	}
	if len(infos) == 0 {
		fmt.Fprintf(e.stdout, "no sessions in %s\n", store.Root())
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tSIZE\tBY\tWORKSPACE")
	for _, in := range infos {
		if in.Err != nil {
			fmt.Fprintf(tw, "?\t-\t%d\t-\t%s (unreadable: %v)\n", in.Size, in.Path, in.Err)
			continue
		}
		created := time.UnixMilli(in.Header.CreatedAt).Local().Format("2006-01-02 15:04:05")
		by := in.Header.Client
		if by == "" {
			by = "agent" // dsh run, dsh demo or a library agent
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", in.Header.ID, created, humanSize(in.Size), term.Sanitize(by), term.Sanitize(in.Header.Cwd))
	}
	return tw.Flush()
}

// runSessionShow renders a stored session from its log alone: the same cards the live run
// showed, in order. With --json it prints the events as JSON lines.
func runSessionShow(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "session show", "session show [--json] [--sessions-dir DIR] ID")
	asJSON := fs.Bool("json", false, "print the events as JSON lines")
	cf := addConfigFlags(fs, "sessions.root")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &usageError{"want one session id (list them with \"dsh session ls\")"}
	}
	c, err := loadConfig(e, e.cwd, cf)
	if err != nil {
		return err
	}
	store, err := openStore(c)
	if err != nil {
		return err
	}
	l, err := loadSession(ctx, store, pos[0])
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
	if l.Recovered > 0 {
		fmt.Fprintf(e.stdout, "(%d recovery events close a turn that was interrupted; they are written when the session is resumed)\n", l.Recovered)
	}
	if l.TornBytes > 0 {
		fmt.Fprintf(e.stdout, "(a damaged final batch of %d bytes was ignored)\n", l.TornBytes)
	}
	return nil
}

// humanSize renders a byte count for listings.
func humanSize(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
