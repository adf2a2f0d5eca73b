package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/internal/mcptest"
	"github.com/dsh-go/dsh/internal/testwait"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/tool"
)

type lookupIn struct {
	Key string `json:"key" jsonschema:"the key to look up"`
}

type lookupOut struct {
	Key   string `json:"key"`
	Value int    `json:"value"`
}

type empty struct{}

type waitOut struct {
	Cancelled bool `json:"cancelled"`
}

// fixture is a registry with tools of every class, the way `dsh mcp serve` would hold them.
type fixture struct {
	reg       *tool.Registry
	cancelled chan string // the slow tool reports here that its context was cancelled
	started   chan string // and here that it started
}

func newFixture(t testing.TB) *fixture {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{reg: reg, cancelled: make(chan string, 8), started: make(chan string, 8)}
	must := func(def *tool.Definition, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Register(def); err != nil {
			t.Fatal(err)
		}
	}
	must(tool.New("lookup", "Look a key up.", func(_ context.Context, _ *tool.Call, in lookupIn) (lookupOut, error) {
		if in.Key == "missing" {
			return lookupOut{}, tool.NewError("LookupError", "NOT_FOUND", "no such key: missing")
		}
		return lookupOut{Key: in.Key, Value: len(in.Key)}, nil
	}, tool.ConcurrencySafe()))
	must(tool.New("wait", "Wait until cancelled.", func(ctx context.Context, call *tool.Call, _ empty) (waitOut, error) {
		f.started <- call.CallID()
		<-ctx.Done()
		f.cancelled <- call.CallID()
		return waitOut{Cancelled: true}, ctx.Err()
	}))
	must(tool.New("write", "Write something.", func(context.Context, *tool.Call, empty) (string, error) { return "wrote", nil }))
	must(tool.New("guarded", "Needs a person's approval.", func(context.Context, *tool.Call, empty) (string, error) { return "ran", nil }))
	must(tool.New("forbidden", "Denied by policy.", func(context.Context, *tool.Call, empty) (string, error) { return "ran", nil }))
	reg.OnPreExecute(func(ctx context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		switch exec.Name() {
		case "guarded":
			return tool.Ask("guarded needs a person"), nil
		case "forbidden":
			return tool.Deny("rule: forbidden is denied in this workspace"), nil
		}
		return next()
	})
	reg.SetApprover(mcp.UnattendedApprover())
	return f
}

// serveForTest runs when the test binary is re-executed as a stdio MCP server.
func serveForTest() {
	f := newFixture(&testing.T{})
	s := mcp.NewServer(f.reg, mcp.ServerOptions{})
	err := s.ServeStdio(context.Background(), os.Stdin, os.Stdout)
	s.Close()
	if err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// recorder records the session hooks' calls.
type recorder struct {
	mu     sync.Mutex
	events []string
	agents map[string]*tool.Scope
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.events = append(r.events, s)
	r.mu.Unlock()
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) options(reg *tool.Registry) mcp.ServerOptions {
	return mcp.ServerOptions{OnSession: func(_ context.Context, info mcp.SessionInfo) (*mcp.Session, error) {
		r.add("open " + info.Transport)
		scope := reg.NewScope("mcp-"+info.ID, nil)
		return &mcp.Session{
			Agent:      scope,
			BeforeCall: func(_ context.Context, in tool.Input) error { r.add("call " + in.Name); return nil },
			AfterCall: func(_ context.Context, in tool.Input, res *tool.Result) {
				r.add("result " + in.Name + " " + map[bool]string{true: "error", false: "ok"}[res.IsError])
			},
			Close: func() { scope.Close(); r.add("close") },
		}, nil
	}}
}

func connectInMemory(t *testing.T, s *mcp.Server, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.ServeTransport(ctx, st) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, opts).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-served // the test's context has ended: testwait cannot bound a cleanup
	})
	return cs
}

func textOf(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		tc, ok := c.(*sdk.TextContent)
		if !ok {
			t.Fatalf("content %T, want text", c)
		}
		parts = append(parts, tc.Text)
	}
	return strings.Join(parts, "\n")
}

func TestServerWithGoClient(t *testing.T) {
	f := newFixture(t)
	rec := &recorder{}
	s := mcp.NewServer(f.reg, rec.options(f.reg))
	defer s.Close()
	changed := make(chan struct{}, 4)
	cs := connectInMemory(t, s, &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	ctx := context.Background()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sdk.Tool{}
	var names []string
	for _, tl := range list.Tools {
		byName[tl.Name] = tl
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"forbidden", "guarded", "lookup", "wait", "write"}, names); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	in, _ := json.Marshal(byName["lookup"].InputSchema)
	if want := `{"properties":{"key":{"description":"the key to look up","type":"string"}},"required":["key"],"type":"object"}`; string(in) != want {
		t.Errorf("lookup input schema = %s\nwant %s", in, want)
	}
	if byName["lookup"].OutputSchema == nil || byName["write"].OutputSchema != nil {
		t.Errorf("output schemas: lookup %v, write %v; want only the object one", byName["lookup"].OutputSchema, byName["write"].OutputSchema)
	}
	if a := byName["lookup"].Annotations; a == nil || !a.ReadOnlyHint {
		t.Errorf("lookup annotations = %+v, want read-only", a)
	}
	if a := byName["write"].Annotations; a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
		t.Errorf("write annotations = %+v, want destructive", a)
	}
	if a := byName["wait"].Annotations; a != nil {
		t.Errorf("wait annotations = %+v, want none", a)
	}

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "lookup", Arguments: map[string]any{"key": "abc"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || textOf(t, res) != "{\n  \"key\": \"abc\",\n  \"value\": 3\n}" {
		t.Errorf("lookup: %+v %q", res, textOf(t, res))
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"key":"abc","value":3}` {
		t.Errorf("structuredContent = %s", sc)
	}

	failures := []struct {
		name, args, text, code string
	}{
		{"lookup", `{"key":"missing"}`, "Error: no such key: missing", "NOT_FOUND"},
		{"lookup", `{}`, `Error: invalid arguments: missing required property "key"`, tool.CodeInvalidArgs},
		{"forbidden", `{}`, "Error: rule: forbidden is denied in this workspace", ""},
		{"guarded", `{}`, `Error: tool "guarded" requires approval, but no approval channel is available`, ""},
		{"nope", `{}`, `Error: unknown tool "nope"`, tool.CodeUnknownTool},
		{"lookup", `null`, `Error: invalid arguments: missing required property "key"`, tool.CodeInvalidArgs},
	}
	for _, fc := range failures {
		t.Run(fc.name+fc.args, func(t *testing.T) {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: fc.name, Arguments: json.RawMessage(fc.args)})
			if fc.name == "nope" {
				// The SDK answers a call of an unlisted tool itself, with a protocol error.
				if err == nil || !strings.Contains(err.Error(), "nope") {
					t.Fatalf("unknown tool: %v, %+v", err, res)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || textOf(t, res) != fc.text {
				t.Errorf("got isError=%v %q, want %q", res.IsError, textOf(t, res), fc.text)
			}
			e, _ := res.Meta["dsh/error"].(map[string]any)
			info, _ := e["info"].(map[string]any)
			if got, _ := info["code"].(string); got != fc.code {
				t.Errorf("_meta dsh/error = %v, want code %q", res.Meta, fc.code)
			}
		})
	}

	// Cancelling the client's call cancels the tool's context through the pipeline.
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		select {
		case <-f.started: // the tool runs: cancel the client's call
		case <-cctx.Done():
		}
	}()
	_, err = cs.CallTool(cctx, &sdk.CallToolParams{Name: "wait", Arguments: map[string]any{}})
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	testwait.Recv(t, f.cancelled, "the tool to see the cancellation")

	// Registry changes reach the client.
	unregister, err := f.reg.Register(tool.Must(tool.New("late", "Registered later.", func(context.Context, *tool.Call, empty) (string, error) { return "late", nil })))
	if err != nil {
		t.Fatal(err)
	}
	waitChanged := func() {
		t.Helper()
		testwait.Recv(t, changed, "notifications/tools/list_changed")
	}
	waitChanged()
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "late"}); err != nil || textOf(t, res) != "late" {
		t.Fatalf("late: %v %+v", err, res)
	}
	unregister()
	waitChanged()
	list, _ = cs.ListTools(ctx, nil)
	if slices.ContainsFunc(list.Tools, func(tl *sdk.Tool) bool { return tl.Name == "late" }) {
		t.Errorf("the unregistered tool is still listed")
	}

	cs.Close()
	eventually(t, "the session's Close hook", func() bool { return slices.Contains(rec.all(), "close") })
	got := rec.all()
	if got[0] != "open stdio" || !slices.Contains(got, "call forbidden") || !slices.Contains(got, "result forbidden error") || !slices.Contains(got, "result lookup ok") {
		t.Errorf("session events = %v", got)
	}
}

func TestServerCodeModeListsOnlyRunCode(t *testing.T) {
	reg, err := tool.NewRegistry(tool.Config{Mode: tool.ModeCode})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(tool.Must(tool.New("write", "", func(context.Context, *tool.Call, empty) (string, error) { return "", nil }))); err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(reg, mcp.ServerOptions{})
	defer s.Close()
	cs := connectInMemory(t, s, nil)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 1 || list.Tools[0].Name != tool.RunCodeName {
		t.Fatalf("code mode lists %v", list.Tools)
	}
	if a := list.Tools[0].Annotations; a == nil || a.DestructiveHint == nil || !*a.DestructiveHint {
		t.Errorf("run_code annotations = %+v", a)
	}
}

func TestServerOverStreamableHTTP(t *testing.T) {
	f := newFixture(t)
	rec := &recorder{}
	s := mcp.NewServer(f.reg, rec.options(f.reg))
	hs := httptest.NewServer(s.Handler(nil))
	defer hs.Close()
	defer s.Close()
	ctx := context.Background()
	for i := range 2 {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: hs.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "lookup", Arguments: map[string]any{"key": "http"}})
		if err != nil || res.IsError {
			t.Fatalf("connection %d: %v %+v", i, err, res)
		}
		cs.Close()
	}
	eventually(t, "both sessions to close", func() bool {
		n := 0
		for _, e := range rec.all() {
			if e == "close" {
				n++
			}
		}
		return n == 2
	})
	if opens := slices.DeleteFunc(rec.all(), func(e string) bool { return !strings.HasPrefix(e, "open") }); !slices.Equal(opens, []string{"open streamable-http", "open streamable-http"}) {
		t.Errorf("sessions = %v", opens)
	}
}

// TestBridgeToDshServer mounts a dsh MCP server (this test binary re-executed) through the
// client bridge: both halves of the package against each other over stdio.
func TestBridgeToDshServer(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, mcp.Options{})
	e.mount("dsh", mcp.ServerConfig{Command: exe, Env: map[string]string{"MCPTEST_SERVE": "1"}})
	res := e.call(context.Background(), "mcp__dsh__lookup", `{"key":"bridge"}`)
	if res.IsError {
		t.Fatal(res.Error)
	}
	if got := text(t, res); got != "{\n  \"key\": \"bridge\",\n  \"value\": 6\n}" {
		t.Errorf("content = %q", got)
	}
	res = e.call(context.Background(), "mcp__dsh__forbidden", `{}`)
	if !res.IsError || text(t, res) != "Error: Error: rule: forbidden is denied in this workspace" {
		t.Errorf("forbidden through two pipelines: %+v", res)
	}
}

// TestServerWithTypeScriptClient drives the server with the official TypeScript SDK client
// (from npm) over streamable HTTP: list, call, a policy denial, a cancelled call.
func TestServerWithTypeScriptClient(t *testing.T) {
	nm := mcptest.Installed(t)
	f := newFixture(t)
	s := mcp.NewServer(f.reg, mcp.ServerOptions{})
	hs := httptest.NewServer(s.Handler(nil))
	defer hs.Close()
	defer s.Close()
	script, err := filepath.Abs("../internal/mcptest/tsclient.mjs")
	if err != nil {
		t.Fatal(err)
	}
	ctx := testwait.Context(t)
	cmd := exec.CommandContext(ctx, "node", script, hs.URL)
	cmd.Env = append(os.Environ(), "MCP_SDK_DIR="+filepath.Join(nm, "@modelcontextprotocol/sdk"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Pace the client: abort the wait call once the tool runs, close once it saw the
	// cancellation.
	var sawCancel atomic.Bool
	go func() {
		defer stdin.Close()
		for _, step := range []struct {
			ch   <-chan string
			line string
		}{{f.started, "abort\n"}, {f.cancelled, "close\n"}} {
			select {
			case <-step.ch:
			case <-ctx.Done():
				return
			}
			if _, err := io.WriteString(stdin, step.line); err != nil {
				return
			}
		}
		sawCancel.Store(true)
	}()
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("tsclient: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var report struct {
		Tools       []string        `json:"tools"`
		Lookup      json.RawMessage `json:"lookup"`
		Forbidden   json.RawMessage `json:"forbidden"`
		Cancelled   string          `json:"cancelled"`
		ReadOnly    bool            `json:"lookupReadOnly"`
		Destructive bool            `json:"writeDestructive"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("report %s: %v", out, err)
	}
	slices.Sort(report.Tools)
	if diff := cmp.Diff([]string{"forbidden", "guarded", "lookup", "wait", "write"}, report.Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if want := `{"content":[{"type":"text","text":"{\n  \"key\": \"ts\",\n  \"value\": 2\n}"}],"structuredContent":{"key":"ts","value":2}}`; string(report.Lookup) != want {
		t.Errorf("lookup = %s\nwant %s", report.Lookup, want)
	}
	if want := `{"_meta":{"dsh/error":{"message":"rule: forbidden is denied in this workspace"}},"content":[{"type":"text","text":"Error: rule: forbidden is denied in this workspace"}],"isError":true}`; string(report.Forbidden) != want {
		t.Errorf("forbidden = %s\nwant %s", report.Forbidden, want)
	}
	if !strings.Contains(report.Cancelled, "AbortError") && !strings.Contains(report.Cancelled, "abort") {
		t.Errorf("cancelled call: %q", report.Cancelled)
	}
	if !report.ReadOnly || !report.Destructive {
		t.Errorf("annotations: lookup read-only %v, write destructive %v", report.ReadOnly, report.Destructive)
	}
	if !sawCancel.Load() {
		t.Fatal("the TypeScript client's cancellation never reached the tool")
	}
}

func TestCallResultContent(t *testing.T) {
	// Images are attachment references: described, not transferred.
	f := newFixture(t)
	if _, err := f.reg.Register(&tool.Definition{
		Name: "pic", Parameters: map[string]any{"type": "object"},
		Output: tool.Output{Schema: map[string]any{}, Render: func(_, _ any) ([]content.Block, error) {
			return []content.Block{content.Text("a picture:"), {Type: content.TypeImage, Image: &content.ImageRef{AttachmentID: "att_1", MediaType: "image/png"}}}, nil
		}},
		Execute: func(context.Context, *tool.Call) (any, error) { return "x", nil },
	}); err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(f.reg, mcp.ServerOptions{})
	defer s.Close()
	cs := connectInMemory(t, s, nil)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "pic"})
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, res); got != "a picture:\n[image attachment att_1 (image/png), not transferred over MCP]" {
		t.Errorf("content = %q", got)
	}
	if res.StructuredContent != nil {
		t.Errorf("a non-object output schema produced structuredContent %v", res.StructuredContent)
	}
}

// TestServerSessionInfoAndRefusedCall checks OnSession learns the client's name and version
// from initialize, and a BeforeCall error fails the call without running it.
func TestServerSessionInfoAndRefusedCall(t *testing.T) {
	f := newFixture(t)
	var info mcp.SessionInfo
	var ran atomic.Bool
	f.reg.OnPreExecute(func(_ context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		ran.Store(true)
		return next()
	})
	s := mcp.NewServer(f.reg, mcp.ServerOptions{OnSession: func(_ context.Context, si mcp.SessionInfo) (*mcp.Session, error) {
		info = si
		return &mcp.Session{BeforeCall: func(context.Context, tool.Input) error { return errors.New("disk full") }}, nil
	}})
	defer s.Close()
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- s.ServeTransport(ctx, st) }()
	defer func() { cancel(); <-served }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "probe-client", Version: "1.2.3"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "lookup", Arguments: map[string]any{"key": "k"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || textOf(t, res) != "Error: tool call lookup was not started: disk full" {
		t.Errorf("refused call = %v %q", res.IsError, textOf(t, res))
	}
	if ran.Load() {
		t.Error("the refused call entered the pipeline")
	}
	if info.ClientName != "probe-client" || info.ClientVersion != "1.2.3" || info.Transport != mcp.TransportStdio {
		t.Errorf("session info = %+v", info)
	}
}
