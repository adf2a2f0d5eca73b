package spill

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf16"
)

// RetrievalHint tells the model how to read a spill file of the local store. The file lies
// outside the workspace: the host must let the read tool open the store's directory (see
// tools/fs Config.ReadOnlyRoots), and the search tools do not reach it.
const RetrievalHint = "Use read with this absolute path and offset/limit; grep does not search it."

// SaveRequest is one text to spill.
type SaveRequest struct {
	ToolName      string // the tool whose result is spilled
	CallID        string // the call (or Code Mode sub-call) id
	Label         string // "result" for a model-facing result, "dispatch" for a Code Mode log copy
	SuggestedName string // a readable file name, "<tool>.txt"; a store sanitizes it
	Text          string // the full text
}

// Ref says where a spilled text is and how the model can read it.
type Ref struct {
	Locator       string // where the text is, e.g. an absolute file path
	Bytes         int    // the text's size in bytes
	RetrievalHint string // one sentence telling the model how to read it
}

// Store keeps spilled texts. Implementations must be safe for concurrent use.
type Store interface {
	SaveText(ctx context.Context, req SaveRequest) (Ref, error)
}

// LocalStore keeps spilled texts as files in one directory: a new file per text, named with
// a random prefix and the sanitized suggested name ("3f9a2c01d4e5-bash.txt"), created
// exclusively with mode 0600 so a file planted in a shared directory cannot redirect the
// write. The directory is created with mode 0700 when missing.
type LocalStore struct {
	dir string // "" until a private directory is created

	mu      sync.Mutex
	private string
}

// NewLocalStore returns a store writing to dir. An empty dir means a private directory
// (os.MkdirTemp under os.TempDir, "dsh-spill-*") created on the first save and kept
// afterwards, since the model may read the files later. A relative dir is made absolute now.
func NewLocalStore(dir string) *LocalStore {
	if dir != "" {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
	}
	return &LocalStore{dir: dir}
}

// Dir returns the store's directory, creating it when needed.
func (s *LocalStore) Dir() (string, error) {
	if s.dir != "" {
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return "", fmt.Errorf("spill store: %w", err)
		}
		return s.dir, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.private == "" {
		d, err := os.MkdirTemp("", "dsh-spill-")
		if err != nil {
			return "", fmt.Errorf("spill store: %w", err)
		}
		s.private = d
	}
	return s.private, nil
}

// SaveText writes req.Text to a new file and returns its absolute path as the locator.
func (s *LocalStore) SaveText(ctx context.Context, req SaveRequest) (Ref, error) {
	if err := ctx.Err(); err != nil {
		return Ref{}, err
	}
	dir, err := s.Dir()
	if err != nil {
		return Ref{}, err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:]) // crypto/rand.Read never fails on supported platforms
	path := filepath.Join(dir, hex.EncodeToString(rnd[:])+"-"+EncodeName(req.SuggestedName))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Ref{}, fmt.Errorf("spill store: %w", err)
	}
	_, werr := f.WriteString(req.Text)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(path)
		return Ref{}, fmt.Errorf("spill store: writing %s: %w", path, err)
	}
	return Ref{Locator: path, Bytes: len(req.Text), RetrievalHint: RetrievalHint}, nil
}

// maxNameBytes bounds an encoded name so the file name stays within common limits.
const maxNameBytes = 120

// EncodeName turns an untrusted name into one safe file-name segment, injectively: letters,
// digits, ".", "_" and "-" stay, every other UTF-16 code unit (including "~") becomes
// "~XXXX" (four upper-case hex digits); "." and ".." are escaped whole and the empty name is
// "~". Names longer than 120 bytes after encoding are cut (after which distinct names may
// share a segment; the store's random prefix keeps files apart).
func EncodeName(raw string) string {
	switch raw {
	case "":
		return "~"
	case ".":
		return "~002E"
	case "..":
		return "~002E~002E"
	}
	var b strings.Builder
	for _, r := range raw {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			b.WriteRune(r)
			continue
		}
		units := []uint16{uint16(r)}
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			units = []uint16{uint16(r1), uint16(r2)}
		}
		for _, u := range units {
			fmt.Fprintf(&b, "~%04X", u)
		}
	}
	out := b.String()
	if len(out) > maxNameBytes {
		out = out[:maxNameBytes]
	}
	return out
}
