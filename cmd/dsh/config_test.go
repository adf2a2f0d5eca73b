package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// configEntry is one row of "dsh config --json".
type configEntry struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Source string `json:"source"`
}

func configJSON(t *testing.T, s *sandbox, args ...string) map[string]configEntry {
	t.Helper()
	r := s.dsh(append([]string{"config", "--json"}, args...)...).want(t, 0)
	var out struct {
		Home   string        `json:"home"`
		Values []configEntry `json:"values"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("config --json: %v\n%s", err, r.stdout)
	}
	if out.Home != s.home {
		t.Errorf("home = %q, want %q", out.Home, s.home)
	}
	m := map[string]configEntry{}
	for _, v := range out.Values {
		m[v.Key] = v
	}
	return m
}

func (s *sandbox) writeFile(path, text string) {
	s.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// TestConfigLayers checks the precedence defaults < user file < project file < environment
// < flags, and that every value names its source.
func TestConfigLayers(t *testing.T) {
	s := newSandbox(t)
	user := filepath.Join(s.home, "config.yaml")
	project := filepath.Join(s.ws, ".dsh", "config.yaml")
	s.writeFile(user, "mode: both\nmodel:\n  name: from-user\n  baseURL: http://localhost:8080/v1\nagent:\n  maxSteps: 5\n  maxParallelToolCalls: 3\npermissions:\n  allow: [read, \"bash(go test *)\"]\n")
	s.writeFile(project, "# the project's settings\nmodel:\n  name: from-project\nagent:\n  maxSteps: 6\npermissions:\n  deny:\n    - read(**/.env)\nshell:\n  timeout: 90s\n")
	s.env["DSH_MAX_STEPS"] = "7"
	s.env["DSH_SANDBOX"] = "bwrap"
	got := configJSON(t, s, "--max-steps", "8", "--deny", "bash(rm *)", "--deny", "write(**/.env)")
	tests := []struct {
		key    string
		value  any
		source string
	}{
		{"mode", "both", user},
		{"model.baseURL", "http://localhost:8080/v1", user},
		{"model.name", "from-project", project},
		{"model.apiKeyEnv", "DEEPSEEK_API_KEY", "default"},
		{"agent.maxParallelToolCalls", 3.0, user},
		{"agent.maxSteps", 8.0, "flag --max-steps"},
		{"permissions.allow", []any{"read", "bash(go test *)"}, user},
		{"permissions.deny", []any{"bash(rm *)", "write(**/.env)"}, "flag --deny"},
		{"shell.timeout", "1m30s", project},
		{"shell.sandbox", "bwrap", "env DSH_SANDBOX"},
		{"sessions.dir", filepath.Join(s.home, "sessions"), "default"},
	}
	for _, tt := range tests {
		e, ok := got[tt.key]
		if !ok {
			t.Errorf("no key %s", tt.key)
			continue
		}
		vj, _ := json.Marshal(e.Value)
		wj, _ := json.Marshal(tt.value)
		if string(vj) != string(wj) || e.Source != tt.source {
			t.Errorf("%s = %s from %q, want %s from %q", tt.key, vj, e.Source, wj, tt.source)
		}
	}
	// Without the flag the environment wins over the files.
	if e := configJSON(t, s)["agent.maxSteps"]; e.Value != 7.0 || e.Source != "env DSH_MAX_STEPS" {
		t.Errorf("agent.maxSteps = %v from %s, want 7 from the environment", e.Value, e.Source)
	}
	// The table names the files and the sources too.
	r := s.dsh("config").want(t, 0)
	mustContain(t, "dsh config", r.stdout,
		"# "+user+" (loaded)", "# "+project+" (loaded)",
		"model.name", "from-project", project)
	if !regexp.MustCompile(`(?m)^agent\.maxSteps +7 +env DSH_MAX_STEPS$`).MatchString(r.stdout) {
		t.Errorf("no agent.maxSteps row from the environment:\n%s", r.stdout)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		user    string
		project string
		env     map[string]string
		args    []string
		code    int
		want    string
	}{
		{name: "unknown key", user: "mode: code\nmodle:\n  name: x\n", code: 1,
			want: `config.yaml:2: unknown key "modle" (run "dsh config" for the known keys)`},
		{name: "unknown nested key", project: "model:\n  nmae: x\n", code: 1, want: `.dsh/config.yaml:2: unknown key "model.nmae"`},
		{name: "bad enum", user: "mode: fancy\n", code: 1, want: `config.yaml:1: mode: "fancy" must be one of "native", "code", "both"`},
		{name: "bad int", user: "agent:\n  maxSteps: many\n", code: 1, want: `config.yaml:2: agent.maxSteps: "many" is not an integer`},
		{name: "int too small", user: "agent:\n  maxSteps: 0\n", code: 1, want: `agent.maxSteps: 0 must be at least 1`},
		{name: "list expected", user: "permissions:\n  deny: read\n", code: 1, want: `permissions.deny: must be a list of strings`},
		{name: "section not a mapping", user: "model: deepseek\n", code: 1, want: `config.yaml:1: "model" must be a mapping of keys`},
		{name: "not YAML", user: "mode: [\n", code: 1, want: "config "},
		{name: "bad pattern", user: "permissions:\n  deny: [\"(\"]\n", code: 1, want: "permissions: "},
		{name: "project cannot redirect the key", project: "model:\n  baseURL: https://evil.example/v1\n", code: 1,
			want: "model.baseURL may be set only in"},
		{name: "project cannot pre-approve", project: "permissions:\n  allow: [\"bash(*)\"]\n", code: 1,
			want: "permissions.allow may be set only in"},
		{name: "bad environment", env: map[string]string{"DSH_MAX_PARALLEL_TOOL_CALLS": "-1"}, code: 1,
			want: "environment variable DSH_MAX_PARALLEL_TOOL_CALLS: -1 must be at least 1"},
		{name: "bad duration flag", args: []string{"--shell-timeout", "soon"}, code: 2,
			want: `flag --shell-timeout: "soon" is not a positive duration`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t)
			if tt.user != "" {
				s.writeFile(filepath.Join(s.home, "config.yaml"), tt.user)
			}
			if tt.project != "" {
				s.writeFile(filepath.Join(s.ws, ".dsh", "config.yaml"), tt.project)
			}
			for k, v := range tt.env {
				s.env[k] = v
			}
			r := s.dsh(append([]string{"config"}, tt.args...)...).want(t, tt.code)
			if !strings.HasPrefix(r.stderr, "dsh config: ") {
				t.Errorf("stderr = %q, want it to start with the command", r.stderr)
			}
			mustContain(t, "stderr", r.stderr, tt.want)
		})
	}
}

func TestConfigEmptyFilesAndDefaults(t *testing.T) {
	s := newSandbox(t)
	s.writeFile(filepath.Join(s.home, "config.yaml"), "")
	s.writeFile(filepath.Join(s.ws, ".dsh", "config.yaml"), "# nothing yet\npermissions:\n")
	got := configJSON(t, s)
	for _, k := range []string{"mode", "model.name", "permissions.deny", "spill.maxInlineBytes"} {
		if got[k].Source != "default" {
			t.Errorf("%s comes from %q, want the default", k, got[k].Source)
		}
	}
	if got["spill.maxInlineBytes"].Value != 50000.0 {
		t.Errorf("spill.maxInlineBytes = %v", got["spill.maxInlineBytes"].Value)
	}
}
