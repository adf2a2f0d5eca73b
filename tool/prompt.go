package tool

import (
	"fmt"
	"slices"
)

// CodeOnlyInstruction is the text of the tools:code-only prompt section (docs/behaviour.md §3.10): what a
// model whose scope presents exactly ModeCode is told before the per-tool guidance, so it
// routes calls through run_code instead of discovering the collapse by failing.
const CodeOnlyInstruction = "`run_code` is the only tool you can call directly — a tool call naming any other tool fails. Reach every tool the SDK declares below from inside the program."

// missingRuntime is the error of a non-native presentation without a code runner.
func missingRuntime(mode Mode) error {
	return fmt.Errorf("dsh-tools: mode \"%s\" requires a code runtime — install one (for example codemode with coderuntime/quickjs) or set tools mode to \"native\"", mode)
}

// WireTools returns what system-prompt assembly offers the model for scope (docs/behaviour.md §3.10):
// the schemas to send and the names a tool order may list. In native mode that is every
// visible schema and every name the scope knows before restrictions; in code mode only
// run_code; in both mode every visible schema including run_code, and the known names plus
// run_code. A non-native mode first requires an installed CodeRunner whose language has an
// SDK, so a misconfigured deployment fails every assembly rather than presenting a
// transport that cannot run.
func (r *Registry) WireTools(scope *Scope) (schemas []Schema, known []string, err error) {
	r.mu.RLock()
	mode := r.modeForLocked(scope)
	v := r.viewLocked(scope)
	r.mu.RUnlock()
	if mode != ModeNative {
		b := r.runner.Load()
		if b == nil || b.runner == nil {
			return nil, nil, missingRuntime(mode)
		}
		if lang := b.runner.Language(); !hasFlavour(lang) {
			return nil, nil, fmt.Errorf("dsh-tools: no SDK renderer registered for runtime language \"%s\" (known: \"typescript\", \"python\")", lang)
		}
	}
	names := v.names
	switch mode {
	case ModeCode:
		names, known = []string{RunCodeName}, []string{RunCodeName}
	case ModeBoth:
		known = append(slices.Clone(v.known), RunCodeName)
	default:
		known = slices.Clone(v.known)
	}
	schemas, err = projectSchemas(v, names)
	if err != nil {
		return nil, nil, err
	}
	return schemas, known, nil
}

// hasFlavour reports whether language has a run_code flavour and therefore an SDK.
func hasFlavour(language string) bool {
	_, ok := runCodeFlavours[language]
	return ok
}
