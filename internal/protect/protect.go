// Package protect computes the protected paths of a workspace: the places an agent's tools
// may read but must not change, because a change there would outlive the session or
// rewrite the rules the agent runs under.
//
// The protected set is
//
//   - <workspace>/.git: a repository directory, or a .git file (a linked worktree or a
//     submodule) or symbolic link, together with the directory it points to and, for a
//     linked worktree, the repository's common directory. A planted hook or a rewritten
//     core.fsmonitor runs code the next time anyone uses git there.
//   - <workspace>/.dsh: the project's configuration.
//   - the user's dsh home (~/.dsh or $DSH_HOME): the user's configuration and sessions.
//
// Each protected path covers everything below it, and is protected whether or not it exists
// yet (creating a .git directory is as dangerous as changing one). Paths are compared both as
// spelled (made absolute and cleaned) and with every symbolic link resolved, and with ASCII
// case folded, so neither a link into a protected directory nor a differently cased name on a
// case-insensitive filesystem walks around the check. Paths opened explicitly
// ([Config.Open]) are exempt, with everything below them.
package protect

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Config says what to protect.
type Config struct {
	// Workspace is the workspace directory whose .git and .dsh are protected. Required; it
	// must exist.
	Workspace string
	// Home is the user's dsh home, protected as a whole. Empty protects no home.
	Home string
	// Open lists paths exempt from protection, each with everything below it: relative to
	// Workspace, or absolute. They need not exist.
	Open []string
}

// Set is a computed protected set. It is immutable and safe for concurrent use.
type Set struct {
	protected []entry
	open      []entry
}

// entry is one path with every spelling it is compared under.
type entry struct {
	path  string   // absolute and clean, as reported
	forms []string // path and its symbolic-link-resolved form, deduplicated
}

// gitFileMax bounds how much of a .git file or a commondir file is read.
const gitFileMax = 4096

// New computes the protected set of cfg's workspace. It fails when the workspace is empty or
// does not exist, or when an open path is empty.
func New(cfg Config) (*Set, error) {
	if strings.TrimSpace(cfg.Workspace) == "" {
		return nil, errors.New("protect: the workspace is empty")
	}
	ws, err := filepath.Abs(cfg.Workspace)
	if err != nil {
		return nil, fmt.Errorf("protect: workspace %q: %w", cfg.Workspace, err)
	}
	if fi, err := os.Stat(ws); err != nil {
		return nil, fmt.Errorf("protect: workspace %q: %w", cfg.Workspace, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("protect: workspace %q is not a directory", cfg.Workspace)
	}
	s := &Set{}
	git := filepath.Join(ws, ".git")
	s.protected = append(s.protected, newEntry(git))
	for _, p := range gitTargets(git) {
		s.protected = append(s.protected, newEntry(p))
	}
	s.protected = append(s.protected, newEntry(filepath.Join(ws, ".dsh")))
	if strings.TrimSpace(cfg.Home) != "" {
		home, err := filepath.Abs(cfg.Home)
		if err != nil {
			return nil, fmt.Errorf("protect: dsh home %q: %w", cfg.Home, err)
		}
		s.protected = append(s.protected, newEntry(home))
	}
	s.protected = dedupe(s.protected)
	for _, o := range cfg.Open {
		if strings.TrimSpace(o) == "" {
			return nil, errors.New("protect: an open path is empty")
		}
		if strings.ContainsRune(o, 0) {
			return nil, fmt.Errorf("protect: open path %q contains a NUL byte", o)
		}
		p := o
		if !filepath.IsAbs(p) {
			p = filepath.Join(ws, p)
		}
		s.open = append(s.open, newEntry(filepath.Clean(p)))
	}
	return s, nil
}

// Paths returns every protected path, absolute and clean, in a stable order: the workspace's
// .git, what a .git file or link points to, .dsh, the dsh home. A path may not exist yet;
// one that does should be mounted read-only by a sandbox. Opened paths are not removed from
// the list: see Opened.
func (s *Set) Paths() []string {
	out := make([]string, len(s.protected))
	for i, e := range s.protected {
		out[i] = e.path
	}
	return out
}

// Opened returns the paths exempt from protection (Config.Open), absolute and clean.
func (s *Set) Opened() []string {
	out := make([]string, len(s.open))
	for i, e := range s.open {
		out[i] = e.path
	}
	return out
}

// Enforced returns the protected paths no opened path covers, absolute and clean: what a
// sandbox mounts read-only. A path opened inside a protected one (say .git/hooks) leaves
// that protected path in the list, since a read-only mount cannot have a writable hole.
func (s *Set) Enforced() []string {
	var out []string
	for _, e := range s.protected {
		opened := false
		for _, o := range s.open {
			if o.path == e.path || strings.HasPrefix(e.path, o.path+string(filepath.Separator)) {
				opened = true
				break
			}
		}
		if !opened {
			out = append(out, e.path)
		}
	}
	return out
}

// Covering returns the protected path that covers p, which must be absolute, or "" when p
// is not protected or lies in an opened path. p is checked as spelled and with its symbolic
// links resolved (as far as it exists), so one call covers both spellings.
func (s *Set) Covering(p string) string {
	if s == nil || !filepath.IsAbs(p) {
		return ""
	}
	for _, form := range forms(filepath.Clean(p)) {
		if hit := s.covering(form); hit != "" {
			return hit
		}
	}
	return ""
}

// covering is Covering for one spelling.
func (s *Set) covering(p string) string {
	for _, e := range s.protected {
		if !e.contains(p) {
			continue
		}
		for _, o := range s.open {
			if o.contains(p) {
				return ""
			}
		}
		return e.path
	}
	return ""
}

// contains reports whether p is one of e's spellings or lies below one.
func (e entry) contains(p string) bool {
	for _, f := range e.forms {
		if within(p, f) {
			return true
		}
	}
	return false
}

// within reports whether p equals base or lies below it, ASCII case folded.
func within(p, base string) bool {
	if len(p) < len(base) || !asciiEqualFold(p[:len(base)], base) {
		return false
	}
	return len(p) == len(base) || p[len(base)] == filepath.Separator || strings.HasSuffix(base, string(filepath.Separator))
}

// asciiEqualFold reports whether a and b, of equal length, are equal with ASCII letters
// case folded.
func asciiEqualFold(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func newEntry(p string) entry {
	return entry{path: p, forms: forms(p)}
}

// forms returns p and, when it differs, p with its symbolic links resolved.
func forms(p string) []string {
	if r := realPath(p); r != p {
		return []string{p, r}
	}
	return []string{p}
}

// maxLinkHops bounds how many dangling symbolic links realPath follows, like the kernel's
// ELOOP limit.
const maxLinkHops = 40

// realPath resolves the symbolic links of the longest existing prefix of p (absolute and
// clean) and appends the rest as spelled. A dangling link on the way is followed to where it
// points, so a link to a protected path that does not exist yet still leads there.
func realPath(p string) string {
	return realPathHops(p, 0)
}

func realPathHops(p string, hops int) string {
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		if fi, err := os.Lstat(cur); err == nil && fi.Mode()&iofs.ModeSymlink != 0 && hops < maxLinkHops {
			if link, err := os.Readlink(cur); err == nil {
				if !filepath.IsAbs(link) {
					link = filepath.Join(filepath.Dir(cur), link)
				}
				return realPathHops(filepath.Join(filepath.Clean(link), rest), hops+1)
			}
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// gitTargets returns what the workspace's .git points to beyond itself: the target of a
// symbolic link, or the gitdir of a .git file and that directory's common directory.
func gitTargets(git string) []string {
	fi, err := os.Lstat(git)
	if err != nil {
		return nil
	}
	switch {
	case fi.Mode()&iofs.ModeSymlink != 0:
		link, err := os.Readlink(git)
		if err != nil {
			return nil
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(git), link)
		}
		return []string{filepath.Clean(link)}
	case fi.Mode().IsRegular():
		dir := pointer(git, "gitdir:")
		if dir == "" {
			return nil
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(git), dir)
		}
		dir = filepath.Clean(dir)
		out := []string{dir}
		if common := pointer(filepath.Join(dir, "commondir"), ""); common != "" {
			if !filepath.IsAbs(common) {
				common = filepath.Join(dir, common)
			}
			out = append(out, filepath.Clean(common))
		}
		return out
	}
	return nil
}

// pointer reads the first line of the small file name and returns it without prefix (which
// must be present) and surrounding space; "" when the file is missing or does not fit.
func pointer(name, prefix string) string {
	f, err := os.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, gitFileMax)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
	if !ok {
		return ""
	}
	return strings.TrimSpace(rest)
}

// dedupe drops entries whose path repeats an earlier one's.
func dedupe(es []entry) []entry {
	var out []entry
	for _, e := range es {
		if !slices.ContainsFunc(out, func(o entry) bool { return o.path == e.path }) {
			out = append(out, e)
		}
	}
	return out
}
