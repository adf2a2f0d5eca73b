// Package pgstore keeps dsh sessions in PostgreSQL: a session.Store for teams that run
// many agents at once and keep their state in a database.
//
// A session is one row of dsh_sessions (its header line, as the file store writes it,
// plus what listings need) and its events are rows of dsh_events keyed by (session_id,
// seq), append-only, each holding the same event line the file store writes. Loading
// decodes those lines with the session package and closes an interrupted turn with the
// same recovery events, so a session reads alike from either store.
//
// One writer per session: a writer appends at the seq it expects, so a second writer's
// batch collides with the first's on the (session_id, seq) key and is refused with
// session.ErrConflict; and a writer holds a lease on its session, renewed while it writes
// and in the background, that makes Resume and Remove refuse a session in use. A crashed
// writer's lease lapses after Options.LeaseTTL, and the session can then be resumed.
package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/dsh-go/dsh/session"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultLeaseTTL is how long a writer's lease lasts without renewal.
const DefaultLeaseTTL = 30 * time.Second

// Options configures a Store. The zero value selects the defaults.
type Options struct {
	// LeaseTTL is how long a writer's lease on its session lasts without renewal (default
	// DefaultLeaseTTL). A crashed writer's session can be resumed once it has lapsed.
	LeaseTTL time.Duration
	// RenewEvery is how often an open writer renews its lease in the background (default
	// LeaseTTL/3); a negative value turns background renewal off, leaving the renewal
	// every write does.
	RenewEvery time.Duration
	// WriteBatchMaxDelay is how long live events are coalesced before they are written
	// (default session.DefaultWriteBatchMaxDelay).
	WriteBatchMaxDelay time.Duration
	// Now supplies event times and judges leases (default time.Now).
	Now func() time.Time
	// MaxConns bounds the connection pool (default: pgx's, at least 4).
	MaxConns int32
}

// Store is a session.Store in a PostgreSQL database. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	root string // the URL without its password
	opts Options
}

var _ session.Store = (*Store)(nil)

// IsURL reports whether s names a PostgreSQL database (a postgres:// or postgresql://
// URL) rather than a directory.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Open connects to the database rawURL names (postgres://user:password@host:port/db?…),
// checks that it answers, and migrates the session schema to SchemaVersion. Close
// releases the connections.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	if !IsURL(rawURL) {
		return nil, fmt.Errorf("pgstore: %q is not a postgres:// URL", redact(rawURL))
	}
	root := redact(rawURL)
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("pgstore: parse %s: %v", root, scrub(err, rawURL))
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	} else if cfg.MaxConns < 4 {
		cfg.MaxConns = 4
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if opts.RenewEvery == 0 {
		opts.RenewEvery = opts.LeaseTTL / 3
	}
	if opts.WriteBatchMaxDelay <= 0 {
		opts.WriteBatchMaxDelay = session.DefaultWriteBatchMaxDelay
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect to %s: %v", root, scrub(err, rawURL))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: connect to %s: %v", root, scrub(err, rawURL))
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: %s: %w", root, err)
	}
	return &Store{pool: pool, root: root, opts: opts}, nil
}

// redact returns a URL with its password replaced by "xxxxx".
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)"
	}
	return u.Redacted()
}

// scrub removes the password of rawURL from an error's text.
func scrub(err error, rawURL string) string {
	msg := err.Error()
	if u, perr := url.Parse(rawURL); perr == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
	}
	return msg
}

// Close releases the store's connections. Writers must be closed first.
func (s *Store) Close() { s.pool.Close() }

// Root returns the database URL without its password.
func (s *Store) Root() string { return s.root }

// where names a session for messages.
func (s *Store) where(id string) string { return s.root + " session " + id }

func (s *Store) now() int64 { return s.opts.Now().UnixMilli() }

// newOwner returns a fresh lease owner token: every writer has its own.
func newOwner() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Create starts a new session (see session.Store). The row is inserted, with the
// writer's lease, together with the first written batch, as the file store creates its
// file with the first batch; until then the id is only checked to be free.
func (s *Store) Create(ctx context.Context, h session.Header) (session.Writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := s.opts.Now()
	if h.ID == "" {
		h.ID = session.NewID(now)
	}
	if h.CreatedAt == 0 {
		h.CreatedAt = now.UnixMilli()
	}
	h.Version = session.FormatVersion
	line, err := session.EncodeHeader(h)
	if err != nil {
		return nil, fmt.Errorf("pgstore: create: %w", err)
	}
	switch _, err := s.exists(ctx, h.ID); {
	case err == nil:
		return nil, fmt.Errorf("pgstore: create %q: %w in %s", h.ID, session.ErrExists, s.root)
	case !errors.Is(err, session.ErrNotFound):
		return nil, err
	}
	return s.newLog(h, line, nil, false, newOwner()), nil
}

// exists returns the session's next seq, or an error wrapping session.ErrNotFound.
func (s *Store) exists(ctx context.Context, id string) (int64, error) {
	var next int64
	err := s.pool.QueryRow(ctx, `SELECT next_seq FROM dsh_sessions WHERE id = $1`, id).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("session %q: %w", id, session.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("pgstore: look up session %q in %s: %w", id, s.root, err)
	}
	return next, nil
}

// Load reads a session without modifying it: its events, then the recovery events that
// close an interrupted turn (session.RecoveryEvents).
func (s *Store) Load(ctx context.Context, id string) (*session.Loaded, error) {
	h, events, err := s.snapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	return session.NewLoaded(h, s.where(id), events), nil
}

// snapshot reads a session in one read-only, repeatable-read transaction, so that a
// writer committing meanwhile is seen entirely or not at all.
func (s *Store) snapshot(ctx context.Context, id string) (h session.Header, events []session.Event, err error) {
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var rerr error
		h, events, rerr = s.read(ctx, tx, id)
		return rerr
	})
	return h, events, err
}

// querier is what read needs of a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// read returns a session's header and stored events, checked as the file store checks a
// file: a header naming this session, events that decode and run contiguously from seq 0.
func (s *Store) read(ctx context.Context, q querier, id string) (session.Header, []session.Event, error) {
	var line []byte
	var next int64
	err := q.QueryRow(ctx, `SELECT header, next_seq FROM dsh_sessions WHERE id = $1`, id).Scan(&line, &next)
	if errors.Is(err, pgx.ErrNoRows) {
		return session.Header{}, nil, fmt.Errorf("session %q: %w", id, session.ErrNotFound)
	}
	if err != nil {
		return session.Header{}, nil, fmt.Errorf("pgstore: read session %q from %s: %w", id, s.root, err)
	}
	h, err := session.ParseHeader(line)
	if err != nil {
		return session.Header{}, nil, s.corrupt(id, -1, err)
	}
	if h.ID != id {
		return session.Header{}, nil, s.corrupt(id, -1, fmt.Errorf("requested id %q does not match header id %q", id, h.ID))
	}
	rows, err := q.Query(ctx, `SELECT seq, time, payload FROM dsh_events WHERE session_id = $1 ORDER BY seq`, id)
	if err != nil {
		return session.Header{}, nil, fmt.Errorf("pgstore: read the events of session %q from %s: %w", id, s.root, err)
	}
	defer rows.Close()
	events := make([]session.Event, 0, next)
	// The payloads follow each other in one arena, as a file store's load lays them out.
	var arena session.EventArena
	for rows.Next() {
		var seq, t int64
		var payload []byte
		if err := rows.Scan(&seq, &t, &payload); err != nil {
			return session.Header{}, nil, fmt.Errorf("pgstore: read the events of session %q from %s: %w", id, s.root, err)
		}
		e, err := arena.ParseEvent(payload)
		if err != nil {
			return session.Header{}, nil, s.corrupt(id, seq, err)
		}
		switch want := int64(len(events)); {
		case seq != want:
			return session.Header{}, nil, s.corrupt(id, seq, fmt.Errorf("seq gap: expected seq %d, got %d", want, seq))
		case e.Seq != seq || e.Time != t:
			return session.Header{}, nil, s.corrupt(id, seq, fmt.Errorf("the payload says seq %d time %d, its row seq %d time %d", e.Seq, e.Time, seq, t))
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return session.Header{}, nil, fmt.Errorf("pgstore: read the events of session %q from %s: %w", id, s.root, err)
	}
	if int64(len(events)) != next {
		return session.Header{}, nil, s.corrupt(id, int64(len(events)), fmt.Errorf("the session records %d events, the table holds %d", next, len(events)))
	}
	return h, events, nil
}

// corrupt reports a stored session that cannot be read, naming the session and the seq
// of the bad event (-1: the header).
func (s *Store) corrupt(id string, seq int64, err error) error {
	if seq < 0 {
		return fmt.Errorf("pgstore: session %q in %s has a corrupt header: %w", id, s.root, err)
	}
	return fmt.Errorf("pgstore: session %q in %s is corrupt at event seq %d: %w", id, s.root, seq, err)
}

// Resume reopens a session for appending (see session.Store): it takes the session's
// lease — refused with session.ErrConflict while another writer's has not lapsed —
// durably records the recovery events Load would add, and returns the log after them.
func (s *Store) Resume(ctx context.Context, id string) (session.Writer, error) {
	return s.reopen(ctx, id, true)
}

// Reopen reopens a session for appending as it stands (see session.Store.Reopen): it
// takes the lease as Resume does but records no recovery events, so an open turn stays
// open for the writer that owns it.
func (s *Store) Reopen(ctx context.Context, id string) (session.Writer, error) {
	return s.reopen(ctx, id, false)
}

// reopen takes a session's lease and returns its log, with or without recording the
// recovery events of an interrupted turn.
func (s *Store) reopen(ctx context.Context, id string, withRecovery bool) (session.Writer, error) {
	owner := newOwner()
	now := s.now()
	tag, err := s.pool.Exec(ctx, `UPDATE dsh_sessions SET lease_owner = $2, lease_until = $3
		WHERE id = $1 AND (lease_owner IS NULL OR lease_until < $4)`, id, owner, now+s.opts.LeaseTTL.Milliseconds(), now)
	if err != nil {
		return nil, fmt.Errorf("pgstore: take the lease of session %q in %s: %w", id, s.root, err)
	}
	if tag.RowsAffected() == 0 {
		return nil, s.heldError(ctx, id)
	}
	h, events, err := s.snapshot(ctx, id)
	if err != nil {
		s.release(id, owner)
		return nil, err
	}
	line, err := session.EncodeHeader(h)
	if err != nil {
		s.release(id, owner)
		return nil, s.corrupt(id, -1, err)
	}
	l := s.newLog(h, line, events, true, owner)
	var rec []session.Event
	if withRecovery {
		rec = session.RecoveryEvents(events)
	}
	if len(rec) == 0 {
		return l, nil
	}
	keepTime := func(e session.Event, seq int) (session.Event, error) { return session.Stamp(e, int64(seq), e.Time) }
	if err := l.b.AppendAll(ctx, rec, keepTime); err != nil {
		l.abandon()
		return nil, fmt.Errorf("pgstore: record the recovery events of session %q: %w", id, err)
	}
	return l, nil
}

// heldError explains why a session's lease could not be taken: it does not exist, or
// another writer holds it.
func (s *Store) heldError(ctx context.Context, id string) error {
	var until int64
	err := s.pool.QueryRow(ctx, `SELECT lease_until FROM dsh_sessions WHERE id = $1`, id).Scan(&until)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("session %q: %w", id, session.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("pgstore: look up session %q in %s: %w", id, s.root, err)
	}
	return fmt.Errorf("session %q in %s: %w (its lease runs until %s; a crashed writer's lease lapses by then)",
		id, s.root, session.ErrConflict, time.UnixMilli(until).UTC().Format(time.RFC3339))
}

// release gives up a lease (best effort: an unreleased lease lapses on its own).
func (s *Store) release(id, owner string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = s.pool.Exec(ctx, `UPDATE dsh_sessions SET lease_owner = NULL, lease_until = 0 WHERE id = $1 AND lease_owner = $2`, id, owner)
}

// List describes every stored session, ordered by creation time (then id). Info.Path
// names the session in the database and Info.Size is the size of its event lines.
func (s *Store) List(ctx context.Context) ([]session.Info, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, header, bytes, updated_at, workspace, first_prompt, turns, messages, last_end,
		input_tokens, cached_input_tokens, output_tokens, reasoning_tokens FROM dsh_sessions ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list the sessions in %s: %w", s.root, err)
	}
	defer rows.Close()
	var out []session.Info
	for rows.Next() {
		var id, end string
		var line []byte
		var size int64
		var sum session.Summary
		var in, cached, output, reasoning int64
		if err := rows.Scan(&id, &line, &size, &sum.Updated, &sum.Cwd, &sum.FirstPrompt, &sum.Turns, &sum.Messages, &end,
			&in, &cached, &output, &reasoning); err != nil {
			return nil, fmt.Errorf("pgstore: list the sessions in %s: %w", s.root, err)
		}
		info := session.Info{Path: s.where(id), Size: size}
		h, err := session.ParseHeader(line)
		if err == nil && h.ID != id {
			err = fmt.Errorf("requested id %q does not match header id %q", id, h.ID)
		}
		if err != nil {
			info.Err = s.corrupt(id, -1, err)
		} else {
			info.Header = h
			sum.LastEnd.Kind = end
			sum.Tokens = session.Tokens{Input: int(in), CachedInput: int(cached), Output: int(output), Reasoning: int(reasoning)}
			info.Summary = &sum
		}
		out = append(out, info)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: list the sessions in %s: %w", s.root, err)
	}
	return out, nil
}

// Resolve returns the full id of the session id names: an exact id, else the only id
// starting with it.
func (s *Store) Resolve(ctx context.Context, id string) (string, error) {
	if id == "" {
		return "", errors.New("session: empty session id")
	}
	rows, err := s.pool.Query(ctx, `SELECT id FROM dsh_sessions WHERE id = $1 OR starts_with(id, $1) ORDER BY id LIMIT 100`, id)
	if err != nil {
		return "", fmt.Errorf("pgstore: resolve session %q in %s: %w", id, s.root, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", fmt.Errorf("pgstore: resolve session %q in %s: %w", id, s.root, err)
	}
	for _, got := range ids {
		if got == id {
			return id, nil
		}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("session %q: %w", id, session.ErrNotFound)
	case 1:
		return ids[0], nil
	}
	return "", &session.AmbiguousError{Prefix: id, Candidates: ids}
}

// Remove deletes a stored session with its events and attachments. A session whose
// writer's lease has not lapsed is refused with session.ErrConflict.
func (s *Store) Remove(ctx context.Context, id string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM dsh_sessions WHERE id = $1 AND (lease_owner IS NULL OR lease_until < $2)`, id, s.now())
		if err != nil {
			return fmt.Errorf("pgstore: remove session %q from %s: %w", id, s.root, err)
		}
		if tag.RowsAffected() == 0 {
			return s.heldError(ctx, id)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM dsh_attachments WHERE session_id = $1`, id); err != nil {
			return fmt.Errorf("pgstore: remove the attachments of session %q from %s: %w", id, s.root, err)
		}
		return nil
	})
}

// Import stores a session read elsewhere exactly as given (see session.Store.Import), in
// one transaction. An id that already exists is refused with session.ErrExists.
func (s *Store) Import(ctx context.Context, h session.Header, events []session.Event) error {
	h, events, err := session.CheckImport(h, events)
	if err != nil {
		return err
	}
	if len(events) == 0 {
		return fmt.Errorf("session: import %q: a session without events is not stored", h.ID)
	}
	line, err := session.EncodeHeader(h)
	if err != nil {
		return fmt.Errorf("session: import %q: %w", h.ID, err)
	}
	b, err := encodeBatch(events)
	if err != nil {
		return fmt.Errorf("session: import %q: %w", h.ID, err)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		sum := session.Summarize(h, events)
		tag, err := tx.Exec(ctx, `INSERT INTO dsh_sessions (id, header, cwd, client, created_at, updated_at, next_seq, bytes,
			workspace, first_prompt, turns, messages, last_end, input_tokens, cached_input_tokens, output_tokens, reasoning_tokens)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) ON CONFLICT (id) DO NOTHING`,
			append([]any{h.ID, line, h.Cwd, h.Client, h.CreatedAt, sum.Updated, int64(len(events)), b.bytes}, summaryArgs(sum)...)...)
		if err != nil {
			return fmt.Errorf("pgstore: import session %q into %s: %w", h.ID, s.root, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("session: import %q: %w in %s", h.ID, session.ErrExists, s.root)
		}
		if err := b.insert(ctx, tx, h.ID); err != nil {
			return fmt.Errorf("pgstore: import session %q into %s: %w", h.ID, s.root, err)
		}
		return nil
	})
}

// CheckWritable verifies that this database user may write sessions.
func (s *Store) CheckWritable(cwd string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT has_table_privilege('dsh_sessions', 'INSERT, UPDATE')
		AND has_table_privilege('dsh_events', 'INSERT') AND has_table_privilege('dsh_attachments', 'INSERT')`).Scan(&ok)
	if err != nil {
		return fmt.Errorf("session store %s: %w", s.root, err)
	}
	if !ok {
		return fmt.Errorf("session store %s is not writable: this user may not insert into the session tables", s.root)
	}
	return nil
}

// batch is a run of events encoded for one insert.
type batch struct {
	seqs, times []int64
	types       []string
	payloads    [][]byte
	bytes       int64
}

func encodeBatch(events []session.Event) (*batch, error) {
	b := &batch{}
	for _, e := range events {
		p, err := session.EncodeEvent(e)
		if err != nil {
			return nil, err
		}
		b.seqs = append(b.seqs, e.Seq)
		b.times = append(b.times, e.Time)
		b.types = append(b.types, e.Type)
		b.payloads = append(b.payloads, p)
		b.bytes += int64(len(p)) + 1 // the newline the file store adds
	}
	return b, nil
}

// insert writes the batch's events in one statement. A (session_id, seq) key that is
// taken means another writer appended first: session.ErrConflict.
func (b *batch) insert(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, `INSERT INTO dsh_events (session_id, seq, time, type, payload)
		SELECT $1, * FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::bytea[])`,
		id, b.seqs, b.times, b.types, b.payloads)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return fmt.Errorf("%w: seq %d of session %q is already written", session.ErrConflict, b.seqs[0], id)
	}
	return err
}

// summaryArgs are the values of the summary columns, workspace to reasoning_tokens.
func summaryArgs(sum session.Summary) []any {
	return []any{sum.Cwd, sum.FirstPrompt, sum.Turns, sum.Messages, sum.LastEnd.Kind,
		int64(sum.Tokens.Input), int64(sum.Tokens.CachedInput), int64(sum.Tokens.Output), int64(sum.Tokens.Reasoning)}
}

// Activity returns whether a writer's lease on the session is in force (a crashed
// writer's counts until it lapses) and the session's event count as its mark
// (session.Watcher).
func (s *Store) Activity(ctx context.Context, id string) (session.Activity, error) {
	var a session.Activity
	err := s.pool.QueryRow(ctx, `SELECT next_seq, lease_owner IS NOT NULL AND lease_until >= $2 FROM dsh_sessions WHERE id = $1`,
		id, s.now()).Scan(&a.Mark, &a.Held)
	if errors.Is(err, pgx.ErrNoRows) {
		return session.Activity{}, fmt.Errorf("session %q: %w", id, session.ErrNotFound)
	}
	if err != nil {
		return session.Activity{}, fmt.Errorf("pgstore: look at session %q in %s: %w", id, s.root, err)
	}
	return a, nil
}

var _ session.Watcher = (*Store)(nil)
