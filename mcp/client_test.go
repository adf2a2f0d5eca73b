package mcp_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/tool"
)

var badTools = []string{"echo", "hang", "crash", "malformed", "big", "bignote", "add_tool", "remove_tool",
	"fail", "rpcerror", "mixed", "legacy", "break_list", "stderr", "nonlossless", "slow", "task", "dotted.name/with spaces"}

func TestMountListsEveryPageInOrder(t *testing.T) {
	e := newEnv(t, mcp.Options{})
	m := e.mount("bad", badConfig("BAD_PAGE_SIZE=3"))
	if got := m.State(); got != mcp.StateConnected {
		t.Fatalf("State() = %s, want connected (err %v)", got, m.Err())
	}
	var raw, public []string
	for _, ti := range m.Tools() {
		raw = append(raw, ti.RawName)
		public = append(public, ti.Name)
	}
	if diff := cmp.Diff(badTools, raw); diff != "" {
		t.Fatalf("raw names (-want +got):\n%s", diff)
	}
	want := make([]string, len(badTools))
	for i, r := range badTools {
		want[i] = mcp.PublicToolName("bad", r)
	}
	if diff := cmp.Diff(want, public); diff != "" {
		t.Fatalf("public names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, e.reg.Names(nil)); diff != "" {
		t.Fatalf("registry names (-want +got):\n%s", diff)
	}
	if got := mcp.PublicToolName("bad", "dotted.name/with spaces"); !strings.HasPrefix(got, "mcp__bad__dotted_name_with_spaces_") || len(got) != len("mcp__bad__dotted_name_with_spaces_")+12 {
		t.Errorf("hashed public name = %q", got)
	}
	// The input schema is registered verbatim, member order included.
	def := e.reg.Get("mcp__bad__echo", nil)
	b, err := jsonv.Marshal(def.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}`; got != want {
		t.Errorf("parameters = %s, want %s", got, want)
	}
	if def.Description != "Echo text back." {
		t.Errorf("description = %q", def.Description)
	}
	if def.ConcurrencySafe != nil || def.Timeout != 0 {
		t.Errorf("MCP tools must be exclusive and declare no timeout")
	}
	a, ok := e.host.Annotations("mcp__bad__echo")
	if !ok || !a.ReadOnlyHint {
		t.Errorf("Annotations(echo) = %+v, %v; want readOnlyHint", a, ok)
	}
	if _, ok := e.host.Annotations("mcp__bad__hang"); ok {
		t.Errorf("hang declared no annotations")
	}
	if a := e.host.ServerAnnotations(def); a == nil || !a.ReadOnlyHint {
		t.Errorf("ServerAnnotations(echo) = %+v", a)
	}
	if a := e.host.ServerAnnotations(e.reg.Get("mcp__bad__hang", nil)); a != nil {
		t.Errorf("ServerAnnotations(hang) = %+v, want the default (none)", a)
	}
}

func TestCallResultsAndErrors(t *testing.T) {
	e := newEnv(t, mcp.Options{})
	e.mount("bad", badConfig())
	ctx := context.Background()

	res := e.call(ctx, "mcp__bad__echo", `{"text":"hi"}`)
	if res.IsError {
		t.Fatalf("echo failed: %+v", res.Error)
	}
	if got := text(t, res); got != "echo: hi" {
		t.Errorf("echo content = %q", got)
	}
	b, _ := jsonv.Marshal(res.Value)
	if got, want := string(b), `{"content":[{"text":"echo: hi","type":"text"}],"structuredContent":{"text":"hi"}}`; got != want {
		t.Errorf("echo value = %s, want %s", got, want)
	}

	tests := []struct {
		tool, args string
		isError    bool
		code       string
		text       string // the model-visible content, exactly
	}{
		{"fail", `{}`, true, "", "Error: it failed\nbadly"},
		{"rpcerror", `{}`, true, mcp.CodeServerError, "Error: MCP error -32602: bad params for rpcerror"},
		{"mixed", `{}`, false, "", "first\n" +
			"[image unavailable: image/png; this result was not admitted to durable model context; raw image data remains available to programmatic callers]\n" +
			"[audio result unsupported: unknown media type; raw audio data remains available to programmatic callers]\n" +
			"Resource link: readme (file:///readme.md)\n" +
			"[resource link unavailable: the MCP block is missing its name or URI]\n" +
			"[embedded resource unsupported; raw resource data remains available to programmatic callers]\n" +
			"[unsupported MCP content type: hologram]\n" +
			"[unsupported MCP content block: expected an object]\n" +
			"last"},
		{"legacy", `{}`, false, "", `{"answer":42}`},
		{"nonlossless", `{}`, true, mcp.CodeProtocol, ""},
		{"task", `{}`, true, "", `Error: Tool "task" requires task-based execution, which this bridge does not support`},
		{"malformed", `{}`, false, "", "survived the garbage"},
		// Non-object arguments reach the server as {}.
		{"echo", `null`, false, "", "echo: "},
		// A result without structuredContent violates echo's advertised output schema.
		{"slow", `{"ms":1}`, false, "", "slow done"},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			res := e.call(ctx, mcp.PublicToolName("bad", tc.tool), tc.args)
			if res.IsError != tc.isError || code(res) != tc.code {
				t.Fatalf("isError=%v code=%q (%+v), want %v %q", res.IsError, code(res), res.Error, tc.isError, tc.code)
			}
			if tc.text != "" {
				if got := text(t, res); got != tc.text {
					t.Errorf("content =\n%s\nwant\n%s", got, tc.text)
				}
			}
		})
	}
	m := e.host.Lookup("bad")
	notes := strings.Join(m.Notes(), "\n")
	for _, want := range []string{"skipped a malformed message", "this is not JSON at all", `invalid message version tag "1.0"`} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if m.State() != mcp.StateConnected {
		t.Errorf("state after garbage = %s", m.State())
	}
}

func TestStructuredContentMustMatchAdvertisedSchema(t *testing.T) {
	e := newEnv(t, mcp.Options{})
	e.mount("bad", badConfig())
	// The canonical value of echo is validated against {content, structuredContent: <echo's
	// outputSchema>}; a value the server returns outside it is INVALID_TOOL_OUTPUT.
	def := e.reg.Get("mcp__bad__echo", nil)
	out, _ := jsonv.Marshal(def.Output.Schema)
	want := `{"type":"object","properties":{"content":{"type":"array","items":{}},"structuredContent":{"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}},"required":["content","structuredContent"],"additionalProperties":false}`
	if string(out) != want {
		t.Errorf("output schema = %s\nwant %s", out, want)
	}
	def = e.reg.Get("mcp__bad__slow", nil)
	out, _ = jsonv.Marshal(def.Output.Schema)
	want = `{"type":"object","properties":{"content":{"type":"array","items":{}},"structuredContent":{}},"required":["content"],"additionalProperties":false}`
	if string(out) != want {
		t.Errorf("output schema without outputSchema = %s\nwant %s", out, want)
	}
}

func TestTimeoutSendsCancelled(t *testing.T) {
	e := newEnv(t, mcp.Options{})
	cfg := badConfig()
	cfg.ToolCallTimeoutMs = ms(200)
	m := e.mount("bad", cfg)
	res := e.call(context.Background(), "mcp__bad__hang", `{}`)
	if code(res) != mcp.CodeTimeout {
		t.Fatalf("hang: %+v, want %s", res.Error, mcp.CodeTimeout)
	}
	if got, want := res.Error.Message, `MCP server "bad" did not answer tools/call "hang" within 200ms; the call was cancelled`; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	// The server saw notifications/cancelled for the request it was hanging on.
	eventually(t, "the server to log the cancellation", func() bool {
		s := stderrOf(m)
		i := strings.Index(s, "hanging on ")
		if i < 0 {
			return false
		}
		id := strings.Fields(s[i+len("hanging on "):])[0]
		return strings.Contains(s, "cancelled "+id)
	})
	// The connection is still usable.
	if res := e.call(context.Background(), "mcp__bad__echo", `{"text":"after"}`); res.IsError {
		t.Fatalf("echo after timeout: %+v", res.Error)
	}
}

func TestCallerCancellationCancelsTheServerCall(t *testing.T) {
	e := newEnv(t, mcp.Options{})
	m := e.mount("bad", badConfig())
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		eventually(t, "the server to start hanging", func() bool { return strings.Contains(stderrOf(m), "hanging on") })
		cancel()
	}()
	res := e.call(ctx, "mcp__bad__hang", `{}`)
	if code(res) != tool.CodeAborted || res.Error.Message != "tool call aborted" {
		t.Fatalf("cancelled hang: %+v", res.Error)
	}
	eventually(t, "the server to log the cancellation", func() bool { return strings.Contains(stderrOf(m), "cancelled ") })

	// The bad server ignores cancellation and answers late; the bridge notes and drops that
	// answer. (This is the detector the npm cancellation test relies on.)
	// The caller cancels once the server has started on the request.
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	go func() {
		defer cancel()
		eventually(t, "the server to start on the slow call", func() bool { return strings.Contains(stderrOf(m), "slow on ") })
	}()
	if res := e.call(ctx, "mcp__bad__slow", `{"ms":300}`); code(res) != tool.CodeAborted {
		t.Fatalf("cancelled slow: %+v", res.Error)
	}
	eventually(t, "the late answer to be noted", func() bool {
		return slices.ContainsFunc(m.Notes(), func(n string) bool { return strings.Contains(n, "discarded a late response to abandoned request") })
	})
}

func TestCrashMidCallReconnects(t *testing.T) {
	e := newEnv(t, mcp.Options{})
	spawns := filepath.Join(t.TempDir(), "spawns")
	m := e.mount("bad", badConfig("BAD_SPAWNS="+spawns))
	res := e.call(context.Background(), "mcp__bad__crash", `{}`)
	if code(res) != mcp.CodeConnectionClosed {
		t.Fatalf("crash: %+v", res.Error)
	}
	for _, want := range []string{`MCP server "bad" connection closed during tools/call "crash": the server process exited (exit status 3)`, "last stderr line: badserver: crashing mid-call"} {
		if !strings.Contains(res.Error.Message, want) {
			t.Errorf("message %q lacks %q", res.Error.Message, want)
		}
	}
	eventually(t, "the reconnect", func() bool { return lines(spawns) == 2 && m.State() == mcp.StateConnected })
	if res := e.call(context.Background(), "mcp__bad__echo", `{"text":"back"}`); res.IsError || text(t, res) != "echo: back" {
		t.Fatalf("echo after reconnect: %+v", res)
	}
	if log := e.log.String(); !strings.Contains(log, "mcp-client(bad): connection lost; reconnecting in 20ms (attempt 1/10)") ||
		!strings.Contains(log, "mcp-client(bad): reconnected and re-synced tools (attempt 1/10)") {
		t.Errorf("log lacks the reconnect messages:\n%s", log)
	}
}

func TestGivingUpUnregistersTools(t *testing.T) {
	e := newEnv(t, mcp.Options{})
	spawns := filepath.Join(t.TempDir(), "spawns")
	cfg := badConfig("BAD_MODE=exit", "BAD_SPAWNS="+spawns)
	cfg.Reconnect.MaxAttempts = ms(2)
	m := e.mount("bad", cfg)
	eventually(t, "giving up", func() bool { return m.State() == mcp.StateFailed })
	if n := lines(spawns); n != 3 {
		t.Errorf("spawns = %d, want 3 (the original and two reconnect attempts)", n)
	}
	if !strings.Contains(e.log.String(), "mcp-client(bad): giving up after 2 consecutive failed reconnect attempts") {
		t.Errorf("log lacks the give-up message:\n%s", e.log.String())
	}
	if err := m.Err(); err == nil || !strings.Contains(err.Error(), "refusing to start") {
		t.Errorf("Err() = %v, want the server's stderr", err)
	}
	if len(e.reg.Names(nil)) != 0 {
		t.Errorf("tools still registered: %v", e.reg.Names(nil))
	}
}

func TestUptimeResetsTheAttemptBudget(t *testing.T) {
	// The connection's uptime is read from a clock the test moves past maxDelayMs before
	// each loss, so that each loss is a new outage.
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := newEnv(t, mcp.Options{Now: clock})
	spawns := filepath.Join(t.TempDir(), "spawns")
	cfg := badConfig("BAD_SPAWNS=" + spawns)
	cfg.Reconnect = &mcp.ReconnectConfig{InitialDelayMs: ms(10), MaxDelayMs: ms(50), MaxAttempts: ms(1)}
	m := e.mount("bad", cfg)
	for i := 2; i <= 3; i++ {
		mu.Lock()
		now = now.Add(time.Second) // longer than maxDelayMs
		mu.Unlock()
		e.call(context.Background(), "mcp__bad__crash", `{}`)
		eventually(t, "the reconnect", func() bool { return lines(spawns) == i && m.State() == mcp.StateConnected })
	}
}

func TestToolListChangedResyncs(t *testing.T) {
	e := newEnv(t, mcp.Options{})
	m := e.mount("bad", badConfig())
	// A re-sync touches only what changed: the tools listed as before stay registered
	// throughout, so a call racing the re-sync never finds them missing.
	var mu sync.Mutex
	var changes []string
	defer e.reg.OnChange(func(c tool.Change) error {
		mu.Lock()
		defer mu.Unlock()
		changes = append(changes, string(c.Kind)+" "+c.Name)
		return nil
	})()
	changed := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(changes) }
	if res := e.call(context.Background(), "mcp__bad__add_tool", `{"name":"fresh"}`); res.IsError {
		t.Fatal(res.Error)
	}
	// The registry makes a tool visible before it tells its listeners: wait for the change.
	eventually(t, "the new tool's registry change", func() bool { return len(changed()) > 0 })
	if e.reg.Get("mcp__bad__fresh", nil) == nil {
		t.Fatal("mcp__bad__fresh is not registered after its registry change")
	}
	if got, want := changed(), []string{string(tool.ChangeRegistered) + " mcp__bad__fresh"}; !slices.Equal(got, want) {
		t.Errorf("registry changes of the re-sync that added a tool = %q, want %q", got, want)
	}
	if res := e.call(context.Background(), "mcp__bad__fresh", `{}`); res.IsError || text(t, res) != "called fresh" {
		t.Fatalf("fresh: %+v", res)
	}
	if res := e.call(context.Background(), "mcp__bad__remove_tool", `{"name":"echo"}`); res.IsError {
		t.Fatal(res.Error)
	}
	eventually(t, "echo's registry change", func() bool { return len(changed()) > 1 })
	if e.reg.Get("mcp__bad__echo", nil) != nil {
		t.Fatal("mcp__bad__echo is still registered after its registry change")
	}
	if got, want := changed()[1:], []string{string(tool.ChangeUnregistered) + " mcp__bad__echo"}; !slices.Equal(got, want) {
		t.Errorf("registry changes of the re-sync that removed a tool = %q, want %q", got, want)
	}
	if slices.ContainsFunc(m.Tools(), func(ti mcp.ToolInfo) bool { return ti.RawName == "echo" }) {
		t.Errorf("Tools() still lists echo")
	}
	if res := e.call(context.Background(), "mcp__bad__echo", `{}`); code(res) != tool.CodeUnknownTool {
		t.Errorf("removed echo: %+v", res.Error)
	}
}

func TestFailedResyncKeepsTheLastGoodList(t *testing.T) {
	e := newEnv(t, mcp.Options{})
	m := e.mount("bad", badConfig())
	before := e.reg.Names(nil)
	if res := e.call(context.Background(), "mcp__bad__break_list", `{}`); res.IsError {
		t.Fatal(res.Error)
	}
	eventually(t, "the failed re-sync", func() bool {
		return strings.Contains(e.log.String(), "mcp-client(bad): tool re-sync failed: mcp-client(bad): tools/list result is not an object")
	})
	if got := e.reg.Names(nil); !slices.Equal(got, before) {
		t.Errorf("names after a failed re-sync = %v, want %v", got, before)
	}
	if res := e.call(context.Background(), "mcp__bad__echo", `{"text":"still here"}`); res.IsError || m.State() != mcp.StateConnected {
		t.Errorf("echo after a failed re-sync: %+v (state %s)", res.Error, m.State())
	}
}

func TestOversizedMessages(t *testing.T) {
	t.Run("a 50 MB response fails its call only", func(t *testing.T) {
		e := newEnv(t, mcp.Options{})
		m := e.mount("bad", badConfig())
		res := e.call(context.Background(), "mcp__bad__big", `{"mb":50}`)
		if code(res) != mcp.CodeResponseTooLarge {
			t.Fatalf("big: %+v", res.Error)
		}
		if want := `MCP server "bad": the tools/call "big" response of 52428873 bytes exceeds the 16777216-byte message limit and was discarded`; res.Error.Message != want {
			t.Errorf("message = %q\nwant %q", res.Error.Message, want)
		}
		if m.State() != mcp.StateConnected {
			t.Errorf("state = %s", m.State())
		}
		if res := e.call(context.Background(), "mcp__bad__echo", `{"text":"x"}`); res.IsError {
			t.Fatalf("echo after the big response: %+v", res.Error)
		}
	})
	t.Run("an oversized notification is skipped", func(t *testing.T) {
		e := newEnv(t, mcp.Options{MaxMessageBytes: 1 << 20})
		m := e.mount("bad", badConfig())
		res := e.call(context.Background(), "mcp__bad__bignote", `{"mb":2}`)
		if res.IsError || text(t, res) != "after the big notification" {
			t.Fatalf("bignote: %+v", res)
		}
		if notes := strings.Join(m.Notes(), "\n"); !strings.Contains(notes, "exceeds the 1048576-byte limit") {
			t.Errorf("notes = %s", notes)
		}
	})
}

func TestStartupFailures(t *testing.T) {
	tests := []struct {
		name string
		cfg  func() mcp.ServerConfig
		want string
	}{
		{"exit", func() mcp.ServerConfig { return badConfig("BAD_MODE=exit") },
			"mcp-client(bad): initial connection or tool synchronization failed: "},
		{"no initialize answer", func() mcp.ServerConfig {
			c := badConfig("BAD_MODE=noinit")
			c.StartupTimeoutMs = ms(200)
			return c
		}, "the server did not complete initialization within 200ms"},
		{"duplicate tool", func() mcp.ServerConfig { return badConfig("BAD_DUP=1") },
			`mcp-client(bad): server listed tool "echo" more than once — invalid tool list`},
		{"list not an object", func() mcp.ServerConfig { return badConfig("BAD_BADLIST=1") },
			"mcp-client(bad): tools/list result is not an object"},
		{"missing command", func() mcp.ServerConfig { return mcp.ServerConfig{Command: "/nonexistent/mcp-server"} },
			"starting /nonexistent/mcp-server"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mcp.Options{})
			cfg := tc.cfg()
			cfg.FailOnStartupError = true
			_, err := e.host.Mount(context.Background(), "bad", cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Mount error = %v, want it to contain %q", err, tc.want)
			}
			if e.host.Lookup("bad") != nil || len(e.reg.Names(nil)) != 0 {
				t.Errorf("a failed mount left state behind")
			}
			// Without failOnStartupError the mount survives and retries.
			cfg.FailOnStartupError = false
			m, err := e.host.Mount(context.Background(), "bad", cfg)
			if err != nil {
				t.Fatal(err)
			}
			if s := m.State(); s == mcp.StateConnected {
				t.Errorf("state = %s after a failed start", s)
			}
			if !strings.Contains(e.log.String(), "mcp-client(bad): connection attempt failed: ") {
				t.Errorf("log lacks the failure:\n%s", e.log.String())
			}
		})
	}
}

func TestRegistrationConflictRollsBack(t *testing.T) {
	e := newEnv(t, mcp.Options{})
	squat := tool.NewRaw("mcp__bad__hang", "", jsonv.NewObject(jsonv.Member{Name: "type", Value: "object"}), &jsonv.Object{},
		func(context.Context, *tool.Call) (any, error) { return "squatter", nil })
	if _, err := e.reg.Register(squat); err != nil {
		t.Fatal(err)
	}
	cfg := badConfig()
	cfg.FailOnStartupError = true
	if _, err := e.host.Mount(context.Background(), "bad", cfg); err == nil || !strings.Contains(err.Error(), `tool "mcp__bad__hang" is already registered`) {
		t.Fatalf("Mount error = %v", err)
	}
	cfg.FailOnStartupError = false
	m := e.mount("bad", cfg)
	if got := e.reg.Names(nil); !slices.Equal(got, []string{"mcp__bad__hang"}) {
		t.Errorf("names = %v, want only the squatter", got)
	}
	if len(m.Tools()) != 0 {
		t.Errorf("Tools() = %v after a rolled back generation", m.Tools())
	}
	if !strings.Contains(e.log.String(), "mcp-client(bad): tool registration failed, no tools registered: ") {
		t.Errorf("log lacks the rollback:\n%s", e.log.String())
	}
}

func TestReconnectDisabledKeepsFailingTools(t *testing.T) {
	e := newEnv(t, mcp.Options{})
	cfg := badConfig()
	cfg.Reconnect = &mcp.ReconnectConfig{Enabled: boolp(false)}
	m := e.mount("bad", cfg)
	e.call(context.Background(), "mcp__bad__crash", `{}`)
	eventually(t, "the disconnected state", func() bool { return m.State() == mcp.StateDisconnected })
	res := e.call(context.Background(), "mcp__bad__echo", `{"text":"x"}`)
	if code(res) != mcp.CodeNotConnected || !strings.Contains(res.Error.Message, `MCP server "bad" is not connected (disconnected): the server process exited (exit status 3)`) {
		t.Fatalf("echo while down: %+v", res.Error)
	}
	if !strings.Contains(e.log.String(), "connection lost and reconnect is disabled") {
		t.Errorf("log:\n%s", e.log.String())
	}
}

func TestHostNamesAndClose(t *testing.T) {
	e := newEnv(t, mcp.Options{})
	m := e.mount("bad", badConfig())
	_, err := e.host.Mount(context.Background(), "bad", badConfig())
	if want := `mcp-client: serverName "bad" is already in use by another mcp-client instance — pick a unique serverName in cordis.yml`; err == nil || err.Error() != want {
		t.Errorf("duplicate Mount error = %v, want %q", err, want)
	}
	if _, err := e.host.Mount(context.Background(), "bad name", badConfig()); err == nil {
		t.Errorf("an invalid server name was accepted")
	}
	if got := e.host.Mounts(); len(got) != 1 || got[0] != m {
		t.Errorf("Mounts() = %v", got)
	}
	m.Close()
	if m.State() != mcp.StateClosed || len(e.reg.Names(nil)) != 0 || e.host.Lookup("bad") != nil {
		t.Errorf("after Close: state %s, names %v", m.State(), e.reg.Names(nil))
	}
	// The name is free again.
	e.mount("bad", badConfig())
	e.host.Close()
	if _, err := e.host.Mount(context.Background(), "other", badConfig()); err == nil {
		t.Errorf("a closed host accepted a mount")
	}
}

func TestStderrIsBounded(t *testing.T) {
	e := newEnv(t, mcp.Options{StderrLimit: 64})
	m := e.mount("bad", badConfig())
	long := strings.Repeat("0123456789", 20)
	if res := e.call(context.Background(), "mcp__bad__stderr", `{"text":"`+long+`"}`); res.IsError {
		t.Fatal(res.Error)
	}
	eventually(t, "stderr", func() bool { b, dropped := m.Stderr(); return len(b) == 64 && dropped > 0 })
	b, _ := m.Stderr()
	if !strings.HasSuffix(string(b), "0123456789\n") {
		t.Errorf("Stderr() = %q, want the tail", b)
	}
}

func TestInstall(t *testing.T) {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	opts := mcp.Options{ShutdownGrace: 200 * time.Millisecond, Logger: discardLogger()}
	h, err := mcp.Install(context.Background(), reg, mcp.Config{Servers: map[string]mcp.ServerConfig{
		"one": badConfig(), "two": badConfig(),
	}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Mounts()) != 2 || reg.Get("mcp__one__echo", nil) == nil || reg.Get("mcp__two__echo", nil) == nil {
		t.Errorf("Install mounted %v", reg.Names(nil))
	}
	h.Close()
	if len(reg.Names(nil)) != 0 {
		t.Errorf("Close left %v", reg.Names(nil))
	}
	bad := badConfig("BAD_MODE=exit")
	bad.FailOnStartupError = true
	if _, err := mcp.Install(context.Background(), reg, mcp.Config{Servers: map[string]mcp.ServerConfig{"ok": badConfig(), "broken": bad}}, opts); err == nil {
		t.Fatal("Install succeeded with a failing failOnStartupError server")
	}
	if len(reg.Names(nil)) != 0 {
		t.Errorf("a failed Install left %v", reg.Names(nil))
	}
}
