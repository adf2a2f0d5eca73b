package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/session"
)

// runSessionExport writes a stored session as a plain session log (header line, then one
// line per event, exactly as the file store keeps them) to standard output or --out.
func runSessionExport(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "session export", "session export [--out FILE] [--sessions-dir DIR | --store URL] ID")
	out := fs.String("out", "", "write the log to this new file instead of standard output")
	cf := addConfigFlags(fs, "sessions.root", "sessions.store")
	arg, err := parseSessionID(fs, args)
	if err != nil {
		return err
	}
	_, store, id, err := openSession(ctx, e, cf, arg)
	if err != nil {
		return err
	}
	defer closeStore(store)
	if *out == "" {
		return session.Export(ctx, store, id, e.stdout)
	}
	f, err := os.OpenFile(resolvePath(e, *out), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, iofs.ErrExist) {
		return fmt.Errorf("--out %s exists already; choose a new file", *out)
	}
	if err != nil {
		return err
	}
	err = session.Export(ctx, store, id, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	fmt.Fprintf(e.stderr, "exported session %s to %s\n", id, term.Sanitize(*out))
	return nil
}

// runSessionImport stores a session log (what export writes, or a file store's log file)
// in the configured store with its id, seqs and times unchanged.
func runSessionImport(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "session import", "session import [--sessions-dir DIR | --store URL] FILE")
	cf := addConfigFlags(fs, "sessions.root", "sessions.store")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &usageError{"want the file of one session log (written by \"dsh session export\")"}
	}
	f, err := os.Open(resolvePath(e, pos[0]))
	if err != nil {
		return err
	}
	defer f.Close()
	store, err := sessionStore(ctx, e, cf)
	if err != nil {
		return err
	}
	defer closeStore(store)
	h, err := session.Import(ctx, store, f)
	if err != nil {
		return fmt.Errorf("import %s: %w", term.Sanitize(pos[0]), err)
	}
	fmt.Fprintf(e.stdout, "imported session %s into %s\n", h.ID, term.Sanitize(store.Root()))
	return nil
}

// resolvePath makes a command-line path absolute against the command's directory.
func resolvePath(e *env, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(e.cwd, p)
}
