package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// AttachmentDirName is the directory, next to a session's log file, that holds the
// session's attachments.
const AttachmentDirName = "attachments"

// MaxAttachmentBytes bounds one attachment (64 MiB): more than any image a model accepts.
const MaxAttachmentBytes = 64 << 20

// Image media types an attachment may have.
const (
	MediaPNG  = "image/png"
	MediaJPEG = "image/jpeg"
	MediaGIF  = "image/gif"
	MediaWebP = "image/webp"
)

// ErrAttachmentNotFound is returned by ReadAttachment for an id the store does not hold.
var ErrAttachmentNotFound = errors.New("attachment not found")

// Attachments is the attachment store of one session: image bytes kept content-addressed
// beside the log, so that events carry only a reference (content.ImageRef.AttachmentID)
// and the image survives a reload or a crash like the log does. An id is
// "sha256:<hex of the bytes' SHA-256>"; storing the same bytes twice yields the same id
// and writes nothing the second time.
//
// PutAttachment returns only after the bytes are on stable storage, so an event that
// references the id and is appended afterwards never points at a missing file.
// ReadAttachment checks the bytes against their id, so a damaged file is reported, never
// sent to a model. Both are safe for concurrent use.
type Attachments interface {
	PutAttachment(mediaType string, data []byte) (id string, err error)
	ReadAttachment(id string) (mediaType string, data []byte, err error)
}

// AttachmentID returns the content address of data.
func AttachmentID(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// SniffImage returns the media type of an image from its leading bytes (its "magic"), or ""
// when data is not a PNG, JPEG, GIF or WebP image.
func SniffImage(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return MediaPNG
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return MediaJPEG
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return MediaGIF
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return MediaWebP
	}
	return ""
}

// checkAttachment validates what PutAttachment is given: a supported image whose bytes
// are of the declared type, within MaxAttachmentBytes.
func checkAttachment(mediaType string, data []byte) error {
	switch mediaType {
	case MediaPNG, MediaJPEG, MediaGIF, MediaWebP:
	default:
		return fmt.Errorf("attachment: unsupported media type %q (want image/png, image/jpeg, image/gif or image/webp)", mediaType)
	}
	if len(data) > MaxAttachmentBytes {
		return fmt.Errorf("attachment: %d bytes is more than the %d-byte limit", len(data), MaxAttachmentBytes)
	}
	if got := SniffImage(data); got != mediaType {
		if got == "" {
			return fmt.Errorf("attachment: the bytes are not an image of type %s", mediaType)
		}
		return fmt.Errorf("attachment: the bytes are %s, not the declared %s", got, mediaType)
	}
	return nil
}

// parseAttachmentID returns the hex digest of a well-formed id.
func parseAttachmentID(id string) (string, error) {
	digest, ok := strings.CutPrefix(id, "sha256:")
	if !ok || len(digest) != 64 || strings.ToLower(digest) != digest {
		return "", fmt.Errorf("attachment: malformed id %q (want sha256:<64 lower-case hex digits>)", id)
	}
	if _, err := hex.DecodeString(digest); err != nil {
		return "", fmt.Errorf("attachment: malformed id %q (want sha256:<64 lower-case hex digits>)", id)
	}
	return digest, nil
}

// DirAttachments is the file Attachments of a session: one file per attachment, named by
// its digest, in a directory (AttachmentDirName beside the log for a Store's sessions).
type DirAttachments struct {
	dir string
	mu  sync.Mutex // serializes writes, so a concurrent put of the same bytes writes once
}

var _ Attachments = (*DirAttachments)(nil)

// OpenAttachments returns the attachment store kept in dir. The directory is created by
// the first PutAttachment.
func OpenAttachments(dir string) *DirAttachments { return &DirAttachments{dir: dir} }

// Dir returns the directory the store keeps its files in.
func (a *DirAttachments) Dir() string { return a.dir }

// PutAttachment stores data, an image of mediaType, and returns its id once it is durable:
// written under a temporary name, fsynced, renamed into place and the directory fsynced.
func (a *DirAttachments) PutAttachment(mediaType string, data []byte) (string, error) {
	if err := checkAttachment(mediaType, data); err != nil {
		return "", err
	}
	id := AttachmentID(data)
	digest := id[len("sha256:"):]
	final := filepath.Join(a.dir, digest)
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := os.Stat(final); err == nil {
		return id, nil
	}
	created := false
	if _, err := os.Stat(a.dir); errors.Is(err, fs.ErrNotExist) {
		created = true
	}
	if err := os.MkdirAll(a.dir, 0o700); err != nil {
		return "", fmt.Errorf("attachment: %w", err)
	}
	tmp, err := os.CreateTemp(a.dir, "."+digest+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("attachment: %w", err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), final)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("attachment %s: %w", id, err)
	}
	if err := syncDir(a.dir); err != nil {
		return "", fmt.Errorf("attachment %s: %w", id, err)
	}
	if created {
		if err := syncDir(filepath.Dir(a.dir)); err != nil {
			return "", fmt.Errorf("attachment %s: %w", id, err)
		}
	}
	return id, nil
}

// ReadAttachment returns the media type and bytes of attachment id. A missing file is
// ErrAttachmentNotFound; bytes that do not hash to the id are an error naming the file.
func (a *DirAttachments) ReadAttachment(id string) (string, []byte, error) {
	digest, err := parseAttachmentID(id)
	if err != nil {
		return "", nil, err
	}
	path := filepath.Join(a.dir, digest)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, fmt.Errorf("attachment %s: %w (no file %s)", id, ErrAttachmentNotFound, path)
	}
	if err != nil {
		return "", nil, fmt.Errorf("attachment %s: %w", id, err)
	}
	if AttachmentID(data) != id {
		return "", nil, fmt.Errorf("attachment %s: %s is damaged (its bytes hash to %s)", id, path, AttachmentID(data))
	}
	mediaType := SniffImage(data)
	if mediaType == "" {
		return "", nil, fmt.Errorf("attachment %s: %s holds no supported image", id, path)
	}
	return mediaType, data, nil
}

// MemoryAttachments is an in-memory Attachments, the companion of Memory.
type MemoryAttachments struct {
	mu sync.Mutex
	m  map[string][]byte
}

var _ Attachments = (*MemoryAttachments)(nil)

// NewMemoryAttachments returns an empty in-memory attachment store.
func NewMemoryAttachments() *MemoryAttachments {
	return &MemoryAttachments{m: map[string][]byte{}}
}

// PutAttachment stores a copy of data and returns its id.
func (a *MemoryAttachments) PutAttachment(mediaType string, data []byte) (string, error) {
	if err := checkAttachment(mediaType, data); err != nil {
		return "", err
	}
	id := AttachmentID(data)
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.m[id]; !ok {
		a.m[id] = bytes.Clone(data)
	}
	return id, nil
}

// ReadAttachment returns the media type and a copy of the bytes of attachment id.
func (a *MemoryAttachments) ReadAttachment(id string) (string, []byte, error) {
	if _, err := parseAttachmentID(id); err != nil {
		return "", nil, err
	}
	a.mu.Lock()
	data, ok := a.m[id]
	a.mu.Unlock()
	if !ok {
		return "", nil, fmt.Errorf("attachment %s: %w", id, ErrAttachmentNotFound)
	}
	return SniffImage(data), bytes.Clone(data), nil
}

// Attachments returns the attachment store of the session this log writes: the
// AttachmentDirName directory beside the log file.
func (l *FileLog) Attachments() Attachments {
	return OpenAttachments(filepath.Join(filepath.Dir(l.path), AttachmentDirName))
}
