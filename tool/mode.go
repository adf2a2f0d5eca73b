package tool

import (
	"github.com/dsh-go/dsh/jsonv"
)

// ExecMode says how a scheduler may run a call.
type ExecMode int

// Execution modes.
const (
	// Exclusive calls are barriers: nothing else runs while they do.
	Exclusive ExecMode = iota
	// Parallel calls may overlap other parallel calls.
	Parallel
)

// String returns "parallel" or "exclusive".
func (m ExecMode) String() string {
	if m == Parallel {
		return "parallel"
	}
	return "exclusive"
}

// ExecutionMode classifies a call before it starts (docs/behaviour.md §3.11). It fails closed: only a
// definition that may execute for in (visible, not collapsed) and whose ConcurrencySafe
// returns true for in.Args is Parallel; an unknown tool, a missing classifier, a classifier
// that panics and arguments that are not lossless JSON all give Exclusive.
func (r *Registry) ExecutionMode(in Input) (mode ExecMode) {
	agent := in.Agent
	if agent != nil && agent.global {
		agent = nil
	}
	e := r.resolve(&Execution{name: in.Name, agent: agent, parent: in.Parent})
	if e == nil || e.def.ConcurrencySafe == nil {
		return Exclusive
	}
	// The classifier sees the arguments as the body would: the lossless snapshot.
	args, err := jsonv.Snapshot(in.Args)
	if err != nil {
		return Exclusive
	}
	defer func() {
		if recover() != nil {
			mode = Exclusive
		}
	}()
	if e.def.ConcurrencySafe(args) {
		return Parallel
	}
	return Exclusive
}

// ParseArguments turns the raw argument text a model emitted into the Input.Args of a call
// (docs/behaviour.md §8.1): empty text is {}, valid JSON is its value, and anything else stays the raw
// string, which a tool's argument validation then rejects with a clear message.
func ParseArguments(raw string) any {
	if raw == "" {
		return &jsonv.Object{}
	}
	v, err := jsonv.ParseString(raw)
	if err != nil {
		return raw
	}
	return v
}
