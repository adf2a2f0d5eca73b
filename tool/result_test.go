package tool_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// TestResultJSON pins the docs/behaviour.md §5.1 wire shape: key presence and member order.
func TestResultJSON(t *testing.T) {
	ctxMsg := content.Message{ID: "m1", Role: content.RoleUser, Content: content.Texts("fyi"),
		Source: &content.Source{Kind: "plugin", Plugin: "p", Form: "notice", Summary: "s"}}
	toolMsg := content.Message{ID: "m2", Role: content.RoleUser, Content: []content.Block{}, Source: &content.Source{Kind: "tool", CallID: "c1"}}
	tests := []struct {
		name string
		res  *tool.Result
		want string
	}{
		{"minimal success", &tool.Result{Value: "hi", Content: content.Texts("hi")},
			`{"isError":false,"content":[{"type":"text","text":"hi"}],"value":"hi"}`},
		{"null value", &tool.Result{Content: []content.Block{}},
			`{"isError":false,"content":[],"value":null}`},
		{"full success", &tool.Result{Value: js(t, `{"b":1,"a":[true]}`), Content: content.Texts("x"), Meta: js(t, `{"m":null}`),
			AdditionalContexts: []content.Message{ctxMsg, toolMsg}, ConcludesTurn: true},
			`{"isError":false,"content":[{"type":"text","text":"x"}],"meta":{"m":null},"additionalContexts":[{"id":"m1","role":"user","content":[{"type":"text","text":"fyi"}],"source":{"kind":"plugin","plugin":"p","form":"notice","summary":"s"}},{"id":"m2","role":"user","content":[],"source":{"kind":"tool","callId":"c1"}}],"concludesTurn":true,"value":{"b":1,"a":[true]}}`},
		{"success ignores a stray error", &tool.Result{Value: 1.0, Content: content.Texts("1"), Error: &tool.Failure{Message: "x"}},
			`{"isError":false,"content":[{"type":"text","text":"1"}],"value":1}`},
		{"empty contexts are absent", &tool.Result{Value: "v", Content: content.Texts("v"), AdditionalContexts: []content.Message{}},
			`{"isError":false,"content":[{"type":"text","text":"v"}],"value":"v"}`},
		{"coded failure", tool.Fail(tool.NewError("ToolNotFoundError", tool.CodeUnknownTool, `unknown tool "x"`)),
			`{"isError":true,"error":{"message":"unknown tool \"x\"","info":{"name":"ToolNotFoundError","code":"UNKNOWN_TOOL"}},"content":[{"type":"text","text":"Error: unknown tool \"x\""}]}`},
		{"denial", tool.Denied("no"),
			`{"isError":true,"error":{"message":"no"},"content":[{"type":"text","text":"Error: no"}]}`},
		{"failure never carries value or concludesTurn", &tool.Result{IsError: true, Value: "v", ConcludesTurn: true, Error: &tool.Failure{Message: "m"},
			Content: content.Texts("c"), Meta: "meta", AdditionalContexts: []content.Message{toolMsg}},
			`{"isError":true,"error":{"message":"m"},"content":[{"type":"text","text":"c"}],"meta":"meta","additionalContexts":[{"id":"m2","role":"user","content":[],"source":{"kind":"tool","callId":"c1"}}]}`},
		{"failure without an error", &tool.Result{IsError: true},
			`{"isError":true,"error":{"message":""},"content":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantJSON(t, tt.res, tt.want)
			// JSON() and MarshalJSON agree, and the encoding parses back strictly.
			b, err := jsonv.Marshal(tt.res.JSON())
			if err != nil || string(b) != tt.want {
				t.Errorf("JSON() = %s, %v", b, err)
			}
			if _, err := jsonv.Parse(b); err != nil {
				t.Errorf("does not parse back: %v", err)
			}
		})
	}
}

func TestResultClone(t *testing.T) {
	orig := &tool.Result{
		Value: js(t, `{"a":[1]}`), Content: content.Texts("c"), Meta: js(t, `{"m":1}`),
		Error:              &tool.Failure{Message: "e", Info: &tool.Info{Name: "N", Code: "C"}},
		AdditionalContexts: []content.Message{msg("p", "x")},
	}
	before := resultJSON(t, orig)
	infoBefore := *orig.Error.Info
	c := orig.Clone()
	c.Value.(*jsonv.Object).Set("a", "changed")
	c.Content[0].Text = "changed"
	c.Meta.(*jsonv.Object).Set("m", 2.0)
	c.Error.Message = "changed"
	c.Error.Info.Code = "changed"
	c.AdditionalContexts[0].Content[0].Text = "changed"
	c.AdditionalContexts[0].Source.Plugin = "changed"
	if resultJSON(t, orig) != before || *orig.Error.Info != infoBefore || orig.Error.Message != "e" {
		t.Errorf("Clone shares memory: %s", resultJSON(t, orig))
	}
	if (*tool.Result)(nil).Clone() != nil {
		t.Error("nil Clone")
	}
}

type stringer struct{}

func (stringer) String() string { return "stringer" }

// TestErrorMessage pins docs/behaviour.md §5.3 in its Go form.
func TestErrorMessage(t *testing.T) {
	var typedNil *tool.Error
	tests := []struct {
		v    any
		want string
	}{
		{errors.New("boom"), "boom"},
		{"kaboom", "kaboom"},
		{stringer{}, "stringer"},
		{42, "42"},
		{struct{ Code int }{500}, "{500}"},
		{hostile{}, "<unprintable thrown value>"},
		{typedNil, "<unprintable thrown value>"},
		{nil, "<nil>"},
	}
	for _, tt := range tests {
		if got := tool.ErrorMessage(tt.v); got != tt.want {
			t.Errorf("ErrorMessage(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestCodedErrors(t *testing.T) {
	var typedNil *tool.Error
	cause := errors.New("cause")
	e := &tool.Error{Name: "FsError", Code: "FS_IO_ERROR", Message: "io failed", Err: cause}
	tests := []struct {
		err  error
		want *tool.Info
	}{
		{nil, nil},
		{errors.New("plain"), nil},
		{e, &tool.Info{Name: "FsError", Code: "FS_IO_ERROR"}},
		{fmt.Errorf("outer: %w", e), &tool.Info{Name: "FsError", Code: "FS_IO_ERROR"}},
		{&tool.Error{Code: "X"}, &tool.Info{Name: "Error", Code: "X"}},
		{&tool.Error{Name: "OnlyName"}, nil},
		{typedNil, nil},
		{tool.Errorf("N", "C", "n=%d", 1), &tool.Info{Name: "N", Code: "C"}},
	}
	for _, tt := range tests {
		got := tool.InfoOf(tt.err)
		if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
			t.Errorf("InfoOf(%v) = %+v, want %+v", tt.err, got, tt.want)
		}
	}
	if !errors.Is(e, cause) || e.Error() != "io failed" || tool.Errorf("N", "C", "n=%d", 1).Error() != "n=1" {
		t.Error("Error methods")
	}
	var coded tool.Coded
	if !errors.As(fmt.Errorf("w: %w", e), &coded) || coded.ErrorCode() != "FS_IO_ERROR" {
		t.Error("errors.As does not find the coded error")
	}
	wantJSON(t, tool.Fail(e), `{"isError":true,"error":{"message":"io failed","info":{"name":"FsError","code":"FS_IO_ERROR"}},"content":[{"type":"text","text":"Error: io failed"}]}`)
	wantJSON(t, tool.Fail(errors.New("plain")), `{"isError":true,"error":{"message":"plain"},"content":[{"type":"text","text":"Error: plain"}]}`)
	wantJSON(t, tool.Success("v", content.Texts("v")), `{"isError":false,"content":[{"type":"text","text":"v"}],"value":"v"}`)
}
