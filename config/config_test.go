package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// env is a fake environment.
type env map[string]string

func (e env) get(k string) string { return e[k] }

// setup writes the user and project files (when non-empty) and returns Options for them.
func setup(t *testing.T, user, project string, e env, flags ...Setting) Options {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home", ".dsh")
	dir := filepath.Join(root, "project")
	for _, d := range []string{home, filepath.Join(dir, ".dsh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if user != "" {
		write(t, filepath.Join(home, "config.yaml"), user)
	}
	if project != "" {
		write(t, filepath.Join(dir, ".dsh", "config.yaml"), project)
	}
	if e == nil {
		e = env{}
	}
	return Options{Home: home, Dir: dir, UserHome: filepath.Join(root, "home"), Getenv: e.get, Flags: flags}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDefaults(t *testing.T) {
	opts := setup(t, "", "", nil)
	c, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "deepseek-chat" || c.BaseURL != "https://api.deepseek.com" || c.APIKeyEnv != "DEEPSEEK_API_KEY" ||
		c.Mode != tool.ModeNative || c.MaxParallelToolCalls != 10 || c.MaxSteps != 50 || c.ToolOrder != nil ||
		c.Sessions.Root != filepath.Join(opts.Home, "sessions") || c.Sessions.Compression != session.CompressionZstd ||
		c.Shell.Sandbox != SandboxNone || c.Spill.MaxInlineBytes != 50000 || len(c.MCP.Servers) != 0 {
		t.Fatalf("defaults = %+v", c)
	}
	if !slices.Equal(c.Reminder.Thresholds, []int{3, 5, 8}) || c.Reminder.ArgumentsPreviewChars != 500 {
		t.Fatalf("reminder = %+v", c.Reminder)
	}
	if c.APIKey != "" || c.Source("model").Kind != FromDefault || c.Source("model").String() != "default" {
		t.Fatalf("api key %q, source %v", c.APIKey, c.Source("model"))
	}
}

func TestLayers(t *testing.T) {
	user := `model: user-model
maxSteps: 20
mode: both
permissions:
  allow: ["grep", "glob"]
  deny: ["bash(rm *)"]
reminder:
  thresholds: [4, 6]
sessions:
  root: state/sessions
mcp:
  servers:
    files: {command: mcp-files, args: ["--root", "."]}
    web: {url: "https://example.com/mcp"}
`
	project := `# project settings
model: project-model
maxParallelToolCalls: 4
sessions:
  compression: none
permissions:
  deny: ["write(secrets/**)"]
reminder:
  exclude: [todo_write]
`
	opts := setup(t, user, project, env{"DSH_MAX_STEPS": "7", "DSH_SHELL_SANDBOX": "bwrap", "DEEPSEEK_API_KEY": "sk-secret"},
		Setting{Key: "model", Value: "flag-model", Flag: "--model"},
		Setting{Key: "permissions.ask", Values: []string{"bash"}, Flag: "--ask"})
	c, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	userFile := filepath.Join(opts.Home, "config.yaml")
	projectFile := filepath.Join(opts.Dir, ".dsh", "config.yaml")
	checks := []struct {
		key, value, source string
	}{
		{"model", "flag-model", "flag --model"},
		{"apiKey", "(set, 9 characters)", "env DEEPSEEK_API_KEY"},
		{"mode", "both", userFile + ":3"},
		{"maxParallelToolCalls", "4", projectFile + ":3"},
		{"maxSteps", "7", "env DSH_MAX_STEPS"},
		{"sessions.root", filepath.Join(opts.Home, "state", "sessions"), userFile + ":10"},
		{"sessions.compression", "none", projectFile + ":5"},
		{"permissions.allow", `["grep", "glob"]`, userFile + ":5"},
		{"permissions.ask", `["bash"]`, "flag --ask"},
		{"permissions.deny", `["write(secrets/**)"]`, projectFile + ":7"},
		{"reminder.thresholds", "[4, 6]", userFile + ":8"},
		{"reminder.exclude", `["todo_write"]`, projectFile + ":9"},
		{"reminder.argumentsPreviewChars", "500", "default"},
		{"shell.sandbox", "bwrap", "env DSH_SHELL_SANDBOX"},
		{"mcp.servers.files", "mcp-files --root .", userFile + ":13"},
		{"mcp.servers.web", "https://example.com/mcp", userFile + ":14"},
	}
	entries := map[string]Entry{}
	for _, e := range c.Entries() {
		entries[e.Key] = e
	}
	for _, ck := range checks {
		e, ok := entries[ck.key]
		if !ok {
			t.Errorf("no entry %s", ck.key)
			continue
		}
		if e.Value != ck.value || e.Source.String() != ck.source {
			t.Errorf("%s = %s (%s), want %s (%s)", ck.key, e.Value, e.Source, ck.value, ck.source)
		}
	}
	if c.APIKey != "sk-secret" || c.ShellSandbox() != "bwrap" || c.Mode != tool.ModeBoth {
		t.Errorf("config = %+v", c)
	}
	mc := c.ModelConfig()
	if mc.Model != "flag-model" || mc.APIKey != "sk-secret" || mc.APIKeyEnv != "DEEPSEEK_API_KEY" {
		t.Errorf("model config = %+v", mc)
	}
	if len(c.MCP.Servers) != 2 || c.MCP.Servers["files"].Command != "mcp-files" {
		t.Errorf("servers = %+v", c.MCP.Servers)
	}
}

// TestProjectFileCannotWidenTrust pins the trust boundary: a project's .dsh/config.yaml
// comes with the repository, so it may not redirect the API key, loosen permissions, start
// processes or choose where dsh writes; the same keys work from the user file.
func TestProjectFileCannotWidenTrust(t *testing.T) {
	cases := []struct{ yaml, key, why string }{
		{"baseUrl: https://evil.example/v1\n", "baseUrl", "send your API key"},
		{"apiKeyEnv: AWS_SECRET_ACCESS_KEY\n", "apiKeyEnv", "send your API key"},
		{"permissions:\n  allow: [\"bash\"]\n", "permissions.allow", "allow itself"},
		{"mcp:\n  servers:\n    x: {command: sh}\n", "mcp.servers", "start any command"},
		{"shell:\n  sandbox: none\n", "shell.sandbox", "sandbox off"},
		{"sessions:\n  root: /tmp/x\n", "sessions.root", "session logs"},
		{"spill:\n  dir: /tmp/x\n", "spill.dir", "spilled results"},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			opts := setup(t, "", tc.yaml, env{})
			_, err := Load(opts)
			projectFile := filepath.Join(opts.Dir, ".dsh", "config.yaml")
			if err == nil || !strings.HasPrefix(err.Error(), projectFile+":") ||
				!strings.Contains(err.Error(), fmt.Sprintf("%q may be set only in the user configuration", tc.key)) ||
				!strings.Contains(err.Error(), tc.why) {
				t.Fatalf("err = %v", err)
			}
			// The same setting is accepted from the user's own file.
			if _, err := Load(setup(t, tc.yaml, "", env{})); err != nil {
				t.Fatalf("user file: %v", err)
			}
		})
	}
}

func TestAPIKeyEnv(t *testing.T) {
	opts := setup(t, "apiKeyEnv: MY_KEY\nbaseUrl: http://localhost:11434/v1\n", "", env{"MY_KEY": "local", "DEEPSEEK_API_KEY": "other"})
	c, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if c.APIKey != "local" || c.Source("apiKey").String() != "env MY_KEY" || c.BaseURL != "http://localhost:11434/v1" {
		t.Fatalf("config = %+v", c)
	}
}

func TestPaths(t *testing.T) {
	opts := setup(t, "sessions: {root: ~/logs}\nspill: {dir: spills}\n", "", env{})
	c, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sessions.Root != filepath.Join(opts.UserHome, "logs") || c.Spill.Dir != filepath.Join(opts.Home, "spills") {
		t.Fatalf("paths = %q, %q", c.Sessions.Root, c.Spill.Dir)
	}
	opts = setup(t, "", "", env{"DSH_SESSIONS_ROOT": "rel"})
	if c, err = Load(opts); err != nil || c.Sessions.Root != filepath.Join(opts.Dir, "rel") {
		t.Fatalf("env path = %q, %v", c.Sessions.Root, err)
	}
}

func TestDSHHome(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "config.yaml"), "model: from-dsh-home\n")
	c, err := Load(Options{Dir: t.TempDir(), UserHome: t.TempDir(), Getenv: env{"DSH_HOME": root}.get})
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "from-dsh-home" || c.Sessions.Root != filepath.Join(root, "sessions") {
		t.Fatalf("config = %+v", c)
	}
}

func TestNullAndEmpty(t *testing.T) {
	opts := setup(t, "model: set-by-user\n", "model:\nsessions:\n# nothing else\n", nil)
	c, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "set-by-user" {
		t.Fatalf("model = %q", c.Model)
	}
	opts = setup(t, "# only a comment\n", "", nil)
	if _, err := Load(opts); err != nil {
		t.Fatal(err)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		user    string
		env     env
		flags   []Setting
		want    string // the message after the location
		locator string // "file:line", "env", "flag" or "" (the whole message is want)
	}{
		{name: "unknown top", user: "model: x\nmodle: y\n", locator: "2", want: `unknown key "modle" (known keys here: model, baseUrl, apiKeyEnv, mode, codeRuntime, maxParallelToolCalls, maxSteps, toolOrder, sessions, permissions, reminder, spill, shell, codeMode, mcp)`},
		{name: "unknown nested", user: "sessions:\n  rot: x\n", locator: "2", want: `unknown key "sessions.rot" (known keys here: sessions.root, sessions.compression)`},
		{name: "unknown mcp", user: "mcp:\n  server: {}\n", locator: "2", want: `unknown key "mcp.server" (known keys here: mcp.servers)`},
		{name: "pool zero", user: "maxParallelToolCalls: 0\n", locator: "1", want: "maxParallelToolCalls must be a positive integer"},
		{name: "pool fraction", user: "maxParallelToolCalls: 1.5\n", locator: "1", want: "maxParallelToolCalls must be a positive integer"},
		{name: "pool string", user: "maxParallelToolCalls: many\n", locator: "1", want: "maxParallelToolCalls must be a positive integer"},
		{name: "steps negative", user: "\nmaxSteps: -3\n", locator: "2", want: "maxSteps must be a positive integer"},
		{name: "mode", user: "mode: turbo\n", locator: "1", want: `mode must be "native", "code" or "both", got "turbo"`},
		{name: "model type", user: "model: [a]\n", locator: "1", want: "model must be a string"},
		{name: "base url", user: "baseUrl: localhost:8080\n", locator: "1", want: `baseUrl must be an absolute http or https URL, got "localhost:8080"`},
		{name: "key env", user: "apiKeyEnv: not a name\n", locator: "1", want: `apiKeyEnv must name an environment variable, got "not a name"`},
		{name: "compression", user: "sessions: {compression: gzip}\n", locator: "1", want: `sessions.compression must be "zstd" or "none", got "gzip"`},
		{name: "sandbox", user: "shell:\n  sandbox: docker\n", locator: "2", want: `shell.sandbox must be "none" or "bwrap", got "docker"`},
		{name: "tool order rest", user: "toolOrder: [read]\n", locator: "1", want: `toolOrder must contain the "<unlisted-tools>" rest entry (where unlisted tools are inserted)`},
		{name: "tool order type", user: "toolOrder: read\n", locator: "1", want: "toolOrder must be a list of strings"},
		{name: "thresholds", user: "reminder:\n  thresholds: [3, 1]\n", locator: "2", want: "repeat-tool-reminder: invalid threshold 1 — every threshold must be an integer >= 2"},
		{name: "thresholds empty", user: "reminder:\n  thresholds: []\n", locator: "2", want: "repeat-tool-reminder: `thresholds` must not be empty"},
		{name: "preview", user: "reminder:\n  argumentsPreviewChars: 0\n", locator: "2", want: "repeat-tool-reminder: invalid argumentsPreviewChars 0 — must be an integer >= 1"},
		{name: "spill", user: "spill:\n  maxInlineBytes: -1\n", locator: "2", want: "spill-policy: maxInlineBytes must be a non-negative integer (got -1)"},
		{name: "section type", user: "reminder: 3\n", locator: "1", want: "reminder must be a mapping"},
		{name: "root type", user: "- a\n- b\n", locator: "1", want: "the configuration must be a mapping of keys to values"},
		{name: "env int", env: env{"DSH_MAX_STEPS": "0"}, locator: "env", want: "environment variable DSH_MAX_STEPS: maxSteps must be a positive integer"},
		{name: "env mode", env: env{"DSH_MODE": "fast"}, locator: "env", want: `environment variable DSH_MODE: mode must be "native", "code" or "both", got "fast"`},
		{name: "env spill", env: env{"DSH_SPILL_MAX_INLINE_BYTES": "1.5"}, locator: "env", want: "environment variable DSH_SPILL_MAX_INLINE_BYTES: spill-policy: maxInlineBytes must be a non-negative integer (got 1.5)"},
		{name: "flag unknown", flags: []Setting{{Key: "colour", Value: "x", Flag: "--colour"}}, locator: "flag", want: `flag --colour: unknown configuration key "colour"`},
		{name: "flag list", flags: []Setting{{Key: "permissions.allow", Value: "read", Flag: "--allow"}}, locator: "flag", want: "flag --allow: permissions.allow takes a list of values"},
		{name: "flag scalar", flags: []Setting{{Key: "model", Values: []string{"a"}}}, locator: "flag", want: "flag --model: model takes one value, not a list"},
		{name: "compute zero", user: "codeMode:\n  computeMs: 0\n", locator: "2", want: `codeMode.computeMs must be an integer from 1 to 2147483647, got "0"`},
		{name: "wall negative", user: "codeMode: {wallMs: -5}\n", locator: "1", want: `codeMode.wallMs must be an integer from 1 to 2147483647, got "-5"`},
		{name: "wall absurd", user: "codeMode: {wallMs: 2147483648}\n", locator: "1", want: `codeMode.wallMs must be an integer from 1 to 2147483647, got "2147483648"`},
		{name: "compute fraction", user: "codeMode: {computeMs: 1.5}\n", locator: "1", want: `codeMode.computeMs must be an integer from 1 to 2147483647, got "1.5"`},
		{name: "output tiny", user: "codeMode: {maxOutputBytes: 3}\n", locator: "1", want: `codeMode.maxOutputBytes must be an integer from 4 to 2147483647, got "3"`},
		{name: "output string", user: "codeMode: {maxOutputBytes: lots}\n", locator: "1", want: `codeMode.maxOutputBytes must be an integer from 4 to 2147483647, got "lots"`},
		{name: "heap zero", user: "codeMode: {heapMiB: 0}\n", locator: "1", want: `codeMode.heapMiB must be an integer from 1 to 1048576, got "0"`},
		{name: "heap absurd", user: "codeMode: {heapMiB: 1048577}\n", locator: "1", want: `codeMode.heapMiB must be an integer from 1 to 1048576, got "1048577"`},
		{name: "unknown codeMode", user: "codeMode: {heapMb: 8}\n", locator: "1", want: `unknown key "codeMode.heapMb" (known keys here: codeMode.computeMs, codeMode.wallMs, codeMode.maxOutputBytes, codeMode.heapMiB)`},
		{name: "env budget", env: env{"DSH_CODE_MODE_HEAP_MIB": "0"}, locator: "env", want: `environment variable DSH_CODE_MODE_HEAP_MIB: codeMode.heapMiB must be an integer from 1 to 1048576, got "0"`},
		{name: "flag budget", flags: []Setting{{Key: "codeMode.wallMs", Value: "-1"}}, locator: "flag", want: `flag --codeMode.wallMs: codeMode.wallMs must be an integer from 1 to 2147483647, got "-1"`},
		{name: "flag pool", flags: []Setting{{Key: "maxParallelToolCalls", Value: "-2", Flag: "--parallel"}}, locator: "flag", want: "flag --parallel: maxParallelToolCalls must be a positive integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := setup(t, tc.user, "", tc.env, tc.flags...)
			_, err := Load(opts)
			if err == nil {
				t.Fatal("no error")
			}
			want := tc.want
			if tc.locator != "env" && tc.locator != "flag" {
				want = filepath.Join(opts.Home, "config.yaml") + ":" + tc.locator + ": " + tc.want
			}
			if err.Error() != want {
				t.Fatalf("error:\n got  %s\n want %s", err, want)
			}
		})
	}
}

func TestPermissionPatternErrorNamesLine(t *testing.T) {
	opts := setup(t, "permissions:\n  allow: [read]\n  deny:\n    - \"bash(\"\n", "", nil)
	_, err := Load(opts)
	if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(opts.Home, "config.yaml")+":4: ") {
		t.Fatalf("err = %v", err)
	}
}

func TestMCPServerErrors(t *testing.T) {
	opts := setup(t, "mcp:\n  servers:\n    bad:\n      command: x\n      colour: red\n", "", nil)
	_, err := Load(opts)
	if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(opts.Home, "config.yaml")+":4: ") || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("err = %v", err)
	}
}

func TestYAMLSyntaxError(t *testing.T) {
	opts := setup(t, "model: [unclosed\n", "", nil)
	_, err := Load(opts)
	if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(opts.Home, "config.yaml")+": yaml: line") {
		t.Fatalf("err = %v", err)
	}
}

func TestDuplicateKey(t *testing.T) {
	opts := setup(t, "model: a\nmodel: b\n", "", nil)
	if _, err := Load(opts); err == nil || err.Error() != filepath.Join(opts.Home, "config.yaml")+`:2: key "model" is set twice (first at line 1)` {
		t.Fatalf("err = %v", err)
	}
}

func TestDuplicateServer(t *testing.T) {
	opts := setup(t, "mcp:\n  servers:\n    a: {url: http://x}\n    a: {url: http://y}\n", "", nil)
	if _, err := Load(opts); err == nil || err.Error() != filepath.Join(opts.Home, "config.yaml")+`:4: key "mcp.servers.a" is set twice (first at line 3)` {
		t.Fatalf("err = %v", err)
	}
}

func TestAliases(t *testing.T) {
	opts := setup(t, "base: &p [read, grep]\npermissions: {allow: *p}\n", "", nil)
	if _, err := Load(opts); err == nil || !strings.Contains(err.Error(), `unknown key "base"`) {
		t.Fatalf("err = %v", err)
	}
	opts = setup(t, "permissions:\n  allow: &p [read, grep]\n  ask: *p\n", "", nil)
	c, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"read", "grep"}, c.Permissions.Ask); diff != "" {
		t.Fatal(diff)
	}
}

func TestEntriesCoverEveryKey(t *testing.T) {
	c, err := Load(setup(t, "", "", nil))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range c.Entries() {
		keys = append(keys, e.Key)
		if e.Value == "" && e.Key != "spill.dir" {
			t.Errorf("entry %s has no value", e.Key)
		}
	}
	var want []string
	for _, k := range Keys() {
		if k[0] == "apiKeyEnv" {
			want = append(want, k[0], "apiKey")
			continue
		}
		if !strings.HasPrefix(k[0], "mcp.servers.") {
			want = append(want, k[0])
		}
	}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Fatal(diff)
	}
}

func TestCodeRuntime(t *testing.T) {
	c, err := Load(setup(t, "", "codeRuntime: starlark\n", env{}))
	if err != nil || c.CodeRuntime != CodeRuntimeStarlark {
		t.Fatalf("codeRuntime = %q, %v", c.CodeRuntime, err)
	}
	c, err = Load(setup(t, "", "", env{}))
	if err != nil || c.CodeRuntime != CodeRuntimeQuickJS || c.Source("codeRuntime").String() != "default" {
		t.Fatalf("default codeRuntime = %q, %v", c.CodeRuntime, err)
	}
	_, err = Load(setup(t, "", "", env{"DSH_CODE_RUNTIME": "node"}))
	if err == nil || !strings.Contains(err.Error(), `codeRuntime must be "quickjs" or "starlark", got "node"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestCodeModeBudgets(t *testing.T) {
	c, err := Load(setup(t, "", "", env{}))
	if err != nil {
		t.Fatal(err)
	}
	if want := (CodeMode{ComputeMs: 60000, WallMs: 600000, MaxOutputBytes: 67108864, HeapMiB: 512}); c.CodeMode != want {
		t.Fatalf("defaults = %+v, want %+v", c.CodeMode, want)
	}
	for _, tc := range []struct {
		name, user, project string
		env                 env
		flags               []Setting
		want                CodeMode
	}{
		{name: "user raises every budget", user: "codeMode: {computeMs: 120000, wallMs: 900000, maxOutputBytes: 1000000, heapMiB: 1024}\n",
			want: CodeMode{ComputeMs: 120000, WallMs: 900000, MaxOutputBytes: 1000000, HeapMiB: 1024}},
		{name: "project lowers the defaults", project: "codeMode:\n  computeMs: 5000\n  heapMiB: 64\n",
			want: CodeMode{ComputeMs: 5000, WallMs: 600000, MaxOutputBytes: 67108864, HeapMiB: 64}},
		{name: "project lowers the user's", user: "codeMode: {wallMs: 900000}\n", project: "codeMode: {wallMs: 700000}\n",
			want: CodeMode{ComputeMs: 60000, WallMs: 700000, MaxOutputBytes: 67108864, HeapMiB: 512}},
		{name: "project may repeat the user's", user: "codeMode: {maxOutputBytes: 100}\n", project: "codeMode: {maxOutputBytes: 100}\n",
			want: CodeMode{ComputeMs: 60000, WallMs: 600000, MaxOutputBytes: 100, HeapMiB: 512}},
		{name: "environment and flags override", project: "codeMode: {computeMs: 10}\n", env: env{"DSH_CODE_MODE_COMPUTE_MS": "20", "DSH_CODE_MODE_WALL_MS": "30"},
			flags: []Setting{{Key: "codeMode.wallMs", Value: "40"}},
			want:  CodeMode{ComputeMs: 20, WallMs: 40, MaxOutputBytes: 67108864, HeapMiB: 512}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(setup(t, tc.user, tc.project, tc.env, tc.flags...))
			if err != nil {
				t.Fatal(err)
			}
			if c.CodeMode != tc.want {
				t.Fatalf("budgets = %+v, want %+v", c.CodeMode, tc.want)
			}
		})
	}
}

func TestProjectFileCannotRaiseCodeModeBudgets(t *testing.T) {
	for _, tc := range []struct{ name, user, project, want string }{
		{name: "above the default", project: "codeMode:\n  computeMs: 60001\n", want: `:2: "codeMode.computeMs" in a project's .dsh/config.yaml may lower the budget but not raise it: 60001 is above 60000 (the default)`},
		{name: "above the user's", user: "codeMode:\n  heapMiB: 256\n", project: "codeMode: {heapMiB: 512}\n", want: `:1: "codeMode.heapMiB" in a project's .dsh/config.yaml may lower the budget but not raise it: 512 is above 256 (%USER%:2)`},
		{name: "wall", project: "codeMode: {wallMs: 2147483647}\n", want: `"codeMode.wallMs" in a project's .dsh/config.yaml may lower the budget but not raise it: 2147483647 is above 600000 (the default)`},
		{name: "output", project: "codeMode: {maxOutputBytes: 67108865}\n", want: `"codeMode.maxOutputBytes" in a project's .dsh/config.yaml may lower the budget but not raise it`},
		{name: "invalid stays invalid", project: "codeMode: {heapMiB: 0}\n", want: `:1: codeMode.heapMiB must be an integer from 1 to 1048576, got "0"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := setup(t, tc.user, tc.project, env{})
			_, err := Load(opts)
			projectFile := filepath.Join(opts.Dir, ".dsh", "config.yaml")
			want := strings.ReplaceAll(tc.want, "%USER%", filepath.Join(opts.Home, "config.yaml"))
			if err == nil || !strings.HasPrefix(err.Error(), projectFile+":") || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v\nwant it to contain %s", err, want)
			}
			// The same value is accepted from the user's own file.
			if _, err := Load(setup(t, tc.project, "", env{})); err != nil && tc.name != "invalid stays invalid" {
				t.Fatalf("user file: %v", err)
			}
		})
	}
}
