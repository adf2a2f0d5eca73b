package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session/internal/batchlog"
	"github.com/klauspost/compress/zstd"
)

// DefaultWriteBatchMaxDelay is how long a file-backed log coalesces live events before
// writing them as one batch (the reference's writeBatchMaxDelayMs default).
const DefaultWriteBatchMaxDelay = 200 * time.Millisecond

// FileLog is a Log persisted to one file of a Store. Every write is one batch: the events
// appended since the previous write, encoded as JSON lines, appended as one independent
// zstd frame (or as plain lines), then fsynced. The file is created atomically with the
// first batch; until then nothing is on disk. A background goroutine writes live batches;
// Close stops it.
type FileLog struct {
	path   string
	header Header
	comp   Compression
	b      *batchlog.Log[Event]

	writeMu      sync.Mutex // guards the file's fields below (taken inside the batch writes)
	f            *os.File   // the log, opened for appending once materialized
	size         int64      // file size after the last complete write
	broken       error      // a failed write could not be undone; the file is unusable
	enc          *zstd.Encoder
	materialized bool
}

// newFileLog returns a log for path holding events (already on disk up to size when f is
// non-nil) and starts its writer goroutine.
func newFileLog(path string, h Header, opts *Options, events []Event, f *os.File, size int64) (*FileLog, error) {
	l := &FileLog{
		path:         path,
		header:       h,
		comp:         opts.Compression,
		f:            f,
		size:         size,
		materialized: f != nil,
	}
	if l.comp == CompressionZstd {
		enc, err := newEncoder()
		if err != nil {
			return nil, fmt.Errorf("session: zstd encoder: %w", err)
		}
		l.enc = enc
	}
	now := nowOrDefault(opts.Now)
	// The appended events' payloads follow each other in one arena; batchlog calls Stamp
	// with its lock held, which is what guards the arena.
	var arena jsonv.Arena
	l.b = batchlog.New(batchlog.Config[Event]{
		Delay: opts.WriteBatchMaxDelay,
		Stamp: func(e Event, seq int) (Event, error) {
			return stamp(&arena, e, int64(seq), now().UnixMilli())
		},
		Write:   func(_ context.Context, pending []Event) error { return l.write(pending) },
		Closed:  ErrClosed,
		Timer:   opts.timer,
		Batched: opts.batchDone,
	}, events)
	return l, nil
}

// Header returns the session's header.
func (l *FileLog) Header() Header { return l.header }

// Path returns the log file's path (it exists once the first batch is written).
func (l *FileLog) Path() string { return l.path }

// Append validates and appends a live event; it is written with the next batch.
func (l *FileLog) Append(e Event) (Event, error) { return l.b.Append(e) }

// AppendDurable appends an event and writes and fsyncs it, with every earlier pending
// event, before returning.
func (l *FileLog) AppendDurable(e Event) (Event, error) {
	return l.b.AppendDurable(context.Background(), e)
}

// Events returns the events appended so far (shared, read-only).
func (l *FileLog) Events() []Event { return l.b.Events() }

// Len returns the number of events.
func (l *FileLog) Len() int { return l.b.Len() }

// Durable returns how many events are on stable storage.
func (l *FileLog) Durable() int { return l.b.Durable() }

// Flush writes and fsyncs every pending event.
func (l *FileLog) Flush() error { return l.b.Flush(context.Background()) }

// Close writes the pending events, stops the writer goroutine and closes the file.
func (l *FileLog) Close() error { return l.b.Close(context.Background(), l.release) }

// abandon stops a log that failed to open without writing anything more; the caller
// still owns (and closes) the file.
func (l *FileLog) abandon() {
	l.b.Abandon(func() {
		l.writeMu.Lock()
		l.f = nil
		l.writeMu.Unlock()
		_ = l.release()
	})
}

// release closes the file and the encoder.
func (l *FileLog) release() error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	var err error
	if l.f != nil {
		if cerr := l.f.Close(); cerr != nil {
			err = fmt.Errorf("session: close %q: %w", l.path, cerr)
		}
		l.f = nil
	}
	if l.enc != nil {
		_ = l.enc.Close()
		l.enc = nil
	}
	return err
}

// write appends one batch to the file (creating the file with the first batch) and
// fsyncs it. The batch log calls it, one write at a time.
func (l *FileLog) write(events []Event) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.broken != nil {
		return l.broken
	}
	if l.enc == nil && l.comp == CompressionZstd {
		return fmt.Errorf("session: log %q: %w", l.path, ErrClosed)
	}
	var plain []byte
	for i := range events {
		var err error
		if plain, err = appendEventJSON(plain, &events[i]); err != nil {
			return err
		}
		plain = append(plain, '\n')
	}
	body := l.encode(plain)
	if !l.materialized {
		return l.materialize(body)
	}
	_, err := l.f.Write(body)
	if err == nil {
		err = l.f.Sync()
	}
	if err != nil {
		// Take the partial batch back out, so that the retry does not leave a damaged
		// record in the middle of the file.
		if terr := l.f.Truncate(l.size); terr != nil {
			l.broken = fmt.Errorf("session: log %q is unusable: a failed append (%v) could not be undone: %w", l.path, err, terr)
			return l.broken
		}
		_ = l.f.Sync()
		return fmt.Errorf("session: append to %q: %w", l.path, err)
	}
	l.size += int64(len(body))
	return nil
}

// encode returns the physical record for plain JSONL text: one zstd frame or the text.
func (l *FileLog) encode(plain []byte) []byte {
	if l.comp == CompressionNone {
		return plain
	}
	return l.enc.EncodeAll(plain, nil)
}

// materialize creates the log file with the header and the first batch atomically: the
// content is written and fsynced under a temporary name, then linked to the final name
// (which fails instead of overwriting an existing log), and the directory is fsynced.
func (l *FileLog) materialize(first []byte) error {
	line, err := l.header.line()
	if err != nil {
		return err
	}
	content := append(l.encode(line), first...)
	dir := filepath.Dir(l.path)
	if err := mkdirDurable(dir); err != nil {
		return fmt.Errorf("session: create %q: %w", dir, err)
	}
	opposite := filepath.Join(dir, l.comp.opposite().fileName())
	if _, err := os.Lstat(opposite); err == nil {
		return encodingMismatch(opposite, l.comp)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := l.path + "." + hex.EncodeToString(rnd[:]) + ".tmp"
	if err := writeSynced(tmp, content); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("session: create %q: %w", l.path, err)
	}
	err = os.Link(tmp, l.path)
	if err != nil {
		_ = os.Remove(tmp)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("session: refusing to create %q: a log already exists there (resume it instead)", l.path)
		}
		return fmt.Errorf("session: create %q: %w", l.path, err)
	}
	if err := syncDir(dir); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("session: create %q: %w", l.path, err)
	}
	_ = os.Remove(tmp) // the published log is durable; the temporary name is redundant
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("session: open %q: %w", l.path, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return err
	}
	l.f, l.size, l.materialized = f, int64(len(content)), true
	return nil
}

// writeSynced creates name (which must not exist), writes data and fsyncs it.
func writeSynced(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// mkdirDurable creates dir and its missing parents (mode 0700), fsyncing the parent of
// every directory it creates so the new entries survive a crash.
func mkdirDurable(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%q is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirDurable(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(parent)
}

func encodingMismatch(path string, c Compression) error {
	return fmt.Errorf("session: artifact %q uses the other encoding, but this store is configured for compression %q; use a separate root or the matching compression", path, c)
}
