package fs

import (
	"path/filepath"
	"strings"

	"github.com/dsh-go/dsh/tool"
)

// openReadOnlyRoots opens every directory of dirs as a read-only root.
func openReadOnlyRoots(dirs []string) ([]*Workspace, error) {
	var roots []*Workspace
	for _, dir := range dirs {
		w, err := openRoot(dir, "read-only root")
		if err != nil {
			for _, r := range roots {
				r.Close()
			}
			return nil, err
		}
		w.readOnly = true
		roots = append(roots, w)
	}
	return roots, nil
}

// resolve resolves file_path p for op ("read", "write", "edit") against the workspace and
// the read-only roots. A relative path is relative to the workspace root; an absolute path
// belongs to the deepest root that lexically contains it (on a tie, the read-only one), and
// is then resolved within that root with the workspace's containment checks. A write or
// edit of a path in a read-only root — spelled there, or reached through a symbolic link
// into a read-only root nested in the workspace — fails with FS_SANDBOX_DENIED.
func (t *Tools) resolve(op, p string) (Target, error) {
	target, err := t.resolveRoots(op, p)
	if err != nil || op == "read" {
		return target, err
	}
	// The canonical location, every symbolic link resolved: a link (or "..") leading into a
	// protected path is caught here even when the spelling looks harmless.
	root := t.ws
	if target.ws != nil {
		root = target.ws
	}
	if hit := t.prot.Covering(filepath.Join(root.real, filepath.FromSlash(target.Rel))); hit != "" {
		return Target{}, protectedDenied(op, target.Path, hit)
	}
	return target, nil
}

// resolveRoots is resolve without the protected-path check of the canonical location; the
// path as spelled is checked before it is resolved, so a protected .git that is a link
// leading outside the workspace is reported as protected.
func (t *Tools) resolveRoots(op, p string) (Target, error) {
	if op != "read" && strings.TrimSpace(p) != "" {
		display := displayPath(t.ws.dir, p)
		if hit := t.prot.Covering(display); hit != "" {
			return Target{}, protectedDenied(op, display, hit)
		}
	}
	if len(t.ro) == 0 || strings.TrimSpace(p) == "" {
		return t.ws.Resolve(op, p)
	}
	display := displayPath(t.ws.dir, p)
	w, rel := t.owner(display)
	if w == nil {
		// The message names the workspace: the read-only roots are an exception to it.
		return t.ws.Resolve(op, p)
	}
	if w.readOnly && op != "read" {
		return Target{}, readOnlyDenied(op, display, w.dir)
	}
	target, err := w.resolveRel(op, display, rel)
	if err != nil {
		return Target{}, err
	}
	if op != "read" {
		if o, _ := t.owner(filepath.Join(w.real, filepath.FromSlash(target.Rel))); o != nil && o.readOnly {
			return Target{}, readOnlyDenied(op, display, o.dir)
		}
	}
	return target, nil
}

// owner returns the deepest root (the workspace or a read-only root) lexically containing
// abs, and abs relative to it; nil when no root does.
func (t *Tools) owner(abs string) (*Workspace, string) {
	var best *Workspace
	bestRel, bestDepth := "", -1
	for i := -1; i < len(t.ro); i++ {
		w := t.ws
		if i >= 0 {
			w = t.ro[i]
		}
		rel, ok := w.within(abs)
		if !ok {
			continue
		}
		// Fewer components below the root means a deeper root.
		depth := len(splitRel(rel))
		if best == nil || depth <= bestDepth {
			best, bestRel, bestDepth = w, rel, depth
		}
	}
	return best, bestRel
}

// protectedDenied is the refusal of a write or edit inside a protected path.
func protectedDenied(op, display, protected string) *tool.Error {
	return fsError(CodeProtectedPath, "cannot %s %q: it is inside the protected path %q (version-control and dsh metadata are read-only to the file tools); the user can open it with permissions.openProtected in the user configuration or the --open-protected flag", op, display, protected)
}

// readOnlyDenied is the refusal of a write or edit in a read-only root.
func readOnlyDenied(op, display, dir string) *tool.Error {
	return fsError(CodeSandboxDenied, "cannot %s %q: the path is in the read-only directory %q", op, display, dir)
}
