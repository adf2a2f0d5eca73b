package search

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// GlobInput is the arguments of the glob tool.
type GlobInput struct {
	Pattern string  `json:"pattern" jsonschema:"Glob to match file paths against, e.g. \"**/*.go\" or \"cmd/*/main.go\". Without a \"/\" it matches file names at any depth (\"*.md\" finds every Markdown file); with one it matches the path below the search directory or from the workspace root."`
	Path    *string `json:"path,omitempty" jsonschema:"Directory to search in, relative to the workspace. Defaults to the whole workspace."`
}

// GlobOutput is the canonical value of glob: every matching file, newest first.
type GlobOutput struct {
	Paths []string `json:"paths"`
}

type globTool struct {
	set    *settings
	walker walker
}

func newGlob(set *settings) (*tool.Definition, error) {
	g := &globTool{set: set, walker: walker{root: set.root, honourIgnores: !set.GlobIncludeIgnored, hidden: true}}
	over := fmt.Sprintf("a larger result shows %d paths sampled across the top-level entries of the search directory", set.GlobMaxResults)
	if set.GlobHead {
		over = fmt.Sprintf("a larger result shows the %d newest", set.GlobMaxResults)
	}
	desc := "List the files whose paths match a glob pattern, most recently modified first. " +
		"Only files are listed, never directories; hidden files are included, while files excluded by .gitignore and version-control metadata are not. " +
		fmt.Sprintf("Up to %d paths are returned; %s, says so and tells where the complete list was saved. ", set.GlobMaxResults, over) +
		"Use this instead of running find through the shell."
	return tool.New("glob", desc, g.run,
		tool.WithTimeout(set.Timeout),
		tool.ConcurrencySafe(), // it only reads: calls may overlap
		tool.Render(g.render),
		tool.Meta(g.meta),
		tool.FinalizeContent(g.finalize),
		tool.CallCard(func(in GlobInput) *card.Call {
			title := "Glob " + in.Pattern
			if in.Path != nil {
				title += " in " + *in.Path
			}
			return &card.Call{Card: card.Generic, Title: title, Kind: card.KindSearch, RawInput: in.Pattern}
		}),
		tool.ResultCard(func(_ GlobInput, res card.ToolResult) *card.Result {
			return searchCard(res, "paths")
		}),
	)
}

// validate checks what the schema cannot express.
func (in GlobInput) validate() error {
	if strings.TrimSpace(in.Pattern) == "" {
		return errors.New("pattern must be a non-empty string")
	}
	if in.Path != nil && strings.TrimSpace(*in.Path) == "" {
		return errors.New("path must be a non-empty string when given")
	}
	return nil
}

func (in GlobInput) path() string {
	if in.Path == nil {
		return ""
	}
	return *in.Path
}

type globHit struct {
	path  string
	mtime time.Time
}

func (g *globTool) run(ctx context.Context, _ *tool.Call, in GlobInput) (GlobOutput, error) {
	if err := in.validate(); err != nil {
		return GlobOutput{}, err
	}
	m, ok := newMatcher(in.Pattern)
	if !ok {
		return GlobOutput{}, searchError(CodeInvalidPattern, "glob pattern rejected: %s is not a valid glob", quote(in.Pattern))
	}
	if ctx.Err() != nil {
		return GlobOutput{}, abortedError("glob")
	}
	t, err := g.set.resolveTarget("glob", in.path())
	if err != nil {
		return GlobOutput{}, err
	}
	if !t.isDir {
		return GlobOutput{}, searchError(CodeFailed, "glob search failed: path %s is not a directory", quote(in.path()))
	}
	hits, err := g.collect(ctx, t, m)
	if err != nil {
		return GlobOutput{}, err
	}
	slices.SortFunc(hits, func(a, b globHit) int {
		if c := b.mtime.Compare(a.mtime); c != 0 {
			return c
		}
		return cmp.Compare(a.path, b.path)
	})
	paths := make([]string, len(hits))
	for i, h := range hits {
		paths[i] = h.path
	}
	return GlobOutput{Paths: paths}, nil
}

var errRawOverflow = errors.New("raw output overflow")

func (g *globTool) collect(ctx context.Context, t target, m matcher) ([]globHit, error) {
	var hits []globHit
	bytes := 0
	err := g.walker.walk(ctx, t, func(rel, sub string, d fs.DirEntry) error {
		if !m.match(rel, sub) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // vanished since it was listed
		}
		bytes += len(rel) + 3
		if bytes > g.set.RawOutputBytes {
			return errRawOverflow
		}
		hits = append(hits, globHit{path: displayPath(rel), mtime: info.ModTime()})
		return nil
	})
	switch {
	case err == nil:
		return hits, nil
	case errors.Is(err, errRawOverflow):
		return nil, searchError(CodeRawOutputOverflow, "glob matched more than %d bytes of paths; narrow pattern or path and retry", g.set.RawOutputBytes)
	case ctx.Err() != nil:
		return nil, abortedError("glob")
	default:
		return nil, searchError(CodeFailed, "glob search failed: %v", unwrapPathError(err))
	}
}

// displayPath makes a workspace-relative path safe to return as JSON text.
func displayPath(rel string) string { return strings.ToValidUTF8(rel, "\uFFFD") }

// root returns the search directory in display form: "." or workspace-relative.
func (g *globTool) root(in GlobInput) string {
	if in.path() == "" {
		return "."
	}
	if rel, ok := within(g.set.root, g.set.absPath(in.path())); ok {
		return rel
	}
	return in.path()
}

// page is the inline part of a glob result.
type page struct {
	items     []string
	truncated bool
	basis     string // the footer's sentence ending: "." or the sampling note
}

func (g *globTool) page(in GlobInput, paths []string) page {
	limit := g.set.GlobMaxResults
	if len(paths) <= limit {
		return page{items: paths}
	}
	if g.set.GlobHead {
		return page{items: paths[:limit], truncated: true, basis: "."}
	}
	s := sampleTopLevel(paths, limit, g.root(in))
	basis := "."
	if s.total != len(paths) {
		basis = fmt.Sprintf(", sampled across %d of the %d top-level entries this pattern matched instead of taken in modification-time order.", s.shown, s.total)
		if s.shown < s.total {
			basis += " Narrow path to inspect a specific subtree."
		}
	}
	return page{items: s.items, truncated: true, basis: basis}
}

func (g *globTool) text(in GlobInput, paths []string, spillPath string) string {
	if len(paths) == 0 {
		return "No files found"
	}
	p := g.page(in, paths)
	if !p.truncated {
		return strings.Join(paths, "\n")
	}
	recovery := "The complete result could not be saved; narrow pattern or path to see more."
	if spillPath != "" {
		recovery = "Full sorted result stored at: " + spillPath + ". " + spillHint
	}
	return fmt.Sprintf("%s\n\n(Showing %d of %d paths%s %s)", strings.Join(p.items, "\n"), len(p.items), len(paths), p.basis, recovery)
}

func (g *globTool) render(in GlobInput, out GlobOutput) ([]content.Block, error) {
	return content.Texts(g.text(in, out.Paths, "")), nil
}

func (g *globTool) meta(in GlobInput, out GlobOutput) (any, error) {
	p := g.page(in, out.Paths)
	return capPathsMeta(p.items, p.truncated, len(out.Paths), g.set.MetaMaxBytes), nil
}

// finalize saves the complete list of an over-cap top-level result and points the model at
// it, unless a policy already replaced the content.
func (g *globTool) finalize(exec *tool.Execution, res *tool.Result) ([]content.Block, error) {
	if res.IsError || exec.Parent() != nil {
		return nil, nil
	}
	var in GlobInput
	var out GlobOutput
	if !decodeCall(exec, res, &in, &out) || len(out.Paths) <= g.set.GlobMaxResults {
		return nil, nil
	}
	if !isText(res.Content, g.text(in, out.Paths, "")) {
		return nil, nil
	}
	p, err := g.set.spill.save("glob", exec.CallID(), strings.Join(out.Paths, "\n"))
	if err != nil {
		return nil, nil
	}
	return content.Texts(g.text(in, out.Paths, p)), nil
}

// decodeCall decodes the arguments and value of a finished call.
func decodeCall(exec *tool.Execution, res *tool.Result, in, out any) bool {
	args, ok := exec.Args()
	if !ok {
		return false
	}
	return jsonv.Decode(args, in) == nil && jsonv.Decode(res.Value, out) == nil
}

// isText reports whether blocks is exactly one text block holding text.
func isText(blocks []content.Block, text string) bool {
	return len(blocks) == 1 && blocks[0].Type == content.TypeText && blocks[0].Text == text
}

// sample is an over-cap glob page spread across top-level entries.
type sample struct {
	items        []string
	shown, total int // top-level entries reached by items, and in the whole result
}

// sampleTopLevel picks max paths round-robin across the top-level entries (relative to
// root) of paths, so a large result spans the tree instead of one busy subtree. Groups keep
// their first-seen order and the order within each group; a flat result yields its head.
func sampleTopLevel(paths []string, max int, root string) sample {
	type group struct {
		key   string
		items []string
	}
	var groups []*group
	index := map[string]*group{}
	for _, p := range paths {
		key := topLevel(relativeToRoot(p, root))
		g := index[key]
		if g == nil {
			g = &group{key: key}
			index[key] = g
			groups = append(groups, g)
		}
		g.items = append(g.items, p)
	}
	taken := make([]int, len(groups))
	count := 0
	for round := 0; count < max; round++ {
		progressed := false
		for i, g := range groups {
			if count >= max {
				break
			}
			if round < len(g.items) {
				taken[i]++
				count++
				progressed = true
			}
		}
		if !progressed {
			break
		}
	}
	s := sample{total: len(groups)}
	for i, g := range groups {
		if taken[i] > 0 {
			s.shown++
			s.items = append(s.items, g.items[:taken[i]]...)
		}
	}
	return s
}

func relativeToRoot(p, root string) string {
	if root == "." {
		return strings.TrimPrefix(p, "./")
	}
	root = strings.TrimRight(root, "/")
	if root == "" {
		return strings.TrimLeft(p, "/")
	}
	if p == root {
		return ""
	}
	if rest, ok := strings.CutPrefix(p, root+"/"); ok {
		return rest
	}
	return p
}

func topLevel(p string) string {
	p = strings.TrimLeft(p, "/")
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return p
}
