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
	Key     string `json:"key"`
	Value   string `json:"value"`
	Source  string `json:"source"`
	Layer   string `json:"layer"`
	Entries []struct {
		Value  string `json:"value"`
		Source string `json:"source"`
		Layer  string `json:"layer"`
	} `json:"entries"`
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
	s.writeFile(user, "mode: both\nmodel: from-user\nbaseUrl: http://localhost:8080/v1\nmaxSteps: 5\nmaxParallelToolCalls: 3\npermissions:\n  allow: [read, \"bash(go test *)\"]\n")
	s.writeFile(project, "# the project's settings\nmodel: from-project\nmaxSteps: 6\npermissions:\n  deny:\n    - read(**/.env)\n")
	s.env["DSH_MAX_STEPS"] = "7"
	s.env["DSH_SHELL_SANDBOX"] = "bwrap"
	s.env["DEEPSEEK_API_KEY"] = "sk-secret-value"
	got := configJSON(t, s, "--max-steps", "8", "--deny", "bash(rm *)", "--deny", "write(**/.env)")
	tests := []struct {
		key    string
		value  string
		source string
	}{
		{"mode", "both", user + ":1"},
		{"baseUrl", "http://localhost:8080/v1", user + ":3"},
		{"model", "from-project", project + ":2"},
		{"apiKeyEnv", "DEEPSEEK_API_KEY", "default"},
		{"apiKey", "(set, 15 characters)", "env DEEPSEEK_API_KEY"},
		{"maxParallelToolCalls", "3", user + ":5"},
		{"maxSteps", "8", "flag --max-steps"},
		{"permissions.allow", `["read", "bash(go test *)"]`, user + ":7"},
		{"permissions.deny", `["read(**/.env)", "bash(rm *)", "write(**/.env)"]`, "flag --deny"},
		{"shell.sandbox", "bwrap", "env DSH_SHELL_SANDBOX"},
		{"sessions.root", filepath.Join(s.home, "sessions"), "default"},
	}
	for _, tt := range tests {
		e, ok := got[tt.key]
		if !ok {
			t.Errorf("no key %s", tt.key)
			continue
		}
		if e.Value != tt.value || e.Source != tt.source {
			t.Errorf("%s = %v from %q, want %s from %q", tt.key, e.Value, e.Source, tt.value, tt.source)
		}
	}
	// Without the flag the environment wins over the files.
	if e := configJSON(t, s)["maxSteps"]; e.Value != "7" || e.Source != "env DSH_MAX_STEPS" {
		t.Errorf("maxSteps = %v from %s, want 7 from the environment", e.Value, e.Source)
	}
	// The table names the files and the sources too, and never prints the key.
	r := s.dsh("config").want(t, 0)
	mustContain(t, "dsh config", r.stdout,
		"# "+user+" (loaded)", "# "+project+" (loaded)",
		"from-project", project+":2")
	if !regexp.MustCompile(`(?m)^maxSteps +7 +env DSH_MAX_STEPS$`).MatchString(r.stdout) {
		t.Errorf("no maxSteps row from the environment:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "sk-secret-value") {
		t.Errorf("dsh config printed the API key:\n%s", r.stdout)
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
		{name: "unknown key", user: "mode: code\nmodle: x\n", code: 1, want: `config.yaml:2: unknown key "modle"`},
		{name: "unknown nested key", project: "sessions:\n  rooot: x\n", code: 1, want: `.dsh/config.yaml:2: unknown key "sessions.rooot"`},
		{name: "bad mode", user: "mode: fancy\n", code: 1, want: `mode must be "native", "code" or "both", got "fancy"`},
		{name: "bad int", user: "maxSteps: many\n", code: 1, want: `config.yaml:1: maxSteps must be a positive integer`},
		{name: "not YAML", user: "mode: [\n", code: 1, want: "config.yaml"},
		{name: "bad environment", env: map[string]string{"DSH_MAX_PARALLEL_TOOL_CALLS": "-1"}, code: 1,
			want: "environment variable DSH_MAX_PARALLEL_TOOL_CALLS: maxParallelToolCalls must be a positive integer"},
		{name: "bad flag", args: []string{"--max-steps", "0"}, code: 2, want: "flag --max-steps: maxSteps must be a positive integer"},
		{name: "bad flag sandbox", args: []string{"--sandbox", "docker"}, code: 2, want: `flag --sandbox: shell.sandbox must be "auto", "bwrap" or "none"`},
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

// TestConfigReachesCommands checks that the configuration drives the commands: a deny rule
// from the project file refuses a call, and a flag adds to the list rather than replacing
// it.
func TestConfigReachesCommands(t *testing.T) {
	s := newSandbox(t)
	s.write(".env", "TOKEN=x\n")
	s.writeFile(filepath.Join(s.ws, ".dsh", "config.yaml"), "permissions:\n  deny: [\"read(**/.env)\"]\n")
	r := s.dsh("call", "read", `{"file_path":".env"}`).want(t, 1)
	mustContain(t, "denied read", r.stdout, `Error: tool "read" is denied by permission rule "read(**/.env)"`)
	r = s.dsh("call", "read", `{"file_path":".env"}`, "--deny", "bash(rm *)").want(t, 1)
	mustContain(t, "denied read with a flag's rule added", r.stdout, `Error: tool "read" is denied by permission rule "read(**/.env)"`)
	s.writeFile(filepath.Join(s.home, "config.yaml"), "mode: code\n")
	r = s.dsh("tools").want(t, 0)
	mustContain(t, "tools in code mode", r.stdout, "run_code", "interface ToolArgsMap")
}

// TestProjectCannotEmptyUserDeny is the reported case: the user's file denies "rm", a
// cloned project's .dsh/config.yaml sets empty deny and ask lists. The user's rule stays in
// force and dsh config says where each entry came from, in the table and in JSON.
func TestProjectCannotEmptyUserDeny(t *testing.T) {
	s := newSandbox(t)
	user := filepath.Join(s.home, "config.yaml")
	project := filepath.Join(s.ws, ".dsh", "config.yaml")
	s.writeFile(user, "permissions:\n  deny: [\"bash(rm *)\"]\n  ask: [\"bash(git push*)\"]\n")
	s.writeFile(project, "permissions: {deny: [], ask: []}\n")
	s.write("f1", "keep me\n")

	got := configJSON(t, s, "--deny", "read(**/.env)")
	deny := got["permissions.deny"]
	if deny.Value != `["bash(rm *)", "read(**/.env)"]` || len(deny.Entries) != 2 ||
		deny.Entries[0].Value != "bash(rm *)" || deny.Entries[0].Source != user+":2" || deny.Entries[0].Layer != "user file" ||
		deny.Entries[1].Value != "read(**/.env)" || deny.Entries[1].Source != "flag --deny" || deny.Entries[1].Layer != "flag" {
		t.Errorf("permissions.deny = %+v", deny)
	}
	if ask := got["permissions.ask"]; ask.Value != `["bash(git push*)"]` || len(ask.Entries) != 1 || ask.Entries[0].Layer != "user file" {
		t.Errorf("permissions.ask = %+v", ask)
	}
	if allow := got["permissions.allow"]; allow.Value != "[]" || allow.Entries == nil || len(allow.Entries) != 0 || allow.Layer != "default" {
		t.Errorf("permissions.allow = %+v", allow)
	}
	if m := got["model"]; m.Layer != "default" || m.Entries != nil {
		t.Errorf("model = %+v", m)
	}

	r := s.dsh("config").want(t, 0)
	for _, row := range []string{
		`(?m)^permissions\.deny +"bash\(rm \*\)" +user file ` + regexp.QuoteMeta(user) + `:2$`,
		`(?m)^permissions\.ask +"bash\(git push\*\)" +user file ` + regexp.QuoteMeta(user) + `:3$`,
		`(?m)^permissions\.allow +\[\] +default$`,
	} {
		if !regexp.MustCompile(row).MatchString(r.stdout) {
			t.Errorf("no row %s in:\n%s", row, r.stdout)
		}
	}

	r = s.dsh("call", "--json", "bash", `{"command":"rm f1","description":"remove"}`).want(t, 1)
	mustContain(t, "dsh call rm", r.stdout, `"isError":true`, `tool \"bash\" is denied by permission rule \"bash(rm *)\"`)
	if _, err := os.Stat(filepath.Join(s.ws, "f1")); err != nil {
		t.Fatalf("f1 is gone: %v", err)
	}

	// A project adding rules is shown as such, after the user's.
	s.writeFile(project, "permissions:\n  deny:\n    - \"bash(curl *)\"\n")
	deny = configJSON(t, s)["permissions.deny"]
	if len(deny.Entries) != 2 || deny.Entries[1].Value != "bash(curl *)" || deny.Entries[1].Source != project+":3" || deny.Entries[1].Layer != "project file" {
		t.Errorf("permissions.deny = %+v", deny)
	}
	// A project that tries to allow, or to raise a budget, is refused with the reason.
	s.writeFile(project, "permissions:\n  allow: [bash]\n")
	r = s.dsh("config").want(t, 1)
	mustContain(t, "project allow", r.stderr, project+`:2: "permissions.allow" may be set only in the user configuration`)
	s.writeFile(project, "maxSteps: 500\n")
	r = s.dsh("call", "read", `{"file_path":"f1"}`).want(t, 1)
	mustContain(t, "project maxSteps", r.stderr, project+`:1: "maxSteps" may only be lowered by a project's .dsh/config.yaml, not raised: 500 is above 50 from the default`)
}
