package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/ids"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// ServerOptions configures a Server. The zero value serves the global scope's tools.
type ServerOptions struct {
	// Implementation is announced to clients; nil means {Name: "dsh"}.
	Implementation *sdk.Implementation
	// Instructions are sent to clients at initialization.
	Instructions string
	// Scope selects the tools listed (its visible tools, or only run_code when its mode is
	// code); nil means the global scope. Calls run for the session's Agent scope, which
	// should be this scope or a descendant.
	Scope *tool.Scope
	// Logger receives warnings (a tool that cannot be served, a failed session hook); nil
	// means slog.Default().
	Logger *slog.Logger
	// Annotations returns the MCP annotations of a tool; nil means DefaultAnnotations.
	Annotations func(def *tool.Definition) *sdk.ToolAnnotations
	// Images, when set, reads the attachments of image results, which then travel to the
	// client as MCP images; nil describes them in text.
	Images ImageReader
	// OnSession is called once per client connection — when the client has initialized
	// (so SessionInfo carries its clientInfo), or at its first call — so the host can give
	// each connection its own agent scope and session log. It may be nil. An error makes
	// every call of that connection fail with it.
	OnSession func(ctx context.Context, info SessionInfo) (*Session, error)
}

// SessionInfo identifies one client connection.
type SessionInfo struct {
	ID        string // the streamable HTTP session id, or a fresh id for stdio connections
	Transport string // TransportStdio or TransportStreamableHTTP
	// ClientName and ClientVersion are what the client announced in initialize (clientInfo);
	// empty when it announced nothing.
	ClientName, ClientVersion string
}

// Session is what the host attaches to one client connection. Every field is optional.
type Session struct {
	// Agent is the scope calls of this connection run for: its restrictions, guards, hooks
	// and presentation mode apply, and approvals are routed with it. Nil runs calls as
	// direct calls, which the approval service cannot route (every "ask" is denied).
	Agent *tool.Scope
	// BeforeCall runs before each call enters the pipeline (for example to log tool/call
	// durably). An error fails the call with its message, without running it.
	BeforeCall func(ctx context.Context, in tool.Input) error
	// AfterCall receives each final result (for example to log tool/result).
	AfterCall func(ctx context.Context, in tool.Input, res *tool.Result)
	// Close runs once when the connection ends.
	Close func()
}

// Server exposes a tool registry as an MCP server (`dsh mcp serve`): every tools/call goes
// through Registry.Execute with the request's context, so rules, approvals, timeouts and
// result listeners apply, and a client's notifications/cancelled cancels the running tool.
// The tool list follows the registry: registrations and removals reach connected clients as
// notifications/tools/list_changed. Create one with NewServer and Close it when done.
type Server struct {
	reg  *tool.Registry
	opts ServerOptions
	log  *slog.Logger
	srv  *sdk.Server

	syncMu sync.Mutex
	listed map[string]*servedTool

	mu       sync.Mutex
	sessions map[*sdk.ServerSession]*serverSession
	closed   bool
	wg       sync.WaitGroup // session watchers (their Close hooks)
	creating sync.WaitGroup // HTTP requests that may create a session

	removeListener func()
}

// servedTool is one tool as currently listed.
type servedTool struct {
	tool        *sdk.Tool
	fingerprint string
	structured  bool // the output schema is an object: successes carry structuredContent
}

type serverSession struct {
	ready chan struct{}
	hooks Session
	err   error
	once  sync.Once
}

// NewServer returns a server of reg's tools.
func NewServer(reg *tool.Registry, opts ServerOptions) *Server {
	if opts.Implementation == nil {
		opts.Implementation = &sdk.Implementation{Name: "dsh", Version: "dev"}
	}
	if opts.Annotations == nil {
		opts.Annotations = DefaultAnnotations
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{reg: reg, opts: opts, log: log, listed: map[string]*servedTool{}, sessions: map[*sdk.ServerSession]*serverSession{}}
	s.srv = sdk.NewServer(opts.Implementation, &sdk.ServerOptions{
		Instructions: opts.Instructions,
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}},
		InitializedHandler: func(ctx context.Context, req *sdk.InitializedRequest) {
			s.session(ctx, req.Session)
		},
	})
	s.srv.AddReceivingMiddleware(receiveTrace)
	s.removeListener = reg.OnChange(func(tool.Change) error {
		s.syncTools()
		return nil
	})
	s.syncTools()
	return s
}

// ServeTransport serves one client connection over t until the client disconnects or ctx
// is done.
func (s *Server) ServeTransport(ctx context.Context, t sdk.Transport) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return errors.New("mcp: the server is closed")
	}
	ss, err := s.srv.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	// The connection's session is set up once the client has initialized (so that its
	// clientInfo is known), or at its first call.
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		ss.Close()
		<-done
		return nil
	}
}

// ServeStdio serves one client over r and w (newline-delimited JSON-RPC, as on a process's
// stdin and stdout) until the client disconnects or ctx is done. If r and w are closers
// they are closed when serving ends.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	rc, ok := r.(io.ReadCloser)
	if !ok {
		rc = io.NopCloser(r)
	}
	wc, ok := w.(io.WriteCloser)
	if !ok {
		wc = nopWriteCloser{w}
	}
	return s.ServeTransport(ctx, &sdk.IOTransport{Reader: rc, Writer: wc})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// Handler returns an http.Handler serving the streamable HTTP transport; each MCP session
// is one connection. opts may be nil. Once the server is closed, requests that would start
// a session are refused with 503 Service Unavailable.
func (s *Server) Handler(opts *sdk.StreamableHTTPOptions) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv }, opts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(sessionIDHeader) != "" {
			// A request of an existing session: Close ends the session itself.
			h.ServeHTTP(w, r)
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			http.Error(w, "the MCP server is closed", http.StatusServiceUnavailable)
			return
		}
		s.creating.Add(1)
		s.mu.Unlock()
		defer s.creating.Done()
		h.ServeHTTP(w, r)
	})
}

// sessionIDHeader is the streamable HTTP header naming the session of a request.
const sessionIDHeader = "Mcp-Session-Id"

// Close stops following the registry, closes every connection — stdio and streamable HTTP,
// whether or not it initialized or called a tool — and waits for their Close hooks. It is
// idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	var open []*sdk.ServerSession
	for ss := range s.sessions {
		open = append(open, ss)
	}
	s.mu.Unlock()
	s.removeListener()
	for _, ss := range open {
		ss.Close()
	}
	// The go-sdk server knows every connection, including those that have not sent
	// notifications/initialized yet. Close them, let the requests that were creating a
	// session finish (closing a session ends its requests), and close what they created.
	s.closeAll()
	s.creating.Wait()
	s.closeAll()
	s.wg.Wait()
	return nil
}

// closeAll closes every session the go-sdk server holds.
func (s *Server) closeAll() {
	for ss := range s.srv.Sessions() {
		ss.Close()
	}
}

// session returns the state of connection ss, creating it (and running OnSession) on first
// sight.
func (s *Server) session(ctx context.Context, ss *sdk.ServerSession) *serverSession {
	s.mu.Lock()
	if c := s.sessions[ss]; c != nil {
		s.mu.Unlock()
		<-c.ready
		return c
	}
	c := &serverSession{ready: make(chan struct{})}
	if s.closed {
		c.err = errors.New("mcp: the server is closed")
		s.mu.Unlock()
		close(c.ready)
		return c
	}
	s.sessions[ss] = c
	s.wg.Add(1)
	s.mu.Unlock()

	info := SessionInfo{ID: ss.ID(), Transport: TransportStreamableHTTP}
	if info.ID == "" {
		info.ID, info.Transport = ids.New("mcp_"), TransportStdio
	}
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
		info.ClientName, info.ClientVersion = p.ClientInfo.Name, p.ClientInfo.Version
	}
	if s.opts.OnSession != nil {
		h, err := s.opts.OnSession(ctx, info)
		switch {
		case err != nil:
			c.err = fmt.Errorf("the session could not be set up: %w", err)
			s.log.Warn(fmt.Sprintf("mcp server: session %s: %v", info.ID, err))
		case h != nil:
			c.hooks = *h
		}
	}
	close(c.ready)
	go func() {
		defer s.wg.Done()
		ss.Wait()
		s.mu.Lock()
		delete(s.sessions, ss)
		s.mu.Unlock()
		c.once.Do(func() {
			if c.hooks.Close != nil {
				c.hooks.Close()
			}
		})
	}()
	return c
}

// handle serves one tools/call.
func (s *Server) handle(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	c := s.session(ctx, req.Session)
	if c.err != nil {
		return errorResult(c.err.Error(), nil), nil
	}
	raw := string(req.Params.Arguments)
	if raw == "null" {
		raw = "" // MCP arguments are optional: absent and null both mean {}
	}
	in := tool.Input{
		CallID: ids.New("call_"),
		Name:   req.Params.Name,
		Args:   s.reg.ParseArguments(raw),
		Agent:  c.hooks.Agent,
	}
	if c.hooks.BeforeCall != nil {
		if err := c.hooks.BeforeCall(ctx, in); err != nil {
			return errorResult(fmt.Sprintf("tool call %s was not started: %v", in.Name, err), nil), nil
		}
	}
	res := s.reg.Execute(ctx, in) // ctx has the caller's trace as its parent (receiveTrace)
	if c.hooks.AfterCall != nil {
		c.hooks.AfterCall(ctx, in, res.Clone())
	}
	s.syncMu.Lock()
	st := s.listed[in.Name]
	s.syncMu.Unlock()
	out := callResult(res, st != nil && st.structured)
	if s.opts.Images != nil {
		out.Content = mcpContent(res.Content, s.opts.Images)
	}
	return out, nil
}

// callResult maps a pipeline result to MCP: the content as text blocks, isError for
// failures (with the failure's message and code under _meta "dsh/error"), and the
// canonical value as structuredContent for a success of a tool with an object output
// schema.
func callResult(res *tool.Result, structured bool) *sdk.CallToolResult {
	out := &sdk.CallToolResult{IsError: res.IsError, Content: mcpContent(res.Content, nil)}
	if res.IsError {
		e := map[string]any{"message": res.Error.Message}
		if res.Error.Info != nil {
			e["info"] = map[string]any{"name": res.Error.Info.Name, "code": res.Error.Info.Code}
		}
		out.Meta = sdk.Meta{"dsh/error": e}
		return out
	}
	if structured {
		if b, err := jsonv.Marshal(res.Value); err == nil {
			out.StructuredContent = json.RawMessage(b)
		}
	}
	return out
}

func errorResult(msg string, info *tool.Info) *sdk.CallToolResult {
	return callResult(&tool.Result{IsError: true, Error: &tool.Failure{Message: msg, Info: info}, Content: content.Texts("Error: " + msg)}, false)
}

// mcpContent maps dsh content blocks to MCP blocks. Text travels as text; an image is an
// attachment reference whose bytes live in dsh's attachment store: with images (the
// store) it travels as an MCP image, otherwise, or when its bytes cannot be read, it is
// described.
func mcpContent(blocks []content.Block, images ImageReader) []sdk.Content {
	out := make([]sdk.Content, 0, len(blocks))
	for _, b := range blocks {
		switch {
		case b.Type == content.TypeText || b.Type == content.TypeReasoning:
			out = append(out, &sdk.TextContent{Text: b.Text})
		case b.Type == content.TypeImage && b.Image != nil && images != nil:
			mt, data, err := images.ReadAttachment(b.Image.AttachmentID)
			if err != nil {
				out = append(out, &sdk.TextContent{Text: fmt.Sprintf("[image attachment %s (%s) unavailable: %v]", b.Image.AttachmentID, b.Image.MediaType, err)})
				continue
			}
			out = append(out, &sdk.ImageContent{Data: data, MIMEType: mt})
		case b.Type == content.TypeImage && b.Image != nil:
			out = append(out, &sdk.TextContent{Text: fmt.Sprintf("[image attachment %s (%s), not transferred over MCP]", b.Image.AttachmentID, b.Image.MediaType)})
		default:
			out = append(out, &sdk.TextContent{Text: "[" + b.Type + " content]"})
		}
	}
	return out
}

// syncTools makes the listed tools match the registry, adding and removing only what
// changed so that clients are notified only of real changes.
func (s *Server) syncTools() {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	scope := s.opts.Scope
	codeOnly := s.reg.ModeFor(scope) == tool.ModeCode
	want := map[string]*servedTool{}
	for _, def := range s.reg.Definitions(scope) {
		if codeOnly && def.Name != tool.RunCodeName {
			continue
		}
		st, err := s.describe(def)
		if err != nil {
			if old := s.listed[def.Name]; old == nil {
				s.log.Warn(fmt.Sprintf("mcp server: tool %q is not served: %v", def.Name, err))
			}
			continue
		}
		want[def.Name] = st
	}
	var gone []string
	for name := range s.listed {
		if want[name] == nil {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
	}
	for name, st := range want {
		if old := s.listed[name]; old != nil && old.fingerprint == st.fingerprint {
			want[name] = old
			continue
		}
		if err := s.add(st); err != nil {
			s.log.Warn(fmt.Sprintf("mcp server: tool %q is not served: %v", name, err))
			delete(want, name)
			if s.listed[name] != nil {
				s.srv.RemoveTools(name)
			}
		}
	}
	s.listed = want
}

func (s *Server) add(st *servedTool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	s.srv.AddTool(st.tool, s.handle)
	return nil
}

// describe builds the MCP tool of def.
func (s *Server) describe(def *tool.Definition) (*servedTool, error) {
	params, err := jsonv.Snapshot(def.Parameters)
	if err != nil {
		return nil, fmt.Errorf("its parameters schema is not lossless JSON: %w", err)
	}
	po, ok := params.(*jsonv.Object)
	if !ok {
		return nil, errors.New(`MCP requires an input schema of type "object"`)
	}
	if t, _ := po.Get("type"); t != "object" {
		return nil, errors.New(`MCP requires an input schema of type "object"`)
	}
	in, err := jsonv.Marshal(params)
	if err != nil {
		return nil, err
	}
	t := &sdk.Tool{Name: def.Name, Description: def.Description, InputSchema: json.RawMessage(in)}
	st := &servedTool{tool: t}
	var outJSON []byte
	if out, err := jsonv.Snapshot(def.Output.Schema); err == nil {
		if oo, ok := out.(*jsonv.Object); ok {
			if typ, _ := oo.Get("type"); typ == "object" {
				outJSON, _ = jsonv.Marshal(out)
				t.OutputSchema = json.RawMessage(outJSON)
				st.structured = true
			}
		}
	}
	t.Annotations = s.opts.Annotations(def)
	ann, _ := json.Marshal(t.Annotations)
	st.fingerprint = def.Name + "\x00" + def.Description + "\x00" + string(in) + "\x00" + string(outJSON) + "\x00" + string(ann)
	return st, nil
}

// DefaultAnnotations classifies dsh's tools for MCP clients. The built-in tools that change
// the workspace or run programs (write, edit, bash, run_code) are destructive. A tool is
// read-only when it is declared concurrency-safe for a minimal valid call: the scheduler's
// parallel class is exactly the tools that neither write nor depend on another call's
// effects. Anything else gets no annotations, which MCP clients read as "may be
// destructive". For mounted MCP tools see Host.Annotations.
func DefaultAnnotations(def *tool.Definition) *sdk.ToolAnnotations {
	switch def.Name {
	case "write", "edit", "bash", tool.RunCodeName:
		yes := true
		return &sdk.ToolAnnotations{DestructiveHint: &yes}
	}
	if def.ConcurrencySafe == nil {
		return nil
	}
	params, err := jsonv.Snapshot(def.Parameters)
	if err != nil {
		return nil
	}
	if safe := func() (ok bool) {
		defer func() {
			if recover() != nil {
				ok = false
			}
		}()
		return def.ConcurrencySafe(minimalValue(params, 0))
	}(); !safe {
		return nil
	}
	no := false
	return &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &no}
}

// minimalValue returns a small value valid for a schema of the supported subset: the
// required properties of objects, empty arrays and strings, zero numbers, false.
func minimalValue(s any, depth int) any {
	o, ok := s.(*jsonv.Object)
	if !ok || depth > 32 {
		return nil
	}
	if c, ok := o.Get("const"); ok {
		return jsonv.Clone(c)
	}
	if e, ok := o.Get("enum"); ok {
		if list, ok := e.([]any); ok && len(list) > 0 {
			return jsonv.Clone(list[0])
		}
	}
	if one, ok := o.Get("oneOf"); ok {
		if list, ok := one.([]any); ok && len(list) > 0 {
			return minimalValue(list[0], depth+1)
		}
	}
	typ, _ := o.Get("type")
	switch typ {
	case "object":
		out := &jsonv.Object{}
		props, _ := o.Get("properties")
		po, _ := props.(*jsonv.Object)
		req, _ := o.Get("required")
		names, _ := req.([]any)
		for _, n := range names {
			name, ok := n.(string)
			if !ok {
				continue
			}
			var ps any
			if po != nil {
				ps, _ = po.Get(name)
			}
			out.Set(name, minimalValue(ps, depth+1))
		}
		return out
	case "array":
		return []any{}
	case "string":
		return ""
	case "number", "integer":
		return 0.0
	case "boolean":
		return false
	}
	return nil
}

// UnattendedApprover is the approval service of a server no person watches: every "ask"
// is denied with "tool "<name>" requires approval, but no approval channel is available".
// Rules that allow a call outright still let it run.
func UnattendedApprover() tool.Approver {
	return tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
		return tool.ApprovalUnavailable, nil
	})
}
