package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations are the schema's versions, in order: migrations[i] brings a database from
// version i to version i+1. A released migration is never edited; a change is a new one.
var migrations = []string{
	// 1: sessions, their append-only events and their attachments.
	`CREATE TABLE dsh_sessions (
		id          text PRIMARY KEY,
		header      bytea NOT NULL,         -- the header line, as the file store writes it
		cwd         text NOT NULL,
		client      text NOT NULL,
		created_at  bigint NOT NULL,        -- Unix milliseconds
		updated_at  bigint NOT NULL,        -- the time of the last event
		next_seq    bigint NOT NULL,        -- the number of events, the seq of the next one
		bytes       bigint NOT NULL,        -- the size of the stored payloads
		lease_owner text,                   -- the writer holding the session, NULL when none
		lease_until bigint NOT NULL DEFAULT 0,
		-- the summary of the stored events (session.Summary), for listings
		workspace           text NOT NULL DEFAULT '',
		first_prompt        text NOT NULL DEFAULT '',
		turns               integer NOT NULL DEFAULT 0,
		messages            integer NOT NULL DEFAULT 0,
		last_end            text NOT NULL DEFAULT '', -- how the last turn ended, '' while open
		input_tokens        bigint NOT NULL DEFAULT 0,
		cached_input_tokens bigint NOT NULL DEFAULT 0,
		output_tokens       bigint NOT NULL DEFAULT 0,
		reasoning_tokens    bigint NOT NULL DEFAULT 0
	);
	CREATE INDEX dsh_sessions_created ON dsh_sessions (created_at, id);
	CREATE TABLE dsh_events (
		session_id text NOT NULL REFERENCES dsh_sessions (id) ON DELETE CASCADE,
		seq        bigint NOT NULL CHECK (seq >= 0),
		time       bigint NOT NULL,
		type       text NOT NULL,
		payload    bytea NOT NULL,          -- the event line, as the file store writes it
		PRIMARY KEY (session_id, seq)
	);
	CREATE TABLE dsh_attachments (
		session_id text NOT NULL,
		id         text NOT NULL,
		media_type text NOT NULL,
		data       bytea NOT NULL,
		PRIMARY KEY (session_id, id)
	);`,
}

// SchemaVersion is the schema version this package writes and reads.
var SchemaVersion = len(migrations)

// migrate brings the database's schema to SchemaVersion. It is idempotent and safe to run
// from several processes at once: a transaction-scoped advisory lock serializes them, and
// each applied version is recorded in dsh_schema. A database whose schema is newer than
// this package is refused.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7358330126105497943)`); err != nil {
			return fmt.Errorf("lock the schema: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS dsh_schema (
			version    integer PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("create dsh_schema: %w", err)
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM dsh_schema`).Scan(&current); err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
		if current > len(migrations) {
			return fmt.Errorf("the database's session schema is version %d, newer than this dsh's %d: upgrade dsh", current, len(migrations))
		}
		for v := current; v < len(migrations); v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate the schema to version %d: %w", v+1, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO dsh_schema (version) VALUES ($1)`, v+1); err != nil {
				return fmt.Errorf("record schema version %d: %w", v+1, err)
			}
		}
		return nil
	})
}
