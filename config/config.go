// Package config loads dsh's layered configuration and remembers where each value came
// from, so `dsh config` can show it.
//
// # Layers
//
// Values are looked up in five layers; a later layer overrides an earlier one key by key:
//
//	defaults
//	<home>/config.yaml          the user's file; home is $DSH_HOME, else ~/.dsh
//	<dir>/.dsh/config.yaml      the project's file; dir is the working directory
//	environment                 DSH_* variables (see Keys), and the API key variable
//	flags                       Settings the command line passes to Load
//
// A scalar or a list is replaced as a whole by a later layer, with three exceptions. The
// permission lists (permissions.allow, permissions.ask, permissions.deny) accumulate: each
// layer's entries are appended after those of the layers before it (an entry already
// present is not repeated), so no layer removes or reorders what an earlier one set, and
// `dsh config` shows the source of every entry. The MCP servers are merged by name, each
// server's declaration replaced as a whole. A key set to null in a file (`model:` with no
// value) is not set by that file. Missing files are skipped.
//
// # What a project file may set
//
// The project's file comes with whatever repository was cloned, so it may only tighten
// what the user, the environment and the flags set; setting a key that would loosen it is
// an error naming the file, the line and the reason:
//
//   - permissions.deny and permissions.ask: entries are added after the user's, never
//     removing or reordering them (an empty list adds nothing);
//   - permissions.allow is refused: allowing is the user's decision;
//   - maxSteps, maxParallelToolCalls, limits.maxArgBytes, shell.maxProcesses,
//     shell.maxMemoryMiB and the Code Mode budgets (codeMode.*) may be lowered, not raised above the value of the layers before (the user's file, else the
//     default);
//   - shell.sandbox may be made stricter (none < auto < bwrap), never weaker;
//   - baseUrl, apiKeyEnv and web.baseUrl (they would redirect the API key), mcp.servers (it starts
//     processes), permissions.openProtected (it would open .git or the policy itself to
//     writes), redact.enabled (it would show secrets to the model), sessions.root, sessions.store and
//     spill.dir (they choose where dsh writes) are refused;
//   - everything else tunes the agent and replaces the user's value as any later layer does:
//     model, thinking, reasoningEffort, provider, pricing, mode, codeRuntime, toolOrder, sessions.compression, the reminder.* keys and
//     spill.maxInlineBytes.
//
// # Files
//
// The files are YAML mappings with these keys:
//
//	model: deepseek-flash                # the model to request
//	baseUrl: https://api.deepseek.com    # an OpenAI-compatible endpoint
//	apiKeyEnv: DEEPSEEK_API_KEY          # the variable holding the API key (never the key itself)
//	provider: deepseek                   # deepseek | openai-compatible; default from baseUrl
//	thinking: enabled                    # DeepSeek's thinking mode: enabled | disabled
//	reasoningEffort: high                # DeepSeek's reasoning effort: low | high | max
//	web: {baseUrl: ""}                   # the Search and Fetch APIs' root; default: DeepSeek's
//	pricing: {models: {NAME: {cacheHit, cacheMiss, output}}, holidays: [2026-10-01], …}
//	mode: native                         # native | code | both
//	codeRuntime: quickjs                 # quickjs (TypeScript) | starlark (Python-flavoured)
//	maxParallelToolCalls: 10             # a positive integer
//	maxSteps: 50                         # a positive integer
//	toolOrder: [read, "<unlisted-tools>"]
//	sessions: {root: ~/.dsh/sessions, compression: zstd}   # zstd | none
//	permissions: {allow: [...], ask: [...], deny: [...]}   # see policy/rules
//	permissions: {openProtected: [.git/hooks]}   # protected paths the file tools may write
//	limits: {maxArgBytes: 1048576}       # the largest argument object of one tool call
//	reminder: {thresholds: [3, 5, 8], include: [], exclude: [], argumentsPreviewChars: 500}
//	spill: {maxInlineBytes: 50000, dir: ""}
//	redact: {enabled: true}              # secrets and control bytes kept from the model (user-only)
//	shell: {sandbox: auto, maxProcesses: 4096, maxMemoryMiB: 8192}   # auto | bwrap | none
//	codeMode: {computeMs: 60000, wallMs: 600000, maxOutputBytes: 67108864, heapMiB: 512}
//	mcp: {servers: {NAME: {command, args, env, cwd, url, headers, …}}}   # see package mcp
//
// Unknown keys are errors naming the file and line, as are values of the wrong type and
// values the policies reject (with the policies' own messages). "~/" at the start of a path
// is the user's home directory; a relative path in a file is relative to the directory
// holding the file, elsewhere to the working directory.
package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/llm/openai"
	"github.com/dsh-go/dsh/llm/pricing"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/policy/redact"
	"github.com/dsh-go/dsh/policy/reminder"
	"github.com/dsh-go/dsh/policy/rules"
	"github.com/dsh-go/dsh/policy/spill"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// Config is the effective configuration.
type Config struct {
	// Model is the model identifier to request (key "model").
	Model string
	// BaseURL is the OpenAI-compatible endpoint (key "baseUrl").
	BaseURL string
	// APIKeyEnv names the environment variable holding the API key (key "apiKeyEnv").
	APIKeyEnv string
	// APIKey is the value of that variable ("" when unset). It never comes from a file.
	APIKey string
	// Provider says what the model server is (key "provider"): openai.ProviderDeepSeek turns
	// on DeepSeek's request fields, the retired-model check and the web tools; "" derives it
	// from BaseURL (DeepSeek's host is "deepseek").
	Provider string
	// Thinking is DeepSeek's thinking mode, "enabled" or "disabled" (key "thinking"); ""
	// leaves DeepSeek's default (enabled) and sends nothing to other servers.
	Thinking string
	// ReasoningEffort is DeepSeek's reasoning effort, "low", "high" or "max" (key
	// "reasoningEffort"); "" leaves it to the server.
	ReasoningEffort string
	// Web configures the web tools (keys "web.*").
	Web Web
	// Pricing is the price table usage costs are estimated with (keys "pricing.*").
	Pricing pricing.Table
	// Mode is the tools' presentation mode (key "mode").
	Mode tool.Mode
	// CodeRuntime selects the Code Mode backend (key "codeRuntime"): CodeRuntimeQuickJS runs
	// TypeScript programs in a QuickJS worker process, CodeRuntimeStarlark runs
	// Python-flavoured programs in Starlark.
	CodeRuntime string
	// MaxParallelToolCalls bounds one step's concurrent dispatches (key
	// "maxParallelToolCalls").
	MaxParallelToolCalls int
	// MaxSteps bounds the steps of one turn (key "maxSteps").
	MaxSteps int
	// ToolOrder orders the tools offered to the model (key "toolOrder"; see agent.Config).
	ToolOrder []string
	// Sessions configures the session store (keys "sessions.*").
	Sessions Sessions
	// Permissions are the permission rules (keys "permissions.*").
	Permissions rules.Config
	// Reminder configures the repeat-tool reminder (keys "reminder.*").
	Reminder reminder.Config
	// Spill configures the spill policy (keys "spill.*").
	Spill spill.Config
	// Redact configures the redaction policy (key "redact.enabled").
	Redact redact.Config
	// Shell configures the shell tools (keys "shell.*").
	Shell Shell
	// OpenProtected lists protected paths (the workspace's .git and .dsh, the dsh home) the
	// file tools may write after all, relative to the workspace or absolute, "~/" expanded
	// (key "permissions.openProtected"; environment DSH_OPEN_PROTECTED, separated like
	// PATH). Only the user's file, the environment or a flag may set it.
	OpenProtected []string
	// Limits bounds tool calls (keys "limits.*").
	Limits Limits
	// Home is dsh's home directory: the user's config.yaml, by default the sessions, and a
	// protected path.
	Home string
	// MCP declares the MCP servers to mount (keys "mcp.servers.NAME").
	MCP mcp.Config
	// CodeMode holds the budgets of each run_code program (keys "codeMode.*").
	CodeMode CodeMode

	sources map[string]Source
	items   map[string][]Item // the permission lists' entries with their sources
}

// Sessions configures where sessions are stored.
type Sessions struct {
	// Root is the store's root directory (key "sessions.root").
	Root string
	// Compression is the store's encoding (key "sessions.compression").
	Compression session.Compression
	// Store is a postgres:// URL of the database that keeps the sessions instead of Root
	// (key "sessions.store"); empty for the file store under Root. User-only.
	Store string
}

// Web configures the web tools, web_search and web_fetch.
type Web struct {
	// BaseURL is the root of DeepSeek's Search and Fetch APIs (key "web.baseUrl"). "" means
	// the model server's, and only when that is DeepSeek; the web tools are not offered
	// otherwise.
	BaseURL string
}

// Shell configures the shell tools.
type Shell struct {
	// Sandbox is "auto" (the default: bubblewrap where it works, else none), "bwrap" or
	// "none" (key "shell.sandbox").
	Sandbox string
	// MaxProcesses bounds the processes of one command (key "shell.maxProcesses").
	MaxProcesses int
	// MaxMemoryMiB bounds the memory of one command, in MiB (key "shell.maxMemoryMiB").
	MaxMemoryMiB int
}

// Limits bounds tool calls.
type Limits struct {
	// MaxArgBytes is the largest argument object of one tool call, as compact JSON (key
	// "limits.maxArgBytes"; see tool.Config.MaxArgBytes).
	MaxArgBytes int
}

// CodeMode holds the budgets every run_code program runs under, whichever backend runs it.
type CodeMode struct {
	// ComputeMs is the busy time a program may use, in milliseconds (key
	// "codeMode.computeMs"); waiting for tool calls and timers is not busy.
	ComputeMs int
	// WallMs is the wall-clock ceiling of a program, in milliseconds (key "codeMode.wallMs").
	WallMs int
	// MaxOutputBytes caps the JSON bytes of what a program prints plus what it returns (key
	// "codeMode.maxOutputBytes").
	MaxOutputBytes int
	// HeapMiB is the heap a program may use, in MiB (key "codeMode.heapMiB").
	HeapMiB int
}

// Bounds of the Code Mode budgets: a value outside them is a configuration error.
const (
	// MaxCodeModeMs is the largest computeMs and wallMs (about 24.8 days).
	MaxCodeModeMs = 1<<31 - 1
	// MinCodeModeOutputBytes is the smallest maxOutputBytes: an empty log plus an empty string.
	MinCodeModeOutputBytes = 4
	// MaxCodeModeOutputBytes is the largest maxOutputBytes (2 GiB - 1).
	MaxCodeModeOutputBytes = 1<<31 - 1
	// MinCodeModeHeapMiB is the smallest heapMiB.
	MinCodeModeHeapMiB = 1
	// MaxCodeModeHeapMiB is the largest heapMiB (1 TiB).
	MaxCodeModeHeapMiB = 1 << 20
)

// Sandbox values.
const (
	SandboxAuto  = "auto"
	SandboxNone  = "none"
	SandboxBwrap = "bwrap"
)

// SourceKind says which layer a value came from.
type SourceKind int

// Source kinds, in layer order.
const (
	FromDefault SourceKind = iota
	FromFile
	FromEnv
	FromFlag
)

// Source is where a value came from.
type Source struct {
	Kind SourceKind
	// Name is the file path, the environment variable or the flag name.
	Name string
	// Line is the line in the file (FromFile only).
	Line int
	// Project is true when the file is the project's .dsh/config.yaml (FromFile only).
	Project bool
}

// Layer names the layer the value came from: "default", "user file", "project file",
// "env" or "flag".
func (s Source) Layer() string {
	switch s.Kind {
	case FromFile:
		if s.Project {
			return "project file"
		}
		return "user file"
	case FromEnv:
		return "env"
	case FromFlag:
		return "flag"
	}
	return "default"
}

// Item is one entry of a permission list with where it came from.
type Item struct {
	Value  string
	Source Source
}

// String renders the source as `dsh config` shows it: "default", "<file>:<line>",
// "env NAME" or "flag --name".
func (s Source) String() string {
	switch s.Kind {
	case FromFile:
		return s.Name + ":" + strconv.Itoa(s.Line)
	case FromEnv:
		return "env " + s.Name
	case FromFlag:
		return "flag " + s.Name
	}
	return "default"
}

// Setting is a value given on the command line.
type Setting struct {
	// Key is the configuration key, e.g. "maxSteps" or "permissions.allow".
	Key string
	// Value is the value of a scalar key, as text.
	Value string
	// Values is the value of a list key.
	Values []string
	// Flag names the flag in messages and sources, e.g. "--max-steps".
	Flag string
}

// Options says where Load looks.
type Options struct {
	// Home is dsh's home directory, holding the user's config.yaml and (by default) the
	// sessions. Empty means $DSH_HOME, else ~/.dsh.
	Home string
	// Dir is the project directory, holding .dsh/config.yaml. Empty means the working
	// directory.
	Dir string
	// UserHome is the directory "~" stands for. Empty means os.UserHomeDir.
	UserHome string
	// Getenv reads the environment. Nil means os.Getenv.
	Getenv func(string) string
	// Flags are the command line's settings, applied last in order.
	Flags []Setting
}

// valueKind is how a key's value is read.
type valueKind int

const (
	kindString valueKind = iota
	kindPath
	kindInt
	kindList
	kindPolicy   // decoded and validated by the policy package's own type
	kindPathList // a list of paths; "~/" expanded, relative paths kept as given
)

// field is one configuration key.
type field struct {
	key  string
	kind valueKind
	env  string // the DSH_* variable, or ""
}

// ProviderOpenAICompatible is the provider value of any server that is not DeepSeek's.
const ProviderOpenAICompatible = "openai-compatible"

// Code Mode backends (key "codeRuntime").
const (
	CodeRuntimeQuickJS  = "quickjs"  // TypeScript in a QuickJS worker process (the default)
	CodeRuntimeStarlark = "starlark" // Python-flavoured programs in Starlark, in process
)

// fields lists every key, in the order `dsh config` shows them.
var fields = []field{
	{"model", kindString, "DSH_MODEL"},
	{"baseUrl", kindString, "DSH_BASE_URL"},
	{"apiKeyEnv", kindString, "DSH_API_KEY_ENV"},
	{"provider", kindString, "DSH_PROVIDER"},
	{"thinking", kindString, "DSH_THINKING"},
	{"reasoningEffort", kindString, "DSH_REASONING_EFFORT"},
	{"mode", kindString, "DSH_MODE"},
	{"codeRuntime", kindString, "DSH_CODE_RUNTIME"},
	{"maxParallelToolCalls", kindInt, "DSH_MAX_PARALLEL_TOOL_CALLS"},
	{"maxSteps", kindInt, "DSH_MAX_STEPS"},
	{"toolOrder", kindList, ""},
	{"sessions.root", kindPath, "DSH_SESSIONS_ROOT"},
	{"sessions.compression", kindString, "DSH_SESSIONS_COMPRESSION"},
	{"sessions.store", kindString, "DSH_SESSIONS_STORE"},
	{"permissions.allow", kindPolicy, ""},
	{"permissions.ask", kindPolicy, ""},
	{"permissions.deny", kindPolicy, ""},
	{"permissions.openProtected", kindPathList, "DSH_OPEN_PROTECTED"},
	{"reminder.thresholds", kindPolicy, ""},
	{"reminder.include", kindPolicy, ""},
	{"reminder.exclude", kindPolicy, ""},
	{"reminder.argumentsPreviewChars", kindPolicy, ""},
	{"spill.maxInlineBytes", kindPolicy, "DSH_SPILL_MAX_INLINE_BYTES"},
	{"spill.dir", kindPath, "DSH_SPILL_DIR"},
	{"redact.enabled", kindPolicy, "DSH_REDACT_ENABLED"},
	{"shell.sandbox", kindString, "DSH_SHELL_SANDBOX"},
	{"limits.maxArgBytes", kindInt, "DSH_MAX_ARG_BYTES"},
	{"shell.maxProcesses", kindInt, "DSH_SHELL_MAX_PROCESSES"},
	{"shell.maxMemoryMiB", kindInt, "DSH_SHELL_MAX_MEMORY_MIB"},
	{"web.baseUrl", kindString, "DSH_WEB_BASE_URL"},
	{"pricing.currency", kindPolicy, ""},
	{"pricing.models", kindPolicy, ""},
	{"pricing.offPeakFactor", kindPolicy, ""},
	{"pricing.webRequest", kindPolicy, ""},
	{"pricing.holidays", kindPolicy, ""},
	{"codeMode.computeMs", kindInt, "DSH_CODE_MODE_COMPUTE_MS"},
	{"codeMode.wallMs", kindInt, "DSH_CODE_MODE_WALL_MS"},
	{"codeMode.maxOutputBytes", kindInt, "DSH_CODE_MODE_MAX_OUTPUT_BYTES"},
	{"codeMode.heapMiB", kindInt, "DSH_CODE_MODE_HEAP_MIB"},
}

// sections are the keys whose values are mappings of further keys.
var sections = []string{"sessions", "permissions", "reminder", "spill", "redact", "shell", "mcp", "limits", "web", "pricing", "codeMode"}

// serversKey is the mapping of MCP server declarations by name.
const serversKey = "mcp.servers"

// Keys returns every configuration key with the environment variable that sets it ("" when
// none), in display order; the MCP servers are "mcp.servers.NAME".
func Keys() [][2]string {
	out := make([][2]string, 0, len(fields)+1)
	for _, f := range fields {
		out = append(out, [2]string{f.key, f.env})
	}
	return append(out, [2]string{serversKey + ".NAME", ""})
}

func lookupField(key string) (field, bool) {
	for _, f := range fields {
		if f.key == key {
			return f, true
		}
	}
	return field{}, false
}

// value is one layer's value of a key: a YAML node from a file, or text from the
// environment or a flag.
type value struct {
	node   *yaml.Node
	text   string
	list   []string
	isList bool
	src    Source
	dir    string // relative paths resolve against it
}

// layers accumulates the values of every layer, the later replacing the earlier, except
// the accumulating keys, whose values are kept in layer order.
type layers struct {
	values  map[string]value
	lists   map[string][]value // accumulating keys: every layer's value, in layer order
	base    map[string]value   // narrowing keys: the value before the project's file set one
	servers map[string]value
	order   []string // server names in first-declared order
	project bool     // the file being added is a project's, whose keys are restricted
}

// accumulates reports whether the layers' values of key are appended rather than replaced.
func accumulates(key string) bool {
	switch key {
	case "permissions.allow", "permissions.ask", "permissions.deny":
		return true
	}
	return false
}

// looseness returns, for a key a project file may only narrow, how loose c's value of it
// is (greater is looser), and whether key is such a key.
func looseness(key string, c *Config) (int, bool) {
	switch key {
	case "maxSteps":
		return c.MaxSteps, true
	case "maxParallelToolCalls":
		return c.MaxParallelToolCalls, true
	case "shell.sandbox":
		return -sandboxStrictness[c.Shell.Sandbox], true
	case "shell.maxProcesses":
		return c.Shell.MaxProcesses, true
	case "shell.maxMemoryMiB":
		return c.Shell.MaxMemoryMiB, true
	case "limits.maxArgBytes":
		return c.Limits.MaxArgBytes, true
	case "codeMode.computeMs":
		return c.CodeMode.ComputeMs, true
	case "codeMode.wallMs":
		return c.CodeMode.WallMs, true
	case "codeMode.maxOutputBytes":
		return c.CodeMode.MaxOutputBytes, true
	case "codeMode.heapMiB":
		return c.CodeMode.HeapMiB, true
	}
	return 0, false
}

// sandboxStrictness orders the shell.sandbox values from the weakest.
var sandboxStrictness = map[string]int{SandboxNone: 0, SandboxAuto: 1, SandboxBwrap: 2}

// Default returns the configuration with every key at its default. home is dsh's home
// directory (the default sessions root is home/sessions).
func Default(home string) *Config {
	return &Config{
		Model:                openai.DefaultModel,
		BaseURL:              openai.DefaultBaseURL,
		APIKeyEnv:            openai.DefaultAPIKeyEnv,
		Mode:                 tool.ModeNative,
		CodeRuntime:          CodeRuntimeQuickJS,
		MaxParallelToolCalls: agent.DefaultMaxParallelToolCalls,
		MaxSteps:             agent.DefaultMaxSteps,
		Sessions:             Sessions{Root: filepath.Join(home, "sessions"), Compression: session.CompressionZstd},
		Permissions:          rules.Config{Allow: []string{}, Ask: []string{}, Deny: []string{}},
		Reminder:             reminder.DefaultConfig(),
		Spill:                spill.DefaultConfig(),
		Shell:                Shell{Sandbox: SandboxAuto, MaxProcesses: 4096, MaxMemoryMiB: 8192},
		OpenProtected:        []string{},
		Limits:               Limits{MaxArgBytes: tool.DefaultMaxArgBytes},
		Pricing:              pricing.Default(),
		CodeMode:             DefaultCodeMode(),
		MCP:                  mcp.Config{Servers: map[string]mcp.ServerConfig{}},
		Home:                 home,
		sources:              map[string]Source{},
		items:                map[string][]Item{},
	}
}

// DefaultCodeMode returns the default Code Mode budgets: a minute of busy time, ten minutes
// of wall-clock time, 64 MiB of output and a 512 MiB heap.
func DefaultCodeMode() CodeMode {
	return CodeMode{ComputeMs: 60000, WallMs: 600000, MaxOutputBytes: 64 << 20, HeapMiB: 512}
}

// codeModeBudget returns the address of the budget key names, with its bounds.
func (c *Config) codeModeBudget(key string) (p *int, lo, hi int, ok bool) {
	switch key {
	case "codeMode.computeMs":
		return &c.CodeMode.ComputeMs, 1, MaxCodeModeMs, true
	case "codeMode.wallMs":
		return &c.CodeMode.WallMs, 1, MaxCodeModeMs, true
	case "codeMode.maxOutputBytes":
		return &c.CodeMode.MaxOutputBytes, MinCodeModeOutputBytes, MaxCodeModeOutputBytes, true
	case "codeMode.heapMiB":
		return &c.CodeMode.HeapMiB, MinCodeModeHeapMiB, MaxCodeModeHeapMiB, true
	}
	return nil, 0, 0, false
}

// budgetValue reads a Code Mode budget: an integer within [lo, hi].
func budgetValue(key string, v value, lo, hi int) (int, error) {
	bad := fmt.Errorf("%s must be an integer from %d to %d", key, lo, hi)
	text := v.text
	if v.node != nil {
		if v.node.Kind != yaml.ScalarNode || v.node.Tag != "!!int" {
			return 0, fmt.Errorf("%s, got %q", bad, v.node.Value)
		}
		text = v.node.Value
	}
	n, err := strconv.ParseInt(strings.TrimSpace(text), 0, 64)
	if err != nil || n < int64(lo) || n > int64(hi) {
		return 0, fmt.Errorf("%s, got %q", bad, strings.TrimSpace(text))
	}
	return int(n), nil
}

// Load reads the configuration layers (see the package documentation) and returns the
// effective configuration.
func Load(opts Options) (*Config, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	userHome := opts.UserHome
	if userHome == "" {
		userHome, _ = os.UserHomeDir()
	}
	home := opts.Home
	if home == "" {
		home = getenv("DSH_HOME")
	}
	if home == "" {
		if userHome == "" {
			return nil, errors.New("config: cannot find the home directory; set DSH_HOME")
		}
		home = filepath.Join(userHome, ".dsh")
	}
	dir := opts.Dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		dir = wd
	}
	home, dir = absPath(home), absPath(dir)

	l := &layers{values: map[string]value{}, lists: map[string][]value{}, base: map[string]value{}, servers: map[string]value{}}
	files := []string{filepath.Join(home, "config.yaml")}
	if project := filepath.Join(dir, ".dsh", "config.yaml"); project != files[0] {
		files = append(files, project)
	}
	for i, f := range files {
		l.project = i > 0
		if err := l.addFile(f); err != nil {
			return nil, err
		}
	}
	l.project = false
	for _, f := range fields {
		if f.env == "" {
			continue
		}
		if v := getenv(f.env); v != "" {
			l.set(f.key, value{text: v, src: Source{Kind: FromEnv, Name: f.env}, dir: dir})
		}
	}
	for _, s := range opts.Flags {
		if err := l.addFlag(s, dir); err != nil {
			return nil, err
		}
	}

	c := Default(home)
	if err := l.apply(c, userHome); err != nil {
		return nil, err
	}
	c.APIKey = getenv(c.APIKeyEnv)
	c.sources["apiKey"] = Source{Kind: FromEnv, Name: c.APIKeyEnv}
	return c, nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// addFile adds the values of one YAML file; a missing file adds nothing.
func (l *layers) addFile(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil // an empty file
	}
	root := resolve(doc.Content[0])
	if isNull(root) {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s:%d: the configuration must be a mapping of keys to values", path, root.Line)
	}
	return l.walk(path, root, "")
}

// userOnly returns why key may not come from a project file at all, or "" when it may. A
// project's .dsh/config.yaml arrives with whatever repository was cloned, so it may tighten
// policy and tune the agent but must not redirect the API key, allow calls, start
// processes or move where dsh writes. (Keys it may only narrow are checked in apply.)
func userOnly(key string) string {
	switch key {
	case "baseUrl", "apiKeyEnv", "web.baseUrl":
		return "a cloned repository could send your API key to a server of its choosing"
	case "permissions.allow":
		return "a cloned repository could allow itself what you did not"
	case serversKey:
		return "a cloned repository could start any command as an MCP server"
	case "permissions.openProtected":
		return "a cloned repository could open its .git or its own policy to writes"
	case "sessions.root":
		return "a cloned repository could choose where your session logs are written"
	case "sessions.store":
		return "a cloned repository could send your session logs to a database of its choosing"
	case "spill.dir":
		return "a cloned repository could choose where spilled results are written"
	case "redact.enabled":
		return "a cloned repository could turn off the redaction of secrets from what the model reads"
	}
	return ""
}

// walk adds the keys of mapping m, whose keys are prefix + name.
func (l *layers) walk(path string, m *yaml.Node, prefix string) error {
	dir := filepath.Dir(path)
	if err := noDuplicates(path, m, prefix); err != nil {
		return err
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], resolve(m.Content[i+1])
		key := prefix + k.Value
		src := Source{Kind: FromFile, Name: path, Line: v.Line, Project: l.project}
		switch {
		case l.project && userOnly(key) != "":
			return fmt.Errorf("%s:%d: %q may be set only in the user configuration, the environment or a flag, not in a project's .dsh/config.yaml: %s", path, k.Line, key, userOnly(key))
		case key == serversKey:
			if isNull(v) {
				continue
			}
			if v.Kind != yaml.MappingNode {
				return fmt.Errorf("%s:%d: %s must be a mapping of server names to declarations", path, v.Line, key)
			}
			if err := noDuplicates(path, v, key+"."); err != nil {
				return err
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				name, decl := v.Content[j].Value, resolve(v.Content[j+1])
				if _, seen := l.servers[name]; !seen {
					l.order = append(l.order, name)
				}
				l.servers[name] = value{node: decl, src: Source{Kind: FromFile, Name: path, Line: decl.Line, Project: l.project}, dir: dir}
			}
		case slices.Contains(sections, key):
			if isNull(v) {
				continue
			}
			if v.Kind != yaml.MappingNode {
				return fmt.Errorf("%s:%d: %s must be a mapping", path, v.Line, key)
			}
			if err := l.walk(path, v, key+"."); err != nil {
				return err
			}
		default:
			if _, ok := lookupField(key); !ok {
				return fmt.Errorf("%s:%d: unknown key %q (known keys here: %s)", path, k.Line, key, strings.Join(knownKeys(prefix), ", "))
			}
			if isNull(v) {
				continue
			}
			l.set(key, value{node: v, src: src, dir: dir})
		}
	}
	return nil
}

// noDuplicates refuses a mapping that sets a key twice (YAML forbids it; the parser leaves
// the check to the decoder).
func noDuplicates(path string, m *yaml.Node, prefix string) error {
	first := make(map[string]int, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if line, ok := first[k.Value]; ok {
			return fmt.Errorf("%s:%d: key %q is set twice (first at line %d)", path, k.Line, prefix+k.Value, line)
		}
		first[k.Value] = k.Line
	}
	return nil
}

// knownKeys lists the keys valid in the mapping with the given prefix.
func knownKeys(prefix string) []string {
	var out []string
	add := func(k string) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	for _, f := range fields {
		if rest, ok := strings.CutPrefix(f.key, prefix); ok {
			name, _, _ := strings.Cut(rest, ".")
			add(prefix + name)
		}
	}
	for _, s := range sections {
		if rest, ok := strings.CutPrefix(s, prefix); ok && !strings.Contains(rest, ".") {
			add(s)
		}
	}
	if prefix == "mcp." {
		add(serversKey)
	}
	return out
}

// addFlag adds one command-line setting.
func (l *layers) addFlag(s Setting, dir string) error {
	src := Source{Kind: FromFlag, Name: s.Flag}
	if s.Flag == "" {
		src.Name = "--" + s.Key
	}
	f, ok := lookupField(s.Key)
	if !ok {
		return fmt.Errorf("flag %s: unknown configuration key %q", src.Name, s.Key)
	}
	v := value{text: s.Value, src: src, dir: dir}
	if s.Values != nil {
		v.list, v.isList = slices.Clone(s.Values), true
	}
	if (f.kind == kindList || f.kind == kindPathList || isListKey(f.key)) != v.isList {
		if v.isList {
			return fmt.Errorf("flag %s: %s takes one value, not a list", src.Name, s.Key)
		}
		return fmt.Errorf("flag %s: %s takes a list of values", src.Name, s.Key)
	}
	l.set(s.Key, v)
	return nil
}

// set records one layer's value of key: appended for an accumulating key, else replacing
// the earlier layers' value (remembering it, for a key a project may only narrow, when the
// project's file replaces it).
func (l *layers) set(key string, v value) {
	if accumulates(key) {
		l.lists[key] = append(l.lists[key], v)
		return
	}
	if _, narrow := looseness(key, &Config{}); narrow && v.src.Project {
		if prev, ok := l.values[key]; ok {
			l.base[key] = prev
		}
	}
	l.values[key] = v
}

// isListKey reports whether a policy key holds a list of strings.
func isListKey(key string) bool {
	switch key {
	case "permissions.allow", "permissions.ask", "permissions.deny", "reminder.include", "reminder.exclude", "pricing.holidays":
		return true
	}
	return false
}

// resolve follows an alias to its anchored node.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// errorAt prefixes err with where v came from.
func errorAt(v value, err error) error {
	switch v.src.Kind {
	case FromFile:
		return fmt.Errorf("%s:%d: %w", v.src.Name, v.src.Line, err)
	case FromEnv:
		return fmt.Errorf("environment variable %s: %w", v.src.Name, err)
	default:
		return fmt.Errorf("flag %s: %w", v.src.Name, err)
	}
}

// apply sets every layered value on c, recording its source.
func (l *layers) apply(c *Config, userHome string) error {
	for _, f := range fields {
		v, ok := l.values[f.key]
		if !ok || f.kind == kindPolicy {
			continue
		}
		if v.src.Project {
			if err := l.checkNarrows(c, f, v, userHome); err != nil {
				return err
			}
		}
		if err := c.set(f, v, userHome); err != nil {
			return errorAt(v, err)
		}
		c.sources[f.key] = v.src
	}
	if err := l.applyPolicies(c); err != nil {
		return err
	}
	for _, name := range l.order {
		v := l.servers[name]
		var sc mcp.ServerConfig
		if err := v.node.Decode(&sc); err != nil {
			return errorAt(v, fmt.Errorf("mcp server %q: %w", name, err))
		}
		if err := sc.Validate(name); err != nil {
			return errorAt(v, err)
		}
		c.MCP.Servers[name] = sc
		c.sources[serversKey+"."+name] = v.src
	}
	return nil
}

// checkNarrows refuses the project file's value v of a key it may only narrow when v is
// looser than the value of the layers before it (the user's file, else the default). c
// holds the defaults and the values of the keys before f.
func (l *layers) checkNarrows(c *Config, f field, v value, userHome string) error {
	if _, narrow := looseness(f.key, c); !narrow {
		return nil
	}
	before, scratch := "the default", *c
	if prev, ok := l.base[f.key]; ok {
		if err := scratch.set(f, prev, userHome); err != nil {
			return errorAt(prev, err)
		}
		before = prev.src.Layer() + " " + prev.src.String()
	}
	was, _ := looseness(f.key, &scratch)
	project := scratch
	if err := project.set(f, v, userHome); err != nil {
		return errorAt(v, err)
	}
	now, _ := looseness(f.key, &project)
	if now <= was {
		return nil
	}
	show := func(c *Config) string {
		if f.key == "shell.sandbox" {
			return strconv.Quote(c.Shell.Sandbox)
		}
		n, _ := looseness(f.key, c)
		return strconv.Itoa(n)
	}
	how := "lowered by a project's .dsh/config.yaml, not raised: %s is above %s from %s; raise it"
	if f.key == "shell.sandbox" {
		how = "made stricter by a project's .dsh/config.yaml, not weaker: %s is weaker than %s from %s; choose it"
	}
	return errorAt(v, fmt.Errorf("%q may only be "+how+" in the user configuration, the environment or a flag",
		f.key, show(&project), show(&scratch), before))
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// set applies one non-policy key.
func (c *Config) set(f field, v value, userHome string) error {
	switch f.kind {
	case kindInt:
		if p, lo, hi, ok := c.codeModeBudget(f.key); ok {
			n, err := budgetValue(f.key, v, lo, hi)
			if err != nil {
				return err
			}
			*p = n
			return nil
		}
		n, err := positiveInt(f.key, v)
		if err != nil {
			return err
		}
		switch f.key {
		case "maxSteps":
			c.MaxSteps = n
		case "limits.maxArgBytes":
			c.Limits.MaxArgBytes = n
		case "shell.maxProcesses":
			c.Shell.MaxProcesses = n
		case "shell.maxMemoryMiB":
			if n > 1<<30 {
				return fmt.Errorf("shell.maxMemoryMiB must be at most %d, got %d", 1<<30, n)
			}
			c.Shell.MaxMemoryMiB = n
		default:
			c.MaxParallelToolCalls = n
		}
		return nil
	case kindPathList:
		var list []string
		if v.node == nil && !v.isList {
			list = filepath.SplitList(v.text) // the environment: separated like PATH
		} else {
			var err error
			if list, err = stringList(f.key, v); err != nil {
				return err
			}
		}
		out := make([]string, 0, len(list))
		for _, p := range list {
			if strings.TrimSpace(p) == "" {
				return fmt.Errorf("%s must not hold an empty path", f.key)
			}
			if strings.ContainsRune(p, 0) {
				return fmt.Errorf("%s: path %q contains a NUL byte", f.key, p)
			}
			if p == "~" || strings.HasPrefix(p, "~/") {
				p = expandPath(p, "", userHome)
			}
			out = append(out, p)
		}
		c.OpenProtected = out
		return nil
	case kindList:
		list, err := stringList(f.key, v)
		if err != nil {
			return err
		}
		if err := agent.CheckToolOrder(list); err != nil {
			return err
		}
		c.ToolOrder = list
		return nil
	}
	s, err := scalarString(f.key, v)
	if err != nil {
		return err
	}
	if f.kind == kindPath {
		s = expandPath(s, v.dir, userHome)
	}
	switch f.key {
	case "model":
		if s == "" {
			return errors.New("model must not be empty")
		}
		c.Model = s
	case "baseUrl", "web.baseUrl":
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s must be an absolute http or https URL, got %q", f.key, s)
		}
		if f.key == "baseUrl" {
			c.BaseURL = s
		} else {
			c.Web.BaseURL = s
		}
	case "provider":
		if s != openai.ProviderDeepSeek && s != ProviderOpenAICompatible {
			return fmt.Errorf("provider must be %q or %q, got %q", openai.ProviderDeepSeek, ProviderOpenAICompatible, s)
		}
		c.Provider = s
	case "thinking":
		if s != openai.ThinkingEnabled && s != openai.ThinkingDisabled {
			return fmt.Errorf("thinking must be %q or %q, got %q", openai.ThinkingEnabled, openai.ThinkingDisabled, s)
		}
		c.Thinking = s
	case "reasoningEffort":
		if s != openai.EffortLow && s != openai.EffortHigh && s != openai.EffortMax {
			return fmt.Errorf("reasoningEffort must be %q, %q or %q, got %q", openai.EffortLow, openai.EffortHigh, openai.EffortMax, s)
		}
		c.ReasoningEffort = s
	case "apiKeyEnv":
		if !envName.MatchString(s) {
			return fmt.Errorf("apiKeyEnv must name an environment variable, got %q", s)
		}
		c.APIKeyEnv = s
	case "mode":
		m := tool.Mode(s)
		if !m.Valid() {
			return fmt.Errorf(`mode must be "native", "code" or "both", got %q`, s)
		}
		c.Mode = m
	case "codeRuntime":
		if s != CodeRuntimeQuickJS && s != CodeRuntimeStarlark {
			return fmt.Errorf(`codeRuntime must be %q or %q, got %q`, CodeRuntimeQuickJS, CodeRuntimeStarlark, s)
		}
		c.CodeRuntime = s
	case "sessions.root":
		c.Sessions.Root = s
	case "sessions.store":
		// The PostgreSQL session store: a URL, or empty for the file store.
		if s != "" && !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
			return fmt.Errorf("sessions.store must be a postgres:// URL (or empty for the file store under sessions.root), got %q", redactURL(s))
		}
		if _, err := url.Parse(s); err != nil {
			return fmt.Errorf("sessions.store is not a valid URL: %v", strings.ReplaceAll(err.Error(), s, redactURL(s)))
		}
		c.Sessions.Store = s
	case "sessions.compression":
		cm := session.Compression(s)
		if cm != session.CompressionZstd && cm != session.CompressionNone {
			return fmt.Errorf(`sessions.compression must be "zstd" or "none", got %q`, s)
		}
		c.Sessions.Compression = cm
	case "spill.dir":
		c.Spill.Dir = s
	case "shell.sandbox":
		if s != SandboxAuto && s != SandboxNone && s != SandboxBwrap {
			return fmt.Errorf(`shell.sandbox must be "auto", "bwrap" or "none", got %q`, s)
		}
		c.Shell.Sandbox = s
	}
	return nil
}

// scalarString reads a string value.
func scalarString(key string, v value) (string, error) {
	if v.node == nil {
		return v.text, nil
	}
	if v.node.Kind != yaml.ScalarNode || v.node.Tag != "!!str" {
		return "", fmt.Errorf("%s must be a string", key)
	}
	return v.node.Value, nil
}

// positiveInt reads a positive integer value; 0, negatives, fractions and non-numbers are
// refused with "<key> must be a positive integer".
func positiveInt(key string, v value) (int, error) {
	bad := fmt.Errorf("%s must be a positive integer", key)
	text := v.text
	if v.node != nil {
		if v.node.Kind != yaml.ScalarNode || v.node.Tag != "!!int" {
			return 0, bad
		}
		text = v.node.Value
	}
	n, err := strconv.ParseInt(strings.TrimSpace(text), 0, 64)
	if err != nil || n < 1 || n > 1<<31-1 {
		return 0, bad
	}
	return int(n), nil
}

// stringList reads a list of strings.
func stringList(key string, v value) ([]string, error) {
	if v.node == nil {
		return slices.Clone(v.list), nil
	}
	bad := fmt.Errorf("%s must be a list of strings", key)
	if v.node.Kind != yaml.SequenceNode {
		return nil, bad
	}
	out := make([]string, 0, len(v.node.Content))
	for _, item := range v.node.Content {
		item = resolve(item)
		if item.Kind != yaml.ScalarNode || item.Tag != "!!str" {
			return nil, bad
		}
		out = append(out, item.Value)
	}
	return out, nil
}

// expandPath expands a leading "~" and makes a relative path absolute against dir.
func expandPath(p, dir, userHome string) string {
	if p == "" {
		return p
	}
	if p == "~" {
		return userHome
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(userHome, rest)
	}
	if !filepath.IsAbs(p) {
		return filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

// applyPolicies decodes the permissions, reminder and spill sections with their packages'
// own types, so their validation messages are the reference's. Each key is first decoded
// alone, so an error names the file and line of the value it is about.
func (l *layers) applyPolicies(c *Config) error {
	type section struct {
		name   string
		decode func(m *yaml.Node) error
	}
	secs := []section{
		{"permissions", func(m *yaml.Node) error {
			var r rules.Config
			if err := m.Decode(&r); err != nil {
				return err
			}
			if err := r.Validate(); err != nil {
				return err
			}
			c.Permissions.Allow, c.Permissions.Ask, c.Permissions.Deny = orEmpty(r.Allow), orEmpty(r.Ask), orEmpty(r.Deny)
			return nil
		}},
		{"reminder", func(m *yaml.Node) error {
			r := reminder.Config{}
			if err := m.Decode(&r); err != nil {
				return err
			}
			def := reminder.DefaultConfig()
			if r.Thresholds == nil {
				r.Thresholds = def.Thresholds
			}
			if r.ArgumentsPreviewChars == 0 {
				r.ArgumentsPreviewChars = def.ArgumentsPreviewChars
			}
			r.Include, r.Exclude = orEmpty(r.Include), orEmpty(r.Exclude)
			c.Reminder = r
			return nil
		}},
		{"redact", func(m *yaml.Node) error {
			r := c.Redact
			if err := m.Decode(&r); err != nil {
				return err
			}
			c.Redact.Enabled = r.Enabled
			return nil
		}},
		{"pricing", func(m *yaml.Node) error {
			p := c.Pricing
			p.Models = maps.Clone(p.Models)
			if err := m.Decode(&p); err != nil {
				return err
			}
			if err := p.Validate(); err != nil {
				return err
			}
			c.Pricing = p
			return nil
		}},
		{"spill", func(m *yaml.Node) error {
			s := spill.Config{MaxInlineBytes: c.Spill.MaxInlineBytes}
			if err := m.Decode(&s); err != nil {
				return err
			}
			c.Spill.MaxInlineBytes = s.MaxInlineBytes
			return nil
		}},
	}
	for _, sec := range secs {
		merged := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, f := range fields {
			sub, ok := strings.CutPrefix(f.key, sec.name+".")
			if !ok || f.kind != kindPolicy {
				continue
			}
			k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: sub}
			if accumulates(f.key) {
				node, err := l.accumulate(c, f.key, func(v value, node *yaml.Node) error {
					alone := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{k, node}}
					return sec.decode(alone)
				})
				if err != nil {
					return err
				}
				merged.Content = append(merged.Content, k, node)
				continue
			}
			v, ok := l.values[f.key]
			if !ok {
				continue
			}
			node, err := policyNode(f.key, v)
			if err != nil {
				return errorAt(v, err)
			}
			alone := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{k, node}}
			if err := sec.decode(alone); err != nil {
				return errorAt(v, err)
			}
			merged.Content = append(merged.Content, k, node)
			c.sources[f.key] = v.src
		}
		if len(merged.Content) == 0 {
			continue
		}
		if err := sec.decode(merged); err != nil {
			return fmt.Errorf("config: %s: %w", sec.name, err)
		}
	}
	return nil
}

// accumulate checks each layer's value of an accumulating key with check (given the value
// and its YAML node) and returns the sequence of their entries in layer order, each entry
// once (the first occurrence is kept), recording every entry's source on c.
func (l *layers) accumulate(c *Config, key string, check func(value, *yaml.Node) error) (*yaml.Node, error) {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	items := []Item{}
	seen := map[string]bool{}
	for _, v := range l.lists[key] {
		node, err := policyNode(key, v)
		if err != nil {
			return nil, errorAt(v, err)
		}
		if err := check(v, node); err != nil {
			return nil, errorAt(v, err)
		}
		c.sources[key] = v.src
		if node.Kind != yaml.SequenceNode {
			continue // check accepted a non-list (null): it adds nothing
		}
		for _, item := range node.Content {
			item = resolve(item)
			if seen[item.Value] {
				continue
			}
			seen[item.Value] = true
			src := v.src
			if src.Kind == FromFile {
				src.Line = item.Line
			}
			items = append(items, Item{Value: item.Value, Source: src})
			seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: item.Value})
		}
	}
	c.items[key] = items
	return seq, nil
}

// Items returns the entries of a permission list ("permissions.allow", "permissions.ask" or
// "permissions.deny") with the source of each, in the order the rules see them; nil for
// any other key.
func (c *Config) Items(key string) []Item {
	if !accumulates(key) {
		return nil
	}
	return slices.Clone(c.items[key])
}

// policyNode returns the YAML node of a policy value, building one from environment or
// flag text.
func policyNode(key string, v value) (*yaml.Node, error) {
	if v.node != nil {
		return v.node, nil
	}
	if v.isList {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, s := range v.list {
			seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s})
		}
		return seq, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(v.text), &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.ScalarNode {
		return nil, fmt.Errorf("%s must be a single value, got %q", key, v.text)
	}
	return doc.Content[0], nil
}

func orText(s, empty string) string {
	if s == "" {
		return empty
	}
	return s
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Source returns where the value of key came from ("mcp.servers.NAME" for a server,
// "apiKey" for the API key).
func (c *Config) Source(key string) Source {
	return c.sources[key]
}

// Entry is one key of `dsh config`.
type Entry struct {
	Key   string
	Value string
	// Source is where the value came from; for a permission list, the last layer that
	// added to it.
	Source Source
	// Items are a permission list's entries with the source of each (nil for other keys).
	Items []Item
}

// Entries returns every key with its effective value (as text; the API key is only said to
// be set or not) and its source, in display order.
func (c *Config) Entries() []Entry {
	list := func(s []string) string {
		q := make([]string, len(s))
		for i, x := range s {
			q[i] = strconv.Quote(x)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	ints := func(s []int) string {
		q := make([]string, len(s))
		for i, x := range s {
			q[i] = strconv.Itoa(x)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	key := "(not set)"
	if c.APIKey != "" {
		key = fmt.Sprintf("(set, %d characters)", len(c.APIKey))
	}
	order := "(by name)"
	if c.ToolOrder != nil {
		order = list(c.ToolOrder)
	}
	values := map[string]string{
		"model":                          c.Model,
		"baseUrl":                        c.BaseURL,
		"apiKeyEnv":                      c.APIKeyEnv,
		"provider":                       orText(c.Provider, "(from baseUrl)"),
		"thinking":                       orText(c.Thinking, "(server default)"),
		"reasoningEffort":                orText(c.ReasoningEffort, "(server default)"),
		"web.baseUrl":                    orText(c.Web.BaseURL, "(the model server's, when it is DeepSeek)"),
		"pricing.currency":               c.Pricing.Currency,
		"pricing.offPeakFactor":          strconv.FormatFloat(c.Pricing.OffPeakFactor, 'g', -1, 64),
		"pricing.webRequest":             strconv.FormatFloat(c.Pricing.WebRequest, 'g', -1, 64),
		"pricing.holidays":               list(c.Pricing.Holidays),
		"mode":                           string(c.Mode),
		"codeRuntime":                    c.CodeRuntime,
		"maxParallelToolCalls":           strconv.Itoa(c.MaxParallelToolCalls),
		"maxSteps":                       strconv.Itoa(c.MaxSteps),
		"toolOrder":                      order,
		"sessions.root":                  c.Sessions.Root,
		"sessions.compression":           string(c.Sessions.Compression),
		"sessions.store":                 redactURL(c.Sessions.Store),
		"permissions.allow":              list(c.Permissions.Allow),
		"permissions.ask":                list(c.Permissions.Ask),
		"permissions.deny":               list(c.Permissions.Deny),
		"reminder.thresholds":            ints(c.Reminder.Thresholds),
		"reminder.include":               list(c.Reminder.Include),
		"reminder.exclude":               list(c.Reminder.Exclude),
		"reminder.argumentsPreviewChars": strconv.Itoa(c.Reminder.ArgumentsPreviewChars),
		"spill.maxInlineBytes":           strconv.Itoa(c.Spill.MaxInlineBytes),
		"spill.dir":                      c.Spill.Dir,
		"redact.enabled":                 strconv.FormatBool(c.Redact.On()),
		"shell.sandbox":                  c.Shell.Sandbox,
		"permissions.openProtected":      list(c.OpenProtected),
		"limits.maxArgBytes":             strconv.Itoa(c.Limits.MaxArgBytes),
		"shell.maxProcesses":             strconv.Itoa(c.Shell.MaxProcesses),
		"shell.maxMemoryMiB":             strconv.Itoa(c.Shell.MaxMemoryMiB),
		"codeMode.computeMs":             strconv.Itoa(c.CodeMode.ComputeMs),
		"codeMode.wallMs":                strconv.Itoa(c.CodeMode.WallMs),
		"codeMode.maxOutputBytes":        strconv.Itoa(c.CodeMode.MaxOutputBytes),
		"codeMode.heapMiB":               strconv.Itoa(c.CodeMode.HeapMiB),
	}
	var out []Entry
	for _, f := range fields {
		if f.key == "pricing.models" {
			// One line per model: "pricing.models.NAME  hit/miss/output".
			for _, name := range slices.Sorted(maps.Keys(c.Pricing.Models)) {
				p := c.Pricing.Models[name]
				out = append(out, Entry{Key: f.key + "." + name, Value: fmt.Sprintf("%g/%g/%g per 1M (cache hit/miss/output)", p.CacheHit, p.CacheMiss, p.Output), Source: c.sources[f.key]})
			}
			continue
		}
		out = append(out, Entry{Key: f.key, Value: values[f.key], Source: c.sources[f.key], Items: c.Items(f.key)})
		if f.key == "apiKeyEnv" {
			out = append(out, Entry{Key: "apiKey", Value: key, Source: c.sources["apiKey"]})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.MCP.Servers)) {
		sc := c.MCP.Servers[name]
		v := sc.URL
		if sc.Command != "" {
			v = strings.Join(append([]string{sc.Command}, sc.Args...), " ")
		}
		out = append(out, Entry{Key: serversKey + "." + name, Value: v, Source: c.sources[serversKey+"."+name]})
	}
	return out
}

// ModelConfig returns the model client configuration: endpoint, model, key, provider and
// DeepSeek's thinking controls.
func (c *Config) ModelConfig() openai.Config {
	return openai.Config{BaseURL: c.BaseURL, Model: c.Model, APIKey: c.APIKey, APIKeyEnv: c.APIKeyEnv,
		Provider: c.Provider, Thinking: c.Thinking, ReasoningEffort: c.ReasoningEffort}
}

// IsDeepSeek reports whether the model server is DeepSeek: provider says so, or it is not
// set and baseUrl is DeepSeek's host.
func (c *Config) IsDeepSeek() bool {
	if c.Provider != "" {
		return c.Provider == openai.ProviderDeepSeek
	}
	u, err := url.Parse(c.BaseURL)
	return err == nil && strings.EqualFold(u.Hostname(), "api.deepseek.com")
}

// WebBaseURL returns the root of the Search and Fetch APIs the web tools use, and false
// when they are off: web.baseUrl when set, else the model server's when it is DeepSeek.
func (c *Config) WebBaseURL() (string, bool) {
	if c.Web.BaseURL != "" {
		return c.Web.BaseURL, true
	}
	if c.IsDeepSeek() {
		return c.BaseURL, true
	}
	return "", false
}

// ShellSandbox returns the shell tools' Sandbox value ("" for none).
func (c *Config) ShellSandbox() string {
	if c.Shell.Sandbox == SandboxNone {
		return ""
	}
	return c.Shell.Sandbox
}

// redactURL returns a URL with its password hidden, for messages and listings.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(an unparsable URL)"
	}
	return u.Redacted()
}
