package web

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// SearchInput is the arguments of web_search.
type SearchInput struct {
	Queries []string `json:"queries" jsonschema:"Search queries, at least one (the tool description says how many at most); the results of several queries are merged."`
}

// Source is one search result.
type Source struct {
	URL         string `json:"url"`
	Title       string `json:"title,omitempty"`
	Snippet     string `json:"snippet,omitempty"`
	PublishedAt string `json:"publishedAt,omitempty"`
}

// SearchOutput is the canonical value of web_search.
type SearchOutput struct {
	// Answer is the Search API's short answer (several queries: each under a heading).
	Answer string `json:"answer,omitempty"`
	// Sources are the merged results, best first.
	Sources []Source `json:"sources"`
	// Truncated says results were left out to stay within the result bound.
	Truncated bool `json:"truncated"`
}

// searchRequest and searchResponse are the Search API's wire shapes.
type searchRequest struct {
	Query      string `json:"query"`
	MaxResults int    `json:"max_results"`
}

type searchResponse struct {
	Answer  string `json:"answer"`
	Results []struct {
		URL         string `json:"url"`
		Title       string `json:"title"`
		Snippet     string `json:"snippet"`
		PublishedAt string `json:"published_at"`
	} `json:"results"`
	Truncated bool `json:"truncated"`
}

// searchMeta is the presentation meta persisted with a web_search result.
type searchMeta struct {
	Kind      string   `json:"kind"`
	Sources   []Source `json:"sources"`
	Truncated bool     `json:"truncated"`
	Answer    string   `json:"answer,omitempty"`
}

func newSearch(c *client) *tool.Definition {
	desc := fmt.Sprintf("Search the web for current information. Give 1 to %d queries; "+
		"the result is an optional short answer and a list of sources (title, URL, snippet). "+
		"Use web_fetch to read a source in full, and cite the URLs you rely on as markdown links.", c.MaxQueries)
	return tool.Must(tool.New("web_search", desc, c.search,
		tool.ConcurrencySafe(),
		tool.WithTimeout(c.Timeout),
		tool.Render(func(_ SearchInput, out SearchOutput) ([]content.Block, error) {
			return content.Texts(renderSearch(out)), nil
		}),
		tool.Meta(func(_ SearchInput, out SearchOutput) (any, error) {
			return searchMeta{Kind: "search", Sources: out.Sources, Truncated: out.Truncated, Answer: out.Answer}, nil
		}),
		tool.CallCard(func(in SearchInput) *card.Call {
			title := strings.Join(in.Queries, ", ")
			return &card.Call{Card: card.Generic, Title: "Search " + title, Kind: card.KindSearch, RawInput: title}
		}),
		tool.ResultCard(func(in SearchInput, res card.ToolResult) *card.Result {
			var m searchMeta
			if res.IsError || res.Meta == nil || jsonv.Decode(res.Meta, &m) != nil || m.Kind != "search" {
				return nil
			}
			sources := make([]card.WebSource, len(m.Sources))
			for i, s := range m.Sources {
				sources[i] = card.WebSource(s)
			}
			return &card.Result{Card: card.Web, WebKind: "search", Title: "Search " + strings.Join(in.Queries, ", "),
				Sources: sources, Answer: m.Answer, Truncated: m.Truncated}
		}),
	))
}

// queries validates and deduplicates the queries, keeping their first order.
func (c *client) queries(in SearchInput) ([]string, error) {
	switch {
	case len(in.Queries) == 0:
		return nil, webError(CodeInvalidArgs, "queries must contain at least one query")
	case len(in.Queries) > c.MaxQueries:
		return nil, webError(CodeInvalidArgs, "queries must contain at most %d queries, got %d", c.MaxQueries, len(in.Queries))
	}
	var out []string
	seen := map[string]bool{}
	for i, q := range in.Queries {
		if strings.TrimSpace(q) == "" {
			return nil, webError(CodeInvalidArgs, "queries[%d] is blank: each query must be a non-empty string", i)
		}
		if !seen[q] {
			seen[q] = true
			out = append(out, q)
		}
	}
	return out, nil
}

func (c *client) search(ctx context.Context, _ *tool.Call, in SearchInput) (SearchOutput, error) {
	queries, err := c.queries(in)
	if err != nil {
		return SearchOutput{}, err
	}
	if err := c.ready("web_search"); err != nil {
		return SearchOutput{}, err
	}
	// Every query runs concurrently; the first failure cancels the rest, and all settle
	// before the call returns.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]searchResponse, len(queries))
	errs := make([]error, len(queries))
	var wg sync.WaitGroup
	for i, q := range queries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.post(ctx, "web_search", SearchPath, searchRequest{Query: q, MaxResults: c.MaxResults}, &results[i])
			if errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil && !isAborted(err) {
			if len(queries) > 1 {
				return SearchOutput{}, webError(codeOf(err), "query %q: %s", queries[i], err.Error())
			}
			return SearchOutput{}, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return SearchOutput{}, err
		}
	}
	return merge(queries, results, c.MaxResults), nil
}

func isAborted(err error) bool { return codeOf(err) == CodeAborted }

func codeOf(err error) string {
	if info := tool.InfoOf(err); info != nil {
		return info.Code
	}
	return ""
}

// merge combines per-query results: sources by rank (every query's first, then every
// query's second, …) without duplicate URLs, up to limit.
func merge(queries []string, results []searchResponse, limit int) SearchOutput {
	out := SearchOutput{Sources: []Source{}}
	var answers []string
	depth := 0
	for i, r := range results {
		depth = max(depth, len(r.Results))
		out.Truncated = out.Truncated || r.Truncated
		if a := strings.TrimSpace(r.Answer); a != "" {
			if len(results) > 1 {
				a = "### " + queries[i] + "\n\n" + a
			}
			answers = append(answers, a)
		}
	}
	out.Answer = strings.Join(answers, "\n\n")
	seen := map[string]bool{}
	for rank := range depth {
		for _, r := range results {
			if rank >= len(r.Results) {
				continue
			}
			s := r.Results[rank]
			if s.URL == "" || seen[s.URL] {
				continue
			}
			seen[s.URL] = true
			if len(out.Sources) == limit {
				out.Truncated = true
				return out
			}
			out.Sources = append(out.Sources, Source{URL: s.URL, Title: s.Title, Snippet: s.Snippet, PublishedAt: s.PublishedAt})
		}
	}
	return out
}

// renderSearch is the text the model sees: the answer, the sources as a markdown list, and
// a reminder to cite.
func renderSearch(out SearchOutput) string {
	var parts []string
	if out.Answer != "" {
		parts = append(parts, out.Answer)
	}
	if len(out.Sources) > 0 {
		var b strings.Builder
		b.WriteString("Sources:")
		for _, s := range out.Sources {
			label := s.Title
			if label == "" {
				label = s.URL
			}
			fmt.Fprintf(&b, "\n- [%s](%s)", label, s.URL)
			if s.Snippet != "" {
				b.WriteString(" — " + s.Snippet)
			}
			if s.PublishedAt != "" {
				b.WriteString(" (" + s.PublishedAt + ")")
			}
		}
		parts = append(parts, b.String())
	} else if out.Answer == "" {
		parts = append(parts, "The search found nothing.")
	}
	if out.Truncated {
		parts = append(parts, fmt.Sprintf("(Only the first %d sources are listed; a narrower query finds more.)", len(out.Sources)))
	}
	parts = append(parts, "Cite the URLs you use as markdown links.")
	return strings.Join(parts, "\n\n")
}
