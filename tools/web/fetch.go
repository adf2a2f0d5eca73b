package web

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// FetchInput is the arguments of web_fetch.
type FetchInput struct {
	URL string `json:"url" jsonschema:"The http or https URL to fetch, e.g. a source from web_search."`
}

// FetchOutput is the canonical value of web_fetch: the page as Markdown.
type FetchOutput struct {
	// URL is the final URL, after redirects.
	URL string `json:"url"`
	// StatusCode is the HTTP status the page was served with; a non-2xx status is reported,
	// not an error.
	StatusCode int `json:"statusCode"`
	// Title is the page's title, when it has one.
	Title string `json:"title,omitempty"`
	// Content is the page as Markdown.
	Content string `json:"content"`
	// Truncated says the Fetch API cut the page.
	Truncated bool `json:"truncated"`
}

type fetchRequest struct {
	URL string `json:"url"`
}

type fetchResponse struct {
	URL        string `json:"url"`
	StatusCode int    `json:"status_code"`
	Title      string `json:"title"`
	Content    string `json:"content"`
	Truncated  bool   `json:"truncated"`
}

// fetchMeta is the presentation meta persisted with a web_fetch result.
type fetchMeta struct {
	Kind       string `json:"kind"`
	URL        string `json:"url"`
	StatusCode int    `json:"statusCode"`
	Truncated  bool   `json:"truncated"`
}

// truncatedNote ends a page the Fetch API cut.
const truncatedNote = "(The page was cut short by the Fetch API; fetch a more specific URL for the rest.)"

func newFetch(c *client) *tool.Definition {
	desc := "Fetch one http or https URL (for example a source from web_search) and return the page as Markdown. " +
		"Cite the URL as a markdown link when you use the page."
	return tool.Must(tool.New("web_fetch", desc, c.fetch,
		tool.ConcurrencySafe(),
		tool.WithTimeout(c.Timeout),
		tool.Render(func(_ FetchInput, out FetchOutput) ([]content.Block, error) {
			return content.Texts(renderFetch(out)), nil
		}),
		tool.Meta(func(_ FetchInput, out FetchOutput) (any, error) {
			return fetchMeta{Kind: "fetch", URL: out.URL, StatusCode: out.StatusCode, Truncated: out.Truncated}, nil
		}),
		tool.CallCard(func(in FetchInput) *card.Call {
			return &card.Call{Card: card.Generic, Title: "Fetch " + in.URL, Kind: card.KindFetch, RawInput: in.URL}
		}),
		tool.ResultCard(func(_ FetchInput, res card.ToolResult) *card.Result {
			var m fetchMeta
			if res.IsError || res.Meta == nil || jsonv.Decode(res.Meta, &m) != nil || m.Kind != "fetch" {
				return nil
			}
			// No title: the card shows the final URL, which the call card already announced.
			return &card.Result{Card: card.Web, WebKind: "fetch", URL: m.URL, StatusCode: m.StatusCode, Truncated: m.Truncated}
		}),
	))
}

// checkURL refuses what is not an absolute http or https URL.
func checkURL(raw string) error {
	if strings.TrimSpace(raw) == "" {
		return webError(CodeInvalidArgs, "url must be a non-empty string")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return webError(CodeInvalidArgs, "url %q is not an absolute http or https URL", raw)
	}
	return nil
}

func (c *client) fetch(ctx context.Context, _ *tool.Call, in FetchInput) (FetchOutput, error) {
	if err := checkURL(in.URL); err != nil {
		return FetchOutput{}, err
	}
	if err := c.ready("web_fetch"); err != nil {
		return FetchOutput{}, err
	}
	var r fetchResponse
	if err := c.post(ctx, "web_fetch", FetchPath, fetchRequest{URL: in.URL}, &r); err != nil {
		return FetchOutput{}, err
	}
	if r.StatusCode < 100 || r.StatusCode > 599 {
		return FetchOutput{}, webError(CodeMalformed, "web_fetch: the Fetch API answered status_code %d for %s", r.StatusCode, in.URL)
	}
	final := r.URL
	if final == "" {
		final = in.URL
	}
	return FetchOutput{URL: final, StatusCode: r.StatusCode, Title: r.Title, Content: r.Content, Truncated: r.Truncated}, nil
}

// renderFetch is the text the model sees: a header line with the final URL and status, the
// title, and the page.
func renderFetch(out FetchOutput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Fetched %s (HTTP %d)\n\n", out.URL, out.StatusCode)
	if out.Title != "" && !strings.HasPrefix(strings.TrimSpace(out.Content), "# ") {
		b.WriteString("# " + out.Title + "\n\n")
	}
	b.WriteString(out.Content)
	if out.Truncated {
		b.WriteString("\n\n" + truncatedNote)
	}
	return b.String()
}
