// Package web provides the model-facing web tools, web_search and web_fetch, on DeepSeek's
// Search and Fetch APIs (POST <base>/v1/tools/search and POST <base>/v1/tools/fetch, with
// the same base URL and API key as the chat API).
//
// web_search takes 1–MaxQueries queries, runs them concurrently (a failed one cancels the
// others, and every started request settles before the call returns), and merges their
// sources by rank, without duplicate URLs, up to MaxResults. web_fetch takes one http or
// https URL and returns the page as Markdown. Both are concurrency-safe, run through the
// whole pipeline like every tool (permission rules such as web_fetch(https://docs.example.com/*),
// approval, timeouts, spill for long pages, the log) and present "web" cards.
//
// An HTTP 429 (the APIs' per-second request limits), an HTTP 5xx or a failed connection is
// retried with exponential backoff, honouring Retry-After, a bounded number of times; the
// wait ends early when the call is cancelled. A missing endpoint or API key is a clear tool
// error at call time, so the tools' schemas stay stable while the configuration is fixed.
package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dsh-go/dsh/tool"
)

// Defaults of Config.
const (
	DefaultMaxQueries     = 4
	DefaultMaxResults     = 8
	DefaultMaxRetries     = 4
	DefaultRetryBaseDelay = time.Second
	DefaultRetryMaxDelay  = 30 * time.Second
	DefaultTimeout        = 60 * time.Second
	// DefaultAPIKeyEnv is the variable named in messages about a missing key.
	DefaultAPIKeyEnv = "DEEPSEEK_API_KEY"
)

// API paths, relative to Config.BaseURL.
const (
	SearchPath = "/v1/tools/search"
	FetchPath  = "/v1/tools/fetch"
)

// Error codes of web failures (error name "WebError").
const (
	CodeNoEndpoint    = "WEB_NO_ENDPOINT"        // no API root is configured
	CodeMissingAPIKey = "WEB_MISSING_API_KEY"    // no API key is configured
	CodeInvalidArgs   = "WEB_INVALID_ARGS"       // a blank query, too many queries, a URL that is not http(s)
	CodeAuth          = "WEB_AUTH"               // the API rejected the key (HTTP 401/403)
	CodeRateLimit     = "WEB_RATE_LIMIT"         // HTTP 429 after every retry
	CodeServer        = "WEB_SERVER"             // HTTP 5xx after every retry
	CodeRejected      = "WEB_REJECTED"           // another HTTP error status
	CodeTransport     = "WEB_TRANSPORT"          // the API could not be reached
	CodeMalformed     = "WEB_MALFORMED_RESPONSE" // the API answered something that is not a result
	CodeAborted       = "WEB_ABORTED"            // the call was cancelled or timed out
)

// Config configures the web tools.
type Config struct {
	// BaseURL is the API root, e.g. "https://api.deepseek.com"; a trailing "/v1" is
	// ignored. Empty makes every call fail with WEB_NO_ENDPOINT.
	BaseURL string
	// APIKey is sent as a bearer token. Empty makes every call fail with
	// WEB_MISSING_API_KEY.
	APIKey string
	// APIKeyEnv names the variable the key comes from, for messages (default
	// DEEPSEEK_API_KEY).
	APIKeyEnv string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// MaxQueries bounds the queries of one web_search call (default 4).
	MaxQueries int
	// MaxResults bounds the sources one web_search call returns (default 8).
	MaxResults int
	// MaxRetries is how many times a request failing with 429, 5xx or a connection error is
	// retried (default 4; negative: never).
	MaxRetries int
	// RetryBaseDelay is the first backoff delay, doubled for each retry up to
	// RetryMaxDelay (defaults 1s and 30s). A Retry-After longer than RetryMaxDelay is not
	// waited for.
	RetryBaseDelay, RetryMaxDelay time.Duration
	// Timeout is the cooperative deadline declared for the timeout policy (default 60s).
	Timeout time.Duration
	// Sleep waits d or until ctx ends, returning ctx's error then; nil means a timer. Tests
	// pass a fake that returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
}

// client is a validated Config with its defaults applied.
type client struct {
	Config
	base string // without a trailing slash or /v1
}

func (c Config) resolve() (*client, error) {
	base := strings.TrimRight(strings.TrimSpace(c.BaseURL), "/")
	base = strings.TrimSuffix(base, "/v1")
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("web: base URL %q must be an absolute http or https URL, e.g. https://api.deepseek.com", c.BaseURL)
		}
	}
	if c.MaxQueries < 0 || c.MaxResults < 0 || c.RetryBaseDelay < 0 || c.RetryMaxDelay < 0 || c.Timeout < 0 {
		return nil, fmt.Errorf("web: MaxQueries, MaxResults, RetryBaseDelay, RetryMaxDelay and Timeout must not be negative")
	}
	if c.MaxQueries == 0 {
		c.MaxQueries = DefaultMaxQueries
	}
	if c.MaxResults == 0 {
		c.MaxResults = DefaultMaxResults
	}
	if c.MaxResults > 20 {
		return nil, fmt.Errorf("web: MaxResults must be at most 20 (the Search API's limit), got %d", c.MaxResults)
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.RetryBaseDelay == 0 {
		c.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if c.RetryMaxDelay == 0 {
		c.RetryMaxDelay = DefaultRetryMaxDelay
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.APIKeyEnv == "" {
		c.APIKeyEnv = DefaultAPIKeyEnv
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.Sleep == nil {
		c.Sleep = sleep
	}
	c.APIKey = strings.TrimSpace(c.APIKey)
	return &client{Config: c, base: base}, nil
}

// sleep waits d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Install registers web_search and web_fetch in reg's global layer. undo unregisters both.
func Install(reg *tool.Registry, cfg Config) (undo func(), err error) {
	c, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	var undos []func()
	for _, def := range []*tool.Definition{newSearch(c), newFetch(c)} {
		u, err := reg.Register(def)
		if err != nil {
			for _, u := range undos {
				u()
			}
			return nil, err
		}
		undos = append(undos, u)
	}
	return func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}, nil
}

// Search returns the web_search tool definition for cfg.
func Search(cfg Config) (*tool.Definition, error) {
	c, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	return newSearch(c), nil
}

// Fetch returns the web_fetch tool definition for cfg.
func Fetch(cfg Config) (*tool.Definition, error) {
	c, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	return newFetch(c), nil
}

// webError is a coded WebError.
func webError(code, format string, args ...any) *tool.Error {
	return &tool.Error{Name: "WebError", Code: code, Message: fmt.Sprintf(format, args...)}
}

// ready reports a missing endpoint or key before any request.
func (c *client) ready(toolName string) error {
	if c.base == "" {
		return webError(CodeNoEndpoint, "%s has no API endpoint: the model server is not DeepSeek and web.baseUrl is not set (set web.baseUrl to a server with DeepSeek's Search and Fetch APIs)", toolName)
	}
	if c.APIKey == "" {
		return webError(CodeMissingAPIKey, "%s needs an API key for %s: %s is not set (export it, or set apiKeyEnv to the variable holding the key)", toolName, c.base, c.APIKeyEnv)
	}
	return nil
}

// aborted is the error of a call cut short by cancellation or its deadline.
func aborted(ctx context.Context, toolName string) error {
	why := "cancelled"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why = "stopped by its deadline"
	}
	return webError(CodeAborted, "%s was %s before the API answered", toolName, why)
}
