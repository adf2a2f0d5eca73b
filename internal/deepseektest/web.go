package deepseektest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Endpoint paths of the Search and Fetch APIs, relative to the API root.
const (
	SearchPath = "/v1/tools/search"
	FetchPath  = "/v1/tools/fetch"
)

// SearchRequest is the body of a Search API request.
type SearchRequest struct {
	// Query is the search query; it must not be blank.
	Query string `json:"query"`
	// MaxResults bounds the results (1–20); 0 means 8.
	MaxResults int `json:"max_results,omitempty"`
}

// SearchResult is one result of a search.
type SearchResult struct {
	URL         string `json:"url"`
	Title       string `json:"title,omitempty"`
	Snippet     string `json:"snippet,omitempty"`
	PublishedAt string `json:"published_at,omitempty"`
}

// SearchResponse is the body of a successful Search API response.
type SearchResponse struct {
	// Answer is an optional short answer composed from the results.
	Answer string `json:"answer,omitempty"`
	// Results are the sources, best first.
	Results []SearchResult `json:"results"`
	// Truncated says more results matched than MaxResults allowed.
	Truncated bool `json:"truncated"`
}

// FetchRequest is the body of a Fetch API request.
type FetchRequest struct {
	// URL is the absolute http or https URL to fetch.
	URL string `json:"url"`
}

// FetchResponse is the body of a successful Fetch API response: the page as Markdown.
type FetchResponse struct {
	// URL is the final URL after redirects.
	URL string `json:"url"`
	// StatusCode is the HTTP status the page was served with.
	StatusCode int `json:"status_code"`
	// Title is the page's title, when it has one.
	Title string `json:"title,omitempty"`
	// Content is the page converted to Markdown.
	Content string `json:"content"`
	// Truncated says the page was longer than the API returns.
	Truncated bool `json:"truncated"`
}

// Page is a page the Fetch API serves.
type Page struct {
	// StatusCode is the page's HTTP status; 0 means 200.
	StatusCode int
	// Title and Markdown are the page's title and content.
	Title, Markdown string
	// FinalURL is where a redirect ends; "" means the requested URL.
	FinalURL string
}

// WebRequest is one recorded Search or Fetch API request.
type WebRequest struct {
	// Path is SearchPath or FetchPath.
	Path string
	// Header is the request's HTTP header.
	Header http.Header
	// Body is the raw request body.
	Body []byte
	// Status is the HTTP status the server answered.
	Status int
}

// AddPage makes the Fetch API serve p for url.
func (s *Server) AddPage(url string, p Page) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[url] = p
}

// SetSearch makes the Search API answer query with r (before MaxResults applies). A query
// with nothing set gets three generated results naming the query.
func (s *Server) SetSearch(query string, r SearchResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results[query] = r
}

// FailWeb makes the next requests to path (SearchPath or FetchPath) fail with the statuses
// of replies, in order, before the endpoint answers normally again.
func (s *Server) FailWeb(path string, replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webFail[path] = append(s.webFail[path], replies...)
}

// WebRequests returns the Search and Fetch API requests received so far, in order.
func (s *Server) WebRequests() []WebRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.web)
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	s.serveWeb(w, r, SearchPath, s.opts.SearchQPS, func(body []byte) (any, int, string) {
		var req SearchRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, http.StatusBadRequest, "Failed to deserialize the JSON body: " + err.Error()
		}
		if strings.TrimSpace(req.Query) == "" {
			return nil, http.StatusBadRequest, "query must not be empty"
		}
		if req.MaxResults < 0 || req.MaxResults > 20 {
			return nil, http.StatusBadRequest, fmt.Sprintf("max_results must be between 1 and 20, got %d", req.MaxResults)
		}
		n := req.MaxResults
		if n == 0 {
			n = 8
		}
		s.mu.Lock()
		res, ok := s.results[req.Query]
		s.mu.Unlock()
		if !ok {
			slug := url.PathEscape(strings.ReplaceAll(strings.ToLower(req.Query), " ", "-"))
			res = SearchResponse{Results: []SearchResult{
				{URL: "https://example.com/" + slug, Title: "About " + req.Query, Snippet: "An overview of " + req.Query + ".", PublishedAt: "2026-11-30"},
				{URL: "https://docs.example.org/" + slug, Title: req.Query + " documentation", Snippet: "Reference for " + req.Query + "."},
				{URL: "https://blog.example.net/" + slug},
			}}
		}
		res.Results = slices.Clone(res.Results)
		if len(res.Results) > n {
			res.Results, res.Truncated = res.Results[:n], true
		}
		return res, http.StatusOK, ""
	})
}

func (s *Server) fetch(w http.ResponseWriter, r *http.Request) {
	s.serveWeb(w, r, FetchPath, s.opts.FetchQPS, func(body []byte) (any, int, string) {
		var req FetchRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, http.StatusBadRequest, "Failed to deserialize the JSON body: " + err.Error()
		}
		u, err := url.Parse(req.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, http.StatusBadRequest, fmt.Sprintf("url must be an absolute http or https URL, got %q", req.URL)
		}
		s.mu.Lock()
		p, ok := s.pages[req.URL]
		s.mu.Unlock()
		if !ok {
			return FetchResponse{URL: req.URL, StatusCode: http.StatusNotFound, Content: "# Not Found\n\nThe page does not exist."}, http.StatusOK, ""
		}
		out := FetchResponse{URL: req.URL, StatusCode: p.StatusCode, Title: p.Title, Content: p.Markdown}
		if p.FinalURL != "" {
			out.URL = p.FinalURL
		}
		if out.StatusCode == 0 {
			out.StatusCode = http.StatusOK
		}
		return out, http.StatusOK, ""
	})
}

// serveWeb checks the key, the scripted failures and the per-second limit, then answers
// with handle's value or error. The request is recorded before the answer is written.
func (s *Server) serveWeb(w http.ResponseWriter, r *http.Request, path string, qps int, handle func(body []byte) (any, int, string)) {
	body, _ := io.ReadAll(r.Body)
	rec := WebRequest{Path: path, Header: r.Header.Clone(), Body: body}
	var respond func(http.ResponseWriter)
	rec.Status, respond = s.decideWeb(r, path, qps, body, handle)
	s.mu.Lock()
	s.web = append(s.web, rec)
	s.mu.Unlock()
	respond(w)
}

func (s *Server) decideWeb(r *http.Request, path string, qps int, body []byte, handle func(body []byte) (any, int, string)) (int, func(http.ResponseWriter)) {
	if !s.authorized(r) {
		return errorReply(http.StatusUnauthorized, "Authentication Fails, Your api key is invalid", "authentication_error")
	}
	s.mu.Lock()
	if f := s.webFail[path]; len(f) > 0 {
		s.webFail[path] = f[1:]
		s.mu.Unlock()
		return failReply(f[0])
	}
	sec := s.opts.Now().Unix()
	c := s.window[path]
	if c.second != sec {
		c = windowCount{second: sec}
	}
	c.n++
	s.window[path] = c
	over := c.n > qps
	s.mu.Unlock()
	if over {
		return errorReply(http.StatusTooManyRequests,
			fmt.Sprintf("Rate Limit Reached: at most %d requests per second to %s", qps, path), "rate_limit_error", "Retry-After", "1")
	}
	v, status, msg := handle(body)
	if status != http.StatusOK {
		return errorReply(status, msg, errorType(status))
	}
	b, _ := json.Marshal(v)
	return http.StatusOK, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(b)
	}
}
