package search

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/dsh-go/dsh/tool"
)

// vcsDirs are version-control metadata directories no search descends into.
var vcsDirs = [...]string{".git", ".svn", ".hg", ".bzr", ".jj", ".sl"}

func isVCS(name string) bool {
	for _, v := range vcsDirs {
		if name == v {
			return true
		}
	}
	return false
}

// target is a resolved, workspace-confined search path.
type target struct {
	abs   string // absolute path (lexical, inside the workspace)
	rel   string // slash-separated, workspace-relative; "." for the root
	isDir bool
}

// sandboxDenied is the error for a path outside the workspace.
func sandboxDenied(p string) error {
	return &tool.Error{Name: "FsError", Code: "FS_SANDBOX_DENIED",
		Message: fmt.Sprintf("cannot search %q: the path leads outside the workspace", p)}
}

// absPath returns the absolute form of p (relative to the workspace root, or absolute; empty
// is the root). An absolute path spelled through the configured root (before its symbolic
// links were resolved) is rebased onto the resolved root.
func (s *settings) absPath(p string) string {
	if p == "" {
		return s.root
	}
	if !filepath.IsAbs(p) {
		return filepath.Join(s.root, p)
	}
	abs := filepath.Clean(p)
	if _, ok := within(s.root, abs); !ok && s.alias != s.root {
		if rel, ok := within(s.alias, abs); ok {
			return filepath.Join(s.root, filepath.FromSlash(rel))
		}
	}
	return abs
}

// resolveTarget confines p (relative to the workspace root, or absolute) to the workspace
// and stats it. An empty p is the root. Symbolic links may not lead out of the workspace.
func (s *settings) resolveTarget(tool, p string) (target, error) {
	root := s.root
	abs := s.absPath(p)
	rel, ok := within(root, abs)
	if !ok {
		return target{}, sandboxDenied(p)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return target{}, searchError(codeFailed, "%s search failed: path %s does not exist", tool, quote(p))
		}
		return target{}, searchError(codeFailed, "%s search failed: cannot resolve path %s: %v", tool, quote(p), unwrapPathError(err))
	}
	if _, ok := within(root, real); !ok {
		return target{}, sandboxDenied(p)
	}
	st, err := os.Stat(real)
	if err != nil {
		return target{}, searchError(codeFailed, "%s search failed: cannot read path %s: %v", tool, quote(p), unwrapPathError(err))
	}
	return target{abs: abs, rel: rel, isDir: st.IsDir()}, nil
}

// within reports whether abs lies inside root and returns it relative to root,
// slash-separated ("." for root itself).
func within(root, abs string) (string, bool) {
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// walker enumerates the regular files below a directory in a deterministic order (names
// sorted, depth first), honouring ignore files and skipping VCS metadata, symbolic links and
// special files.
type walker struct {
	root          string // absolute workspace root
	honourIgnores bool
	hidden        bool // visit entries whose name starts with "."
}

// visitFunc receives each regular file: its workspace-relative slash path, its path
// relative to the walk's start directory, and its directory entry.
type visitFunc func(rel, sub string, d fs.DirEntry) error

// walk visits the files below the directory t. It stops at the first error of fn or of ctx.
func (w *walker) walk(ctx context.Context, t target, fn visitFunc) error {
	if t.rel != "." {
		for _, seg := range strings.Split(t.rel, "/") {
			if isVCS(seg) {
				return nil
			}
		}
	}
	return w.dir(ctx, t.abs, t.rel, "", w.ancestors(t.rel), fn)
}

// ancestors loads the ignore files that apply to directory rel from its ancestors (the
// workspace root down to rel's parent) and the repository exclude file.
func (w *walker) ancestors(rel string) *ignoreStack {
	s := &ignoreStack{}
	if !w.honourIgnores {
		return s
	}
	s.exclude = readIgnoreFile(filepath.Join(w.root, ".git", "info", "exclude"), "")
	if rel == "." {
		return s
	}
	s = s.with(readIgnoreFile(filepath.Join(w.root, ".gitignore"), ""))
	segs := strings.Split(rel, "/")
	for i := 1; i < len(segs); i++ {
		base := strings.Join(segs[:i], "/")
		s = s.with(readIgnoreFile(filepath.Join(w.root, filepath.FromSlash(base), ".gitignore"), base))
	}
	return s
}

func (w *walker) dir(ctx context.Context, abs, rel, sub string, ign *ignoreStack, fn visitFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		// An unreadable directory below the start is skipped, as ripgrep does.
		if sub == "" {
			return err
		}
		return nil
	}
	if w.honourIgnores {
		base := rel
		if base == "." {
			base = ""
		}
		ign = ign.with(readIgnoreFile(filepath.Join(abs, ".gitignore"), base))
	}
	for _, d := range entries {
		name := d.Name()
		if isVCS(name) || (!w.hidden && name[0] == '.') {
			continue
		}
		typ := d.Type()
		if typ&fs.ModeSymlink != 0 {
			continue
		}
		childRel := joinRel(rel, name)
		childSub := name
		if sub != "" {
			childSub = sub + "/" + name
		}
		isDir := typ.IsDir()
		if w.honourIgnores && ign.ignored(childRel, isDir) {
			continue
		}
		if isDir {
			if err := w.dir(ctx, filepath.Join(abs, name), childRel, childSub, ign, fn); err != nil {
				return err
			}
			continue
		}
		if !typ.IsRegular() {
			continue
		}
		if err := fn(childRel, childSub, d); err != nil {
			return err
		}
	}
	return nil
}

// joinRel joins a workspace-relative directory and a name.
func joinRel(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// matcher matches file paths against a glob with ripgrep's --glob conventions: a pattern
// without "/" matches the base name at any depth; one with "/" matches the path relative to
// the search directory or, as ripgrep has it, to the workspace root (a leading "/" is
// optional). Accepting both spares the model guessing which one a pattern is relative to.
type matcher struct {
	glob     string
	basename bool
}

func newMatcher(pattern string) (matcher, bool) {
	p := pattern
	basename := !strings.Contains(p, "/")
	if !basename {
		p = strings.TrimPrefix(p, "/")
	}
	if !doublestar.ValidatePattern(p) {
		return matcher{}, false
	}
	return matcher{glob: p, basename: basename}, true
}

func (m matcher) match(rel, sub string) bool {
	if m.basename {
		ok, _ := doublestar.Match(m.glob, path.Base(sub))
		return ok
	}
	if ok, _ := doublestar.Match(m.glob, sub); ok {
		return true
	}
	ok, _ := doublestar.Match(m.glob, rel)
	return ok
}
