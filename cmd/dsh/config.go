package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-go/dsh/config"
)

// configFlag is a command-line flag that sets a configuration key (package config).
type configFlag struct {
	key   string // the configuration key, e.g. "maxSteps"
	flag  string // the flag name, e.g. "max-steps"
	list  bool   // repeatable: the flags' values form the list
	usage string
}

// configFlagSpecs are every configuration flag, in help order.
var configFlagSpecs = []configFlag{
	{key: "mode", flag: "mode", usage: "how tools reach the model: native, code (only run_code) or both"},
	{key: "model", flag: "model", usage: "the model to request (default deepseek-flash; deepseek-v4-pro is DeepSeek's larger model)"},
	{key: "thinking", flag: "thinking", usage: "DeepSeek's thinking mode: enabled (DeepSeek's default) or disabled"},
	{key: "reasoningEffort", flag: "reasoning-effort", usage: "DeepSeek's reasoning effort in thinking mode: low, high or max"},
	{key: "baseUrl", flag: "base-url", usage: "the OpenAI-compatible API root (default https://api.deepseek.com; e.g. http://localhost:11434/v1)"},
	{key: "apiKeyEnv", flag: "api-key-env", usage: "the environment variable holding the API key (default DEEPSEEK_API_KEY)"},
	{key: "maxSteps", flag: "max-steps", usage: "the most model requests in one turn (default 50)"},
	{key: "maxParallelToolCalls", flag: "max-parallel", usage: "the most concurrency-safe tool calls running at once (default 10)"},
	{key: "sessions.root", flag: "sessions-dir", usage: "where session logs are stored (default $DSH_HOME/sessions)"},
	{key: "sessions.store", flag: "store", usage: "a postgres:// URL: keep the sessions in that PostgreSQL database instead of --sessions-dir"},
	{key: "permissions.allow", flag: "allow", list: true, usage: "permission rule pre-approving calls (repeatable; added to the configured ones), e.g. 'bash(go test *)'"},
	{key: "permissions.ask", flag: "ask", list: true, usage: "permission rule requiring approval (repeatable; added to the configured ones), e.g. 'bash(git push*)'"},
	{key: "permissions.deny", flag: "deny", list: true, usage: "permission rule refusing calls (repeatable; added to the configured ones), e.g. 'read(**/.env)'"},
	{key: "shell.sandbox", flag: "sandbox", usage: "run shell commands under bubblewrap where it works (auto, the default), always (bwrap) or never (none)"},
	{key: "permissions.openProtected", flag: "open-protected", list: true, usage: "a protected path (.git, .dsh, the dsh home; relative to the workspace or absolute) the file tools may write after all (repeatable), e.g. '.git/hooks'"},
}

// configFlags collects the configuration flags of one command line.
type configFlags struct {
	fs    *flag.FlagSet
	specs map[string]configFlag
	vals  map[string]*string
	lists map[string]*listFlag
}

// listFlag is a repeatable flag.
type listFlag struct{ vals []string }

func (l *listFlag) String() string     { return strings.Join(l.vals, ",") }
func (l *listFlag) Set(s string) error { l.vals = append(l.vals, s); return nil }

// addConfigFlags registers on fs the flags of the named configuration keys (every
// configuration flag when keys is empty).
func addConfigFlags(fs *flag.FlagSet, keys ...string) *configFlags {
	cf := &configFlags{fs: fs, specs: map[string]configFlag{}, vals: map[string]*string{}, lists: map[string]*listFlag{}}
	for _, s := range configFlagSpecs {
		if len(keys) > 0 && !slices.Contains(keys, s.key) {
			continue
		}
		cf.specs[s.flag] = s
		if s.list {
			l := &listFlag{}
			fs.Var(l, s.flag, s.usage)
			cf.lists[s.flag] = l
		} else {
			cf.vals[s.flag] = fs.String(s.flag, "", s.usage)
		}
	}
	return cf
}

// settings returns the configuration settings the command line gave.
func (cf *configFlags) settings() []config.Setting {
	var out []config.Setting
	if cf == nil {
		return out
	}
	cf.fs.Visit(func(f *flag.Flag) {
		s, ok := cf.specs[f.Name]
		if !ok {
			return
		}
		set := config.Setting{Key: s.key, Flag: "--" + s.flag}
		if s.list {
			set.Values = slices.Clone(cf.lists[f.Name].vals)
		} else {
			set.Value = *cf.vals[f.Name]
		}
		out = append(out, set)
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

// loadedConfig is the effective configuration with the files it was read from.
type loadedConfig struct {
	*config.Config
	home    string
	user    string // <home>/config.yaml
	project string // <workspace>/.dsh/config.yaml
}

// loadConfig computes the effective configuration for a workspace: the defaults, then
// <home>/config.yaml, then <workspace>/.dsh/config.yaml, then DSH_* environment variables,
// then the flags given on the command line. A bad flag value is a usage error.
func loadConfig(e *env, workspace string, cf *configFlags) (*loadedConfig, error) {
	home, err := homeDir(e.getenv)
	if err != nil {
		return nil, err
	}
	c, err := config.Load(config.Options{Home: home, Dir: workspace, Getenv: e.getenv, Flags: cf.settings()})
	if err != nil {
		if strings.HasPrefix(err.Error(), "flag --") {
			return nil, &usageError{err.Error()}
		}
		return nil, err
	}
	return &loadedConfig{
		Config:  c,
		home:    home,
		user:    filepath.Join(home, "config.yaml"),
		project: filepath.Join(workspace, ".dsh", "config.yaml"),
	}, nil
}
