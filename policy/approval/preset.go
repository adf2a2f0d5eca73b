package approval

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/dsh-go/dsh/tool"
)

// Approval presets: the usual approval modes of coding agents, expressed with the permission
// rules and the approval service.
const (
	// PresetReadOnly asks before every call that is not a read: reading and searching
	// (read, glob, grep, job_output, job_list) and run_code (whose calls are asked about one
	// by one) run; write, edit, bash, job_kill, MCP and any other tool ask. Where nobody
	// can answer, the asked calls are denied.
	PresetReadOnly = "read-only"
	// PresetAutoEdit is read-only plus file edits: write and edit run without asking;
	// commands (bash, job_kill), MCP and any other tool ask.
	PresetAutoEdit = "auto-edit"
	// PresetFullAuto allows everything without asking — including calls an ask rule or a
	// tool asks about — except what a deny rule or a guard refuses.
	PresetFullAuto = "full-auto"
)

// Presets lists the preset names in order of increasing freedom.
var presets = []string{PresetReadOnly, PresetAutoEdit, PresetFullAuto}

// readTools run without asking under read-only and auto-edit.
var readTools = []string{"read", "glob", "grep", "job_output", "job_list", tool.RunCodeName}

// editTools also run without asking under auto-edit.
var editTools = []string{"write", "edit"}

// ValidatePreset reports an unknown preset name; "" (no preset) is valid.
func ValidatePreset(name string) error {
	if name == "" || slices.Contains(presets, name) {
		return nil
	}
	return fmt.Errorf("approval preset must be one of read-only, auto-edit or full-auto (got %q)", name)
}

// InstallPreset installs preset name on reg. read-only and auto-edit add a pre-execute hook
// to the global scope that asks about every tool the preset does not let through; it runs
// after the permission rules' own hook, so an allow rule still pre-approves such a call and
// a deny rule still refuses it. full-auto adds nothing: give the approval service
// PolicyAuto (PresetPolicy) so that every question is answered yes. "" installs nothing.
// The returned function removes what was installed.
func InstallPreset(reg *tool.Registry, name string) (undo func(), err error) {
	if reg == nil {
		return nil, errors.New("approval: InstallPreset needs a registry")
	}
	if err := ValidatePreset(name); err != nil {
		return nil, err
	}
	var free []string
	switch name {
	case PresetReadOnly:
		free = readTools
	case PresetAutoEdit:
		free = slices.Concat(readTools, editTools)
	default:
		return func() {}, nil
	}
	return reg.Global().OnPreExecute(func(_ context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		d, err := next()
		if err != nil || d.Kind != tool.PreAllow || slices.Contains(free, exec.Name()) {
			return d, err
		}
		return tool.Ask(fmt.Sprintf("the %s approval preset asks before %s", name, exec.Name())), nil
	}), nil
}

// PresetPolicy returns the approval service policy a preset implies: PolicyAuto for
// full-auto, PolicyAsk otherwise.
func PresetPolicy(name string) string {
	if name == PresetFullAuto {
		return PolicyAuto
	}
	return PolicyAsk
}
