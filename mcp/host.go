package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// DefaultProtocolVersion is the MCP protocol version the bridge asks servers for. It is the
// latest session-based version: the bridge's behaviour (one session per connection,
// list_changed notifications on that session, cancellation by notifications/cancelled) is
// specified against it, and the reference servers speak it.
const DefaultProtocolVersion = "2025-11-25"

// Options configures a Host. The zero value is ready to use.
type Options struct {
	// Logger receives connection, sync and reconnect messages; nil means slog.Default().
	Logger *slog.Logger
	// ClientInfo is the implementation announced to servers; nil means {Name: "dsh"}.
	ClientInfo *sdk.Implementation
	// Environ is the parent environment stdio servers inherit after credential scrubbing;
	// nil means os.Environ().
	Environ []string
	// ProtocolVersion is the version requested at initialization; empty means
	// DefaultProtocolVersion.
	ProtocolVersion string
	// StderrLimit bounds the retained tail of each stdio server's stderr, in bytes; zero
	// means 64 KiB.
	StderrLimit int
	// StderrLog, when set, also receives every stdio server's stderr, each line prefixed
	// with "[<server>] " — a log file, so that servers' chatter stays out of a user's
	// terminal. It must be safe for concurrent use (servers write at once); nil keeps only
	// the bounded tail.
	StderrLog io.Writer
	// MaxMessageBytes bounds one message from a stdio server; a larger response fails its
	// call and anything else larger is skipped. Zero means 16 MiB.
	MaxMessageBytes int
	// ShutdownGrace is how long closing a stdio server waits after closing its input, and
	// again after SIGTERM, before the next step; zero means 2 s.
	ShutdownGrace time.Duration
	// HTTPClient sends streamable HTTP requests; nil means http.DefaultClient's transport.
	HTTPClient *http.Client
	// Transport, when set, supplies the transport of every connection attempt instead of
	// the declaration's stdio command or URL (which must still be valid); for in-process
	// servers and tests. A nil transport falls back to the declaration.
	Transport func(name string, cfg ServerConfig) sdk.Transport
	// Images, when set, admits the images of tool results: an image block with base64
	// data of a supported type is stored there (a session's attachment store) and reaches
	// the model as an image. Nil leaves every image a one-line note.
	Images ImageStore
	// Now is the clock a connection's uptime is read from (an uptime of at least the
	// reconnect policy's maxDelayMs starts a fresh attempt budget); nil means time.Now.
	// Tests move it instead of waiting.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ClientInfo == nil {
		o.ClientInfo = &sdk.Implementation{Name: "dsh", Version: "dev"}
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.ProtocolVersion == "" {
		o.ProtocolVersion = DefaultProtocolVersion
	}
	if o.StderrLimit == 0 {
		o.StderrLimit = 64 << 10
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = 16 << 20
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = 2 * time.Second
	}
	return o
}

// Host mounts MCP servers into one registration scope and keeps their names unique: it is
// one "mcp-client" deployment. It is safe for concurrent use.
type Host struct {
	scope *tool.Scope
	opts  Options

	mu     sync.Mutex
	mounts map[string]*Mount
	closed bool
}

// NewHost returns a host that registers the tools of the servers it mounts through scope
// (reg.Global() for the global layer).
func NewHost(scope *tool.Scope, opts Options) *Host {
	return &Host{scope: scope, opts: opts.withDefaults(), mounts: map[string]*Mount{}}
}

// Install mounts every server of cfg into reg's global layer, concurrently, and returns the
// host; Host.Close undoes it. A server whose first connection fails is logged and retried in
// the background unless it declares failOnStartupError, in which case Install closes the
// whole host and returns that error (all such errors, joined).
func Install(ctx context.Context, reg *tool.Registry, cfg Config, opts Options) (*Host, error) {
	h := NewHost(reg.Global(), opts)
	if err := h.MountAll(ctx, cfg.Servers); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// MountAll mounts servers concurrently (see Mount) and returns the joined errors of the
// mounts that failed, in name order.
func (h *Host) MountAll(ctx context.Context, servers map[string]ServerConfig) error {
	names := slices.Sorted(maps.Keys(servers))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			_, errs[i] = h.Mount(ctx, name, servers[name])
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Mount connects server name and registers its tools as mcp__<name>__<tool> (docs/behaviour.md §13). It
// returns once the first connection attempt and tool sync have settled (or ctx is done). A
// failed first attempt is logged and retried by the reconnect policy, and Mount returns the
// mount anyway — unless the declaration sets failOnStartupError, in which case the mount is
// closed and the error returned. Mount validates the declaration first and refuses a name
// already mounted on this host.
func (h *Host) Mount(ctx context.Context, name string, cfg ServerConfig) (*Mount, error) {
	set, err := cfg.resolve(name)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, fmt.Errorf("%s: the MCP host is closed", label(name))
	}
	if _, dup := h.mounts[name]; dup {
		h.mu.Unlock()
		return nil, fmt.Errorf("mcp-client: serverName \"%s\" is already in use by another mcp-client instance — pick a unique serverName in cordis.yml", name)
	}
	m := newMount(h, name, cfg, set)
	h.mounts[name] = m
	h.mu.Unlock()
	if err := m.start(ctx); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

func (h *Host) forget(m *Mount) {
	h.mu.Lock()
	if h.mounts[m.name] == m {
		delete(h.mounts, m.name)
	}
	h.mu.Unlock()
}

// Mounts returns the live mounts in name order.
func (h *Host) Mounts() []*Mount {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Collect(maps.Values(h.mounts))
	slices.SortFunc(out, func(a, b *Mount) int { return strings.Compare(a.name, b.name) })
	return out
}

// Lookup returns the mount of server name, or nil.
func (h *Host) Lookup(name string) *Mount {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mounts[name]
}

// Annotations returns the annotations a mounted server declared for the tool registered as
// publicName, for `dsh mcp serve` to pass on. They are the server's claims, not facts.
func (h *Host) Annotations(publicName string) (*sdk.ToolAnnotations, bool) {
	for _, m := range h.Mounts() {
		for _, t := range m.Tools() {
			if t.Name == publicName {
				return t.Annotations, t.Annotations != nil
			}
		}
	}
	return nil, false
}

// ServerAnnotations annotates tools for a Server (ServerOptions.Annotations): a tool this
// host mounted carries the annotations its server declared, any other tool gets
// DefaultAnnotations.
func (h *Host) ServerAnnotations(def *tool.Definition) *sdk.ToolAnnotations {
	if a, ok := h.Annotations(def.Name); ok {
		return a
	}
	return DefaultAnnotations(def)
}

// Close closes every mount and refuses new ones. It is idempotent.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	ms := slices.Collect(maps.Values(h.mounts))
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() { m.Close() })
	}
	wg.Wait()
	return nil
}

// sensitiveEnv matches credential-shaped variable names, which stdio servers do not inherit.
var sensitiveEnv = regexp.MustCompile(`(?i)KEY|PASSWORD|SECRET|TOKEN`)

// DepthEnv is the one DSH_* variable a stdio server inherits: how many dsh processes
// started it as an MCP server, directly or through other servers. ChildEnv sets it to one
// more than the parent's own value, so a dsh that finds it set (see Depth) knows it is an
// MCP server of another dsh and can refuse to mount its configured servers — which might
// include dsh itself, and would then start dsh again without end.
const DepthEnv = "DSH_MCP_SERVE_DEPTH"

// Depth returns the nesting depth getenv reports in DepthEnv: 0 for a process no dsh started
// as an MCP server (the variable unset, or not a non-negative integer).
func Depth(getenv func(string) string) int {
	n, err := strconv.Atoi(getenv(DepthEnv))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// ChildEnv returns the environment of a stdio server: environ without credential-shaped
// names (KEY, PASSWORD, SECRET, TOKEN, any case) and without DSH_* names, then extra, which
// wins, then DepthEnv set to one more than environ's value (extra cannot change it).
// Credentials a server needs go through its declaration's env.
func ChildEnv(environ []string, extra map[string]string) []string {
	out := make([]string, 0, len(environ)+len(extra)+1)
	depth := 0
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if k == DepthEnv {
			depth = Depth(func(string) string { return v })
		}
		if sensitiveEnv.MatchString(k) || strings.HasPrefix(strings.ToUpper(k), "DSH_") {
			continue
		}
		if _, override := extra[k]; override {
			continue
		}
		out = append(out, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if k != DepthEnv {
			out = append(out, k+"="+extra[k])
		}
	}
	return append(out, DepthEnv+"="+strconv.Itoa(depth+1))
}

// ToolInfo describes one tool a mount registered.
type ToolInfo struct {
	Name         string               // the public name, mcp__<server>__<raw>
	RawName      string               // the server's name for it, sent on the wire
	Description  string               // the server's description
	TaskRequired bool                 // the server requires task-based execution, which fails every call
	Annotations  *sdk.ToolAnnotations // the server's hints, nil when it declared none
}

// annotationsOf decodes the untrusted annotations member of a listed tool.
func annotationsOf(v any) *sdk.ToolAnnotations {
	o, ok := v.(*jsonv.Object)
	if !ok {
		return nil
	}
	a := &sdk.ToolAnnotations{}
	if x, ok := o.Get("title"); ok {
		a.Title, _ = x.(string)
	}
	if x, ok := o.Get("readOnlyHint"); ok {
		a.ReadOnlyHint, _ = x.(bool)
	}
	if x, ok := o.Get("idempotentHint"); ok {
		a.IdempotentHint, _ = x.(bool)
	}
	if x, ok := o.Get("destructiveHint"); ok {
		if b, ok := x.(bool); ok {
			a.DestructiveHint = &b
		}
	}
	if x, ok := o.Get("openWorldHint"); ok {
		if b, ok := x.(bool); ok {
			a.OpenWorldHint = &b
		}
	}
	return a
}
