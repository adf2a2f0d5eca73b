package search

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// This file implements the gitignore rules (gitignore(5)) the walker honours: nested
// .gitignore files, the repository's .git/info/exclude, negation, directory-only patterns,
// anchoring and "**". Wildcard matching itself is delegated to doublestar, whose "*", "?",
// "[...]" and "**" semantics are those of gitignore once braces (literal in gitignore) are
// escaped.
//
// It is written here rather than taken from a library because the candidates either pull a
// whole git implementation in (go-git) or are unmaintained and translate patterns to regular
// expressions with known bugs around negated directories (sabhiram/go-gitignore).

// ignoreRule is one pattern line of an ignore file.
type ignoreRule struct {
	glob     string // doublestar pattern; relative to the file's directory when anchored
	negate   bool   // "!pattern": re-include
	dirOnly  bool   // "pattern/": matches directories only
	anchored bool   // contains a slash before its end: matched against the base-relative path
	subtree  string // for "prefix/**": the prefix, which the pattern must not match itself
}

// ignoreFile holds the rules of one ignore file and the directory they are relative to.
type ignoreFile struct {
	base  string // slash-separated, relative to the workspace root; "" for the root
	rules []ignoreRule
}

// parseIgnore parses the content of a .gitignore file whose directory is base.
func parseIgnore(base string, data []byte) *ignoreFile {
	f := &ignoreFile{base: base}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if r, ok := parseIgnoreLine(sc.Text()); ok {
			f.rules = append(f.rules, r)
		}
	}
	return f
}

// parseIgnoreLine parses one line; ok is false for blank lines, comments and invalid
// patterns.
func parseIgnoreLine(line string) (r ignoreRule, ok bool) {
	line = strings.TrimSuffix(line, "\r")
	line = trimTrailingSpaces(line)
	if line == "" || line[0] == '#' {
		return r, false
	}
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") && !strings.HasSuffix(line, `\/`) {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return r, false
	}
	if strings.Contains(line, "/") {
		r.anchored = true
		line = strings.TrimPrefix(line, "/")
		if line == "" {
			return r, false
		}
	}
	glob := escapeBraces(line)
	if strings.HasSuffix(glob, "/**") {
		r.subtree = strings.TrimSuffix(glob, "/**")
	}
	if !doublestar.ValidatePattern(glob) {
		return r, false
	}
	r.glob = glob
	return r, true
}

// trimTrailingSpaces removes trailing spaces that are not escaped with a backslash.
func trimTrailingSpaces(s string) string {
	for strings.HasSuffix(s, " ") {
		t := strings.TrimSuffix(s, " ")
		if strings.HasSuffix(t, `\`) {
			// "\ " keeps one space; the backslash is an escape doublestar understands.
			return s
		}
		s = t
	}
	return s
}

// escapeBraces makes "{" and "}" literal, as they are in gitignore patterns.
func escapeBraces(s string) string {
	if !strings.ContainsAny(s, "{}") {
		return s
	}
	var b strings.Builder
	escaped := false
	for _, c := range s {
		if !escaped && (c == '{' || c == '}') {
			b.WriteByte('\\')
		}
		escaped = !escaped && c == '\\'
		b.WriteRune(c)
	}
	return b.String()
}

// match reports whether the rule matches rel (relative to the file's base) with base name
// name.
func (r *ignoreRule) match(rel, name string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	if !r.anchored {
		ok, _ := doublestar.Match(r.glob, name)
		return ok
	}
	if r.subtree != "" {
		// gitignore's "dir/**" matches what is inside dir, never dir itself.
		if ok, _ := doublestar.Match(r.subtree, rel); ok {
			return false
		}
	}
	ok, _ := doublestar.Match(r.glob, rel)
	return ok
}

// ignoreStack is the ignore files in force in one directory, shallowest first, plus the
// repository exclude file (lowest precedence). It is immutable: entering a directory makes
// a new stack sharing the parent's files.
type ignoreStack struct {
	files   []*ignoreFile
	exclude *ignoreFile
}

// with returns the stack extended by f (nil: unchanged).
func (s *ignoreStack) with(f *ignoreFile) *ignoreStack {
	if f == nil || len(f.rules) == 0 {
		return s
	}
	files := make([]*ignoreFile, len(s.files), len(s.files)+1)
	copy(files, s.files)
	return &ignoreStack{files: append(files, f), exclude: s.exclude}
}

// ignored reports whether the workspace-relative path rel (slash-separated) is ignored.
// Deeper files take precedence over shallower ones, and within a file the last matching
// line wins; a matching negation re-includes the path.
func (s *ignoreStack) ignored(rel string, isDir bool) bool {
	name := path.Base(rel)
	check := func(f *ignoreFile) (decided, ignored bool) {
		sub, ok := relativeTo(f.base, rel)
		if !ok {
			return false, false
		}
		for i := len(f.rules) - 1; i >= 0; i-- {
			r := &f.rules[i]
			if r.match(sub, name, isDir) {
				return true, !r.negate
			}
		}
		return false, false
	}
	for i := len(s.files) - 1; i >= 0; i-- {
		if decided, ig := check(s.files[i]); decided {
			return ig
		}
	}
	if s.exclude != nil {
		if decided, ig := check(s.exclude); decided {
			return ig
		}
	}
	return false
}

// relativeTo returns rel relative to the directory base (both workspace-relative).
func relativeTo(base, rel string) (string, bool) {
	if base == "" {
		return rel, true
	}
	if rest, ok := strings.CutPrefix(rel, base+"/"); ok {
		return rest, true
	}
	return "", false
}

// readIgnoreFile loads the ignore file at abs for the workspace-relative directory base, or
// nil when there is none.
func readIgnoreFile(abs, base string) *ignoreFile {
	data, err := os.ReadFile(abs)
	if err != nil || len(data) == 0 {
		return nil
	}
	return parseIgnore(base, data)
}
