package session

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/klauspost/compress/zstd"
)

// ErrNotFound is returned (wrapped) when a store holds no log for a session id.
var ErrNotFound = errors.New("session: not found")

// ErrExists is returned (wrapped) when a session to be created or imported already has a
// log.
var ErrExists = errors.New("session: already exists")

// Options configures a Store. The zero value selects the defaults.
type Options struct {
	// Compression is the store's encoding: CompressionZstd (default) or CompressionNone.
	Compression Compression
	// WriteBatchMaxDelay is how long live events are coalesced before they are written
	// (default DefaultWriteBatchMaxDelay).
	WriteBatchMaxDelay time.Duration
	// Now supplies event and creation times (default time.Now).
	Now func() time.Time

	// timer replaces the batch timer in tests: it returns a channel that fires when the
	// batch is due and a function that releases the timer.
	timer func(time.Duration) (<-chan time.Time, func())
	// batchDone is called by the writer goroutine after each timer-driven batch.
	batchDone func(error)
}

// FileStore keeps session logs under a root directory, one file per session (docs/behaviour.md §9.2):
//
//	<root>/--<projectKey(cwd)>--/<EncodeSegment(id)>/session.jsonl.zstd
//	<root>/_no-cwd/<EncodeSegment(id)>/session.jsonl.zstd        (sessions without cwd)
//
// A FileStore is safe for concurrent use; one session file has at most one writer at a time
// (an advisory lock refuses a second one where the platform supports it).
type FileStore struct {
	root string
	opts Options
}

// Open returns the store rooted at root (created on the first write if absent). An
// existing root must be a directory, and a root that already holds logs of the other
// encoding is refused: one root holds one encoding.
func Open(root string, opts Options) (*FileStore, error) {
	if opts.Compression == "" {
		opts.Compression = CompressionZstd
	}
	if !opts.Compression.valid() {
		return nil, fmt.Errorf("session: unknown compression %q (want %q or %q)", opts.Compression, CompressionZstd, CompressionNone)
	}
	if opts.WriteBatchMaxDelay <= 0 {
		opts.WriteBatchMaxDelay = DefaultWriteBatchMaxDelay
	}
	opts.Now = nowOrDefault(opts.Now)
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("session: store root %q: %w", root, err)
	}
	s := &FileStore{root: abs, opts: opts}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("session: store root %q is not a directory", abs)
	}
	sessions, err := s.sessionDirs(context.Background())
	if err != nil {
		return nil, err
	}
	for _, dir := range sessions {
		opposite := filepath.Join(dir, opts.Compression.opposite().fileName())
		if _, err := os.Lstat(opposite); err == nil {
			return nil, encodingMismatch(opposite, opts.Compression)
		}
	}
	return s, nil
}

// Root returns the store's absolute root directory.
func (s *FileStore) Root() string { return s.root }

// Create starts a new session and returns its log, ready for appends. An empty h.ID is
// filled with NewID, a zero h.CreatedAt with the current time, and h.Version is always
// FormatVersion. The file is created atomically with the first written batch; Create
// refuses an id that already has a log anywhere in the store.
func (s *FileStore) Create(ctx context.Context, h Header) (Writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := s.opts.Now()
	if h.ID == "" {
		h.ID = NewID(now)
	}
	if h.CreatedAt == 0 {
		h.CreatedAt = now.UnixMilli()
	}
	h.Version = FormatVersion
	if err := h.validate(); err != nil {
		return nil, fmt.Errorf("session: create: %w", err)
	}
	path, err := LogPath(s.root, h.Cwd, h.ID, s.opts.Compression)
	if err != nil {
		return nil, fmt.Errorf("session: create %q: %w", h.ID, err)
	}
	switch existing, err := s.find(ctx, h.ID); {
	case err == nil:
		return nil, fmt.Errorf("session: create %q: %w: a log already exists at %q", h.ID, ErrExists, existing)
	case !errors.Is(err, ErrNotFound):
		return nil, err
	}
	return newFileLog(path, h, &s.opts, nil, nil, 0)
}

// Import writes a session read elsewhere (see Store.Import): the header and the events
// with their own seqs and times, as one batch, created atomically like a new log's first
// batch. An id that already has a log is refused.
func (s *FileStore) Import(ctx context.Context, h Header, events []Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h, events, err := CheckImport(h, events)
	if err != nil {
		return err
	}
	if len(events) == 0 {
		return fmt.Errorf("session: import %q: a session without events is not stored", h.ID)
	}
	path, err := LogPath(s.root, h.Cwd, h.ID, s.opts.Compression)
	if err != nil {
		return fmt.Errorf("session: import %q: %w", h.ID, err)
	}
	switch existing, err := s.find(ctx, h.ID); {
	case err == nil:
		return fmt.Errorf("session: import %q: %w: a log already exists at %q", h.ID, ErrExists, existing)
	case !errors.Is(err, ErrNotFound):
		return err
	}
	l, err := newFileLog(path, h, &s.opts, nil, nil, 0)
	if err != nil {
		return err
	}
	// The events were checked by CheckImport and keep their seqs and times.
	if err := l.b.AppendAll(ctx, events, nil); err != nil {
		l.abandon()
		return fmt.Errorf("session: import %q: %w", h.ID, err)
	}
	return l.Close()
}

// Loaded is a session read from a store without modifying it.
type Loaded struct {
	// Header is the session's header.
	Header Header
	// Path is the log file.
	Path string
	// Events are the logged events followed by the recovery events (see RecoveryEvents)
	// that close a crash-interrupted turn; those are not on disk yet.
	Events []Event
	// Recovered counts the trailing recovery events in Events.
	Recovered int
	// TornBytes is the length of a damaged final batch that was dropped (0 if none).
	TornBytes int64
}

// Load reads a session: the events of every intact batch, then recovery events closing an
// interrupted turn. A torn final batch is dropped and reported in TornBytes; damage before
// it is a *CorruptError naming the file and byte offset. Load does not modify the file;
// Resume does.
func (s *FileStore) Load(ctx context.Context, id string) (*Loaded, error) {
	path, err := s.find(ctx, id)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("session: read %q: %w", path, err)
	}
	sc, err := s.read(path, id, data)
	if err != nil {
		return nil, err
	}
	rec := RecoveryEvents(sc.events)
	return &Loaded{
		Header:    sc.header,
		Path:      path,
		Events:    append(sc.events, rec...),
		Recovered: len(rec),
		TornBytes: sc.tornBytes(len(data)),
	}, nil
}

// Resume reopens a session for appending: it loads it like Load, cuts a torn final batch
// off the file, durably appends the recovery events, and returns the log positioned after
// them.
func (s *FileStore) Resume(ctx context.Context, id string) (Writer, error) {
	return s.reopen(ctx, id, true)
}

// Reopen reopens a session for appending as it stands (see Store.Reopen): it cuts a torn
// final batch off the file but records no recovery events, so an open turn stays open.
func (s *FileStore) Reopen(ctx context.Context, id string) (Writer, error) {
	return s.reopen(ctx, id, false)
}

// reopen opens a session's file for appending, with or without recording the recovery
// events of an interrupted turn.
func (s *FileStore) reopen(ctx context.Context, id string, withRecovery bool) (Writer, error) {
	path, err := s.find(ctx, id)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("session: open %q: %w", path, err)
	}
	l, err := s.resume(path, id, f, withRecovery)
	if err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

func (s *FileStore) resume(path, id string, f *os.File, withRecovery bool) (*FileLog, error) {
	if err := lockFile(f); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("session: read %q: %w", path, err)
	}
	sc, err := s.read(path, id, data)
	if err != nil {
		return nil, err
	}
	if sc.committed < int64(len(data)) {
		if err := f.Truncate(sc.committed); err != nil {
			return nil, fmt.Errorf("session: cut the torn tail of %q: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("session: cut the torn tail of %q: %w", path, err)
		}
	}
	l, err := newFileLog(path, sc.header, &s.opts, sc.events, f, sc.committed)
	if err != nil {
		return nil, err
	}
	var rec []Event
	if withRecovery {
		rec = RecoveryEvents(sc.events)
	}
	if len(rec) == 0 {
		return l, nil
	}
	// A file write does not wait on a context: nothing here can block on a peer.
	if err := l.b.AppendAll(context.Background(), rec, keepTime); err != nil {
		l.abandon() // Resume closes f
		return nil, fmt.Errorf("session: record recovery events in %q: %w", path, err)
	}
	return l, nil
}

// keepTime stamps a recovery event at seq with the time RecoveryEvents gave it.
func keepTime(e Event, seq int) (Event, error) { return Stamp(e, int64(seq), e.Time) }

// read decodes a log file and checks that its header names this file.
func (s *FileStore) read(path, id string, data []byte) (*scan, error) {
	sc, err := readLog(data, s.opts.Compression)
	if err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			ce.Path = path
		}
		return nil, err
	}
	if sc.header.ID != id {
		return nil, &CorruptError{Path: path, Err: fmt.Errorf("requested id %q does not match header id %q", id, sc.header.ID)}
	}
	if err := s.checkPlace(path, &sc.header); err != nil {
		return nil, err
	}
	return sc, nil
}

// checkPlace verifies that a header's id and cwd name the file it was read from.
func (s *FileStore) checkPlace(path string, h *Header) error {
	want, err := LogPath(s.root, h.Cwd, h.ID, s.opts.Compression)
	if err != nil {
		return &CorruptError{Path: path, Err: fmt.Errorf("header cannot name a storage path: %w", err)}
	}
	if want != path {
		return &CorruptError{Path: path, Err: fmt.Errorf("header id %q and cwd %q identify %q", h.ID, h.Cwd, want)}
	}
	return nil
}

// projectDirs lists the project directories under the root.
func (s *FileStore) projectDirs(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(s.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("session: list %q: %w", s.root, err)
	}
	var out []string
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if e.IsDir() {
			out = append(out, filepath.Join(s.root, e.Name()))
		}
	}
	return out, nil
}

// sessionDirs lists every session directory under the root.
func (s *FileStore) sessionDirs(ctx context.Context) ([]string, error) {
	projects, err := s.projectDirs(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range projects {
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("session: list %q: %w", p, err)
		}
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if e.IsDir() {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
	}
	return out, nil
}

// find returns the path of the log of id, searching every project directory.
func (s *FileStore) find(ctx context.Context, id string) (string, error) {
	seg, err := EncodeSegment(id)
	if err != nil {
		return "", fmt.Errorf("session: invalid id %q: %w", id, err)
	}
	projects, err := s.projectDirs(ctx)
	if err != nil {
		return "", err
	}
	var found []string
	for _, p := range projects {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		dir := filepath.Join(p, seg)
		opposite := filepath.Join(dir, s.opts.Compression.opposite().fileName())
		if _, err := os.Lstat(opposite); err == nil {
			return "", encodingMismatch(opposite, s.opts.Compression)
		}
		path := filepath.Join(dir, s.opts.Compression.fileName())
		if _, err := os.Lstat(path); err == nil {
			found = append(found, path)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("session %q: %w", id, ErrNotFound)
	case 1:
		return found[0], nil
	default:
		return "", fmt.Errorf("session: id %q appears in several project directories: %q", id, found)
	}
}

// Info describes one stored session for listings.
type Info struct {
	// Header is the session's header (zero when Err is set).
	Header Header
	// Path is the log file.
	Path string
	// Size is the file size in bytes.
	Size int64
	// Err is set when the header could not be read; the session is still listed so that
	// damage is visible.
	Err error
	// Summary is the summary of the stored events (without recovery events), set by
	// stores that keep one (session/pgstore), in which LastEnd carries only its Kind; nil
	// when the session must be loaded to summarize it.
	Summary *Summary
}

// List describes every session in the store, reading only each log's header, ordered by
// creation time (then id).
func (s *FileStore) List(ctx context.Context) ([]Info, error) {
	dirs, err := s.sessionDirs(ctx)
	if err != nil {
		return nil, err
	}
	var dec *zstd.Decoder
	if s.opts.Compression == CompressionZstd {
		if dec, err = newDecoder(); err != nil {
			return nil, fmt.Errorf("session: zstd decoder: %w", err)
		}
		defer dec.Close()
	}
	var out []Info
	for _, dir := range dirs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		opposite := filepath.Join(dir, s.opts.Compression.opposite().fileName())
		if _, err := os.Lstat(opposite); err == nil {
			return nil, encodingMismatch(opposite, s.opts.Compression)
		}
		path := filepath.Join(dir, s.opts.Compression.fileName())
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // not materialized
		}
		info := Info{Path: path}
		if err == nil {
			info.Size = fi.Size()
			info.Header, err = s.readHeader(dec, path)
		}
		if err == nil {
			err = s.checkPlace(path, &info.Header)
		}
		if err != nil {
			info.Header, info.Err = Header{}, err
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b Info) int {
		return cmp.Or(cmp.Compare(a.Header.CreatedAt, b.Header.CreatedAt),
			cmp.Compare(a.Header.ID, b.Header.ID), cmp.Compare(a.Path, b.Path))
	})
	return out, nil
}

// readHeader reads only the header record of a log.
func (s *FileStore) readHeader(dec *zstd.Decoder, path string) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, fmt.Errorf("session: open %q: %w", path, err)
	}
	defer f.Close()
	buf := make([]byte, 0, 4096)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, rerr := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		var line []byte
		if dec == nil {
			if i := bytes.IndexByte(buf, '\n'); i >= 0 {
				line = buf[:i+1]
			}
		} else if end, err := scanFrame(buf, 0); err == nil {
			plain, err := decodeFrame(dec, buf[:end])
			if err != nil || len(plain) == 0 || bytes.IndexByte(plain, '\n') != len(plain)-1 {
				return Header{}, &CorruptError{Path: path, Err: errors.New("header frame failed validation")}
			}
			line = plain
		} else if !errors.Is(err, errFrameTruncated) {
			return Header{}, &CorruptError{Path: path, Err: fmt.Errorf("header frame: %w", err)}
		}
		if line != nil {
			h, err := parseHeaderLine(line[:len(line)-1])
			if err != nil {
				return Header{}, &CorruptError{Path: path, Err: err}
			}
			return h, nil
		}
		if rerr == io.EOF {
			return Header{}, &CorruptError{Path: path, Err: errors.New("empty or header-less session log")}
		}
		if rerr != nil {
			return Header{}, fmt.Errorf("session: read %q: %w", path, rerr)
		}
	}
}
