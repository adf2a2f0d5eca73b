package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-go/dsh/policy/approval"
)

// runApprove implements "dsh approve SESSION CALL yes|no [--reason TEXT]": it answers a
// pending approval question of a session running on this machine with --approve-from web,
// through the approval socket in its session directory, or with --temporal that of a
// durable session, through its workflow (runApproveTemporal).
func runApprove(ctx context.Context, e *env, args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--temporal" || a == "-temporal" || strings.HasPrefix(a, "--temporal=") || strings.HasPrefix(a, "-temporal=") {
			return runApproveTemporal(ctx, e, args)
		}
	}
	fs := newFlags(e, "approve", "approve [--reason TEXT] [--sessions-dir DIR] SESSION CALL yes|no   (a durable session: approve --temporal HOST:PORT SESSION CALL yes|no)")
	reason := fs.String("reason", "", `with "no": why, told to the model with the rejection`)
	cf := addConfigFlags(fs, "sessions.root")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		return &usageError{"want SESSION CALL yes|no, e.g. dsh approve 01J… call_1 no --reason \"run the tests first\""}
	}
	a := approval.ChannelAnswer{CallID: pos[1], Decision: pos[2], Reason: *reason}
	if err := a.Check(); err != nil {
		return &usageError{err.Error()}
	}
	store, err := sessionStore(ctx, e, cf)
	if err != nil {
		return err
	}
	defer closeStore(store)
	id, err := resolveID(ctx, store, pos[0])
	if err != nil {
		return err
	}
	l, err := store.Load(ctx, id)
	if err != nil {
		return err
	}
	if l.Path == "" {
		return fmt.Errorf("session %s: its store keeps no session directory, so it has no approval socket to answer on", id)
	}
	if err := approval.SendAnswer(ctx, approval.ChannelPath(l.Path), a); err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	fmt.Fprintf(e.stdout, "answered %s to call %s of session %s\n", a.Decision, a.CallID, id)
	return nil
}

// webApprovals opens the approval socket of a session whose log will be at logPath (its
// directory is created when missing): the viewer's page and "dsh approve" answer the
// session's questions through it. Each question is announced on the transcript's stream.
func webApprovals(e *env, id, logPath string) (*approval.Channel, error) {
	if logPath == "" {
		return nil, &usageError{"--approve-from web needs the file session store: the approval socket lives in the session's directory (sessions.store is set)"}
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		return nil, fmt.Errorf("--approve-from web: %w", err)
	}
	ch, err := approval.ListenChannel(approval.ChannelPath(logPath))
	if err != nil {
		return nil, fmt.Errorf("--approve-from web: %w", err)
	}
	ch.Asked = func(q approval.Question) {
		fmt.Fprintf(e.stderr, "  answer on the session viewer's page (dsh session serve), or: dsh approve %s %s yes|no\n", id, q.CallID)
	}
	return ch, nil
}
