package rules

import (
	"path/filepath"
	"strings"

	"github.com/dsh-go/dsh/policy/internal/wildcard"
)

// pathGlob is a compiled path pattern.
type pathGlob struct {
	abs      bool     // matched against the absolute path
	anywhere bool     // starts with "**": also matched against the absolute path
	segs     []string // "/"-separated segments; "**" is the any-depth segment
}

// compilePath compiles a path pattern; it cannot fail (every text is a pattern).
func compilePath(pat string) pathGlob {
	pat = filepath.ToSlash(strings.TrimSpace(pat))
	var g pathGlob
	if strings.HasPrefix(pat, "/") {
		g.abs = true
		pat = strings.TrimLeft(pat, "/")
	} else {
		for strings.HasPrefix(pat, "./") {
			pat = strings.TrimLeft(pat[2:], "/")
		}
		if pat == "." {
			pat = ""
		}
	}
	if strings.HasSuffix(pat, "/") {
		pat = strings.TrimRight(pat, "/") + "/**"
	}
	if pat != "" {
		for _, s := range strings.Split(pat, "/") {
			if s == "" || s == "." {
				continue // "a//b" and "a/./b" are "a/b"
			}
			g.segs = append(g.segs, s)
		}
	}
	g.anywhere = !g.abs && len(g.segs) > 0 && g.segs[0] == "**"
	return g
}

// pathValue is a requested path resolved against the workspace.
type pathValue struct {
	abs   []string // segments of the cleaned absolute path
	rel   []string // segments relative to the workspace; nil with inside false when outside
	inner bool     // the path is the workspace or below it
}

// resolvePath resolves p against workspace (an absolute, clean path).
func resolvePath(workspace, p string) pathValue {
	if !filepath.IsAbs(p) {
		p = filepath.Join(workspace, p)
	}
	p = filepath.Clean(p)
	v := pathValue{abs: splitSegs(filepath.ToSlash(p))}
	if rel, err := filepath.Rel(workspace, p); err == nil {
		rel = filepath.ToSlash(rel)
		if rel != ".." && !strings.HasPrefix(rel, "../") {
			v.inner = true
			if rel != "." {
				v.rel = splitSegs(rel)
			}
		}
	}
	return v
}

func splitSegs(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// match reports whether the pattern matches the resolved path.
func (g *pathGlob) match(v pathValue) bool {
	if g.abs {
		return matchSegs(g.segs, v.abs)
	}
	if v.inner && matchSegs(g.segs, v.rel) {
		return true
	}
	return g.anywhere && matchSegs(g.segs, v.abs)
}

// matchSegs matches pattern segments against path segments: "**" matches any number of
// segments, other segments match one segment with "*" wildcards. It is a dynamic program over
// (pattern, path) positions, so many "**" cannot make it exponential.
func matchSegs(pat, segs []string) bool {
	// ok[j] reports whether pat[:i] matches segs[:j], for the current i.
	ok := make([]bool, len(segs)+1)
	ok[0] = true
	for _, p := range pat {
		next := make([]bool, len(segs)+1)
		if p == "**" {
			reach := false
			for j := range ok {
				reach = reach || ok[j]
				next[j] = reach
			}
		} else {
			for j := 1; j <= len(segs); j++ {
				next[j] = ok[j-1] && wildcard.Match(p, segs[j-1])
			}
		}
		ok = next
	}
	return ok[len(segs)]
}
