package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-go/dsh/policy/approval"
)

// runApprove implements "dsh approve SESSION CALL yes|no [--reason TEXT]": it answers a
// pending approval question of a session running on this machine with --approve-from web,
// through the session's approval socket under the dsh home (whichever store keeps its log),
// or with --temporal that of a durable session, through its workflow (runApproveTemporal).
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
	c, err := loadConfig(e, e.cwd, cf)
	if err != nil {
		return err
	}
	store, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer closeStore(store)
	id, err := resolveID(ctx, store, pos[0])
	if err != nil {
		return err
	}
	path, err := approval.SocketPath(approval.SocketDir(c.home), id)
	if err != nil {
		return err
	}
	if err := approval.SendAnswer(ctx, path, a); err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	fmt.Fprintf(e.stdout, "answered %s to call %s of session %s\n", a.Decision, a.CallID, id)
	return nil
}

// webApprovals opens the approval socket of session id under the dsh home
// (approval.SocketDir): the viewer's page and "dsh approve" answer the session's questions
// through it, whichever store keeps the session. Each question is announced on the
// transcript's stream.
func webApprovals(e *env, home, id string) (*approval.Channel, error) {
	ch, err := approval.ListenSession(approval.SocketDir(home), id)
	if err != nil {
		return nil, fmt.Errorf("--approve-from web: %w", err)
	}
	ch.Asked = func(q approval.Question) {
		fmt.Fprintf(e.stderr, "  answer on the session viewer's page (dsh session serve), or: dsh approve %s %s yes|no\n", id, q.CallID)
	}
	return ch, nil
}
