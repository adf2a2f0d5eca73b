package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dsh-go/dsh/llm/openai"
	"github.com/dsh-go/dsh/policy/rules"
	"github.com/dsh-go/dsh/policy/spill"
	"go.yaml.in/yaml/v3"
)

// kind is the type of a configuration value.
type kind int

const (
	kindString kind = iota
	kindInt
	kindList
	kindDuration
)

// setting is one configuration key: its type, default and the environment variable and flag
// that may set it.
type setting struct {
	key   string // dotted YAML path, e.g. "model.baseURL"
	kind  kind
	def   any    // string, int, []string or time.Duration
	env   string // environment variable, "" for none
	flag  string // command-line flag, "" for none
	usage string
	// enum lists the allowed values of a string setting (nil: any).
	enum []string
	// min bounds an int setting from below.
	min int
	// userOnly settings cannot come from a project file: a repository a user merely cloned
	// must not redirect the API key to another server or pre-approve commands.
	userOnly bool
}

// settings returns every configuration key dsh understands, in display order. home is the
// dsh home directory ($DSH_HOME or ~/.dsh), which the session store defaults under.
func settings(home string) []setting {
	return []setting{
		{key: "mode", def: "native", env: "DSH_MODE", flag: "mode", enum: []string{"native", "code", "both"},
			usage: "how tools reach the model: native tool calls, code (only run_code) or both"},
		{key: "model.baseURL", def: openai.DefaultBaseURL, env: "DSH_BASE_URL", flag: "base-url", userOnly: true,
			usage: "the OpenAI-compatible API root (DeepSeek by default; e.g. http://localhost:11434/v1 for Ollama)"},
		{key: "model.name", def: openai.DefaultModel, env: "DSH_MODEL", flag: "model",
			usage: "the model to request"},
		{key: "model.apiKeyEnv", def: openai.DefaultAPIKeyEnv, env: "DSH_API_KEY_ENV", flag: "api-key-env", userOnly: true,
			usage: "the environment variable holding the API key"},
		{key: "model.maxTokens", kind: kindInt, def: 0, env: "DSH_MAX_TOKENS", flag: "max-tokens",
			usage: "cap on each reply's tokens (0: the server's default)"},
		{key: "agent.maxSteps", kind: kindInt, def: 50, min: 1, env: "DSH_MAX_STEPS", flag: "max-steps",
			usage: "most model requests in one turn"},
		{key: "agent.maxParallelToolCalls", kind: kindInt, def: 10, min: 1, env: "DSH_MAX_PARALLEL_TOOL_CALLS", flag: "max-parallel",
			usage: "most concurrency-safe tool calls running at once"},
		{key: "sessions.dir", def: filepath.Join(home, "sessions"), env: "DSH_SESSIONS_DIR", flag: "sessions-dir",
			usage: "where session logs are stored"},
		{key: "sessions.compression", def: "zstd", env: "DSH_SESSIONS_COMPRESSION", enum: []string{"zstd", "none"},
			usage: "session log encoding"},
		{key: "permissions.allow", kind: kindList, def: []string{}, flag: "allow", userOnly: true,
			usage: "permission rule pre-approving calls (repeatable), e.g. 'bash(go test *)'"},
		{key: "permissions.ask", kind: kindList, def: []string{}, flag: "ask",
			usage: "permission rule requiring approval (repeatable), e.g. 'bash(git push*)'"},
		{key: "permissions.deny", kind: kindList, def: []string{}, flag: "deny",
			usage: "permission rule refusing calls (repeatable), e.g. 'read(**/.env)'"},
		{key: "approval.policy", def: "ask", env: "DSH_APPROVAL", flag: "approval", enum: []string{"ask", "never"},
			usage: "ask a person (on a terminal) or never approve"},
		{key: "spill.maxInlineBytes", kind: kindInt, def: spill.DefaultMaxInlineBytes, env: "DSH_SPILL_MAX_INLINE_BYTES",
			usage: "larger text results are saved to a file and previewed (0: off)"},
		{key: "shell.timeout", kind: kindDuration, def: 120 * time.Second, env: "DSH_SHELL_TIMEOUT", flag: "shell-timeout",
			usage: "default timeout of a shell command"},
		{key: "shell.sandbox", def: "", env: "DSH_SANDBOX", flag: "sandbox", enum: []string{"", "bwrap"},
			usage: `run shell commands under bubblewrap ("bwrap") or not ("")`},
	}
}

// configValue is the effective value of one setting and where it came from.
type configValue struct {
	setting
	value  any
	source string
}

// config is the effective configuration: defaults < user file < project file < environment
// < flags.
type config struct {
	home   string
	files  []configFile
	values []configValue
	index  map[string]int
}

// configFile is one configuration file dsh looked at.
type configFile struct {
	path   string
	exists bool
}

// configFlags collects the configuration flags of one command line.
type configFlags struct {
	fs   *flag.FlagSet
	vals map[string]*string
	list map[string]*listFlag
}

// listFlag is a repeatable flag.
type listFlag struct{ vals []string }

func (l *listFlag) String() string     { return strings.Join(l.vals, ",") }
func (l *listFlag) Set(s string) error { l.vals = append(l.vals, s); return nil }

// addConfigFlags registers on fs the flags of the named settings (every setting with a flag
// when names is empty).
func addConfigFlags(fs *flag.FlagSet, names ...string) *configFlags {
	cf := &configFlags{fs: fs, vals: map[string]*string{}, list: map[string]*listFlag{}}
	for _, s := range settings("~/.dsh") {
		if s.flag == "" || (len(names) > 0 && !slices.Contains(names, s.key)) {
			continue
		}
		if s.kind == kindList {
			l := &listFlag{}
			fs.Var(l, s.flag, s.usage)
			cf.list[s.flag] = l
			continue
		}
		cf.vals[s.flag] = fs.String(s.flag, "", s.usage)
	}
	return cf
}

// set returns the flags given on the command line, by flag name.
func (cf *configFlags) set() map[string][]string {
	out := map[string][]string{}
	if cf == nil {
		return out
	}
	cf.fs.Visit(func(f *flag.Flag) {
		if v, ok := cf.vals[f.Name]; ok {
			out[f.Name] = []string{*v}
		}
		if l, ok := cf.list[f.Name]; ok {
			out[f.Name] = l.vals
		}
	})
	return out
}

// homeDir returns the dsh home: $DSH_HOME, else ~/.dsh.
func homeDir(getenv func(string) string) (string, error) {
	if h := getenv("DSH_HOME"); h != "" {
		return filepath.Abs(h)
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the home directory (set DSH_HOME): %w", err)
	}
	return filepath.Join(u, ".dsh"), nil
}

// loadConfig computes the effective configuration for a workspace: the defaults, then
// <home>/config.yaml, then <workspace>/.dsh/config.yaml, then DSH_* environment variables,
// then the flags given on the command line.
func loadConfig(e *env, workspace string, cf *configFlags) (*config, error) {
	home, err := homeDir(e.getenv)
	if err != nil {
		return nil, err
	}
	c := &config{home: home, index: map[string]int{}}
	for i, s := range settings(home) {
		c.values = append(c.values, configValue{setting: s, value: s.def, source: "default"})
		c.index[s.key] = i
	}
	user := filepath.Join(home, "config.yaml")
	project := filepath.Join(workspace, ".dsh", "config.yaml")
	for _, f := range []struct {
		path    string
		project bool
	}{{user, false}, {project, true}} {
		if f.project && sameFile(f.path, user) {
			continue // the workspace is the home directory's parent: one file, read once
		}
		exists, err := c.loadFile(f.path, f.project)
		if err != nil {
			return nil, err
		}
		c.files = append(c.files, configFile{path: f.path, exists: exists})
	}
	for i := range c.values {
		v := &c.values[i]
		if v.env == "" {
			continue
		}
		raw := e.getenv(v.env)
		if raw == "" {
			continue
		}
		val, err := v.parse(raw)
		if err != nil {
			return nil, fmt.Errorf("environment variable %s: %w", v.env, err)
		}
		v.value, v.source = val, "env "+v.env
	}
	for name, raws := range cf.set() {
		for i := range c.values {
			v := &c.values[i]
			if v.flag != name {
				continue
			}
			var val any = raws
			if v.kind != kindList {
				if val, err = v.parse(raws[0]); err != nil {
					return nil, &usageError{fmt.Sprintf("flag --%s: %v", name, err)}
				}
			}
			v.value, v.source = val, "flag --"+name
		}
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// loadFile applies one YAML file; a missing file is not an error.
func (c *config) loadFile(path string, project bool) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return true, fmt.Errorf("config %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return true, nil // empty file
	}
	return true, c.apply(path, project, "", doc.Content[0])
}

// apply walks a mapping node, setting the value of every leaf key it holds.
func (c *config) apply(path string, project bool, prefix string, n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		where := "the top level"
		if prefix != "" {
			where = fmt.Sprintf("%q", prefix)
		}
		return fmt.Errorf("config %s:%d: %s must be a mapping of keys", path, n.Line, where)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		if prefix != "" {
			key = prefix + "." + key
		}
		idx, ok := c.index[key]
		if !ok {
			if c.isSection(key) {
				if err := c.apply(path, project, key, v); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("config %s:%d: unknown key %q (run \"dsh config\" for the known keys)", path, k.Line, key)
		}
		cv := &c.values[idx]
		if project && cv.userOnly {
			return fmt.Errorf("config %s:%d: %s may be set only in %s, the environment or a flag — a project file must not redirect the API key or pre-approve calls",
				path, k.Line, key, filepath.Join(c.home, "config.yaml"))
		}
		val, err := cv.parseNode(v)
		if err != nil {
			return fmt.Errorf("config %s:%d: %s: %w", path, v.Line, key, err)
		}
		cv.value, cv.source = val, path
	}
	return nil
}

// isSection reports whether key is a prefix of some setting.
func (c *config) isSection(key string) bool {
	for _, v := range c.values {
		if strings.HasPrefix(v.key, key+".") {
			return true
		}
	}
	return false
}

// parseNode converts a YAML value to the setting's type.
func (s setting) parseNode(n *yaml.Node) (any, error) {
	if s.kind == kindList {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return []string{}, nil
		}
		if n.Kind != yaml.SequenceNode {
			return nil, errors.New("must be a list of strings")
		}
		out := make([]string, 0, len(n.Content))
		for _, item := range n.Content {
			if item.Kind != yaml.ScalarNode || item.Tag == "!!null" {
				return nil, fmt.Errorf("line %d: every item must be a string", item.Line)
			}
			out = append(out, item.Value)
		}
		return out, nil
	}
	if n.Kind != yaml.ScalarNode {
		return nil, errors.New("must be a single value")
	}
	if n.Tag == "!!null" {
		return s.parse("")
	}
	return s.parse(n.Value)
}

// parse converts a textual value (environment, flag or YAML scalar) to the setting's type.
func (s setting) parse(raw string) (any, error) {
	switch s.kind {
	case kindInt:
		n, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", raw)
		}
		if n < s.min {
			return nil, fmt.Errorf("%d must be at least %d", n, s.min)
		}
		return n, nil
	case kindDuration:
		d, err := time.ParseDuration(strings.TrimSpace(raw))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q is not a positive duration such as 90s or 2m", raw)
		}
		return d, nil
	case kindList:
		return []string{raw}, nil
	}
	if s.enum != nil && !slices.Contains(s.enum, raw) {
		quoted := make([]string, len(s.enum))
		for i, e := range s.enum {
			quoted[i] = strconv.Quote(e)
		}
		return nil, fmt.Errorf("%q must be one of %s", raw, strings.Join(quoted, ", "))
	}
	return raw, nil
}

// validate checks what a single value cannot: the permission patterns.
func (c *config) validate() error {
	r := c.rules("")
	if err := r.Validate(); err != nil {
		return fmt.Errorf("permissions: %w", err)
	}
	return nil
}

func (c *config) get(key string) configValue {
	i, ok := c.index[key]
	if !ok {
		panic("dsh: unknown configuration key " + key) // a programming error in this package
	}
	return c.values[i]
}

func (c *config) str(key string) string             { return c.get(key).value.(string) }
func (c *config) int(key string) int                { return c.get(key).value.(int) }
func (c *config) list(key string) []string          { return slices.Clone(c.get(key).value.([]string)) }
func (c *config) duration(key string) time.Duration { return c.get(key).value.(time.Duration) }

// rules returns the permission rules for a workspace.
func (c *config) rules(workspace string) rules.Config {
	return rules.Config{
		Allow:     c.list("permissions.allow"),
		Ask:       c.list("permissions.ask"),
		Deny:      c.list("permissions.deny"),
		Workspace: workspace,
	}
}

// display renders a value for "dsh config".
func (v configValue) display() string {
	switch x := v.value.(type) {
	case []string:
		q := make([]string, len(x))
		for i, s := range x {
			q[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	case string:
		if x == "" {
			return `""`
		}
		return x
	case time.Duration:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}

// jsonValue is the value as JSON data for "dsh config --json".
func (v configValue) jsonValue() any {
	switch x := v.value.(type) {
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	case int:
		return float64(x)
	case time.Duration:
		return x.String()
	default:
		return x
	}
}

// override sets a value for a command that fixes it (the demo), naming the command as the
// source.
func (c *config) override(key string, value any, source string) {
	i, ok := c.index[key]
	if !ok {
		panic("dsh: unknown configuration key " + key) // a programming error in this package
	}
	c.values[i].value, c.values[i].source = value, source
}

// str returns the value as a string (for string settings).
func (v configValue) str() string { s, _ := v.value.(string); return s }
