package tool_test

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// TestExecutionMode pins docs/behaviour.md §3.11: fail-closed classification.
func TestExecutionMode(t *testing.T) {
	reg := newReg(t)
	safe := strTool("safe", "")
	safe.ConcurrencySafe = func(any) bool { return true }
	register(t, reg, safe)
	register(t, reg, strTool("plain", ""))
	panics := strTool("panics", "")
	panics.ConcurrencySafe = func(any) bool { panic("boom") }
	register(t, reg, panics)
	var seen any
	rawSafe := strTool("raw-safe", "")
	rawSafe.ConcurrencySafe = func(args any) bool { seen = args; return true }
	register(t, reg, rawSafe)

	type rwArgs struct {
		Mode string `json:"mode"`
	}
	var calls counter
	register(t, reg, tool.Must(tool.New("rw", "read or write",
		func(context.Context, *tool.Call, rwArgs) (string, error) { return "", nil },
		tool.ConcurrencySafeIf(func(in rwArgs) bool { calls.inc("rw"); return in.Mode == "read" }))))
	register(t, reg, tool.Must(tool.New("needs-mode", "requires mode",
		func(context.Context, *tool.Call, rwArgs) (string, error) { return "", nil },
		tool.ConcurrencySafe())))
	register(t, reg, tool.Must(tool.New("classifier-panics", "d",
		func(context.Context, *tool.Call, rwArgs) (string, error) { return "", nil },
		tool.ConcurrencySafeIf(func(rwArgs) bool { panic("boom") }))))

	hidden := reg.NewScope("hidden", nil)
	if _, err := hidden.Restrict(tool.Filter{Deny: []string{"safe"}}); err != nil {
		t.Fatal(err)
	}
	other := reg.NewScope("other", nil)
	mine := strTool("mine", "")
	mine.ConcurrencySafe = func(any) bool { return true }
	register(t, other, mine)
	coder := reg.NewScope("coder", nil)
	if _, err := coder.PresentAs(tool.ModeCode); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		in       tool.Input
		parallel bool
	}{
		{"explicit true", tool.Input{Name: "safe", Args: &jsonv.Object{}}, true},
		{"no classifier", tool.Input{Name: "plain", Args: &jsonv.Object{}}, false},
		{"unknown tool", tool.Input{Name: "nonexistent", Args: &jsonv.Object{}}, false},
		{"classifier panics", tool.Input{Name: "panics", Args: &jsonv.Object{}}, false},
		{"typed read", tool.Input{Name: "rw", Args: js(t, `{"mode":"read"}`)}, true},
		{"typed write", tool.Input{Name: "rw", Args: js(t, `{"mode":"write"}`)}, false},
		{"typed invalid args", tool.Input{Name: "needs-mode", Args: &jsonv.Object{}}, false},
		{"typed valid args", tool.Input{Name: "needs-mode", Args: js(t, `{"mode":"x"}`)}, true},
		{"typed wrong type", tool.Input{Name: "rw", Args: js(t, `{"mode":1}`)}, false},
		{"typed unparseable text", tool.Input{Name: "needs-mode", Args: tool.ParseArguments(`{"mode":`)}, false},
		{"typed classifier panics", tool.Input{Name: "classifier-panics", Args: js(t, `{"mode":"x"}`)}, false},
		{"arguments not lossless", tool.Input{Name: "safe", Args: map[string]any{"f": func() {}}}, false},
		{"restricted away", tool.Input{Name: "safe", Args: &jsonv.Object{}, Agent: hidden}, false},
		{"another scope's tool", tool.Input{Name: "mine", Args: &jsonv.Object{}}, false},
		{"own scope's tool", tool.Input{Name: "mine", Args: &jsonv.Object{}, Agent: other}, true},
		{"collapsed", tool.Input{Name: "safe", Args: &jsonv.Object{}, Agent: coder}, false},
		{"nested under code mode", tool.Input{Name: "safe", Args: &jsonv.Object{}, Agent: coder, Parent: &tool.Token{}}, true},
		{"run_code", tool.Input{Name: "run_code", Args: &jsonv.Object{}, Agent: coder}, false},
	}
	for _, tt := range tests {
		got := reg.ExecutionMode(tt.in)
		if (got == tool.Parallel) != tt.parallel {
			t.Errorf("%s: %v", tt.name, got)
		}
	}
	if calls.get("rw") != 2 {
		t.Errorf("the typed classifier ran %d times, want 2 (never for invalid arguments)", calls.get("rw"))
	}
	// A raw classifier receives the lossless snapshot of the arguments.
	reg.ExecutionMode(tool.Input{Name: "raw-safe", Args: map[string]any{"anything": 1}})
	if b, err := jsonv.Marshal(seen); err != nil || string(b) != `{"anything":1}` {
		t.Errorf("classifier saw %T %s", seen, b)
	}
	if _, ok := seen.(*jsonv.Object); !ok {
		t.Errorf("classifier saw %T, want *jsonv.Object", seen)
	}
	if tool.Parallel.String() != "parallel" || tool.Exclusive.String() != "exclusive" {
		t.Error("ExecMode.String")
	}
}

// TestParseArguments pins docs/behaviour.md §8.1's parse rule.
func TestParseArguments(t *testing.T) {
	tests := []struct {
		raw  string
		want string // the JSON of the parsed value, or the raw string itself quoted
		raw2 bool   // the result is the raw text
	}{
		{"", `{}`, false},
		{`{"a":1}`, `{"a":1}`, false},
		{`[1,"x",null]`, `[1,"x",null]`, false},
		{`null`, `null`, false},
		{`"s"`, `"s"`, false},
		{` {"a" : 1 } `, `{"a":1}`, false},
		{`{"b":1,"a":2}`, `{"b":1,"a":2}`, false},
		{`{"a":`, "", true},
		{`not json`, "", true},
		{`   `, "", true},
		{`{"a":1,"a":2}`, "", true},
		{"\"\xff\"", "", true},
		{`1e400`, "", true},
		{`-0`, "", true},
		{`{"a":1} {"b":2}`, "", true},
	}
	for _, tt := range tests {
		v := tool.ParseArguments(tt.raw)
		if tt.raw2 {
			if s, ok := v.(string); !ok || s != tt.raw {
				t.Errorf("ParseArguments(%q) = %#v, want the raw text", tt.raw, v)
			}
			continue
		}
		b, err := jsonv.Marshal(v)
		if err != nil || string(b) != tt.want {
			t.Errorf("ParseArguments(%q) = %s (%v), want %s", tt.raw, b, err, tt.want)
		}
	}
}
