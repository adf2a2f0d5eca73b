// Command badserver is a deliberately misbehaving MCP server for the tests of package mcp.
// It speaks just enough newline-delimited JSON-RPC over stdio (initialize, tools/list with
// pagination, tools/call, notifications) to be mounted, and its tools misbehave on request:
// hang, crash mid-call, write malformed or oversized messages, change the tool list.
//
// The environment selects start-up behaviour:
//
//	BAD_MODE=exit      print to stderr and exit 2 before reading anything
//	BAD_MODE=noinit    never answer initialize
//	BAD_SPAWNS=<path>  append one line per start to path (to count restarts)
//	BAD_PAGE_SIZE=<n>  serve tools/list in pages of n tools
//	BAD_DUP=1          list the echo tool twice
//	BAD_BADLIST=1      answer tools/list with a result that is not an object
//
// It writes "cancelled <id>" to stderr for every notifications/cancelled it receives.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

type server struct {
	mu      sync.Mutex // guards stdout, tools and badList
	out     *bufio.Writer
	tools   []map[string]any
	badList bool // answer tools/list with garbage from now on
}

func main() {
	if f := os.Getenv("BAD_SPAWNS"); f != "" {
		if fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(fh, os.Getpid())
			fh.Close()
		}
	}
	switch os.Getenv("BAD_MODE") {
	case "exit":
		fmt.Fprintln(os.Stderr, "badserver: refusing to start (BAD_MODE=exit)")
		os.Exit(2)
	}
	s := &server{out: bufio.NewWriterSize(os.Stdout, 1<<16), tools: initialTools()}
	if os.Getenv("BAD_DUP") == "1" {
		s.tools = append(s.tools, s.tools[0])
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			s.handle(line)
		}
		if err != nil {
			return
		}
	}
}

func schemaObj(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object"}
	if props != nil {
		s["properties"] = props
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func initialTools() []map[string]any {
	str := map[string]any{"type": "string"}
	num := map[string]any{"type": "number"}
	return []map[string]any{
		{"name": "echo", "description": "Echo text back.", "inputSchema": schemaObj(map[string]any{"text": str}, "text"),
			"outputSchema": schemaObj(map[string]any{"text": str}, "text"),
			"annotations":  map[string]any{"readOnlyHint": true}},
		{"name": "hang", "description": "Never answers.", "inputSchema": schemaObj(nil)},
		{"name": "crash", "description": "Exits mid-call.", "inputSchema": schemaObj(nil)},
		{"name": "malformed", "description": "Writes garbage, then answers.", "inputSchema": schemaObj(nil)},
		{"name": "big", "description": "Answers with a huge text.", "inputSchema": schemaObj(map[string]any{"mb": num})},
		{"name": "bignote", "description": "Writes a huge notification, then answers.", "inputSchema": schemaObj(map[string]any{"mb": num})},
		{"name": "add_tool", "description": "Adds a tool and notifies.", "inputSchema": schemaObj(map[string]any{"name": str}, "name")},
		{"name": "remove_tool", "description": "Removes a tool and notifies.", "inputSchema": schemaObj(map[string]any{"name": str}, "name")},
		{"name": "fail", "description": "Answers isError.", "inputSchema": schemaObj(nil)},
		{"name": "rpcerror", "description": "Answers a JSON-RPC error.", "inputSchema": schemaObj(nil)},
		{"name": "mixed", "description": "Answers every kind of block.", "inputSchema": schemaObj(nil)},
		{"name": "legacy", "description": "Answers the legacy toolResult shape.", "inputSchema": schemaObj(nil)},
		{"name": "break_list", "description": "Breaks tools/list and notifies.", "inputSchema": schemaObj(nil)},
		{"name": "stderr", "description": "Writes to stderr.", "inputSchema": schemaObj(map[string]any{"text": str})},
		{"name": "nonlossless", "description": "Answers with duplicate keys.", "inputSchema": schemaObj(nil)},
		{"name": "slow", "description": "Answers after ms milliseconds.", "inputSchema": schemaObj(map[string]any{"ms": num})},
		{"name": "task", "description": "Requires tasks.", "inputSchema": schemaObj(nil), "execution": map[string]any{"taskSupport": "required"}},
		{"name": "dotted.name/with spaces", "description": "A name outside [A-Za-z0-9_-].", "inputSchema": schemaObj(nil)},
	}
}

type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

func (s *server) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	s.writeRaw(append(b, '\n'))
}

func (s *server) writeRaw(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.Write(b)
	s.out.Flush()
}

func (s *server) reply(id json.RawMessage, result any) {
	s.write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (s *server) handle(line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		fmt.Fprintf(os.Stderr, "badserver: unreadable input: %v\n", err)
		return
	}
	switch m.Method {
	case "initialize":
		if os.Getenv("BAD_MODE") == "noinit" {
			return
		}
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(m.Params, &p)
		s.reply(m.ID, map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}},
			"serverInfo":      map[string]any{"name": "badserver", "version": "0.0.1"},
		})
	case "notifications/initialized":
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		json.Unmarshal(m.Params, &p)
		fmt.Fprintf(os.Stderr, "cancelled %s\n", p.RequestID)
	case "ping":
		s.reply(m.ID, map[string]any{})
	case "tools/list":
		s.list(m)
	case "tools/call":
		go s.call(m)
	default:
		if len(m.ID) > 0 {
			s.write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found: " + m.Method}})
		}
	}
}

func (s *server) list(m message) {
	s.mu.Lock()
	bad := s.badList
	s.mu.Unlock()
	if bad || os.Getenv("BAD_BADLIST") == "1" {
		s.reply(m.ID, []any{"not", "an", "object"})
		return
	}
	var p struct {
		Cursor string `json:"cursor"`
	}
	json.Unmarshal(m.Params, &p)
	s.mu.Lock()
	tools := append([]map[string]any(nil), s.tools...)
	s.mu.Unlock()
	start, _ := strconv.Atoi(p.Cursor)
	size, _ := strconv.Atoi(os.Getenv("BAD_PAGE_SIZE"))
	if size <= 0 {
		size = len(tools)
	}
	end := min(start+size, len(tools))
	res := map[string]any{"tools": tools[start:end]}
	if end < len(tools) {
		res["nextCursor"] = strconv.Itoa(end)
	}
	s.reply(m.ID, res)
}

func text(t string) map[string]any { return map[string]any{"type": "text", "text": t} }

func (s *server) call(m message) {
	var p struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	json.Unmarshal(m.Params, &p)
	num := func(k string, def float64) float64 {
		if v, ok := p.Arguments[k].(float64); ok {
			return v
		}
		return def
	}
	switch p.Name {
	case "echo":
		t, _ := p.Arguments["text"].(string)
		s.reply(m.ID, map[string]any{"content": []any{text("echo: " + t)}, "structuredContent": map[string]any{"text": t}})
	case "hang":
		fmt.Fprintf(os.Stderr, "hanging on %s\n", m.ID)
	case "crash":
		s.mu.Lock() // no other writer may finish a message after this point
		fmt.Fprintln(os.Stderr, "badserver: crashing mid-call")
		os.Exit(3)
	case "malformed":
		s.writeRaw([]byte("this is not JSON at all\n"))
		s.writeRaw([]byte("{\"jsonrpc\":\"2.0\",\"id\":\n"))
		s.writeRaw([]byte("{\"jsonrpc\":\"1.0\",\"method\":\"what\"}\n"))
		s.reply(m.ID, map[string]any{"content": []any{text("survived the garbage")}})
	case "big":
		n := int(num("mb", 50) * (1 << 20))
		s.reply(m.ID, map[string]any{"content": []any{text(strings.Repeat("x", n))}})
	case "bignote":
		n := int(num("mb", 50) * (1 << 20))
		s.write(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": strings.Repeat("y", n)}})
		s.reply(m.ID, map[string]any{"content": []any{text("after the big notification")}})
	case "add_tool", "remove_tool":
		name, _ := p.Arguments["name"].(string)
		s.mu.Lock()
		if p.Name == "add_tool" {
			s.tools = append(s.tools, map[string]any{"name": name, "description": "added at run time", "inputSchema": schemaObj(nil)})
		} else {
			for i, t := range s.tools {
				if t["name"] == name {
					s.tools = append(s.tools[:i], s.tools[i+1:]...)
					break
				}
			}
		}
		s.mu.Unlock()
		s.reply(m.ID, map[string]any{"content": []any{text("ok")}})
		s.write(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
	case "break_list":
		s.mu.Lock()
		s.badList = true
		s.mu.Unlock()
		s.reply(m.ID, map[string]any{"content": []any{text("ok")}})
		s.write(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
	case "fail":
		s.reply(m.ID, map[string]any{"content": []any{text("it failed"), text("badly")}, "isError": true})
	case "rpcerror":
		s.write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32602, "message": "bad params for rpcerror"}})
	case "mixed":
		s.reply(m.ID, map[string]any{"content": []any{
			text("first"),
			map[string]any{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
			map[string]any{"type": "audio", "data": "AAAA"},
			map[string]any{"type": "resource_link", "name": "readme", "uri": "file:///readme.md"},
			map[string]any{"type": "resource_link", "uri": "file:///nameless"},
			map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///x", "text": "x"}},
			map[string]any{"type": "hologram"},
			"a bare string",
			text("last"),
		}})
	case "legacy":
		s.reply(m.ID, map[string]any{"toolResult": map[string]any{"answer": 42}})
	case "stderr":
		t, _ := p.Arguments["text"].(string)
		fmt.Fprintln(os.Stderr, t)
		s.reply(m.ID, map[string]any{"content": []any{text("written")}})
	case "nonlossless":
		s.writeRaw([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[],"content":[]}}` + "\n"))
	case "slow":
		fmt.Fprintf(os.Stderr, "slow on %s\n", m.ID)
		time.Sleep(time.Duration(num("ms", 100)) * time.Millisecond)
		s.reply(m.ID, map[string]any{"content": []any{text("slow done")}})
	default:
		s.reply(m.ID, map[string]any{"content": []any{text("called " + p.Name)}})
	}
}
