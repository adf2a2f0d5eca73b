package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/schema"
	"github.com/dsh-go/dsh/tool"
)

// Codes of the bridge's own failures (name "McpError"). A server's isError result is not
// one of them: it fails with the server's text and no code, as the reference does.
const (
	// CodeNotConnected: the call was made while the server was down.
	CodeNotConnected = "MCP_NOT_CONNECTED"
	// CodeConnectionClosed: the connection went away while the call waited for its answer.
	CodeConnectionClosed = "MCP_CONNECTION_CLOSED"
	// CodeTimeout: no answer within the server's toolCallTimeoutMs; the call was cancelled
	// with notifications/cancelled.
	CodeTimeout = "MCP_TIMEOUT"
	// CodeResponseTooLarge: the answer exceeded Options.MaxMessageBytes and was discarded.
	CodeResponseTooLarge = "MCP_RESPONSE_TOO_LARGE"
	// CodeServerError: the server answered with a JSON-RPC error.
	CodeServerError = "MCP_SERVER_ERROR"
	// CodeProtocol: the answer could not be read (not lossless JSON, not an object, …).
	CodeProtocol = "MCP_PROTOCOL_ERROR"
)

func mcpError(code, format string, args ...any) *tool.Error {
	return tool.Errorf("McpError", code, format, args...)
}

// listed is one tool of a fetched tool list.
type listed struct {
	info    ToolInfo
	def     *tool.Definition
	listing string // the server's entry for the tool, as canonical JSON
}

// toolSlot is what one registered MCP tool runs: the body of the generation that listed it
// last. A tool the next sync lists unchanged keeps its registration and only gets the new
// body, so a call made during the sync never finds it missing.
type toolSlot struct {
	listing string
	body    atomic.Pointer[func(context.Context, *tool.Call) (any, error)]
}

func (t *toolSlot) execute(ctx context.Context, call *tool.Call) (any, error) {
	return (*t.body.Load())(ctx, call)
}

// sync runs the two-phase tool sync of docs/behaviour.md §13 on gen: fetch every page and build the next
// generation of definitions (a failure leaves the registered generation alone), then swap
// (a registration conflict rolls the whole new generation back). A tool listed exactly as
// before stays registered throughout and runs on gen from then on; the others are
// unregistered and registered anew. A conflict is returned only for the startup sync of a
// failOnStartupError server; otherwise it is logged.
func (m *Mount) sync(gen *generation, startup bool) error {
	next, err := m.fetch(gen)
	if err != nil {
		return err
	}
	m.mu.Lock()
	oldUndo, oldTools, oldSlots := m.unregister, m.tools, m.slots
	m.unregister, m.tools, m.slots = nil, nil, nil
	m.mu.Unlock()

	// A tool listed exactly as before keeps its registration and runs on gen from now on;
	// the rest of the old generation goes.
	listing := make(map[string]string, len(next))
	for _, t := range next {
		listing[t.info.Name] = t.listing
	}
	kept := make(map[string]int, len(oldTools)) // name -> index in the old generation
	for i, info := range oldTools {
		if l, ok := listing[info.Name]; ok && l == oldSlots[i].listing {
			kept[info.Name] = i
		} else {
			oldUndo[i]()
		}
	}
	for _, t := range next {
		if i, ok := kept[t.info.Name]; ok {
			body := t.def.Execute
			oldSlots[i].body.Store(&body)
		}
	}

	undo := make([]func(), 0, len(next))
	infos := make([]ToolInfo, 0, len(next))
	slots := make([]*toolSlot, 0, len(next))
	var fresh []func() // what this sync registered, rolled back on a conflict
	for _, t := range next {
		body := t.def.Execute
		if i, ok := kept[t.info.Name]; ok {
			undo = append(undo, oldUndo[i])
			infos = append(infos, t.info)
			slots = append(slots, oldSlots[i])
			continue
		}
		slot := &toolSlot{listing: t.listing}
		slot.body.Store(&body)
		def := *t.def
		def.Execute = slot.execute
		u, err := m.host.scope.Register(&def)
		if err != nil {
			for _, u := range fresh {
				u()
			}
			for _, i := range kept {
				oldUndo[i]()
			}
			m.log.Error(fmt.Sprintf("%s: tool registration failed, no tools registered: %v", m.label, err))
			if startup && m.cfg.FailOnStartupError {
				return err
			}
			return nil
		}
		fresh = append(fresh, u)
		undo = append(undo, u)
		infos = append(infos, t.info)
		slots = append(slots, slot)
	}
	m.mu.Lock()
	m.unregister, m.tools, m.slots = undo, infos, slots
	m.mu.Unlock()
	return nil
}

// fetch reads every tools/list page and builds the definitions.
func (m *Mount) fetch(gen *generation) ([]listed, error) {
	var out []listed
	seen := map[string]bool{}
	cursors := map[string]bool{}
	cursor := ""
	for {
		res, err := m.listPage(gen, cursor)
		if err != nil {
			return nil, err
		}
		tools, ok := get(res, "tools").([]any)
		if !ok {
			return nil, fmt.Errorf("%s: tools/list result has no tools array", m.label)
		}
		for i, v := range tools {
			t, err := m.toolOf(gen, v)
			if err != nil {
				m.note(fmt.Sprintf("skipped tool %d of the tool list: %v", i, err))
				continue
			}
			if seen[t.def.Name] {
				return nil, fmt.Errorf("%s: server listed tool \"%s\" more than once — invalid tool list", m.label, t.info.RawName)
			}
			seen[t.def.Name] = true
			out = append(out, t)
		}
		next, _ := get(res, "nextCursor").(string)
		if next == "" {
			return out, nil
		}
		if cursors[next] {
			return nil, fmt.Errorf("%s: server repeated tools/list cursor %q — invalid pagination", m.label, next)
		}
		cursors[next] = true
		cursor = next
	}
}

func (m *Mount) listPage(gen *generation, cursor string) (*jsonv.Object, error) {
	slot := &capture{method: "tools/list", placeholder: placeholderList}
	ctx, cancel := context.WithTimeout(withCapture(m.ctx, slot), m.set.startupTimeout)
	defer cancel()
	var params *sdk.ListToolsParams
	if cursor != "" {
		params = &sdk.ListToolsParams{Cursor: cursor}
	}
	_, err := gen.session.ListTools(ctx, params)
	raw := gen.take(slot)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded && m.ctx.Err() == nil {
			return nil, fmt.Errorf("%s: tools/list got no answer within %dms", m.label, m.set.startupTimeout.Milliseconds())
		}
		return nil, fmt.Errorf("%s: tools/list failed: %w", m.label, err)
	}
	v, err := jsonv.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: tools/list result is not lossless JSON: %w", m.label, err)
	}
	o, ok := v.(*jsonv.Object)
	if !ok {
		return nil, fmt.Errorf("%s: tools/list result is not an object", m.label)
	}
	return o, nil
}

func get(o *jsonv.Object, name string) any {
	v, _ := o.Get(name)
	return v
}

// toolOf builds the definition of one listed tool (docs/behaviour.md §13, Definition).
func (m *Mount) toolOf(gen *generation, v any) (listed, error) {
	o, ok := v.(*jsonv.Object)
	if !ok {
		return listed{}, errors.New("not an object")
	}
	raw, ok := get(o, "name").(string)
	if !ok {
		return listed{}, errors.New("no string name")
	}
	params, ok := get(o, "inputSchema").(*jsonv.Object)
	if !ok {
		return listed{}, fmt.Errorf("tool %q has no inputSchema object", raw)
	}
	desc, _ := get(o, "description").(string)
	var structured any
	if out, ok := o.Get("outputSchema"); ok && schema.Assert(out) == nil {
		structured = out
	}
	taskRequired := false
	if ex, ok := get(o, "execution").(*jsonv.Object); ok {
		taskRequired = get(ex, "taskSupport") == "required"
	}
	public := PublicToolName(m.name, raw)
	def := &tool.Definition{
		Name:        public,
		Description: desc,
		Parameters:  params,
		Output: tool.Output{
			Schema: outputSchema(structured),
			Render: func(_, value any) ([]content.Block, error) {
				blocks, _ := get(value.(*jsonv.Object), "content").([]any)
				return ProjectContent(blocks, raw, m.host.opts.Images), nil
			},
		},
		Execute: m.executor(gen, raw, taskRequired),
	}
	info := ToolInfo{Name: public, RawName: raw, Description: desc, TaskRequired: taskRequired, Annotations: annotationsOf(get(o, "annotations"))}
	listing, err := jsonv.Marshal(o)
	if err != nil {
		return listed{}, fmt.Errorf("tool %q: %w", raw, err)
	}
	return listed{info: info, def: def, listing: string(listing)}, nil
}

// outputSchema is the canonical value's schema: a closed object with the content array and,
// when the server advertised a supported schema, the required structured content.
func outputSchema(structured any) *jsonv.Object {
	props := jsonv.NewObject(jsonv.Member{Name: "content", Value: jsonv.NewObject(
		jsonv.Member{Name: "type", Value: "array"},
		jsonv.Member{Name: "items", Value: &jsonv.Object{}},
	)})
	required := []any{"content"}
	if structured != nil {
		props.Set("structuredContent", structured)
		required = append(required, "structuredContent")
	} else {
		props.Set("structuredContent", &jsonv.Object{})
	}
	return jsonv.NewObject(
		jsonv.Member{Name: "type", Value: "object"},
		jsonv.Member{Name: "properties", Value: props},
		jsonv.Member{Name: "required", Value: required},
		jsonv.Member{Name: "additionalProperties", Value: false},
	)
}

// executor returns the body of one MCP tool: a tools/call of the raw name on gen.
func (m *Mount) executor(gen *generation, raw string, taskRequired bool) func(context.Context, *tool.Call) (any, error) {
	return func(ctx context.Context, call *tool.Call) (any, error) {
		if taskRequired {
			return nil, errors.New("Tool \"" + raw + "\" requires task-based execution, which this bridge does not support")
		}
		if gen.isClosed() {
			return nil, mcpError(CodeNotConnected, "MCP server %q is not connected (%s): %s", m.name, m.State(), gen.reason)
		}
		args := call.Args()
		switch args.(type) {
		case *jsonv.Object, []any:
		default:
			// A model that sent null or a bare value still reaches the server, which can
			// answer with a specific "missing parameter" error.
			args = &jsonv.Object{}
		}
		b, err := jsonv.Marshal(args)
		if err != nil {
			return nil, err
		}
		slot := &capture{method: "tools/call", placeholder: placeholderCall}
		tctx, cancel := context.WithTimeout(ctx, m.set.toolCallTimeout)
		defer cancel()
		_, err = gen.session.CallTool(withCapture(tctx, slot), &sdk.CallToolParams{Name: raw, Arguments: json.RawMessage(b)}) // sendTrace adds the call's trace
		res := gen.take(slot)
		if err != nil {
			return nil, m.callError(ctx, tctx, gen, raw, err)
		}
		return m.value(raw, res)
	}
}

// callError maps a failed tools/call to the body's error.
func (m *Mount) callError(ctx, tctx context.Context, gen *generation, raw string, err error) error {
	var big *FrameTooLargeError
	var lost *connLostError
	var wire *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		return &tool.Error{Name: "AbortError", Code: tool.CodeAborted, Message: "tool call aborted", Err: err}
	case errors.As(err, &big):
		return mcpError(CodeResponseTooLarge, "MCP server %q: the tools/call %q %v", m.name, raw, big)
	case tctx.Err() == context.DeadlineExceeded:
		return mcpError(CodeTimeout, "MCP server %q did not answer tools/call %q within %dms; the call was cancelled", m.name, raw, m.set.toolCallTimeout.Milliseconds())
	case errors.As(err, &lost):
		return mcpError(CodeConnectionClosed, "MCP server %q connection closed during tools/call %q: %s", m.name, raw, lost.reason)
	case gen.isClosed() || errors.Is(err, sdk.ErrConnectionClosed):
		reason := err.Error()
		if gen.isClosed() {
			reason = gen.reason
		}
		return mcpError(CodeConnectionClosed, "MCP server %q connection closed during tools/call %q: %s", m.name, raw, reason)
	case errors.As(err, &wire):
		return mcpError(CodeServerError, "MCP error %d: %s", wire.Code, wire.Message)
	default:
		return mcpError(CodeProtocol, "MCP server %q: tools/call %q failed: %v", m.name, raw, err)
	}
}

// value turns a tools/call result into the canonical value {content, structuredContent?}
// (docs/behaviour.md §13, Execute); isError becomes the body's error with the projected text.
func (m *Mount) value(raw string, res json.RawMessage) (any, error) {
	if res == nil {
		return nil, mcpError(CodeProtocol, "MCP server %q answered tools/call %q without a result", m.name, raw)
	}
	v, err := jsonv.Parse(res)
	if err != nil {
		return nil, mcpError(CodeProtocol, "MCP server %q answered tools/call %q with a result that is not lossless JSON: %v", m.name, raw, err)
	}
	o, ok := v.(*jsonv.Object)
	if !ok {
		return nil, mcpError(CodeProtocol, "MCP server %q answered tools/call %q with a result that is not an object", m.name, raw)
	}
	failed := get(o, "isError") == true
	sc, hasSC := o.Get("structuredContent")
	blocks, ok := get(o, "content").([]any)
	if !ok {
		// A legacy reply without a content array.
		text := "(no output)"
		if tr, ok := o.Get("toolResult"); ok {
			b, err := jsonv.Marshal(tr)
			if err != nil {
				return nil, err
			}
			text = string(b)
		}
		if failed {
			return nil, errors.New(text)
		}
		blocks = []any{jsonv.NewObject(jsonv.Member{Name: "type", Value: "text"}, jsonv.Member{Name: "text", Value: text})}
	} else if failed {
		return nil, errors.New(ProjectText(blocks, raw))
	}
	out := jsonv.NewObject(jsonv.Member{Name: "content", Value: blocks})
	if hasSC {
		out.Set("structuredContent", sc)
	}
	return out, nil
}
