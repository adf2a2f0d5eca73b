// Package openai is an llm.Model for OpenAI-compatible chat-completions endpoints. DeepSeek
// is the default (https://api.deepseek.com, model deepseek-flash, key from
// DEEPSEEK_API_KEY); any other server that speaks the protocol — OpenAI, a local llama.cpp,
// vLLM or Ollama server — works by setting Config.BaseURL, Config.Model and the key.
//
// DeepSeek-only request fields — "thinking" and "reasoning_effort" — are sent to DeepSeek
// (Config.Provider "deepseek", the default for api.deepseek.com) and to any other server
// only when Config.Thinking or Config.ReasoningEffort is set, so other servers never see a
// field they may reject. A DeepSeek model name that DeepSeek has retired (RetiredModels) is
// refused by New before any request, naming its replacement.
//
// Replies are always streamed. Tool calls are assembled from their deltas by index (several
// per reply, arguments split across any number of deltas, the id only in the first one).
// DeepSeek's reasoning_content is kept as a reasoning block and sent back on later requests,
// which DeepSeek's thinking mode requires for turns that called tools.
//
// Requests that fail before anything was streamed — HTTP 429 and 5xx, connection failures,
// a stream that closes before its first event, an empty reply — are retried with
// exponential backoff and jitter, honouring Retry-After; nothing is retried once an event
// has reached the caller. Failures are *llm.Error values with a stable Code and a message
// that says what to do: a missing or rejected key, an unknown model, a timeout, a server
// that drops the stream.
//
// The wire types come from github.com/sashabaranov/go-openai. The HTTP exchange and the
// event-stream decoding are this package's own, because that client cannot send what
// DeepSeek requires (an explicit empty "content" on tool-call-only or reasoning-only
// assistant turns and on empty tool results, a temperature of 0), reports a dropped
// stream exactly like a finished one, and hides the Retry-After header of failed requests.
package openai

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/dsh-go/dsh/llm"
)

// Defaults of Config.
const (
	DefaultBaseURL        = "https://api.deepseek.com"
	DefaultModel          = "deepseek-flash"
	DefaultAPIKeyEnv      = "DEEPSEEK_API_KEY"
	DefaultMaxRetries     = 4
	DefaultRetryBaseDelay = 500 * time.Millisecond
	DefaultRetryMaxDelay  = 60 * time.Second
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultUserAgent      = "dsh (+https://github.com/dsh-go/dsh)"
)

// ProviderDeepSeek is the Config.Provider of DeepSeek's API; it enables the DeepSeek-only
// request fields and the retired-model check.
const ProviderDeepSeek = "deepseek"

// Thinking modes (Config.Thinking) and reasoning efforts (Config.ReasoningEffort), as
// DeepSeek's API names them.
const (
	ThinkingEnabled  = "enabled"
	ThinkingDisabled = "disabled"
	EffortLow        = "low"
	EffortHigh       = "high"
	EffortMax        = "max"
)

// RetiredModels maps the DeepSeek model names DeepSeek retired on 2026-07-24 (requests
// naming them get HTTP 400 "Model Not Exist") to the model that replaces them.
var RetiredModels = map[string]string{
	"deepseek-chat":     "deepseek-flash",
	"deepseek-reasoner": "deepseek-flash",
}

// RetiredModelError returns the error for a request naming a retired DeepSeek model, or nil
// when model is not retired.
func RetiredModelError(model string) *llm.Error {
	repl, ok := RetiredModels[model]
	if !ok {
		return nil
	}
	return &llm.Error{Code: llm.CodeUnknownModel, Message: fmt.Sprintf(
		"model %q was retired by DeepSeek on 2026-07-24 and no longer answers; use %q instead (--model %s, or model: %s in the configuration; thinking is on by default, --thinking disabled turns it off)",
		model, repl, repl, repl)}
}

// Config configures a Model. The zero value talks to DeepSeek's deepseek-flash, but needs
// an APIKey (see ConfigFromEnv).
type Config struct {
	// BaseURL is the API root; requests go to BaseURL + "/chat/completions". Default
	// DefaultBaseURL. Examples: "https://api.openai.com/v1", "http://localhost:11434/v1".
	BaseURL string
	// Model is the model identifier to request. Default DefaultModel.
	Model string
	// Thinking is DeepSeek's thinking mode, ThinkingEnabled or ThinkingDisabled, sent as
	// {"thinking":{"type":…}} with every request. "" sends ThinkingEnabled to DeepSeek (its
	// default) and nothing to other servers.
	Thinking string
	// ReasoningEffort is DeepSeek's reasoning_effort (EffortLow, EffortHigh or EffortMax),
	// sent with every request when set; "" leaves it to the server.
	ReasoningEffort string
	// APIKey is sent as a bearer token. It is required for DeepSeek's API; other servers
	// (a local one) may need none, and then no Authorization header is sent.
	APIKey string
	// APIKeyEnv names the environment variable the key came from, so messages about a
	// missing or rejected key can say which one to fix. ConfigFromEnv sets it.
	APIKeyEnv string
	// Provider labels the endpoint for logs and UIs. Default ProviderDeepSeek for DeepSeek's
	// API, "openai-compatible" otherwise. ProviderDeepSeek also turns on the DeepSeek-only
	// request fields and the retired-model check, e.g. for a gateway in front of DeepSeek.
	Provider string
	// HTTPClient sends the requests. Default http.DefaultClient. Its Timeout, if any,
	// bounds whole replies, so prefer IdleTimeout for streaming.
	HTTPClient *http.Client
	// MaxRetries is how many times a failed request is retried. 0 means
	// DefaultMaxRetries; a negative value disables retries.
	MaxRetries int
	// RetryBaseDelay is the first backoff delay, doubled for each further retry (with
	// jitter). 0 means DefaultRetryBaseDelay.
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps the backoff delay. A server that asks (Retry-After) to wait longer
	// than this is not retried. 0 means DefaultRetryMaxDelay.
	RetryMaxDelay time.Duration
	// IdleTimeout bounds how long the server may send nothing — before the response
	// headers or between stream reads — before the request is abandoned. 0 means
	// DefaultIdleTimeout; a negative value disables the watchdog.
	IdleTimeout time.Duration
	// UserAgent is sent as the User-Agent header. Default DefaultUserAgent.
	UserAgent string
	// Header holds extra headers sent with every request (e.g. for a gateway).
	Header http.Header
	// OmitReasoning stops reasoning blocks from being sent back as reasoning_content, for
	// servers that reject the field. DeepSeek needs it for thinking mode with tools.
	OmitReasoning bool
	// ImageInput says whether the model accepts images: ImageInputAuto (the default) means
	// yes for any endpoint but DeepSeek's API, and there only for the models that take image
	// input (deepseek-flash and its older id deepseek-v4-flash; deepseek-v4-pro takes text
	// only). With image input, the image blocks of a request whose Attachments can read
	// them are sent as image_url parts with data URLs; without it, as text notes.
	ImageInput ImageInput
	// MaxRequestImages and MaxRequestImageBytes bound the images one request carries: the
	// newest images of the conversation are sent up to these (DefaultMaxRequestImages and
	// DefaultMaxRequestImageBytes when zero), older ones are replaced by a note.
	MaxRequestImages     int
	MaxRequestImageBytes int64
}

// Defaults of the request image budget.
const (
	DefaultMaxRequestImages     = 20
	DefaultMaxRequestImageBytes = 32 << 20
)

// ImageInput says whether a model accepts image input.
type ImageInput string

// ImageInput values.
const (
	ImageInputAuto ImageInput = ""
	ImageInputOn   ImageInput = "on"
	ImageInputOff  ImageInput = "off"
)

// AcceptsImages reports whether the model is sent images (see Config.ImageInput).
func (m *Model) AcceptsImages() bool {
	return m.images
}

// ConfigFromEnv returns a Config whose APIKey is read from the environment variable named
// apiKeyEnv (DefaultAPIKeyEnv when empty). A variable that is unset or empty is an
// *llm.Error with Code llm.CodeMissingAPIKey.
func ConfigFromEnv(apiKeyEnv string) (Config, error) {
	if apiKeyEnv == "" {
		apiKeyEnv = DefaultAPIKeyEnv
	}
	key := strings.TrimSpace(os.Getenv(apiKeyEnv))
	if key == "" {
		return Config{APIKeyEnv: apiKeyEnv}, missingKey(apiKeyEnv)
	}
	return Config{APIKey: key, APIKeyEnv: apiKeyEnv}, nil
}

func missingKey(env string) error {
	return &llm.Error{Code: llm.CodeMissingAPIKey, Message: fmt.Sprintf(
		"%s is not set (export it, or pass --api-key-env NAME for another variable)", env)}
}

var _ llm.Model = (*Model)(nil)

// Model is an llm.Model backed by an OpenAI-compatible chat-completions endpoint. It is
// safe for concurrent use.
type Model struct {
	cfg     Config
	baseURL string // without a trailing slash
	url     string // the chat-completions endpoint
	client  *http.Client
	images  bool // the model is sent images (Config.ImageInput resolved)

	// sleep waits between retries; tests replace it to observe delays without waiting.
	sleep func(done <-chan struct{}, d time.Duration) bool
}

// New returns a Model for cfg after applying the defaults. It fails when BaseURL is not an
// absolute http or https URL, when Thinking or ReasoningEffort has an unknown value, when cfg
// targets DeepSeek's API without an APIKey, and (an *llm.Error with Code
// llm.CodeUnknownModel) when it names a model DeepSeek has retired.
func New(cfg Config) (*Model, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.RetryBaseDelay <= 0 {
		cfg.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if cfg.RetryMaxDelay <= 0 {
		cfg.RetryMaxDelay = DefaultRetryMaxDelay
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxRequestImages <= 0 {
		cfg.MaxRequestImages = DefaultMaxRequestImages
	}
	if cfg.MaxRequestImageBytes <= 0 {
		cfg.MaxRequestImageBytes = DefaultMaxRequestImageBytes
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	cfg.APIKey = strings.TrimSpace(cfg.APIKey)

	base := strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	base = strings.TrimSuffix(base, "/chat/completions")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q must be an absolute http or https URL, e.g. %s", cfg.BaseURL, DefaultBaseURL)
	}
	isDeepSeek := strings.EqualFold(u.Hostname(), "api.deepseek.com")
	if cfg.Provider == "" {
		cfg.Provider = "openai-compatible"
		if isDeepSeek {
			cfg.Provider = ProviderDeepSeek
		}
	}
	switch cfg.Thinking {
	case "", ThinkingEnabled, ThinkingDisabled:
	default:
		return nil, fmt.Errorf("openai: thinking must be %q or %q, got %q", ThinkingEnabled, ThinkingDisabled, cfg.Thinking)
	}
	switch cfg.ReasoningEffort {
	case "", EffortLow, EffortHigh, EffortMax:
	default:
		return nil, fmt.Errorf("openai: reasoning effort must be %q, %q or %q, got %q", EffortLow, EffortHigh, EffortMax, cfg.ReasoningEffort)
	}
	if cfg.Provider == ProviderDeepSeek {
		if e := RetiredModelError(cfg.Model); e != nil {
			return nil, e
		}
		if cfg.Thinking == "" {
			cfg.Thinking = ThinkingEnabled
		}
	}
	if isDeepSeek && cfg.APIKey == "" {
		env := cfg.APIKeyEnv
		if env == "" {
			env = DefaultAPIKeyEnv
		}
		return nil, missingKey(env)
	}
	client := cfg.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	switch cfg.ImageInput {
	case ImageInputAuto, ImageInputOn, ImageInputOff:
	default:
		return nil, fmt.Errorf("openai: image input %q must be %q, %q or empty (auto)", cfg.ImageInput, ImageInputOn, ImageInputOff)
	}
	images := cfg.ImageInput == ImageInputOn || cfg.ImageInput == ImageInputAuto && (!isDeepSeek || deepSeekSeesImages(cfg.Model))
	return &Model{cfg: cfg, baseURL: base, url: base + "/chat/completions", client: client, sleep: sleep, images: images}, nil
}

// Name returns the model identifier requests are sent with.
func (m *Model) Name() string { return m.cfg.Model }

// Provider returns the endpoint's label (Config.Provider).
func (m *Model) Provider() string { return m.cfg.Provider }

// BaseURL returns the API root requests go to, without a trailing slash.
func (m *Model) BaseURL() string { return m.baseURL }

// Thinking returns the thinking mode sent with every request ("" when none is sent).
func (m *Model) Thinking() string { return m.cfg.Thinking }

// ReasoningEffort returns the reasoning effort sent with every request ("" when none is).
func (m *Model) ReasoningEffort() string { return m.cfg.ReasoningEffort }

// sleep waits for d unless done closes first, and reports whether the full delay passed.
func sleep(done <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// deepSeekSeesImages reports whether a model of DeepSeek's API takes image input: as of
// 2026-12-01 DeepSeek-V4.1-Flash does, under its name deepseek-flash and its older id
// deepseek-v4-flash.
func deepSeekSeesImages(model string) bool {
	switch model {
	case "deepseek-flash", "deepseek-v4-flash":
		return true
	}
	return false
}
