package session

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Compression selects the physical encoding of a session log.
type Compression string

// Supported encodings. A store root holds one encoding only.
const (
	// CompressionZstd stores concatenated, independently decodable, checksummed Zstandard
	// frames in session.jsonl.zstd: one frame for the header line and one per durable batch.
	CompressionZstd Compression = "zstd"
	// CompressionNone stores plain UTF-8 JSON lines in session.jsonl.
	CompressionNone Compression = "none"
)

// fileName returns the log file name for the encoding.
func (c Compression) fileName() string {
	if c == CompressionNone {
		return "session.jsonl"
	}
	return "session.jsonl.zstd"
}

func (c Compression) opposite() Compression {
	if c == CompressionNone {
		return CompressionZstd
	}
	return CompressionNone
}

func (c Compression) valid() bool { return c == CompressionZstd || c == CompressionNone }

// noCwdDir is the project directory of sessions created without a working directory.
const noCwdDir = "_no-cwd"

// maxProjectSlug bounds the project slug so that a directory name stays within common
// file-name limits (251 + the four wrapping dashes = 255 bytes).
const maxProjectSlug = 251

// DefaultRoot returns the default store root: $DSH_HOME/sessions when DSH_HOME is set,
// otherwise ~/.dsh/sessions.
func DefaultRoot() (string, error) {
	if home := os.Getenv("DSH_HOME"); home != "" {
		return filepath.Join(home, "sessions"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("session: default root: %w", err)
	}
	return filepath.Join(home, ".dsh", "sessions"), nil
}

// safeUnit reports whether a UTF-16 code unit is kept literally by EncodeSegment and
// ProjectKey: ASCII letters, digits, '.', '_' and '-'.
func safeUnit(u uint16) bool {
	return u >= 'a' && u <= 'z' || u >= 'A' && u <= 'Z' || u >= '0' && u <= '9' ||
		u == '.' || u == '_' || u == '-'
}

const hexDigits = "0123456789ABCDEF"

func appendEscape(b []byte, u uint16) []byte {
	return append(b, '~', hexDigits[u>>12], hexDigits[u>>8&0xF], hexDigits[u>>4&0xF], hexDigits[u&0xF])
}

// EncodeSegment encodes a string as one safe path segment, injectively over valid UTF-8
// strings: ASCII letters,
// digits, '.', '_' and '-' are kept and every other UTF-16 code unit (including '~')
// becomes '~' followed by four uppercase hex digits. The whole segments "." and ".." are
// escaped too, so no session id can name a parent directory. An empty or invalid UTF-8
// string is an error.
func EncodeSegment(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("session: cannot encode an empty path segment")
	}
	if !utf8.ValidString(raw) {
		return "", fmt.Errorf("session: cannot encode path segment %q: not valid UTF-8", raw)
	}
	switch raw {
	case ".":
		return "~002E", nil
	case "..":
		return "~002E~002E", nil
	}
	out := make([]byte, 0, len(raw))
	for _, u := range utf16.Encode([]rune(raw)) {
		if safeUnit(u) {
			out = append(out, byte(u))
		} else {
			out = appendEscape(out, u)
		}
	}
	return string(out), nil
}

// ProjectKey returns the readable directory name for a project path: runs of '/', '\' and
// ':' become one '-', safe characters are kept, every other UTF-16 code unit becomes
// '~XXXX', leading dashes are stripped, an empty result becomes "root", and the slug is
// cut to 251 bytes and wrapped as "--<slug>--". The mapping is lossy on purpose (it is for
// humans navigating the store); the header line records the exact cwd.
func ProjectKey(cwd string) (string, error) {
	if cwd == "" {
		return "", errors.New("session: cannot encode an empty project path")
	}
	out := make([]byte, 0, len(cwd))
	sepRun := false
	for _, u := range utf16.Encode([]rune(cwd)) {
		switch {
		case u == '/' || u == '\\' || u == ':':
			if !sepRun {
				out = append(out, '-')
			}
			sepRun = true
		case safeUnit(u):
			out = append(out, byte(u))
			sepRun = false
		default:
			out = appendEscape(out, u)
			sepRun = false
		}
	}
	slug := strings.TrimLeft(string(out), "-")
	if slug == "" {
		slug = "root"
	}
	if len(slug) > maxProjectSlug {
		slug = slug[:maxProjectSlug]
	}
	return "--" + slug + "--", nil
}

// projectDirName returns the project directory name for cwd ("" → "_no-cwd").
func projectDirName(cwd string) (string, error) {
	if cwd == "" {
		return noCwdDir, nil
	}
	return ProjectKey(cwd)
}

// LogPath returns the path of a session's log file under root:
// <root>/--<projectKey(cwd)>--/<EncodeSegment(id)>/session.jsonl.zstd (or session.jsonl
// without compression); sessions without a cwd live under <root>/_no-cwd/.
func LogPath(root, cwd, id string, c Compression) (string, error) {
	proj, err := projectDirName(cwd)
	if err != nil {
		return "", err
	}
	seg, err := EncodeSegment(id)
	if err != nil {
		return "", fmt.Errorf("session: invalid session id: %w", err)
	}
	if !c.valid() {
		c = CompressionZstd
	}
	return filepath.Join(root, proj, seg, c.fileName()), nil
}

// NewID returns a fresh session id: the UTC creation second and 32 random bits,
// "20261129T140501Z-3f9a2c1d". Ids sort by creation time (to the second) and are unique
// in practice; Create still refuses to overwrite an existing log.
func NewID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// NewMessageID returns a fresh random message id (a version-4 UUID) for the messages the
// agent loop puts in the log (tool results, injected contexts).
func NewMessageID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
