package mcp

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"
)

// Transport kinds of a server declaration.
const (
	// TransportStdio runs the server as a child process speaking newline-delimited JSON-RPC
	// on its standard input and output.
	TransportStdio = "stdio"
	// TransportStreamableHTTP talks to a server's streamable HTTP endpoint.
	TransportStreamableHTTP = "streamable-http"
)

// Defaults of a server declaration (docs/behaviour.md §13).
const (
	DefaultToolCallTimeout       = 60 * time.Second
	DefaultStartupTimeout        = 60 * time.Second
	DefaultReconnectInitialDelay = 500 * time.Millisecond
	DefaultReconnectMaxDelay     = 30 * time.Second
	DefaultReconnectMaxAttempts  = 10
)

// maxTimerMs is the largest delay a JavaScript timer accepts; the reference bounds every
// configured delay by it, and so does dsh.
const maxTimerMs = 2147483647

// Config is the `mcp` section of the configuration: the servers to mount, by name.
type Config struct {
	Servers map[string]ServerConfig `yaml:"servers,omitempty" json:"servers,omitempty"`
}

// ServerConfig declares one MCP server (config `mcp.servers.NAME`). A declaration with a
// Command is a stdio server; one with a URL is a streamable HTTP server. Numeric fields are
// pointers so that an explicit value (even an invalid 0) is told apart from an absent one.
type ServerConfig struct {
	// Transport optionally names the transport explicitly ("stdio" or "streamable-http"); it
	// must agree with Command / URL.
	Transport string `yaml:"transport,omitempty" json:"transport,omitempty"`

	// Command is the executable of a stdio server; Args are passed without a shell.
	Command string   `yaml:"command,omitempty" json:"command,omitempty"`
	Args    []string `yaml:"args,omitempty" json:"args,omitempty"`
	// Env is merged over the credential-scrubbed parent environment.
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// Cwd is the child's working directory; empty means the host's.
	Cwd string `yaml:"cwd,omitempty" json:"cwd,omitempty"`

	// URL is the streamable HTTP endpoint; Headers are sent with every request.
	URL     string            `yaml:"url,omitempty" json:"url,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`

	// ToolCallTimeoutMs bounds one tools/call (default 60000).
	ToolCallTimeoutMs *float64 `yaml:"toolCallTimeoutMs,omitempty" json:"toolCallTimeoutMs,omitempty"`
	// StartupTimeoutMs bounds the connection handshake and every tools/list request
	// (default 60000).
	StartupTimeoutMs *float64 `yaml:"startupTimeoutMs,omitempty" json:"startupTimeoutMs,omitempty"`
	// FailOnStartupError makes a failed first connection or tool sync fail the mount instead
	// of being logged and retried.
	FailOnStartupError bool `yaml:"failOnStartupError,omitempty" json:"failOnStartupError,omitempty"`
	// Reconnect is the automatic reconnect policy; nil uses the defaults.
	Reconnect *ReconnectConfig `yaml:"reconnect,omitempty" json:"reconnect,omitempty"`

	unknown []string // keys the YAML declaration had that are not server options
}

// ReconnectConfig is the automatic reconnect policy after a lost connection (docs/behaviour.md §13).
type ReconnectConfig struct {
	// Enabled turns reconnecting on (default true).
	Enabled *bool `yaml:"enabled,omitempty" json:"enabled,omitempty"`
	// InitialDelayMs is the first delay; it doubles per consecutive failed attempt
	// (default 500).
	InitialDelayMs *float64 `yaml:"initialDelayMs,omitempty" json:"initialDelayMs,omitempty"`
	// MaxDelayMs caps the delay; an uptime this long also resets the attempt budget
	// (default 30000).
	MaxDelayMs *float64 `yaml:"maxDelayMs,omitempty" json:"maxDelayMs,omitempty"`
	// MaxAttempts is the number of consecutive failed attempts per outage before giving up
	// (default 10).
	MaxAttempts *float64 `yaml:"maxAttempts,omitempty" json:"maxAttempts,omitempty"`

	unknown []string
}

var serverKeys = []string{"transport", "command", "args", "env", "cwd", "url", "headers",
	"toolCallTimeoutMs", "startupTimeoutMs", "failOnStartupError", "reconnect"}

var reconnectKeys = []string{"enabled", "initialDelayMs", "maxDelayMs", "maxAttempts"}

// UnmarshalYAML decodes a server declaration, remembering unknown keys so that Validate can
// reject them with the server's name in the message.
func (c *ServerConfig) UnmarshalYAML(n *yaml.Node) error {
	type plain ServerConfig
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*c = ServerConfig(p)
	c.unknown = unknownKeys(n, serverKeys)
	return nil
}

// UnmarshalYAML decodes a reconnect policy, remembering unknown keys for Validate.
func (r *ReconnectConfig) UnmarshalYAML(n *yaml.Node) error {
	type plain ReconnectConfig
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*r = ReconnectConfig(p)
	r.unknown = unknownKeys(n, reconnectKeys)
	return nil
}

func unknownKeys(n *yaml.Node, known []string) []string {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; !slices.Contains(known, k) {
			out = append(out, k)
		}
	}
	return out
}

var serverNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// ReconnectPolicy is a validated reconnect policy.
type ReconnectPolicy struct {
	Enabled      bool
	InitialDelay time.Duration
	MaxDelay     time.Duration
	MaxAttempts  int
}

// Delay returns the wait before reconnect attempt n (1-based):
// min(MaxDelay, InitialDelay·2^(n−1)).
func (p ReconnectPolicy) Delay(attempt int) time.Duration {
	d := p.InitialDelay
	for i := 1; i < attempt && d < p.MaxDelay; i++ {
		d *= 2
	}
	return min(d, p.MaxDelay)
}

// settings is a validated server declaration.
type settings struct {
	transport       string
	toolCallTimeout time.Duration
	startupTimeout  time.Duration
	reconnect       ReconnectPolicy
}

// Validate reports the first problem of the declaration of server name, with the messages
// of docs/behaviour.md §13 for the reconnect policy.
func (c *ServerConfig) Validate(name string) error {
	_, err := c.resolve(name)
	return err
}

func label(name string) string { return "mcp-client(" + name + ")" }

func (c *ServerConfig) resolve(name string) (settings, error) {
	var s settings
	if !serverNamePattern.MatchString(name) {
		return s, fmt.Errorf("mcp-client: serverName %q must match ^[A-Za-z0-9_-]{1,32}$", name)
	}
	l := label(name)
	if len(c.unknown) > 0 {
		return s, fmt.Errorf("%s: %s is not a server option (known: %v)", l, c.unknown[0], serverKeys)
	}
	switch {
	case c.Command != "" && c.URL != "":
		return s, fmt.Errorf("%s: declare either command (stdio) or url (streamable-http), not both", l)
	case c.Command != "":
		s.transport = TransportStdio
	case c.URL != "":
		s.transport = TransportStreamableHTTP
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return s, fmt.Errorf("%s: url %q must be an absolute http or https URL", l, c.URL)
		}
	default:
		return s, fmt.Errorf("%s: declare command (stdio) or url (streamable-http)", l)
	}
	if c.Transport != "" && c.Transport != s.transport {
		return s, fmt.Errorf("%s: transport %q does not match the declaration, which is %s", l, c.Transport, s.transport)
	}
	if s.transport == TransportStreamableHTTP && (len(c.Args) > 0 || len(c.Env) > 0 || c.Cwd != "") {
		return s, fmt.Errorf("%s: args, env and cwd belong to stdio servers; this one has a url", l)
	}
	if s.transport == TransportStdio && len(c.Headers) > 0 {
		return s, fmt.Errorf("%s: headers belong to streamable-http servers; this one has a command", l)
	}
	var err error
	if s.toolCallTimeout, err = millis(c.ToolCallTimeoutMs, DefaultToolCallTimeout, l+": toolCallTimeoutMs"); err != nil {
		return s, err
	}
	if s.startupTimeout, err = millis(c.StartupTimeoutMs, DefaultStartupTimeout, l+": startupTimeoutMs"); err != nil {
		return s, err
	}
	s.reconnect, err = c.Reconnect.resolve(l + ": reconnect")
	return s, err
}

// millis validates an optional millisecond count.
func millis(v *float64, def time.Duration, path string) (time.Duration, error) {
	if v == nil {
		return def, nil
	}
	if math.IsNaN(*v) || math.IsInf(*v, 0) || *v <= 0 || *v > maxTimerMs {
		return 0, fmt.Errorf("%s must be a positive finite number no greater than %d", path, maxTimerMs)
	}
	return time.Duration(*v * float64(time.Millisecond)), nil
}

// resolve validates the policy (docs/behaviour.md §13), checking in the reference's order: unknown keys,
// initialDelayMs, maxDelayMs, their order, maxAttempts.
func (r *ReconnectConfig) resolve(path string) (ReconnectPolicy, error) {
	p := ReconnectPolicy{Enabled: true, InitialDelay: DefaultReconnectInitialDelay, MaxDelay: DefaultReconnectMaxDelay, MaxAttempts: DefaultReconnectMaxAttempts}
	if r == nil {
		return p, nil
	}
	if len(r.unknown) > 0 {
		return p, fmt.Errorf("%s.%s is not a reconnect option", path, r.unknown[0])
	}
	if r.Enabled != nil {
		p.Enabled = *r.Enabled
	}
	var err error
	if p.InitialDelay, err = millis(r.InitialDelayMs, DefaultReconnectInitialDelay, path+".initialDelayMs"); err != nil {
		return p, err
	}
	if p.MaxDelay, err = millis(r.MaxDelayMs, DefaultReconnectMaxDelay, path+".maxDelayMs"); err != nil {
		return p, err
	}
	if p.InitialDelay > p.MaxDelay {
		return p, fmt.Errorf("%s.initialDelayMs must be less than or equal to maxDelayMs", path)
	}
	if r.MaxAttempts != nil {
		a := *r.MaxAttempts
		if math.IsNaN(a) || math.IsInf(a, 0) || a < 1 || a != math.Trunc(a) || a > 1<<53-1 {
			return p, fmt.Errorf("%s.maxAttempts must be a positive integer", path)
		}
		p.MaxAttempts = int(a)
	}
	return p, nil
}
