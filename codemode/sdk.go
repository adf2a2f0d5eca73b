package codemode

import (
	"fmt"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// SDKTool is one tool as the Code Mode SDK declares it: the model-visible projection plus
// the schema of the canonical value a program receives from a call.
type SDKTool struct {
	Name        string
	Description string
	Parameters  any // the JSON Schema of the arguments (a jsonv value)
	Output      any // the JSON Schema of the canonical output value (a jsonv value)
}

// Languages the SDK can be rendered for.
const (
	TypeScript = "typescript"
	Python     = "python"
)

// Tools returns the tools a run_code program of scope can call: every tool visible to
// scope except run_code, in view order, with detached copies of their schemas. It fails
// like Registry.Schemas for parameters that are not lossless JSON.
func Tools(reg *tool.Registry, scope *tool.Scope) ([]SDKTool, error) {
	defs := reg.Definitions(scope)
	out := make([]SDKTool, 0, len(defs))
	for _, d := range defs {
		if d.Name == tool.RunCodeName {
			continue
		}
		params, err := jsonv.Snapshot(d.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool \"%s\" parameters must be lossless JSON before schema projection", d.Name)
		}
		// A registered output schema compiled, so it snapshots; if it somehow does not, the
		// renderers declare the output as unknown.
		output, err := jsonv.Snapshot(d.Output.Schema)
		if err != nil {
			output = d.Output.Schema
		}
		out = append(out, SDKTool{Name: d.Name, Description: d.Description, Parameters: params, Output: output})
	}
	return out, nil
}

// Render renders the SDK section for a runtime language: RenderTypeScript for
// "typescript", RenderPython for "python", and an error naming the language otherwise.
func Render(language string, tools []SDKTool) (string, error) {
	switch language {
	case TypeScript:
		return RenderTypeScript(tools), nil
	case Python:
		return RenderPython(tools), nil
	}
	return "", fmt.Errorf("dsh-tools: no SDK renderer registered for runtime language \"%s\" (known: \"typescript\", \"python\")", language)
}

// SDKSection returns the tools:sdk system-prompt section of scope (docs/behaviour.md §3.10, order 150):
// empty when the scope's presentation mode is native, else the SDK of the tools a program
// may call, in the language of the installed code runner. Like Registry.WireTools it fails
// when a non-native mode has no code runner or the runner's language has no SDK. The text
// is regenerated from the registry on every call; it is byte-identical while the tool set
// is unchanged.
func SDKSection(reg *tool.Registry, scope *tool.Scope) (string, error) {
	if reg.ModeFor(scope) == tool.ModeNative {
		return "", nil
	}
	if _, _, err := reg.WireTools(scope); err != nil {
		return "", err
	}
	runner := reg.CodeRunner()
	if runner == nil { // uninstalled since WireTools looked
		return "", fmt.Errorf("dsh-tools: mode \"%s\" requires a code runtime", reg.ModeFor(scope))
	}
	tools, err := Tools(reg, scope)
	if err != nil {
		return "", err
	}
	return Render(runner.Language(), tools)
}

// CodeOnlySection returns the tools:code-only system-prompt section of scope (docs/behaviour.md §3.10,
// order 99): tool.CodeOnlyInstruction when the scope's presentation mode is exactly code,
// and empty otherwise (in both mode a direct call does run).
func CodeOnlySection(reg *tool.Registry, scope *tool.Scope) string {
	if reg.ModeFor(scope) == tool.ModeCode {
		return tool.CodeOnlyInstruction
	}
	return ""
}

// Section orders of the two Code Mode prompt sections (docs/behaviour.md §3.10).
const (
	CodeOnlyOrder = 99
	SDKOrder      = 150
)
