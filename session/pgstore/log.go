package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/session/internal/batchlog"
	"github.com/jackc/pgx/v5"
)

// writeTimeout bounds one write transaction: a database that stops answering fails the
// write (the events stay pending and a later flush retries) instead of hanging the agent.
const writeTimeout = time.Minute

// Log is the session.Writer of a Store: the single writer of one session. Live events are
// written in batches, at most WriteBatchMaxDelay after the first of them; AppendDurable
// and Flush write at once. Each batch is one transaction that checks the expected seq and
// renews the lease, then inserts the events. Close flushes, stops the background
// goroutine and releases the lease.
type Log struct {
	s      *Store
	header session.Header
	line   []byte // the header line
	owner  string // this writer's lease token
	b      *batchlog.Log[session.Event]

	created atomic.Bool     // the session row exists
	sum     session.Summary // the summary of the stored events (touched only by write)
}

var _ session.Writer = (*Log)(nil)

func (s *Store) newLog(h session.Header, line []byte, events []session.Event, created bool, owner string) *Log {
	l := &Log{s: s, header: h, line: line, owner: owner, sum: session.Summarize(h, events)}
	l.created.Store(created)
	// The appended events' payloads follow each other in one arena; batchlog calls Stamp
	// with its lock held, which is what guards the arena.
	var arena session.EventArena
	l.b = batchlog.New(batchlog.Config[session.Event]{
		Delay: s.opts.WriteBatchMaxDelay,
		Stamp: func(e session.Event, seq int) (session.Event, error) {
			return arena.Stamp(e, int64(seq), s.now())
		},
		Write:  l.write,
		Closed: session.ErrClosed,
		Every:  s.opts.RenewEvery,
		Tick:   l.renew,
	}, events)
	return l
}

// Header returns the session's header.
func (l *Log) Header() session.Header { return l.header }

// Path names the session in its database.
func (l *Log) Path() string { return l.s.where(l.header.ID) }

// renew is the background renewal: failures are left to the next batch, which retakes
// a lapsed lease nobody took or reports the conflict.
func (l *Log) renew() {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	_ = l.Renew(ctx)
}

// Renew extends this writer's lease to LeaseTTL from now. The writer renews it with every
// batch and, every Options.RenewEvery, in the background, so a session left open between
// turns stays held. A lease another writer has taken is session.ErrConflict; a session
// not written yet holds no lease, and Renew does nothing.
func (l *Log) Renew(ctx context.Context) error {
	if !l.created.Load() {
		return nil
	}
	now := l.s.now()
	tag, err := l.s.pool.Exec(ctx, `UPDATE dsh_sessions SET lease_owner = $2, lease_until = $3
		WHERE id = $1 AND (lease_owner = $2 OR lease_owner IS NULL OR lease_until < $4)`,
		l.header.ID, l.owner, now+l.s.opts.LeaseTTL.Milliseconds(), now)
	if err != nil {
		return fmt.Errorf("pgstore: renew the lease of session %q in %s: %w", l.header.ID, l.s.root, err)
	}
	if tag.RowsAffected() == 0 {
		return l.s.heldError(ctx, l.header.ID)
	}
	return nil
}

// Append validates and appends a live event; it is written with the next batch.
func (l *Log) Append(e session.Event) (session.Event, error) { return l.b.Append(e) }

// AppendDurable appends an event and writes it, with every earlier pending event, before
// returning.
func (l *Log) AppendDurable(e session.Event) (session.Event, error) {
	return l.b.AppendDurable(context.Background(), e)
}

// Events returns the events appended so far (shared, read-only).
func (l *Log) Events() []session.Event { return l.b.Events() }

// Len returns the number of events.
func (l *Log) Len() int { return l.b.Len() }

// Durable returns how many events are stored in the database.
func (l *Log) Durable() int { return l.b.Durable() }

// Flush writes every pending event.
func (l *Log) Flush() error { return l.b.Flush(context.Background()) }

// Close writes the pending events, stops the background goroutine and releases the
// lease. Close is idempotent.
func (l *Log) Close() error {
	return l.b.Close(context.Background(), func() error {
		if l.created.Load() {
			l.s.release(l.header.ID, l.owner)
		}
		return nil
	})
}

// abandon stops a log that failed to open, releasing its lease.
func (l *Log) abandon() {
	l.b.Abandon(func() { l.s.release(l.header.ID, l.owner) })
}

// write stores one batch in a transaction, within writeTimeout: the session row
// (inserted with the first batch, with this writer's lease), the seq and lease check, and
// the events. The batch log calls it, one write at a time.
func (l *Log) write(ctx context.Context, events []session.Event) error {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	created := l.created.Load()
	b, err := encodeBatch(events)
	if err != nil {
		return err
	}
	sum := l.sum
	for _, e := range events {
		sum.Add(e)
	}
	id, first := l.header.ID, events[0].Seq
	now := l.s.now()
	until := now + l.s.opts.LeaseTTL.Milliseconds()
	err = pgx.BeginFunc(ctx, l.s.pool, func(tx pgx.Tx) error {
		if !created {
			tag, err := tx.Exec(ctx, `INSERT INTO dsh_sessions (id, header, cwd, client, created_at, updated_at, next_seq, bytes, lease_owner, lease_until)
				VALUES ($1, $2, $3, $4, $5, $6, 0, 0, $7, $8) ON CONFLICT (id) DO NOTHING`,
				id, l.line, l.header.Cwd, l.header.Client, l.header.CreatedAt, l.header.CreatedAt, l.owner, until)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return fmt.Errorf("%w: session %q was created by another writer", session.ErrExists, id)
			}
		}
		// The lease is this writer's, or lapsed and not taken since: retake it. The seq
		// must be where this writer left it.
		var next int64
		var owner *string
		err := tx.QueryRow(ctx, `UPDATE dsh_sessions SET next_seq = $3, bytes = bytes + $4, updated_at = $5, lease_owner = $6, lease_until = $7,
			workspace = $9, first_prompt = $10, turns = $11, messages = $12, last_end = $13,
			input_tokens = $14, cached_input_tokens = $15, output_tokens = $16, reasoning_tokens = $17
			WHERE id = $1 AND next_seq = $2 AND (lease_owner = $6 OR lease_owner IS NULL OR lease_until < $8)
			RETURNING next_seq, lease_owner`,
			append([]any{id, first, first + int64(len(events)), b.bytes, sum.Updated, l.owner, until, now}, summaryArgs(sum)...)...).Scan(&next, &owner)
		if errors.Is(err, pgx.ErrNoRows) {
			return l.conflict(ctx, tx, first)
		}
		if err != nil {
			return err
		}
		return b.insert(ctx, tx, id)
	})
	if err != nil {
		return fmt.Errorf("pgstore: append to session %q in %s: %w", id, l.s.root, err)
	}
	l.sum = sum
	l.created.Store(true)
	return nil
}

// conflict explains why a batch was refused: the session is gone, another writer holds
// it, or another writer appended at this seq.
func (l *Log) conflict(ctx context.Context, tx pgx.Tx, first int64) error {
	var next, until int64
	var owner *string
	err := tx.QueryRow(ctx, `SELECT next_seq, lease_owner, lease_until FROM dsh_sessions WHERE id = $1`, l.header.ID).Scan(&next, &owner, &until)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("session %q was removed: %w", l.header.ID, session.ErrNotFound)
	}
	if err != nil {
		return err
	}
	if next != first {
		return fmt.Errorf("%w: this writer expected to append at seq %d, but the session holds %d events", session.ErrConflict, first, next)
	}
	return fmt.Errorf("%w: its lease runs until %s", session.ErrConflict, time.UnixMilli(until).UTC().Format(time.RFC3339))
}

// Attachments returns the session's attachment store, kept in the database.
func (l *Log) Attachments() session.Attachments { return &attachments{s: l.s, id: l.header.ID} }

// attachments is a session's attachment store in dsh_attachments, content-addressed as
// session.AttachmentID says.
type attachments struct {
	s  *Store
	id string
}

// PutAttachment stores an image and returns its id; storing the same bytes again writes
// nothing.
func (a *attachments) PutAttachment(mediaType string, data []byte) (string, error) {
	if got := session.SniffImage(data); got == "" || got != mediaType {
		return "", fmt.Errorf("attachment: the bytes are not a %s image (they look like %q)", mediaType, got)
	}
	if len(data) > session.MaxAttachmentBytes {
		return "", fmt.Errorf("attachment: %d bytes is more than the %d-byte limit", len(data), session.MaxAttachmentBytes)
	}
	id := session.AttachmentID(data)
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if _, err := a.s.pool.Exec(ctx, `INSERT INTO dsh_attachments (session_id, id, media_type, data) VALUES ($1, $2, $3, $4)
		ON CONFLICT DO NOTHING`, a.id, id, mediaType, data); err != nil {
		return "", fmt.Errorf("attachment: store %s of session %q: %w", id, a.id, err)
	}
	return id, nil
}

// ReadAttachment returns a stored image, checked against its id.
func (a *attachments) ReadAttachment(id string) (string, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	var mt string
	var data []byte
	err := a.s.pool.QueryRow(ctx, `SELECT media_type, data FROM dsh_attachments WHERE session_id = $1 AND id = $2`, a.id, id).Scan(&mt, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil, fmt.Errorf("attachment %s: %w", id, session.ErrAttachmentNotFound)
	}
	if err != nil {
		return "", nil, fmt.Errorf("attachment %s of session %q: %w", id, a.id, err)
	}
	if session.AttachmentID(data) != id || !bytes.Equal([]byte(session.SniffImage(data)), []byte(mt)) {
		return "", nil, fmt.Errorf("attachment %s of session %q is damaged: its bytes do not match its id", id, a.id)
	}
	return mt, data, nil
}
