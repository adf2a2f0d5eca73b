package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bridge needs the exact bytes of tools/list and tools/call results: the server's schemas
// are registered verbatim (member order included), structured content becomes the canonical
// value, and content blocks of types the go-sdk does not know must reach the projection
// instead of failing the whole result in the SDK's typed decoder. A captureConn sits between
// the SDK and the transport: a call made with a capture in its context has its result bytes
// taken out of the response and replaced by a minimal placeholder the SDK decodes trivially.

type captureKey struct{}

// capture receives the raw result of one request.
type capture struct {
	method      string          // the request method to capture
	placeholder json.RawMessage // what the SDK decodes instead

	mu  sync.Mutex
	id  jsonrpc.ID      // set when the request is written
	raw json.RawMessage // the result, when one arrived
}

func (c *capture) setID(id jsonrpc.ID) {
	c.mu.Lock()
	c.id = id
	c.mu.Unlock()
}

func (c *capture) requestID() jsonrpc.ID {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

// fill stores the result and returns the placeholder the SDK gets instead.
func (c *capture) fill(raw json.RawMessage) json.RawMessage {
	c.mu.Lock()
	c.raw = raw
	c.mu.Unlock()
	return c.placeholder
}

func (c *capture) result() json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.raw
}

func withCapture(ctx context.Context, c *capture) context.Context {
	return context.WithValue(ctx, captureKey{}, c)
}

var (
	placeholderCall = json.RawMessage(`{"content":[]}`)
	placeholderList = json.RawMessage(`{"tools":[]}`)
)

// captureTransport wraps a transport's connection in a captureConn. The go-sdk's streamable
// HTTP connection must not be wrapped (it learns the session's initialization through an
// unexported method), so HTTP results are captured by captureRoundTripper instead.
type captureTransport struct {
	inner sdk.Transport
	note  func(string)
	conn  *captureConn // set by Connect
}

func (t *captureTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.conn = &captureConn{Connection: c, slots: map[jsonrpc.ID]*capture{}, note: t.note}
	return t.conn, nil
}

type captureConn struct {
	sdk.Connection
	note func(string)

	mu      sync.Mutex
	slots   map[jsonrpc.ID]*capture
	retired []jsonrpc.ID // the most recent abandoned request ids, to recognize late answers
}

const retiredKept = 64

func (c *captureConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		if slot, _ := ctx.Value(captureKey{}).(*capture); slot != nil && slot.method == req.Method {
			slot.setID(req.ID)
			c.mu.Lock()
			c.slots[req.ID] = slot
			c.mu.Unlock()
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *captureConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.mu.Lock()
		if slot := c.slots[resp.ID]; slot != nil {
			delete(c.slots, resp.ID)
			if resp.Error == nil {
				resp.Result = slot.fill(resp.Result)
			}
		} else if slices.Contains(c.retired, resp.ID) {
			c.note(fmt.Sprintf("discarded a late response to abandoned request %v", resp.ID.Raw()))
		}
		c.mu.Unlock()
	}
	return msg, err
}

// take returns the captured result of slot and stops waiting for it; a request abandoned
// before its answer (cancelled, timed out) is remembered so that a late answer is noted.
func (c *captureConn) take(slot *capture) json.RawMessage {
	id := slot.requestID()
	c.mu.Lock()
	if id.IsValid() && c.slots[id] == slot {
		delete(c.slots, id)
		if len(c.retired) == retiredKept {
			c.retired = slices.Delete(c.retired, 0, 1)
		}
		c.retired = append(c.retired, id)
	}
	c.mu.Unlock()
	return slot.result()
}
