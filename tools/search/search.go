// Package search provides the model-facing file discovery tools: glob (find files by path
// pattern, newest first) and grep (search file contents with a regular expression, matches
// grouped by file).
//
// Both tools search below a workspace root and refuse paths outside it (FS_SANDBOX_DENIED).
// They honour .gitignore files (nested ones included, with negation) and the repository's
// .git/info/exclude, never descend into version-control metadata (.git, .hg, …), and do not
// follow symbolic links. grep skips binary files (a NUL byte in the first 8 KiB) and hidden
// entries below the search path, as ripgrep does by default; glob lists hidden files too.
//
// A result larger than its inline cap (100 paths, 250 matches) is shown capped, says so, and
// — for top-level calls — the complete formatted result is saved to a spill file whose path
// the model is told. Result cards are the "search" card with truncated and total (docs/behaviour.md §12).
package search

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/dsh-go/dsh/tool"
)

// Defaults of Config.
const (
	DefaultGlobMaxResults   = 100
	DefaultGrepMaxMatches   = 250
	DefaultGrepMaxLineBytes = 2000
	DefaultMetaMaxBytes     = 65536
	DefaultRawOutputBytes   = 20_000_000
	DefaultTimeout          = 30 * time.Second
)

// Error codes of search failures (error name "SearchError").
const (
	CodeInvalidPattern    = "SEARCH_INVALID_PATTERN"
	CodeFailed            = "SEARCH_FAILED"
	CodeRawOutputOverflow = "SEARCH_RAW_OUTPUT_OVERFLOW"
	CodeAborted           = "SEARCH_ABORTED"
)

const codeFailed = CodeFailed

// Config configures the search tools. Only Root is required.
type Config struct {
	// Root is the workspace: relative paths resolve against it and no search leaves it.
	Root string
	// SpillDir receives the complete formatted result of an over-cap search. Empty means a
	// private directory created under os.TempDir on first use (kept, since the model may
	// read the file later).
	SpillDir string
	// GlobMaxResults is how many paths glob shows inline (default 100).
	GlobMaxResults int
	// GlobHead makes an over-cap glob show the newest paths instead of a sample spread
	// across the top-level entries of the search directory.
	GlobHead bool
	// GlobIncludeIgnored makes glob list files that .gitignore excludes, as the reference
	// implementation does; by default both tools honour .gitignore.
	GlobIncludeIgnored bool
	// GrepMaxMatches is how many matches grep shows inline (default 250).
	GrepMaxMatches int
	// GrepMaxLineBytes bounds one shown matched line (default 2000).
	GrepMaxLineBytes int
	// MetaMaxBytes bounds the serialized presentation meta of one result (default 65536).
	MetaMaxBytes int
	// RawOutputBytes bounds the complete result one search may collect (default 20 MB);
	// larger results fail with SEARCH_RAW_OUTPUT_OVERFLOW.
	RawOutputBytes int
	// Workers is how many files grep reads in parallel (default GOMAXPROCS).
	Workers int
	// Timeout is the cooperative deadline declared for the timeout policy (default 30s).
	Timeout time.Duration
}

// settings is a validated Config with its defaults applied.
type settings struct {
	Config
	root  string // absolute, symbolic links resolved
	alias string // absolute, as configured
	spill *spiller
}

func (c Config) resolve() (*settings, error) {
	if c.Root == "" {
		return nil, errors.New("search: Config.Root (the workspace root) is required")
	}
	abs, err := filepath.Abs(c.Root)
	if err != nil {
		return nil, fmt.Errorf("search: workspace root %q: %w", c.Root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("search: workspace root %q: %w", c.Root, err)
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("search: workspace root %q is not a directory", c.Root)
	}
	defaults := []struct {
		name string
		v    *int
		def  int
	}{
		{"GlobMaxResults", &c.GlobMaxResults, DefaultGlobMaxResults},
		{"GrepMaxMatches", &c.GrepMaxMatches, DefaultGrepMaxMatches},
		{"GrepMaxLineBytes", &c.GrepMaxLineBytes, DefaultGrepMaxLineBytes},
		{"MetaMaxBytes", &c.MetaMaxBytes, DefaultMetaMaxBytes},
		{"RawOutputBytes", &c.RawOutputBytes, DefaultRawOutputBytes},
	}
	for _, d := range defaults {
		if *d.v < 0 {
			return nil, fmt.Errorf("search: %s must be a positive integer, got %d", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.Workers < 0 {
		return nil, fmt.Errorf("search: Workers must not be negative, got %d", c.Workers)
	}
	if c.Timeout < 0 {
		return nil, fmt.Errorf("search: Timeout must be positive, got %v", c.Timeout)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return &settings{Config: c, root: real, alias: abs, spill: &spiller{dir: c.SpillDir}}, nil
}

// searchError is a coded SearchError.
func searchError(code, format string, args ...any) error {
	return &tool.Error{Name: "SearchError", Code: code, Message: fmt.Sprintf(format, args...)}
}

// abortedError is the failure of a search cut short by the tool timeout or cancellation.
func abortedError(toolName string) error {
	return searchError(CodeAborted, "%s was aborted before completion (tool timeout or caller cancellation)", toolName)
}

// quote wraps s in double quotes for messages.
func quote(s string) string { return `"` + s + `"` }

// Install registers glob and grep in reg's global layer. undo unregisters both.
func Install(reg *tool.Registry, cfg Config) (undo func(), err error) {
	return InstallScope(reg.Global(), cfg)
}

// InstallScope registers glob and grep in scope s (for a per-agent workspace). undo
// unregisters both.
func InstallScope(s *tool.Scope, cfg Config) (undo func(), err error) {
	set, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	glob, err := newGlob(set)
	if err != nil {
		return nil, err
	}
	grep, err := newGrep(set)
	if err != nil {
		return nil, err
	}
	u1, err := s.Register(glob)
	if err != nil {
		return nil, err
	}
	u2, err := s.Register(grep)
	if err != nil {
		u1()
		return nil, err
	}
	return func() { u2(); u1() }, nil
}

// spillHint tells the model how to use a spill file: it lies outside the workspace, where
// the search tools do not go, so only read (given the spill directory as a read-only root)
// can open it.
const spillHint = "Use read with this absolute path and offset/limit; grep does not search it."

// spiller saves complete formatted results. Saving is best-effort: a failure only means
// the model is told the complete result could not be saved.
type spiller struct {
	dir string

	mu      sync.Mutex
	tempDir string
}

// save writes text to a new private file and returns its path.
func (s *spiller) save(toolName, callID, text string) (string, error) {
	dir, err := s.directory()
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, toolName+"-"+sanitize(callID)+"-*.txt")
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func (s *spiller) directory() (string, error) {
	if s.dir != "" {
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return "", err
		}
		return s.dir, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tempDir == "" {
		d, err := os.MkdirTemp("", "dsh-search-")
		if err != nil {
			return "", err
		}
		s.tempDir = d
	}
	return s.tempDir, nil
}

// sanitize keeps a call id usable in a file name.
func sanitize(s string) string {
	b := []byte(s)
	if len(b) > 40 {
		b = b[:40]
	}
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "call"
	}
	return string(b)
}

// System-prompt guidance that goes with the tools, for an agent's prompt sections
// (the reference names them "tool:glob" and "tool:grep", ordered 103 and 104).
const (
	GlobGuidance = "Find files with the glob tool rather than find in the shell. A pattern without a \"/\" matches file names at any depth, so \"*.md\" searches the whole tree. " +
		"glob lists files, never directories, newest first; files excluded by .gitignore are left out."
	GrepGuidance = "Search file contents with the grep tool rather than grep or rg in the shell; read a matched file when you need the lines around a match."
)
