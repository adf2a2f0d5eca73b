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
	if c.Model != "deepseek-flash" || c.BaseURL != "https://api.deepseek.com" || c.APIKeyEnv != "DEEPSEEK_API_KEY" ||
		c.Mode != tool.ModeNative || c.MaxParallelToolCalls != 10 || c.MaxSteps != 50 || c.ToolOrder != nil ||
		c.Sessions.Root != filepath.Join(opts.Home, "sessions") || c.Sessions.Compression != session.CompressionZstd ||
		c.Shell.Sandbox != SandboxAuto || c.Shell.MaxProcesses != 4096 || c.Shell.MaxMemoryMiB != 8192 ||
		c.Home != opts.Home || c.Spill.MaxInlineBytes != 50000 || len(c.MCP.Servers) != 0 {
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
shell:
  maxProcesses: 300
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
	opts := setup(t, user, project, env{"DSH_MAX_STEPS": "7", "DSH_SHELL_SANDBOX": "bwrap", "DSH_SHELL_MAX_MEMORY_MIB": "2048", "DEEPSEEK_API_KEY": "sk-secret"},
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
		{"permissions.deny", `["bash(rm *)", "write(secrets/**)"]`, projectFile + ":7"},
		{"reminder.thresholds", "[4, 6]", userFile + ":8"},
		{"reminder.exclude", `["todo_write"]`, projectFile + ":9"},
		{"reminder.argumentsPreviewChars", "500", "default"},
		{"shell.sandbox", "bwrap", "env DSH_SHELL_SANDBOX"},
		{"shell.maxProcesses", "300", userFile + ":16"},
		{"shell.maxMemoryMiB", "2048", "env DSH_SHELL_MAX_MEMORY_MIB"},
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
		{"sessions:\n  root: /tmp/x\n", "sessions.root", "session logs"},
		{"sessions:\n  store: postgres://evil.example/db\n", "sessions.store", "send your session logs to a database"},
		{"spill:\n  dir: /tmp/x\n", "spill.dir", "spilled results"},
		{"permissions:\n  openProtected: [.git]\n", "permissions.openProtected", "open its .git or its own policy to writes"},
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

// item renders a permission-list entry as "value@layer source" for comparisons.
func item(it Item) string { return it.Value + "@" + it.Source.Layer() + " " + it.Source.String() }

// TestPermissionListsAccumulate pins the layering of every permission list: the entries of
// the user's file, the project's file and the flags are appended in that order, each entry
// once, and no later layer removes or reorders an earlier one's — in particular a project
// file's empty lists leave the user's rules in force.
func TestPermissionListsAccumulate(t *testing.T) {
	type want struct {
		key   string
		items []string // "value@layer source", with U and P standing for the two files
	}
	cases := []struct {
		name          string
		user, project string
		flags         []Setting
		want          []want
	}{
		{
			name:    "a project's empty lists remove nothing",
			user:    "permissions:\n  deny: [\"bash(rm *)\"]\n  ask: [\"bash(git push*)\"]\n",
			project: "permissions: {deny: [], ask: []}\n",
			want: []want{
				{"permissions.deny", []string{"bash(rm *)@user file U:2"}},
				{"permissions.ask", []string{"bash(git push*)@user file U:3"}},
				{"permissions.allow", []string{}},
			},
		},
		{
			name:    "deny: the project's entries come after the user's, repeated ones once",
			user:    "permissions:\n  deny:\n    - \"bash(rm *)\"\n    - read(**/.env)\n",
			project: "permissions:\n  deny: [\"write(secrets/**)\", \"bash(rm *)\"]\n",
			flags:   []Setting{{Key: "permissions.deny", Values: []string{"bash(curl *)", "read(**/.env)"}, Flag: "--deny"}},
			want: []want{{"permissions.deny", []string{
				"bash(rm *)@user file U:3", "read(**/.env)@user file U:4",
				"write(secrets/**)@project file P:2", "bash(curl *)@flag flag --deny",
			}}},
		},
		{
			name:    "ask: the same, and a null list adds nothing",
			user:    "permissions:\n  ask: [mcp__*]\n  deny:\n",
			project: "permissions:\n  ask: [\"bash(git push*)\", mcp__*]\n",
			flags:   []Setting{{Key: "permissions.ask", Values: []string{"write(src/**)"}, Flag: "--ask"}},
			want: []want{
				{"permissions.ask", []string{"mcp__*@user file U:2", "bash(git push*)@project file P:2", "write(src/**)@flag flag --ask"}},
				{"permissions.deny", []string{}},
			},
		},
		{
			name:  "allow: the user's file and the flags",
			user:  "permissions:\n  allow: [read, grep]\n",
			flags: []Setting{{Key: "permissions.allow", Values: []string{"bash(go test *)", "read"}, Flag: "--allow"}},
			want:  []want{{"permissions.allow", []string{"read@user file U:2", "grep@user file U:2", "bash(go test *)@flag flag --allow"}}},
		},
		{
			name: "nothing set: empty lists from the defaults",
			want: []want{{"permissions.allow", []string{}}, {"permissions.ask", []string{}}, {"permissions.deny", []string{}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := setup(t, tc.user, tc.project, env{}, tc.flags...)
			c, err := Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			userFile := filepath.Join(opts.Home, "config.yaml")
			projectFile := filepath.Join(opts.Dir, ".dsh", "config.yaml")
			lists := map[string][]string{"permissions.allow": c.Permissions.Allow, "permissions.ask": c.Permissions.Ask, "permissions.deny": c.Permissions.Deny}
			for _, w := range tc.want {
				got := []string{}
				values := []string{}
				for _, it := range c.Items(w.key) {
					s := strings.ReplaceAll(item(it), userFile, "U")
					got = append(got, strings.ReplaceAll(s, projectFile, "P"))
					values = append(values, it.Value)
				}
				if diff := cmp.Diff(w.items, got); diff != "" {
					t.Errorf("%s items (-want +got):\n%s", w.key, diff)
				}
				if diff := cmp.Diff(values, lists[w.key]); diff != "" {
					t.Errorf("%s: the rules see other entries than dsh config shows (-shown +rules):\n%s", w.key, diff)
				}
			}
			// The entries dsh config shows carry the same items.
			for _, e := range c.Entries() {
				if strings.HasPrefix(e.Key, "permissions.") && !cmp.Equal(e.Items, c.Items(e.Key)) {
					t.Errorf("entry %s items %v, want %v", e.Key, e.Items, c.Items(e.Key))
				}
				if !strings.HasPrefix(e.Key, "permissions.") && e.Items != nil {
					t.Errorf("entry %s has items %v", e.Key, e.Items)
				}
			}
		})
	}
}

// TestOtherListsReplace pins the decision for the keys that only tune the agent (the lists
// among them too): a later layer, the project's file included, replaces them as a whole.
func TestOtherListsReplace(t *testing.T) {
	user := "toolOrder: [read, \"<unlisted-tools>\"]\nreminder:\n  thresholds: [3, 5]\n  include: [bash]\n  exclude: [read]\n" +
		"model: m1\nmode: both\nspill: {maxInlineBytes: 1000}\n"
	project := "toolOrder: [grep, \"<unlisted-tools>\"]\nreminder:\n  thresholds: [4]\n  include: [grep]\n  exclude: []\n" +
		"model: m2\nmode: code\nspill: {maxInlineBytes: 90000}\n"
	c, err := Load(setup(t, user, project, env{}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.ToolOrder, []string{"grep", "<unlisted-tools>"}) || !slices.Equal(c.Reminder.Thresholds, []int{4}) ||
		!slices.Equal(c.Reminder.Include, []string{"grep"}) || len(c.Reminder.Exclude) != 0 {
		t.Fatalf("toolOrder %v, reminder %+v", c.ToolOrder, c.Reminder)
	}
	if c.Model != "m2" || c.Mode != tool.ModeCode || c.Spill.MaxInlineBytes != 90000 {
		t.Fatalf("model %q, mode %q, spill %d", c.Model, c.Mode, c.Spill.MaxInlineBytes)
	}
	for _, k := range []string{"toolOrder", "reminder.thresholds", "reminder.include", "reminder.exclude", "model", "mode", "spill.maxInlineBytes"} {
		if src := c.Source(k); !src.Project || src.Layer() != "project file" {
			t.Errorf("%s source %v (%s), want the project file", k, src, src.Layer())
		}
		if c.Items(k) != nil {
			t.Errorf("%s has items", k)
		}
	}
}

// TestProjectFileOnlyNarrows pins the keys a project's file may set only to a tighter
// value than the layers before it: the budgets may be lowered, the sandbox made stricter.
func TestProjectFileOnlyNarrows(t *testing.T) {
	cases := []struct {
		name, user, project string
		env                 env
		want                string // the error after "<project file>:<line>: ", or "" for success
		check               func(*Config) bool
	}{
		{name: "maxSteps lowered", user: "maxSteps: 30\n", project: "maxSteps: 20\n", check: func(c *Config) bool { return c.MaxSteps == 20 }},
		{name: "maxSteps equal", project: "maxSteps: 50\n", check: func(c *Config) bool { return c.MaxSteps == 50 }},
		{name: "maxSteps raised above the user's", user: "maxSteps: 30\n", project: "\nmaxSteps: 80\n",
			want: `"maxSteps" may only be lowered by a project's .dsh/config.yaml, not raised: 80 is above 30 from user file U:1; raise it in the user configuration, the environment or a flag`},
		{name: "maxSteps raised above the default", project: "maxSteps: 51\n",
			want: `"maxSteps" may only be lowered by a project's .dsh/config.yaml, not raised: 51 is above 50 from the default; raise it in the user configuration, the environment or a flag`},
		{name: "maxSteps raised but the environment decides", project: "maxSteps: 80\n", env: env{"DSH_MAX_STEPS": "90"}, check: func(c *Config) bool { return c.MaxSteps == 90 }},
		{name: "maxParallelToolCalls lowered", project: "maxParallelToolCalls: 2\n", check: func(c *Config) bool { return c.MaxParallelToolCalls == 2 }},
		{name: "maxParallelToolCalls raised", user: "maxParallelToolCalls: 4\n", project: "maxParallelToolCalls: 64\n",
			want: `"maxParallelToolCalls" may only be lowered by a project's .dsh/config.yaml, not raised: 64 is above 4 from user file U:1; raise it in the user configuration, the environment or a flag`},
		{name: "sandbox made stricter", project: "shell: {sandbox: bwrap}\n", check: func(c *Config) bool { return c.Shell.Sandbox == SandboxBwrap }},
		{name: "sandbox unchanged", project: "shell: {sandbox: auto}\n", check: func(c *Config) bool { return c.Shell.Sandbox == SandboxAuto }},
		{name: "sandbox off by default", project: "shell:\n  sandbox: none\n",
			want: `"shell.sandbox" may only be made stricter by a project's .dsh/config.yaml, not weaker: "none" is weaker than "auto" from the default; choose it in the user configuration, the environment or a flag`},
		{name: "command limits lowered", project: "shell: {maxProcesses: 64, maxMemoryMiB: 512}\n", check: func(c *Config) bool { return c.Shell.MaxProcesses == 64 && c.Shell.MaxMemoryMiB == 512 }},
		{name: "sandbox turned off", user: "shell:\n  sandbox: bwrap\n", project: "shell:\n  sandbox: none\n",
			want: `"shell.sandbox" may only be made stricter by a project's .dsh/config.yaml, not weaker: "none" is weaker than "bwrap" from user file U:2; choose it in the user configuration, the environment or a flag`},
		{name: "a bad value is still a bad value", project: "maxSteps: 0\n", want: "maxSteps must be a positive integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := setup(t, tc.user, tc.project, tc.env)
			c, err := Load(opts)
			if tc.want == "" {
				if err != nil || !tc.check(c) {
					t.Fatalf("config %+v, err %v", c, err)
				}
				return
			}
			projectFile := filepath.Join(opts.Dir, ".dsh", "config.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			got := strings.ReplaceAll(err.Error(), filepath.Join(opts.Home, "config.yaml"), "U")
			line := strings.Count(strings.Split(tc.project, "max")[0], "\n") + 1
			if strings.HasPrefix(tc.project, "shell:\n") {
				line = 2
			}
			if want := fmt.Sprintf("%s:%d: %s", projectFile, line, tc.want); got != want {
				t.Fatalf("error:\n got  %s\n want %s", got, want)
			}
			// The same value is accepted from the user's own file.
			if _, err := Load(setup(t, tc.project, "", tc.env)); err != nil && !strings.Contains(tc.want, "positive") {
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
		{name: "unknown top", user: "model: x\nmodle: y\n", locator: "2", want: `unknown key "modle" (known keys here: model, baseUrl, apiKeyEnv, provider, thinking, reasoningEffort, mode, codeRuntime, maxParallelToolCalls, maxSteps, toolOrder, sessions, permissions, reminder, spill, redact, shell, limits, web, pricing, codeMode, mcp)`},
		{name: "unknown nested", user: "sessions:\n  rot: x\n", locator: "2", want: `unknown key "sessions.rot" (known keys here: sessions.root, sessions.compression, sessions.store)`},
		{name: "store not a URL", user: "sessions:\n  store: /var/sessions\n", locator: "2", want: `sessions.store must be a postgres:// URL (or empty for the file store under sessions.root), got "/var/sessions"`},
		{name: "store bad URL", user: "sessions:\n  store: \"postgres://u:hunter2@h:port/db\"\n", locator: "2", want: `sessions.store is not a valid URL: parse "(an unparsable URL)": invalid port ":port" after host`},
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
		{name: "sandbox", user: "shell:\n  sandbox: docker\n", locator: "2", want: `shell.sandbox must be "auto", "bwrap" or "none", got "docker"`},
		{name: "max processes", user: "shell:\n  maxProcesses: 0\n", locator: "2", want: "shell.maxProcesses must be a positive integer"},
		{name: "max memory", user: "shell:\n  maxMemoryMiB: -1\n", locator: "2", want: "shell.maxMemoryMiB must be a positive integer"},
		{name: "max memory huge", user: "shell:\n  maxMemoryMiB: 2000000000\n", locator: "2", want: "shell.maxMemoryMiB must be at most 1073741824, got 2000000000"},
		{name: "tool order rest", user: "toolOrder: [read]\n", locator: "1", want: `toolOrder must contain the "<unlisted-tools>" rest entry (where unlisted tools are inserted)`},
		{name: "tool order type", user: "toolOrder: read\n", locator: "1", want: "toolOrder must be a list of strings"},
		{name: "thresholds", user: "reminder:\n  thresholds: [3, 1]\n", locator: "2", want: "repeat-tool-reminder: invalid threshold 1 — every threshold must be an integer >= 2"},
		{name: "thresholds empty", user: "reminder:\n  thresholds: []\n", locator: "2", want: "repeat-tool-reminder: `thresholds` must not be empty"},
		{name: "preview", user: "reminder:\n  argumentsPreviewChars: 0\n", locator: "2", want: "repeat-tool-reminder: invalid argumentsPreviewChars 0 — must be an integer >= 1"},
		{name: "spill", user: "spill:\n  maxInlineBytes: -1\n", locator: "2", want: "spill-policy: maxInlineBytes must be a non-negative integer (got -1)"},
		{name: "section type", user: "reminder: 3\n", locator: "1", want: "reminder must be a mapping"},
		{name: "provider", user: "provider: openai\n", locator: "1", want: `provider must be "deepseek" or "openai-compatible", got "openai"`},
		{name: "thinking", user: "thinking: on\n", locator: "1", want: `thinking must be "enabled" or "disabled", got "on"`},
		{name: "effort", user: "reasoningEffort: medium\n", locator: "1", want: `reasoningEffort must be "low", "high" or "max", got "medium"`},
		{name: "web url", user: "web: {baseUrl: api.deepseek.com}\n", locator: "1", want: `web.baseUrl must be an absolute http or https URL, got "api.deepseek.com"`},
		{name: "price negative", user: "pricing:\n  models: {m: {cacheHit: 0, cacheMiss: -1, output: 1}}\n", locator: "2", want: `the prices of model "m" must be non-negative numbers, got {CacheHit:0 CacheMiss:-1 Output:1}`},
		{name: "holiday", user: "pricing:\n  holidays: [Oct 1]\n", locator: "2", want: `holiday "Oct 1" is not a date like 2026-10-01`},
		{name: "off-peak", user: "pricing:\n  offPeakFactor: 2\n", locator: "2", want: `offPeakFactor must be above 0 and at most 1, got 2`},
		{name: "env thinking", env: env{"DSH_THINKING": "yes"}, locator: "env", want: `environment variable DSH_THINKING: thinking must be "enabled" or "disabled", got "yes"`},
		{name: "root type", user: "- a\n- b\n", locator: "1", want: "the configuration must be a mapping of keys to values"},
		{name: "env int", env: env{"DSH_MAX_STEPS": "0"}, locator: "env", want: "environment variable DSH_MAX_STEPS: maxSteps must be a positive integer"},
		{name: "env mode", env: env{"DSH_MODE": "fast"}, locator: "env", want: `environment variable DSH_MODE: mode must be "native", "code" or "both", got "fast"`},
		{name: "env spill", env: env{"DSH_SPILL_MAX_INLINE_BYTES": "1.5"}, locator: "env", want: "environment variable DSH_SPILL_MAX_INLINE_BYTES: spill-policy: maxInlineBytes must be a non-negative integer (got 1.5)"},
		{name: "flag unknown", flags: []Setting{{Key: "colour", Value: "x", Flag: "--colour"}}, locator: "flag", want: `flag --colour: unknown configuration key "colour"`},
		{name: "flag list", flags: []Setting{{Key: "permissions.allow", Value: "read", Flag: "--allow"}}, locator: "flag", want: "flag --allow: permissions.allow takes a list of values"},
		{name: "flag scalar", flags: []Setting{{Key: "model", Values: []string{"a"}}}, locator: "flag", want: "flag --model: model takes one value, not a list"},
		{name: "open protected empty", user: "permissions:\n  openProtected: [\"\"]\n", locator: "2", want: "permissions.openProtected must not hold an empty path"},
		{name: "open protected type", user: "permissions:\n  openProtected: .git\n", locator: "2", want: "permissions.openProtected must be a list of strings"},
		{name: "env open protected empty", env: env{"DSH_OPEN_PROTECTED": ".git::.dsh"}, locator: "env", want: "environment variable DSH_OPEN_PROTECTED: permissions.openProtected must not hold an empty path"},
		{name: "flag open protected scalar", flags: []Setting{{Key: "permissions.openProtected", Value: ".git", Flag: "--open-protected"}}, locator: "flag", want: "flag --open-protected: permissions.openProtected takes a list of values"},
		{name: "max arg bytes", user: "limits:\n  maxArgBytes: 0\n", locator: "2", want: "limits.maxArgBytes must be a positive integer"},
		{name: "env max arg bytes", env: env{"DSH_MAX_ARG_BYTES": "1MB"}, locator: "env", want: "environment variable DSH_MAX_ARG_BYTES: limits.maxArgBytes must be a positive integer"},
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
		if e.Value == "" && e.Key != "spill.dir" && e.Key != "sessions.store" {
			t.Errorf("entry %s has no value", e.Key)
		}
	}
	var want []string
	for _, k := range Keys() {
		if k[0] == "apiKeyEnv" {
			want = append(want, k[0], "apiKey")
			continue
		}
		if k[0] == "pricing.models" { // one entry per model
			want = append(want, "pricing.models.deepseek-flash", "pricing.models.deepseek-v4-flash", "pricing.models.deepseek-v4-pro")
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

func TestOpenProtectedAndLimits(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		opts := setup(t, "", "", nil)
		c, err := Load(opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.OpenProtected) != 0 || c.OpenProtected == nil || c.Limits.MaxArgBytes != tool.DefaultMaxArgBytes || c.Home != opts.Home {
			t.Errorf("config = %+v", c)
		}
	})
	t.Run("user file", func(t *testing.T) {
		opts := setup(t, "permissions:\n  openProtected: [.git/hooks, ~/notes, /abs/x]\nlimits:\n  maxArgBytes: 4096\n", "model: m\n", nil)
		c, err := Load(opts)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{".git/hooks", filepath.Join(opts.UserHome, "notes"), "/abs/x"}; !slices.Equal(c.OpenProtected, want) {
			t.Errorf("OpenProtected = %q, want %q", c.OpenProtected, want)
		}
		if c.Limits.MaxArgBytes != 4096 {
			t.Errorf("MaxArgBytes = %d", c.Limits.MaxArgBytes)
		}
		user := filepath.Join(opts.Home, "config.yaml")
		if got := c.Source("permissions.openProtected").String(); got != user+":2" {
			t.Errorf("source = %s", got)
		}
		if got := c.Source("limits.maxArgBytes").String(); got != user+":4" {
			t.Errorf("source = %s", got)
		}
	})
	t.Run("environment and flag", func(t *testing.T) {
		opts := setup(t, "permissions:\n  openProtected: [.git]\n", "", env{"DSH_OPEN_PROTECTED": ".dsh:.git/hooks", "DSH_MAX_ARG_BYTES": "2048"})
		c, err := Load(opts)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.OpenProtected, []string{".dsh", ".git/hooks"}) || c.Source("permissions.openProtected").String() != "env DSH_OPEN_PROTECTED" {
			t.Errorf("OpenProtected = %q from %s", c.OpenProtected, c.Source("permissions.openProtected"))
		}
		if c.Limits.MaxArgBytes != 2048 || c.Source("limits.maxArgBytes").String() != "env DSH_MAX_ARG_BYTES" {
			t.Errorf("MaxArgBytes = %d from %s", c.Limits.MaxArgBytes, c.Source("limits.maxArgBytes"))
		}
		opts.Flags = []Setting{{Key: "permissions.openProtected", Values: []string{".git/config"}, Flag: "--open-protected"}}
		if c, err = Load(opts); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.OpenProtected, []string{".git/config"}) || c.Source("permissions.openProtected").String() != "flag --open-protected" {
			t.Errorf("OpenProtected = %q from %s", c.OpenProtected, c.Source("permissions.openProtected"))
		}
	})
	t.Run("a project may set the limit", func(t *testing.T) {
		c, err := Load(setup(t, "", "limits: {maxArgBytes: 100}\n", nil))
		if err != nil || c.Limits.MaxArgBytes != 100 {
			t.Fatalf("config = %+v, %v", c, err)
		}
	})
}

func TestDeepSeekKeys(t *testing.T) {
	user := `model: deepseek-v4-pro
thinking: disabled
reasoningEffort: max
pricing:
  models: {my-model: {cacheHit: 1, cacheMiss: 2, output: 3}}
  holidays: [2026-10-01, 2026-10-02]
`
	c, err := Load(setup(t, user, "", nil))
	if err != nil {
		t.Fatal(err)
	}
	mc := c.ModelConfig()
	if mc.Model != "deepseek-v4-pro" || mc.Thinking != "disabled" || mc.ReasoningEffort != "max" || mc.Provider != "" {
		t.Errorf("model config = %+v", mc)
	}
	// A models mapping adds to the defaults, key by key.
	if p := c.Pricing.Models["my-model"]; p.Output != 3 || c.Pricing.Models["deepseek-flash"].Output != 8 ||
		!slices.Equal(c.Pricing.Holidays, []string{"2026-10-01", "2026-10-02"}) || c.Pricing.Currency != "CNY" {
		t.Errorf("pricing = %+v", c.Pricing)
	}
	if !c.IsDeepSeek() {
		t.Error("api.deepseek.com is DeepSeek")
	}
	if u, ok := c.WebBaseURL(); !ok || u != "https://api.deepseek.com" {
		t.Errorf("WebBaseURL = %q, %v", u, ok)
	}
	if c.Source("pricing.holidays").Line != 6 {
		t.Errorf("holidays source = %v", c.Source("pricing.holidays"))
	}
}

func TestWebToolsFollowTheServer(t *testing.T) {
	tests := []struct {
		name string
		env  env
		url  string
		on   bool
	}{
		{"DeepSeek", env{}, "https://api.deepseek.com", true},
		{"local server", env{"DSH_BASE_URL": "http://localhost:11434/v1"}, "", false},
		{"local server said to be DeepSeek", env{"DSH_BASE_URL": "http://127.0.0.1:9/", "DSH_PROVIDER": "deepseek"}, "http://127.0.0.1:9/", true},
		{"DeepSeek said not to be", env{"DSH_PROVIDER": "openai-compatible"}, "", false},
		{"configured endpoint", env{"DSH_BASE_URL": "http://localhost:11434/v1", "DSH_WEB_BASE_URL": "https://search.example.com"}, "https://search.example.com", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(setup(t, "", "", tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if u, ok := c.WebBaseURL(); ok != tt.on || u != tt.url {
				t.Errorf("WebBaseURL = %q, %v; want %q, %v", u, ok, tt.url, tt.on)
			}
		})
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

func TestProjectMayNotRedirectWebRequests(t *testing.T) {
	_, err := Load(setup(t, "", "web:\n  baseUrl: https://evil.example.com\n", nil))
	if err == nil || !strings.Contains(err.Error(), `"web.baseUrl" may be set only in the user configuration`) {
		t.Fatalf("error = %v", err)
	}
}

func TestProjectFileCannotRaiseCodeModeBudgets(t *testing.T) {
	for _, tc := range []struct{ name, user, project, want string }{
		{name: "above the default", project: "codeMode:\n  computeMs: 60001\n", want: `:2: "codeMode.computeMs" may only be lowered by a project's .dsh/config.yaml, not raised: 60001 is above 60000 from the default`},
		{name: "above the user's", user: "codeMode:\n  heapMiB: 256\n", project: "codeMode: {heapMiB: 512}\n", want: `:1: "codeMode.heapMiB" may only be lowered by a project's .dsh/config.yaml, not raised: 512 is above 256 from user file %USER%:2`},
		{name: "wall", project: "codeMode: {wallMs: 2147483647}\n", want: `"codeMode.wallMs" may only be lowered by a project's .dsh/config.yaml, not raised: 2147483647 is above 600000 from the default`},
		{name: "output", project: "codeMode: {maxOutputBytes: 67108865}\n", want: `"codeMode.maxOutputBytes" may only be lowered by a project's .dsh/config.yaml, not raised`},
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
