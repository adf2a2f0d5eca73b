package fs

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/dsh-go/dsh/tool"
)

// maxLinkHops bounds how many symbolic links one resolution follows, like the kernel's
// ELOOP limit.
const maxLinkHops = 40

// Workspace is the directory the file tools are confined to. It holds an [os.Root] on the
// directory, so every operation is also contained by the kernel-backed checks of the standard
// library, and it resolves requested paths with explicit checks that produce messages naming
// the offending path. A Workspace is safe for concurrent use.
type Workspace struct {
	dir      string // the root as configured, absolute and clean; display paths are built on it
	real     string // dir with every symbolic link resolved
	root     *os.Root
	readOnly bool // a read-only root of Config.ReadOnlyRoots: read only, never written
}

// OpenWorkspace opens dir (made absolute) as a workspace. The directory must exist.
func OpenWorkspace(dir string) (*Workspace, error) {
	return openRoot(dir, "workspace root")
}

// openRoot opens dir (made absolute) as a confining root; what names it in errors.
func openRoot(dir, what string) (*Workspace, error) {
	if strings.TrimSpace(dir) == "" {
		return nil, fmt.Errorf("tools/fs: the %s is empty", what)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("tools/fs: %s %q: %w", what, dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("tools/fs: %s %q: %w", what, dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("tools/fs: %s %q: %w", what, dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("tools/fs: %s %q is not a directory", what, dir)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("tools/fs: %s %q: %w", what, dir, err)
	}
	return &Workspace{dir: abs, real: real, root: root}, nil
}

// kind names the root in messages: the workspace, or a read-only directory.
func (w *Workspace) kind() string {
	if w.readOnly {
		return "read-only directory"
	}
	return "workspace"
}

// Close releases the workspace's directory handle. Operations after Close fail.
func (w *Workspace) Close() error { return w.root.Close() }

// Target is a path resolved inside the workspace.
type Target struct {
	// Path is the path shown to the model and the user: the requested path made absolute
	// against the workspace root and cleaned, with symbolic links kept as spelled.
	Path string
	// Rel is the canonical location relative to the root, slash-separated, with every
	// symbolic link resolved ("." is the root itself). Two spellings of one file share it;
	// it keys observations and is what the tools open.
	Rel string

	ws *Workspace // the root Rel is relative to
}

// Resolve resolves path for the operation op ("read", "write", "edit": it only words error
// messages). A relative path is relative to the workspace root; an absolute path must lie
// inside it. Symbolic links are followed one hop at a time and must stay inside the root;
// a missing tail is allowed (a write may create it). Escapes fail with FS_SANDBOX_DENIED, a
// path running through a non-directory with FS_NOT_FOUND.
func (w *Workspace) Resolve(op, p string) (Target, error) {
	if strings.TrimSpace(p) == "" {
		return Target{}, fsError(CodeNotFound, "file_path must be a non-empty string")
	}
	display := displayPath(w.dir, p)
	rel, ok := w.within(display)
	if !ok {
		return Target{}, fsError(CodeSandboxDenied, "cannot %s %q: the path is outside the %s %q", op, display, w.kind(), w.dir)
	}
	return w.resolveRel(op, display, rel)
}

// displayPath is p made absolute against dir and cleaned, symbolic links kept as spelled.
func displayPath(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// resolveRel resolves display, which lies lexically inside w at rel, to its canonical
// location.
func (w *Workspace) resolveRel(op, display, rel string) (Target, error) {
	canon, err := w.canonical(op, display, rel)
	if err != nil {
		return Target{}, err
	}
	return Target{Path: display, Rel: canon, ws: w}, nil
}

// within returns abs relative to the root (slash-separated, "." for the root) when abs lies
// lexically inside it under either spelling of the root.
func (w *Workspace) within(abs string) (string, bool) {
	for _, base := range [...]string{w.dir, w.real} {
		rel, err := filepath.Rel(base, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			continue
		}
		return filepath.ToSlash(rel), true
	}
	return "", false
}

// canonical resolves every symbolic link of rel, which is relative to the root and free of
// "..", refusing links that lead outside.
func (w *Workspace) canonical(op, display, rel string) (string, error) {
	pending := splitRel(rel)
	var done []string
	lastLink := "" // the most recent link followed, for messages: only links introduce ".."
	up := func() error {
		if len(done) == 0 {
			return fsError(CodeSandboxDenied, "cannot %s %q: the symbolic link %q points outside the %s %q", op, display, lastLink, w.kind(), w.dir)
		}
		done = done[:len(done)-1]
		return nil
	}
	hops := 0
	for len(pending) > 0 {
		name := pending[0]
		pending = pending[1:]
		if name == ".." {
			if err := up(); err != nil {
				return "", err
			}
			continue
		}
		cand := path.Join(append(done, name)...)
		fi, err := w.root.Lstat(cand)
		switch {
		case err == nil:
		case errors.Is(err, iofs.ErrNotExist):
			// The rest does not exist yet (a write may create it): keep it lexically.
			for _, r := range append([]string{name}, pending...) {
				if r != ".." {
					done = append(done, r)
				} else if err := up(); err != nil {
					return "", err
				}
			}
			return joinRel(done), nil
		case errors.Is(err, syscall.ENOTDIR):
			return "", fsError(CodeNotFound, "cannot resolve %q: a parent path segment is not a directory", display)
		default:
			return "", ioError(op, display, err)
		}
		if fi.Mode()&iofs.ModeSymlink == 0 {
			if !fi.IsDir() && len(pending) > 0 {
				return "", fsError(CodeNotFound, "cannot resolve %q: a parent path segment is not a directory", display)
			}
			done = append(done, name)
			continue
		}
		hops++
		if hops > maxLinkHops {
			return "", fsError(CodeIOError, "cannot %s %q: too many levels of symbolic links", op, display)
		}
		link, err := w.root.Readlink(cand)
		if err != nil {
			return "", ioError(op, display, err)
		}
		lastLink = filepath.Join(w.dir, filepath.FromSlash(cand))
		if filepath.IsAbs(link) {
			lrel, ok := w.within(filepath.Clean(link))
			if !ok {
				return "", fsError(CodeSandboxDenied, "cannot %s %q: the symbolic link %q points outside the %s %q", op, display, lastLink, w.kind(), w.dir)
			}
			done = done[:0]
			pending = append(splitRel(lrel), pending...)
			continue
		}
		// A relative target is relative to the link's directory, which is done.
		pending = append(splitRel(filepath.ToSlash(link)), pending...)
	}
	return joinRel(done), nil
}

// splitRel splits a slash-separated relative path into its components, dropping empty and
// "." components.
func splitRel(rel string) []string {
	var out []string
	for _, c := range strings.Split(rel, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

func joinRel(parts []string) string {
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}

// hardLinkDenied is the refusal of a write or edit of a file with several hard links.
func hardLinkDenied(op, display string, nlink uint64, root string) *tool.Error {
	return fsError(CodeSandboxDenied, "cannot %s %q: the file has %d hard links, and another link may lie outside the workspace %q", op, display, nlink, root)
}
