package agent

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/tool"
)

// UnlistedTools is the rest entry of a tool order: the place where every tool the order does
// not list is inserted, in name order.
const UnlistedTools = "<unlisted-tools>"

// Section orders of the built-in prompt sections. Sections are rendered in ascending order;
// the reference places per-tool guidance at 100–199 (the Code Mode SDK at 150).
const (
	OrderIdentity    = -100 // the base prompt (or Config.SystemPrompt)
	OrderEnvironment = -50  // the workspace and the date
	OrderCodeOnly    = 99   // the Code Mode instruction
	OrderSDK         = 150  // where the Code Mode SDK section belongs
)

// BasePrompt is the default identity section of the system prompt.
const BasePrompt = "You are dsh, an AI agent that completes the user's task by calling the tools provided to you. " +
	"Every tool call runs under this deployment's policies: a call can be denied, need a person's approval, or time out. " +
	"When a call fails, read the error and change your approach instead of repeating the same call. " +
	"When the task is done, reply with a short summary of what you did and what you found."

// PromptSection is one ordered part of the system prompt.
type PromptSection struct {
	// Name identifies the section, e.g. "tools:sdk". A later section with the name of an
	// earlier one replaces it: the built-in sections are "dsh:identity",
	// "dsh:environment" and "tools:code-only".
	Name string
	// Order places the section: lower first, ties keep their insertion order.
	Order float64
	// Text is the section's text; an empty section is dropped.
	Text string
}

// PromptInfo is what a PromptSectionFunc may depend on.
type PromptInfo struct {
	// Registry is the agent's tool registry and Scope its scope.
	Registry *tool.Registry
	Scope    *tool.Scope
	// Mode is the agent's effective presentation mode.
	Mode tool.Mode
	// Workspace is Config.Workspace.
	Workspace string
	// Turn and Step are the step the prompt is assembled for.
	Turn, Step int
}

// PromptSectionFunc contributes sections to the system prompt. It runs before every step
// (the prompt may change when tools change); an error ends the turn before the step starts.
// Code Mode uses it to add the SDK of the tools a program may call.
type PromptSectionFunc func(ctx context.Context, info PromptInfo) ([]PromptSection, error)

// assembly is the system prompt and the tools of one step.
type assembly struct {
	system string
	tools  []llm.ToolSchema
}

// assemble builds the system prompt and the offered tools for one step.
func (a *Agent) assemble(ctx context.Context, turn, step int) (assembly, error) {
	mode := a.reg.ModeFor(a.scope)
	schemas, known, err := a.reg.WireTools(a.scope)
	if err != nil {
		return assembly{}, err
	}
	schemas, err = orderTools(schemas, a.cfg.ToolOrder, known)
	if err != nil {
		return assembly{}, err
	}
	identity := a.cfg.SystemPrompt
	if identity == "" {
		identity = BasePrompt
	}
	sections := []PromptSection{
		{Name: "dsh:identity", Order: OrderIdentity, Text: identity},
		{Name: "dsh:environment", Order: OrderEnvironment, Text: environment(a.cfg.Workspace, a.now())},
	}
	if mode == tool.ModeCode {
		sections = append(sections, PromptSection{Name: "tools:code-only", Order: OrderCodeOnly, Text: tool.CodeOnlyInstruction})
	}
	info := PromptInfo{Registry: a.reg, Scope: a.scope, Mode: mode, Workspace: a.cfg.Workspace, Turn: turn, Step: step}
	for _, fn := range a.cfg.PromptSections {
		more, err := fn(ctx, info)
		if err != nil {
			return assembly{}, fmt.Errorf("system prompt: %w", err)
		}
		sections = append(sections, more...)
	}
	tools := make([]llm.ToolSchema, len(schemas))
	for i, s := range schemas {
		tools[i] = llm.ToolSchema{Name: s.Name, Description: s.Description, Parameters: s.Parameters, Strict: s.Strict}
	}
	return assembly{system: RenderPrompt(dedupe(sections)), tools: tools}, nil
}

// dedupe keeps, for each section name, the last section of that name in the place of the
// first: a PromptSectionFunc replaces a built-in section by reusing its name.
func dedupe(sections []PromptSection) []PromptSection {
	last := make(map[string]int, len(sections))
	for i, s := range sections {
		if s.Name != "" {
			last[s.Name] = i
		}
	}
	out := make([]PromptSection, 0, len(sections))
	placed := make(map[string]bool, len(last))
	for _, s := range sections {
		if s.Name == "" {
			out = append(out, s)
			continue
		}
		if !placed[s.Name] {
			placed[s.Name] = true
			out = append(out, sections[last[s.Name]])
		}
	}
	return out
}

// environment is the section stating where the agent works and when.
func environment(workspace string, now time.Time) string {
	var b strings.Builder
	if workspace != "" {
		fmt.Fprintf(&b, "Your workspace is %s; relative paths are resolved against it. ", workspace)
	}
	fmt.Fprintf(&b, "Today's date is %s.", now.Format("2006-01-02"))
	return b.String()
}

// RenderPrompt renders sections in ascending order (stable for ties), drops the empty ones
// and joins the rest with blank lines.
func RenderPrompt(sections []PromptSection) string {
	sorted := slices.Clone(sections)
	slices.SortStableFunc(sorted, func(x, y PromptSection) int { return cmp.Compare(x.Order, y.Order) })
	var parts []string
	for _, s := range sorted {
		if s.Text != "" {
			parts = append(parts, s.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// CheckToolOrder validates a configured tool order: no name twice and the UnlistedTools rest
// entry present. A nil order is valid (name order). Whether the names exist is checked at
// every prompt assembly, against the tools the agent's scope knows.
func CheckToolOrder(order []string) error {
	if order == nil {
		return nil
	}
	seen := make(map[string]bool, len(order))
	for _, n := range order {
		if seen[n] {
			return fmt.Errorf("toolOrder lists \"%s\" more than once", n)
		}
		seen[n] = true
	}
	if !seen[UnlistedTools] {
		return fmt.Errorf("toolOrder must contain the \"%s\" rest entry (where unlisted tools are inserted)", UnlistedTools)
	}
	return nil
}

// orderTools orders schemas by name, or by order when one is configured: listed tools take
// their listed place (a listed tool hidden in this scope is simply absent) and the others
// go, by name, where the rest entry stands. A listed name the scope does not know fails.
func orderTools(schemas []tool.Schema, order []string, known []string) ([]tool.Schema, error) {
	byName := func(x, y tool.Schema) int { return strings.Compare(x.Name, y.Name) }
	for _, s := range schemas {
		if s.Name == UnlistedTools {
			return nil, fmt.Errorf("tool provider returned reserved tool name \"%s\" (reserved for toolOrder's rest entry)", UnlistedTools)
		}
	}
	out := slices.Clone(schemas)
	if order == nil {
		slices.SortFunc(out, byName)
		return out, nil
	}
	var unknown []string
	for _, n := range order {
		if n != UnlistedTools && !slices.Contains(known, n) {
			unknown = append(unknown, `"`+n+`"`)
		}
	}
	if len(unknown) > 0 {
		names := slices.Sorted(slices.Values(known))
		list := strings.Join(names, ", ")
		if list == "" {
			list = "(none)"
		}
		plural := ""
		if len(unknown) > 1 {
			plural = "s"
		}
		return nil, fmt.Errorf("toolOrder lists unregistered tool%s %s; known tools: %s", plural, strings.Join(unknown, ", "), list)
	}
	listed := make(map[string]bool, len(order))
	for _, n := range order {
		listed[n] = true
	}
	var rest []tool.Schema
	for _, s := range out {
		if !listed[s.Name] {
			rest = append(rest, s)
		}
	}
	slices.SortFunc(rest, byName)
	ordered := make([]tool.Schema, 0, len(out))
	for _, n := range order {
		if n == UnlistedTools {
			ordered = append(ordered, rest...)
			continue
		}
		for _, s := range out {
			if s.Name == n {
				ordered = append(ordered, s)
			}
		}
	}
	return ordered, nil
}
