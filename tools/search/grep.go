package search

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/tool"
)

// GrepInput is the arguments of the grep tool.
type GrepInput struct {
	Pattern string  `json:"pattern" jsonschema:"Regular expression to search for (RE2 syntax, as in Go's regexp: no backreferences or lookaround). Matched line by line; (?i) makes it case-insensitive."`
	Path    *string `json:"path,omitempty" jsonschema:"File or directory to search, relative to the workspace. Defaults to the whole workspace."`
	Include *string `json:"include,omitempty" jsonschema:"One glob selecting which files to search, e.g. \"*.go\" or \"*.{ts,tsx}\". Not a list, and negation is not supported."`
}

// GrepMatch is one matching line.
type GrepMatch struct {
	Path       string `json:"path"`
	LineNumber int    `json:"lineNumber"`
	Line       string `json:"line"`
}

// GrepOutput is the canonical value of grep: every matching line, in file order.
type GrepOutput struct {
	Matches []GrepMatch `json:"matches"`
}

type grepTool struct {
	set    *settings
	walker walker
}

func newGrep(set *settings) (*tool.Definition, error) {
	g := &grepTool{set: set, walker: walker{root: set.root, honourIgnores: true}}
	desc := "Search file contents with a regular expression and return the matching lines with their line numbers, grouped by file. " +
		"Binary files, hidden files and files excluded by .gitignore are skipped. " +
		fmt.Sprintf("The first %d matches are shown; a larger result says so and tells where the complete match list was saved. ", set.GrepMaxMatches) +
		"Use read on a matched file to see the surrounding lines, and use this instead of running grep or rg through the shell."
	return tool.New("grep", desc, g.run,
		tool.WithTimeout(set.Timeout),
		tool.ConcurrencySafe(), // it only reads: calls may overlap
		tool.Render(g.render),
		tool.Meta(g.meta),
		tool.FinalizeContent(g.finalize),
		tool.CallCard(func(in GrepInput) *card.Call {
			title := "Grep " + in.Pattern
			if in.Path != nil {
				title += " in " + *in.Path
			}
			if in.Include != nil {
				title += " (" + *in.Include + ")"
			}
			return &card.Call{Card: card.Generic, Title: title, Kind: card.KindSearch, RawInput: in.Pattern}
		}),
		tool.ResultCard(func(_ GrepInput, res card.ToolResult) *card.Result {
			return searchCard(res, "matches")
		}),
	)
}

// validate checks what the schema cannot express. Whitespace is a legitimate pattern.
func (in GrepInput) validate() error {
	if in.Pattern == "" {
		return errors.New("pattern must be a non-empty string")
	}
	if in.Path != nil && strings.TrimSpace(*in.Path) == "" {
		return errors.New("path must be a non-empty string when given")
	}
	if in.Include != nil {
		return validateInclude(*in.Include)
	}
	return nil
}

// validateInclude accepts exactly one positive glob; commas are allowed only inside a
// {a,b} alternation.
func validateInclude(include string) error {
	if strings.TrimSpace(include) == "" {
		return errors.New("include must be a non-empty glob when given")
	}
	if strings.HasPrefix(include, "!") {
		return errors.New(`include must be a positive glob filter; negated patterns ("!…") are not supported`)
	}
	depth := 0
	for _, c := range include {
		switch c {
		case '{':
			depth++
		case '}':
			depth = max(0, depth-1)
		case ',':
			if depth == 0 {
				return errors.New("include must be one glob, not a comma-separated list (use {a,b} alternation instead)")
			}
		}
	}
	return nil
}

func (g *grepTool) run(ctx context.Context, _ *tool.Call, in GrepInput) (GrepOutput, error) {
	if err := in.validate(); err != nil {
		return GrepOutput{}, err
	}
	eng, err := compileGrep(in.Pattern)
	if err != nil {
		return GrepOutput{}, searchError(CodeInvalidPattern, "grep pattern rejected: %v", err)
	}
	var inc *matcher
	if in.Include != nil {
		m, ok := newMatcher(*in.Include)
		if !ok {
			return GrepOutput{}, searchError(CodeInvalidPattern, "grep pattern rejected: include %s is not a valid glob", quote(*in.Include))
		}
		inc = &m
	}
	if ctx.Err() != nil {
		return GrepOutput{}, abortedError("grep")
	}
	p := ""
	if in.Path != nil {
		p = *in.Path
	}
	t, err := g.set.resolveTarget("grep", p)
	if err != nil {
		return GrepOutput{}, err
	}
	matches, err := g.search(ctx, eng, t, inc)
	switch {
	case err == nil:
		if matches == nil {
			matches = []GrepMatch{}
		}
		return GrepOutput{Matches: matches}, nil
	case errors.Is(err, errRawOverflow):
		return GrepOutput{}, searchError(CodeRawOutputOverflow, "grep matched more than %d bytes of lines; narrow pattern, path, or include and retry", g.set.RawOutputBytes)
	case ctx.Err() != nil:
		return GrepOutput{}, abortedError("grep")
	default:
		return GrepOutput{}, searchError(CodeFailed, "grep search failed: %v", unwrapPathError(err))
	}
}

// fileMatches appends the matches of one file to dst.
func fileMatches(dst []GrepMatch, eng *grepEngine, abs, display string, buf *[]byte) ([]GrepMatch, error) {
	f, err := os.Open(abs)
	if err != nil {
		return dst, err
	}
	defer f.Close()
	_, err = eng.scan(f, buf, func(n int, line []byte) error {
		dst = append(dst, GrepMatch{Path: display, LineNumber: n, Line: lineText(line)})
		return nil
	})
	return dst, err
}

// lineText returns a matched line for display: without its carriage return, and a
// placeholder when it is not valid UTF-8.
func lineText(line []byte) string {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if !utf8.Valid(line) {
		return "(line is not valid UTF-8)"
	}
	return string(line)
}

// matchCost is the share of the raw output budget one match uses.
func matchCost(m GrepMatch) int { return len(m.Path) + len(m.Line) + 32 }

// search runs eng over the target. A directory is walked on this goroutine while workers
// read and search its files; the results keep the walk order.
func (g *grepTool) search(ctx context.Context, eng *grepEngine, t target, inc *matcher) ([]GrepMatch, error) {
	if !t.isDir {
		buf := make([]byte, initialBuf)
		ms, err := fileMatches(nil, eng, t.abs, displayPath(t.rel), &buf)
		if err != nil {
			return nil, err
		}
		cost := 0
		for _, m := range ms {
			if cost += matchCost(m); cost > g.set.RawOutputBytes {
				return nil, errRawOverflow
			}
		}
		return ms, nil
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	type job struct {
		index   int
		abs     string
		display string
	}
	jobs := make(chan job, 128)
	var (
		mu      sync.Mutex
		found   = map[int][]GrepMatch{}
		cost    int
		wg      sync.WaitGroup
		workers = g.set.Workers
	)
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	for range workers {
		wg.Go(func() {
			buf := make([]byte, initialBuf)
			for j := range jobs {
				if ctx.Err() != nil {
					continue // drain
				}
				ms, err := fileMatches(nil, eng, j.abs, j.display, &buf)
				if err != nil || len(ms) == 0 {
					continue // an unreadable file is skipped, as ripgrep does
				}
				c := 0
				for _, m := range ms {
					c += matchCost(m)
				}
				mu.Lock()
				found[j.index] = ms
				cost += c
				over := cost > g.set.RawOutputBytes
				mu.Unlock()
				if over {
					cancel(errRawOverflow)
				}
			}
		})
	}
	index := 0
	walkErr := g.walker.walk(ctx, t, func(rel, sub string, _ fs.DirEntry) error {
		if inc != nil && !inc.match(rel, sub) {
			return nil
		}
		select {
		case jobs <- job{index: index, abs: filepath.Join(g.set.root, filepath.FromSlash(rel)), display: displayPath(rel)}:
			index++
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	close(jobs)
	wg.Wait()
	if cause := context.Cause(ctx); errors.Is(cause, errRawOverflow) {
		return nil, errRawOverflow
	}
	if walkErr != nil {
		return nil, walkErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	keys := make([]int, 0, len(found))
	for k := range found {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []GrepMatch
	for _, k := range keys {
		out = append(out, found[k]...)
	}
	return out, nil
}

// previewLine bounds a shown line to max bytes on a UTF-8 boundary, marking the cut.
func previewLine(line string, max int) string {
	if len(line) <= max {
		return line
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut] + " (line truncated)"
}

// retained is the inline part of a grep result.
type retained struct {
	items     []GrepMatch // previewed
	truncated bool
	seen      int
}

func (g *grepTool) retain(matches []GrepMatch) retained {
	n := min(len(matches), g.set.GrepMaxMatches)
	items := make([]GrepMatch, n)
	for i := range n {
		m := matches[i]
		m.Line = previewLine(m.Line, g.set.GrepMaxLineBytes)
		items[i] = m
	}
	return retained{items: items, truncated: len(matches) > n, seen: len(matches)}
}

// formatMatches renders matches grouped by file in first-seen order: the path, then one
// "Line N: text" row per match; groups are separated by a blank line.
func formatMatches(matches []GrepMatch) string {
	var b strings.Builder
	groups := groupByFile(matches)
	for i, f := range groups {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(f.Path)
		for _, m := range f.Matches {
			fmt.Fprintf(&b, "\nLine %d: %s", m.LineNumber, m.Line)
		}
	}
	return b.String()
}

// groupByFile groups matches by path in first-seen order.
func groupByFile(matches []GrepMatch) []card.SearchFile {
	var files []card.SearchFile
	index := map[string]int{}
	for _, m := range matches {
		i, ok := index[m.Path]
		if !ok {
			i = len(files)
			index[m.Path] = i
			files = append(files, card.SearchFile{Path: m.Path, Matches: []card.SearchMatch{}})
		}
		files[i].Matches = append(files[i].Matches, card.SearchMatch{LineNumber: m.LineNumber, Line: m.Line})
	}
	return files
}

func matchNoun(n int) string {
	if n == 1 {
		return "match"
	}
	return "matches"
}

func (g *grepTool) text(matches []GrepMatch, spillPath string) string {
	if len(matches) == 0 {
		return "No matches found"
	}
	r := g.retain(matches)
	body := formatMatches(r.items)
	if !r.truncated {
		return fmt.Sprintf("Found %d %s\n\n%s", r.seen, matchNoun(r.seen), body)
	}
	recovery := "The complete result could not be saved; narrow pattern, path, or include to see more."
	if spillPath != "" {
		recovery = "Full grep result stored at: " + spillPath + ". " + spillHint
	}
	return fmt.Sprintf("Found %d of %d matches\n\n%s\n\n(%s)", len(r.items), r.seen, body, recovery)
}

func (g *grepTool) render(_ GrepInput, out GrepOutput) ([]content.Block, error) {
	return content.Texts(g.text(out.Matches, "")), nil
}

func (g *grepTool) meta(_ GrepInput, out GrepOutput) (any, error) {
	r := g.retain(out.Matches)
	files := groupByFile(r.items)
	if files == nil {
		files = []card.SearchFile{}
	}
	return capMatchesMeta(files, r.truncated, r.seen, g.set.MetaMaxBytes), nil
}

// finalize saves the complete match list of an over-cap top-level result and points the
// model at it, unless a policy already replaced the content.
func (g *grepTool) finalize(exec *tool.Execution, res *tool.Result) ([]content.Block, error) {
	if res.IsError || exec.Parent() != nil {
		return nil, nil
	}
	var in GrepInput
	var out GrepOutput
	if !decodeCall(exec, res, &in, &out) || len(out.Matches) <= g.set.GrepMaxMatches {
		return nil, nil
	}
	if !isText(res.Content, g.text(out.Matches, "")) {
		return nil, nil
	}
	all := make([]GrepMatch, len(out.Matches))
	for i, m := range out.Matches {
		m.Line = previewLine(m.Line, g.set.GrepMaxLineBytes)
		all[i] = m
	}
	full := fmt.Sprintf("Found %d %s\n\n%s", len(all), matchNoun(len(all)), formatMatches(all))
	p, err := g.set.spill.save("grep", exec.CallID(), full)
	if err != nil {
		return nil, nil
	}
	return content.Texts(g.text(out.Matches, p)), nil
}
