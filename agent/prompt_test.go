package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

func toolNames(req llm.Request) []string {
	var out []string
	for _, s := range req.Tools {
		out = append(out, s.Name)
	}
	return out
}

func TestSystemPrompt(t *testing.T) {
	f := newFixture(t)
	a, m := f.agent(t, []script.Reply{{Text: "x"}}, Config{Workspace: "/work/space"})
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	want := BasePrompt + "\n\nYour workspace is /work/space; relative paths are resolved against it. Today's date is 2026-03-14."
	if got := m.Requests()[0].System; got != want {
		t.Fatalf("system prompt:\n%s\nwant:\n%s", got, want)
	}
}

func TestPromptSections(t *testing.T) {
	f := newFixture(t)
	var infos []PromptInfo
	sections := func(ctx context.Context, info PromptInfo) ([]PromptSection, error) {
		infos = append(infos, info)
		return []PromptSection{
			{Name: "late", Order: 200, Text: "LATE"},
			{Name: "empty", Order: 0, Text: ""},
			{Name: "sdk", Order: OrderSDK, Text: "SDK"},
			{Name: "first", Order: -200, Text: "FIRST"},
		}, nil
	}
	a, m := f.agent(t, []script.Reply{{ToolCalls: scriptCalls("echo:c1:x")}, {Text: "x"}}, Config{SystemPrompt: "You are a test.", PromptSections: []PromptSectionFunc{sections}})
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	want := "FIRST\n\nYou are a test.\n\nToday's date is 2026-03-14.\n\nSDK\n\nLATE"
	if got := m.Requests()[0].System; got != want {
		t.Fatalf("system prompt = %q, want %q", got, want)
	}
	if len(infos) != 2 || infos[1].Step != 2 || infos[1].Turn != 1 || infos[1].Mode != tool.ModeNative || infos[1].Scope != a.Scope() {
		t.Fatalf("infos = %+v", infos)
	}
}

func TestPromptSectionFailureEndsTurnWithoutStep(t *testing.T) {
	f := newFixture(t)
	a, m := f.agent(t, []script.Reply{{Text: "never"}}, Config{PromptSections: []PromptSectionFunc{
		func(context.Context, PromptInfo) ([]PromptSection, error) { return nil, errors.New("no sdk") },
	}})
	res, err := a.Run(context.Background(), "go")
	if err == nil || res.Reason.Error == nil || res.Reason.Error.Message != "system prompt: no sdk" || res.Reason.Error.Code != CodeUnknown {
		t.Fatalf("err = %v, reason = %+v", err, res.Reason)
	}
	equalStrings(t, "events", describe(t, a.Log().Events()), []string{"turn/start", "turn/end error"})
	if len(m.Requests()) != 0 {
		t.Fatal("the model was called")
	}
}

func TestToolsSortedByName(t *testing.T) {
	f := newFixture(t)
	a, m := f.agent(t, []script.Reply{{Text: "x"}}, Config{})
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "tools", toolNames(m.Requests()[0]), []string{"block", "echo", "end", "excl", "note", "slow"})
	if p := m.Requests()[0].Tools[1].Parameters; p == nil {
		t.Fatal("schema without parameters")
	}
}

func TestToolOrder(t *testing.T) {
	for _, tc := range []struct {
		order []string
		want  []string
	}{
		{[]string{"slow", UnlistedTools}, []string{"slow", "block", "echo", "end", "excl", "note"}},
		{[]string{UnlistedTools, "echo", "block"}, []string{"end", "excl", "note", "slow", "echo", "block"}},
		{[]string{"note", UnlistedTools, "end"}, []string{"note", "block", "echo", "excl", "slow", "end"}},
	} {
		f := newFixture(t)
		a, m := f.agent(t, []script.Reply{{Text: "x"}}, Config{ToolOrder: tc.order})
		if _, err := a.Run(context.Background(), "go"); err != nil {
			t.Fatal(err)
		}
		equalStrings(t, strings.Join(tc.order, ","), toolNames(m.Requests()[0]), tc.want)
	}
}

// TestToolOrderRestrictedName: a name the scope knows but a restriction hides is simply
// absent; it is not an unknown name.
func TestToolOrderRestrictedName(t *testing.T) {
	f := newFixture(t)
	scope := f.reg.NewScope("restricted", nil)
	if _, err := scope.Restrict(tool.Filter{Deny: []string{"slow"}}); err != nil {
		t.Fatal(err)
	}
	a, m := f.agent(t, []script.Reply{{Text: "x"}}, Config{Scope: scope, ToolOrder: []string{"slow", "echo", UnlistedTools}})
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "tools", toolNames(m.Requests()[0]), []string{"echo", "block", "end", "excl", "note"})
}

func TestToolOrderUnknownNameClosesTurnWithoutStep(t *testing.T) {
	f := newFixture(t)
	a, m := f.agent(t, []script.Reply{{Text: "never sent"}}, Config{ToolOrder: []string{"ghost", UnlistedTools, "spook"}})
	res, err := a.Run(context.Background(), "go")
	want := `toolOrder lists unregistered tools "ghost", "spook"; known tools: block, echo, end, excl, note, slow`
	if err == nil || res.Reason.Kind != session.EndError || res.Reason.Error.Message != want {
		t.Fatalf("err = %v, reason = %+v", err, res.Reason)
	}
	equalStrings(t, "events", describe(t, a.Log().Events()), []string{"turn/start", "turn/end error"})
	if len(m.Requests()) != 0 {
		t.Fatal("the model was called")
	}
}

func TestOrderToolsMessages(t *testing.T) {
	if _, err := orderTools(nil, []string{"x", UnlistedTools}, nil); err == nil || err.Error() != `toolOrder lists unregistered tool "x"; known tools: (none)` {
		t.Errorf("err = %v", err)
	}
	if _, err := orderTools([]tool.Schema{{Name: UnlistedTools}}, nil, nil); err == nil || err.Error() != `tool provider returned reserved tool name "<unlisted-tools>" (reserved for toolOrder's rest entry)` {
		t.Errorf("err = %v", err)
	}
}

// fakeRunner is a CodeRunner whose programs return their own text.
type fakeRunner struct{}

func (fakeRunner) Language() string { return "typescript" }
func (fakeRunner) RunCode(ctx context.Context, call *tool.Call, code string) (any, error) {
	return map[string]any{"logs": []any{}, "result": code}, nil
}

func TestPresentationModes(t *testing.T) {
	for _, tc := range []struct {
		mode     tool.Mode
		tools    []string
		codeOnly bool
	}{
		{tool.ModeNative, []string{"block", "echo", "end", "excl", "note", "slow"}, false},
		{tool.ModeCode, []string{"run_code"}, true},
		{tool.ModeBoth, []string{"block", "echo", "end", "excl", "note", "run_code", "slow"}, false},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			f := newFixture(t)
			f.reg.SetCodeRunner(fakeRunner{})
			scope := f.reg.NewScope("coder", nil)
			if _, err := scope.PresentAs(tc.mode); err != nil {
				t.Fatal(err)
			}
			a, m := f.agent(t, []script.Reply{{Text: "x"}}, Config{Scope: scope})
			if _, err := a.Run(context.Background(), "go"); err != nil {
				t.Fatal(err)
			}
			req := m.Requests()[0]
			equalStrings(t, "tools", toolNames(req), tc.tools)
			if got := strings.Contains(req.System, tool.CodeOnlyInstruction); got != tc.codeOnly {
				t.Fatalf("code-only instruction present = %v in %q", got, req.System)
			}
		})
	}
}

func TestCodeModeToolOrder(t *testing.T) {
	f := newFixture(t)
	f.reg.SetCodeRunner(fakeRunner{})
	scope := f.reg.NewScope("coder", nil)
	scope.PresentAs(tool.ModeCode)
	// A code-mode agent knows only run_code, so an order naming a native tool fails
	// (docs/behaviour.md §3.10) …
	a, _ := f.agent(t, []script.Reply{{Text: "x"}}, Config{Scope: scope, ToolOrder: []string{"echo", UnlistedTools}})
	if _, err := a.Run(context.Background(), "go"); err == nil || !strings.Contains(err.Error(), `toolOrder lists unregistered tool "echo"; known tools: run_code`) {
		t.Fatalf("err = %v", err)
	}
	// … while listing run_code works.
	b, m := f.agent(t, []script.Reply{{Text: "x"}}, Config{Scope: scope, ToolOrder: []string{tool.RunCodeName, UnlistedTools}})
	if _, err := b.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "tools", toolNames(m.Requests()[0]), []string{"run_code"})
}

func TestRenderPrompt(t *testing.T) {
	got := RenderPrompt([]PromptSection{{Order: 1, Text: "b"}, {Order: 1, Text: "c"}, {Order: -1, Text: "a"}, {Order: 0}})
	if got != "a\n\nb\n\nc" {
		t.Fatalf("RenderPrompt = %q", got)
	}
	if RenderPrompt(nil) != "" {
		t.Fatal("empty prompt not empty")
	}
}

// TestSectionReplacement: a contributed section named like a built-in one replaces it, so
// Code Mode can supply its own tools:code-only section without a duplicate.
func TestSectionReplacement(t *testing.T) {
	f := newFixture(t)
	f.reg.SetCodeRunner(fakeRunner{})
	scope := f.reg.NewScope("coder", nil)
	scope.PresentAs(tool.ModeCode)
	a, m := f.agent(t, []script.Reply{{Text: "x"}}, Config{Scope: scope, PromptSections: []PromptSectionFunc{
		func(ctx context.Context, info PromptInfo) ([]PromptSection, error) {
			return []PromptSection{
				{Name: "dsh:identity", Order: OrderIdentity, Text: "IDENTITY"},
				{Name: "tools:code-only", Order: OrderCodeOnly, Text: tool.CodeOnlyInstruction},
			}, nil
		},
	}})
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	want := "IDENTITY\n\nToday's date is 2026-03-14.\n\n" + tool.CodeOnlyInstruction
	if got := m.Requests()[0].System; got != want {
		t.Fatalf("system prompt = %q, want %q", got, want)
	}
}

// TestCodeModeWithoutRuntime: a non-native presentation without a code runner fails every
// assembly, so the turn closes before its first step (docs/behaviour.md §3.10).
func TestCodeModeWithoutRuntime(t *testing.T) {
	f := newFixture(t)
	scope := f.reg.NewScope("coder", nil)
	scope.PresentAs(tool.ModeBoth)
	a, m := f.agent(t, []script.Reply{{Text: "x"}}, Config{Scope: scope})
	res, err := a.Run(context.Background(), "go")
	if err == nil || !strings.Contains(res.Reason.Error.Message, `mode "both" requires a code runtime`) {
		t.Fatalf("err = %v, reason = %+v", err, res.Reason)
	}
	equalStrings(t, "events", describe(t, a.Log().Events()), []string{"turn/start", "turn/end error"})
	if len(m.Requests()) != 0 {
		t.Fatal("the model was called")
	}
}
