package main

import (
	"context"
	"path/filepath"

	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/session/pgstore"
)

// openStore opens the session store the configuration names: the PostgreSQL database of
// sessions.store when it is set, else the file store under sessions.root. Close it with
// closeStore.
func openStore(ctx context.Context, c *loadedConfig) (session.Store, error) {
	if c.Sessions.Store != "" {
		return pgstore.Open(ctx, c.Sessions.Store, pgstore.Options{})
	}
	return session.Open(c.Sessions.Root, session.Options{Compression: c.Sessions.Compression})
}

// closeStore releases what a store holds (a database's connections).
func closeStore(s session.Store) {
	if c, ok := s.(interface{ Close() }); ok {
		c.Close()
	}
}

// sessionMCPLog is where the MCP servers of session w log: beside its log file for the
// file store, in the dsh home's logs otherwise.
func sessionMCPLog(c *loadedConfig, w session.Writer) string {
	if fl, ok := w.(*session.FileLog); ok {
		return filepath.Join(filepath.Dir(fl.Path()), "mcp.log")
	}
	return homeMCPLog(c)
}
