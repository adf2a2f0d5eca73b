package codemode_test

import (
	"strings"
	"testing"

	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/tool"
)

func TestSDKSectionFollowsModeAndRuntime(t *testing.T) {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range sampleDefinitions(t)[:2] {
		if _, err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	native := reg.NewScope("native", nil)
	coder := reg.NewScope("coder", nil)
	both := reg.NewScope("both", nil)
	if _, err := coder.PresentAs(tool.ModeCode); err != nil {
		t.Fatal(err)
	}
	if _, err := both.PresentAs(tool.ModeBoth); err != nil {
		t.Fatal(err)
	}
	if s, err := codemode.SDKSection(reg, native); s != "" || err != nil {
		t.Errorf("native: %q %v", s, err)
	}
	if _, err := codemode.SDKSection(reg, coder); err == nil || !strings.Contains(err.Error(), `mode "code" requires a code runtime`) {
		t.Errorf("no runtime: %v", err)
	}
	undo := reg.SetCodeRunner(mustRunner(t, reg, &fakeRuntime{lang: "ruby"}))
	if _, err := codemode.SDKSection(reg, both); err == nil || !strings.Contains(err.Error(), `runtime language "ruby"`) {
		t.Errorf("unknown language: %v", err)
	}
	undo()
	reg.SetCodeRunner(mustRunner(t, reg, &fakeRuntime{lang: "typescript"}))

	scoped := sampleDefinitions(t)[6] // "路径"
	if _, err := coder.Register(scoped); err != nil {
		t.Fatal(err)
	}
	if _, err := coder.Restrict(tool.Filter{Deny: []string{"grep"}}); err != nil {
		t.Fatal(err)
	}
	s, err := codemode.SDKSection(reg, coder)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  read: {", `  "路径": {`} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q", want)
		}
	}
	for _, unwanted := range []string{"grep", "run_code:", `"run_code"`} {
		if strings.Contains(s, unwanted) {
			t.Errorf("unexpected %q", unwanted)
		}
	}
	s, err = codemode.SDKSection(reg, both)
	if err != nil || !strings.Contains(s, "  grep: {") || strings.Contains(s, "路径") {
		t.Errorf("both: %v\n%s", err, s)
	}
	if codemode.CodeOnlySection(reg, coder) != tool.CodeOnlyInstruction || codemode.CodeOnlySection(reg, both) != "" || codemode.CodeOnlySection(reg, native) != "" {
		t.Error("code-only section")
	}
}

func TestRenderByLanguage(t *testing.T) {
	tools := []codemode.SDKTool{sdkTool(t, "echo", "Echo.", `{"type":"object"}`, `{"type":"string"}`)}
	if s, err := codemode.Render(codemode.TypeScript, tools); err != nil || s != codemode.RenderTypeScript(tools) {
		t.Errorf("typescript: %v", err)
	}
	if s, err := codemode.Render(codemode.Python, tools); err != nil || s != codemode.RenderPython(tools) {
		t.Errorf("python: %v", err)
	}
	if _, err := codemode.Render("lua", tools); err == nil || err.Error() != `dsh-tools: no SDK renderer registered for runtime language "lua" (known: "typescript", "python")` {
		t.Errorf("lua: %v", err)
	}
}

func TestToolsProjection(t *testing.T) {
	reg := sampleRegistry(t, "typescript", nil)
	tools, err := codemode.Tools(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "read,grep,write,my-tool,__proto__,class,路径,mcp__srv__lookup" {
		t.Errorf("names %v", names)
	}
	// The projection is detached from the registry.
	tools[0].Parameters = nil
	again, _ := codemode.Tools(reg, nil)
	if again[0].Parameters == nil {
		t.Error("the projection aliases the registry")
	}
	bad := &tool.Definition{Name: "bad", Parameters: map[string]any{"type": make(chan int)}, Output: tool.Output{Schema: js(t, `{}`), Render: tool.DefaultRender}}
	if _, err := reg.Register(bad); err != nil {
		t.Fatal(err)
	}
	if _, err := codemode.Tools(reg, nil); err == nil || err.Error() != `tool "bad" parameters must be lossless JSON before schema projection` {
		t.Errorf("bad parameters: %v", err)
	}
}
