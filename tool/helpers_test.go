package tool_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// TB is the part of testing.TB the helpers need; *rapid.T implements it too.
type TB interface {
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Fatal(args ...any)
}

// newReg returns a registry with cfg, failing the test on error.
func newReg(tb TB, cfgs ...tool.Config) *tool.Registry {
	if h, ok := tb.(interface{ Helper() }); ok {
		h.Helper()
	}
	var cfg tool.Config
	if len(cfgs) > 0 {
		cfg = cfgs[0]
	}
	reg, err := tool.NewRegistry(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if c, ok := tb.(interface{ Cleanup(func()) }); ok {
		c.Cleanup(reg.Close)
	} else if cfg.Workers > 0 {
		tb.Fatal("newReg: a registry with Workers needs a test that can close it")
	}
	return reg
}

// js parses JSON text into a jsonv value, failing the test on error.
// A nil tb panics on error instead (for table literals built outside a test).
func js(tb TB, text string) any {
	v, err := jsonv.ParseString(text)
	if err != nil {
		if tb == nil {
			panic(err)
		}
		if h, ok := tb.(interface{ Helper() }); ok {
			h.Helper()
		}
		tb.Fatalf("parse %s: %v", text, err)
	}
	return v
}

// renderText renders a string value as its text and anything else as compact JSON.
func renderText(_, value any) ([]content.Block, error) {
	if s, ok := value.(string); ok {
		return content.Texts(s), nil
	}
	b, err := jsonv.Marshal(value)
	if err != nil {
		return nil, err
	}
	return content.Texts(string(b)), nil
}

// strTool is a raw tool whose output schema is {"type":"string"} and whose body returns reply.
func strTool(name, reply string) *tool.Definition {
	return &tool.Definition{
		Name:        name,
		Description: "tool " + name,
		Parameters:  jsonv.NewObject(jsonv.Member{Name: "type", Value: "object"}, jsonv.Member{Name: "properties", Value: &jsonv.Object{}}),
		Output:      tool.Output{Schema: jsonv.NewObject(jsonv.Member{Name: "type", Value: "string"}), Render: renderText},
		Execute:     func(context.Context, *tool.Call) (any, error) { return reply, nil },
	}
}

// bodyTool is a raw tool with an unconstrained output schema and the given body.
func bodyTool(name string, body func(ctx context.Context, call *tool.Call) (any, error)) *tool.Definition {
	return &tool.Definition{
		Name:        name,
		Description: "tool " + name,
		Parameters:  jsonv.NewObject(jsonv.Member{Name: "type", Value: "object"}),
		Output:      tool.Output{Schema: &jsonv.Object{}, Render: renderText},
		Execute:     body,
	}
}

// register registers def through s (the global scope when s is a *tool.Registry).
func register(tb TB, s interface {
	Register(*tool.Definition) (func(), error)
}, def *tool.Definition) func() {
	if h, ok := tb.(interface{ Helper() }); ok {
		h.Helper()
	}
	undo, err := s.Register(def)
	if err != nil {
		tb.Fatalf("register %s: %v", def.Name, err)
	}
	return undo
}

// run executes name with empty arguments for agent and returns the first content text.
func run(reg *tool.Registry, name string, agent *tool.Scope) string {
	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: name, Args: &jsonv.Object{}, Agent: agent})
	return firstText(res)
}

// firstText returns the text of the first content block, or "" when there is none.
func firstText(res *tool.Result) string {
	if len(res.Content) == 0 {
		return ""
	}
	return res.Content[0].Text
}

// resultJSON returns the result's wire JSON.
func resultJSON(tb TB, res *tool.Result) string {
	if h, ok := tb.(interface{ Helper() }); ok {
		h.Helper()
	}
	b, err := res.MarshalJSON()
	if err != nil {
		tb.Fatalf("marshal result: %v", err)
	}
	return string(b)
}

// wantJSON compares the result's wire JSON with want exactly.
func wantJSON(tb TB, res *tool.Result, want string) {
	if h, ok := tb.(interface{ Helper() }); ok {
		h.Helper()
	}
	if got := resultJSON(tb, res); got != want {
		tb.Errorf("result\n got: %s\nwant: %s", got, want)
	}
}

// msg returns a plugin-sourced user message with a fixed id.
func msg(plugin, text string) content.Message {
	return content.Message{
		ID:      "m-" + plugin,
		Role:    content.RoleUser,
		Content: content.Texts(text),
		Source:  &content.Source{Kind: "plugin", Plugin: plugin},
	}
}

// plugins lists the source plugins of a result's additional contexts.
func plugins(res *tool.Result) []string {
	var out []string
	for _, m := range res.AdditionalContexts {
		if m.Source != nil {
			out = append(out, m.Source.Plugin)
		} else {
			out = append(out, "")
		}
	}
	return out
}

// checkInvariants fails the test when res breaks a result invariant of docs/behaviour.md §5.1.
func checkInvariants(tb TB, res *tool.Result) {
	if h, ok := tb.(interface{ Helper() }); ok {
		h.Helper()
	}
	if res == nil {
		tb.Fatal("nil result")
	}
	if res.IsError {
		if res.Error == nil {
			tb.Errorf("failure without error: %+v", res)
		}
		if res.Value != nil {
			tb.Errorf("failure with a value: %+v", res)
		}
		if res.ConcludesTurn {
			tb.Errorf("failure concludes the turn: %+v", res)
		}
	} else if res.Error != nil {
		tb.Errorf("success with an error: %+v", res)
	}
	if res.Content == nil {
		tb.Errorf("nil content: %+v", res)
	}
	if res.AdditionalContexts != nil && len(res.AdditionalContexts) == 0 {
		tb.Errorf("empty non-nil additional contexts")
	}
	if err := jsonv.Check(res.Value); err != nil {
		tb.Errorf("value is not a jsonv value: %v", err)
	}
	if res.Meta != nil {
		if err := jsonv.Check(res.Meta); err != nil {
			tb.Errorf("meta is not a jsonv value: %v", err)
		}
	}
	text := resultJSON(tb, res)
	v, err := jsonv.ParseString(text)
	if err != nil {
		tb.Fatalf("result JSON does not parse: %v\n%s", err, text)
	}
	o := v.(*jsonv.Object)
	_, hasValue := o.Get("value")
	_, hasError := o.Get("error")
	_, hasConcl := o.Get("concludesTurn")
	if res.IsError && (hasValue || !hasError || hasConcl) || !res.IsError && (!hasValue || hasError) {
		tb.Errorf("wire shape breaks key presence rules: %s", text)
	}
}

// logCapture is a slog handler that records every message.
type logCapture struct {
	mu   sync.Mutex
	msgs []string
}

func (h *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (h *logCapture) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Level.String()+" "+r.Message)
	return nil
}
func (h *logCapture) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logCapture) WithGroup(string) slog.Handler      { return h }

func (h *logCapture) messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.msgs...)
}

// counter counts pipeline phases per call name.
type counter struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counter) inc(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[key]++
}

func (c *counter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key]
}

// contains reports whether s contains sub (for readable conditions).
func contains(s, sub string) bool { return strings.Contains(s, sub) }
