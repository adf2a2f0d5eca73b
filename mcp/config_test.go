package mcp_test

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/dsh/mcp"
)

func TestServerConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // "" for valid
	}{
		{"stdio", "command: node\nargs: [server.js]\nenv: {A: b}\ncwd: /tmp", ""},
		{"http", "url: http://127.0.0.1:3000/mcp\nheaders: {Authorization: Bearer x}", ""},
		{"explicit transport", "transport: streamable-http\nurl: https://example.invalid/mcp", ""},
		{"full reconnect", "command: x\nreconnect: {enabled: false, initialDelayMs: 1, maxDelayMs: 2147483647, maxAttempts: 1}", ""},
		{"neither", "cwd: /tmp", "mcp-client(srv): declare command (stdio) or url (streamable-http)"},
		{"both", "command: x\nurl: http://h/", "mcp-client(srv): declare either command (stdio) or url (streamable-http), not both"},
		{"transport mismatch", "transport: stdio\nurl: http://h/", `mcp-client(srv): transport "stdio" does not match the declaration, which is streamable-http`},
		{"bad url", "url: /relative", `mcp-client(srv): url "/relative" must be an absolute http or https URL`},
		{"headers on stdio", "command: x\nheaders: {A: b}", "mcp-client(srv): headers belong to streamable-http servers; this one has a command"},
		{"args on http", "url: http://h/\nargs: [a]", "mcp-client(srv): args, env and cwd belong to stdio servers; this one has a url"},
		{"unknown server key", "command: x\ncomand: y", "mcp-client(srv): comand is not a server option"},
		{"zero call timeout", "command: x\ntoolCallTimeoutMs: 0", "mcp-client(srv): toolCallTimeoutMs must be a positive finite number no greater than 2147483647"},
		{"huge startup timeout", "command: x\nstartupTimeoutMs: 2147483648", "mcp-client(srv): startupTimeoutMs must be a positive finite number no greater than 2147483647"},
		{"unknown reconnect key", "command: x\nreconnect: {retries: 3}", "mcp-client(srv): reconnect.retries is not a reconnect option"},
		{"initial delay zero", "command: x\nreconnect: {initialDelayMs: 0}", "mcp-client(srv): reconnect.initialDelayMs must be a positive finite number no greater than 2147483647"},
		{"initial delay nan", "command: x\nreconnect: {initialDelayMs: .nan}", "mcp-client(srv): reconnect.initialDelayMs must be a positive finite number no greater than 2147483647"},
		{"max delay infinite", "command: x\nreconnect: {maxDelayMs: .inf}", "mcp-client(srv): reconnect.maxDelayMs must be a positive finite number no greater than 2147483647"},
		{"initial above max", "command: x\nreconnect: {initialDelayMs: 2000, maxDelayMs: 1000}", "mcp-client(srv): reconnect.initialDelayMs must be less than or equal to maxDelayMs"},
		{"initial above default max", "command: x\nreconnect: {initialDelayMs: 40000}", "mcp-client(srv): reconnect.initialDelayMs must be less than or equal to maxDelayMs"},
		{"fractional attempts", "command: x\nreconnect: {maxAttempts: 2.5}", "mcp-client(srv): reconnect.maxAttempts must be a positive integer"},
		{"zero attempts", "command: x\nreconnect: {maxAttempts: 0}", "mcp-client(srv): reconnect.maxAttempts must be a positive integer"},
		{"negative attempts", "command: x\nreconnect: {maxAttempts: -1}", "mcp-client(srv): reconnect.maxAttempts must be a positive integer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cfg mcp.ServerConfig
			if err := yaml.Unmarshal([]byte(tc.yaml), &cfg); err != nil {
				t.Fatal(err)
			}
			err := cfg.Validate("srv")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestServerNames(t *testing.T) {
	cfg := mcp.ServerConfig{Command: "x"}
	for _, ok := range []string{"a", "A-b_9", strings.Repeat("x", 32)} {
		if err := cfg.Validate(ok); err != nil {
			t.Errorf("Validate(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a b", "a.b", strings.Repeat("x", 33), "é"} {
		if err := cfg.Validate(bad); err == nil || !strings.Contains(err.Error(), "must match ^[A-Za-z0-9_-]{1,32}$") {
			t.Errorf("Validate(%q) = %v", bad, err)
		}
	}
}

func TestConfigSection(t *testing.T) {
	var c struct {
		MCP mcp.Config `yaml:"mcp"`
	}
	src := "mcp:\n  servers:\n    fs: {command: npx, args: [-y, server]}\n    web: {url: 'http://127.0.0.1:1/mcp'}\n"
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.MCP.Servers) != 2 || c.MCP.Servers["fs"].Args[1] != "server" || c.MCP.Servers["web"].URL == "" {
		t.Fatalf("decoded %+v", c.MCP)
	}
	for name, s := range c.MCP.Servers {
		if err := s.Validate(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestReconnectDelay(t *testing.T) {
	p := mcp.ReconnectPolicy{InitialDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, w := range want {
		if got := p.Delay(i + 1); got != w {
			t.Errorf("Delay(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := p.Delay(1000); got != 30*time.Second {
		t.Errorf("Delay(1000) = %v", got)
	}
}

func TestChildEnv(t *testing.T) {
	parent := []string{"PATH=/bin", "HOME=/root", "OPENAI_API_KEY=x", "db_password=y", "GH_TOKEN=z", "CLIENT_SECRET=w",
		"DSH_HOME=/d", "dsh_debug=1", "KEEP=1", "OVERRIDE=old"}
	got := mcp.ChildEnv(parent, map[string]string{"OVERRIDE": "new", "NEEDED_TOKEN": "explicit"})
	want := []string{"PATH=/bin", "HOME=/root", "KEEP=1", "NEEDED_TOKEN=explicit", "OVERRIDE=new", "DSH_MCP_SERVE_DEPTH=1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("ChildEnv = %v, want %v", got, want)
	}
	// The depth marker is the one DSH_* variable passed on, one deeper than the parent's;
	// a declaration cannot reset it.
	for _, c := range []struct {
		parent []string
		extra  map[string]string
		want   string
	}{
		{[]string{"DSH_MCP_SERVE_DEPTH=1"}, nil, "DSH_MCP_SERVE_DEPTH=2"},
		{[]string{"DSH_MCP_SERVE_DEPTH=7", "DSH_HOME=/d"}, map[string]string{"DSH_MCP_SERVE_DEPTH": "0"}, "DSH_MCP_SERVE_DEPTH=8"},
		{[]string{"DSH_MCP_SERVE_DEPTH=junk"}, nil, "DSH_MCP_SERVE_DEPTH=1"},
		{[]string{"DSH_MCP_SERVE_DEPTH=-3"}, nil, "DSH_MCP_SERVE_DEPTH=1"},
	} {
		if got := strings.Join(mcp.ChildEnv(c.parent, c.extra), " "); got != c.want {
			t.Errorf("ChildEnv(%v, %v) = %q, want %q", c.parent, c.extra, got, c.want)
		}
	}
}

func TestDepth(t *testing.T) {
	for v, want := range map[string]int{"": 0, "0": 0, "1": 1, "12": 12, "-1": 0, "x": 0, " 2": 0} {
		if got := mcp.Depth(func(k string) string {
			if k != mcp.DepthEnv {
				t.Errorf("Depth read %q", k)
			}
			return v
		}); got != want {
			t.Errorf("Depth(%q) = %d, want %d", v, got, want)
		}
	}
}
