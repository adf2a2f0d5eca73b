package tool

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
)

// Definition is a registered tool (docs/behaviour.md §3.1). Name, Description and Parameters are the only
// parts the model ever sees. Most tools are built with New (typed) or NewRaw; a Definition
// may also be filled in directly.
type Definition struct {
	// Name is the tool name the model calls.
	Name string
	// Description tells the model what the tool does.
	Description string
	// Parameters is the JSON Schema of the arguments (a jsonv value or a Go value that
	// snapshots to one). It is sent to the model verbatim.
	Parameters any

	// Output declares the canonical value's schema and its projections; it is mandatory.
	Output Output

	// Execute is the body. It returns the canonical value only (a jsonv value or a Go value
	// that snapshots to one); the registry validates and renders it.
	Execute func(ctx context.Context, call *Call) (any, error)

	// FinalizeContent optionally transforms the content of the final result, exactly once per
	// call, whatever the outcome. Returning nil keeps the content.
	FinalizeContent func(exec *Execution, res *Result) ([]content.Block, error)

	// Timeout declares a cooperative deadline. It is enforced only by the timeout policy and
	// never sent to the model; zero means none.
	Timeout time.Duration

	// Strict marks the tool for a model API's strict tool mode (OpenAI's and DeepSeek's
	// "strict": true), in which the model's arguments are constrained to the schema. tool.New
	// with the Strict option sets it and closes the inferred argument objects.
	Strict bool

	// ConcurrencySafe classifies one call: only true lets the scheduler run it in parallel
	// with other safe calls. Nil means always exclusive.
	ConcurrencySafe func(args any) bool

	// PresentCall returns the pending UI card of a call, or nil for the generic fallback.
	PresentCall func(args any) *card.Call
	// PresentResult returns the completed UI card of a result, or nil for the generic
	// fallback. It also runs on log replay, so it must depend only on its inputs.
	PresentResult func(args any, res card.ToolResult) *card.Result

	// trusted marks definitions built by New: their body returns freshly encoded values and
	// their projections decode into fresh Go values, so the pipeline need not copy what it
	// hands them.
	trusted bool
	// owned is the body of a definition built by New, which returns a canonical value the
	// pipeline adopts as it is (no snapshot, no wrapping that would allocate).
	owned ownedBody
}

// ownedBody is a typed tool's body returning values it built itself, and the Execute it
// was made with: when Execute has been replaced since, the pipeline calls the new one.
type ownedBody struct {
	execute func(ctx context.Context, call *Call) (any, error)
	of      unsafe.Pointer
}

// funcID identifies a func value: the closure it points to. Two func values with the same
// identity run the same code on the same captured state.
func funcID(f func(context.Context, *Call) (any, error)) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&f))
}

// ownedExecute returns the definition's owned body when Execute is still the one New made.
func (d *Definition) ownedExecute() func(context.Context, *Call) (any, error) {
	if d.owned.execute != nil && funcID(d.Execute) == d.owned.of {
		return d.owned.execute
	}
	return nil
}

// ownedValue is a canonical value a trusted body has just built: lossless by construction
// and referenced by nothing else, so the pipeline adopts it without a snapshot.
type ownedValue struct{ v any }

// Output declares what a successful call returns.
type Output struct {
	// Schema is the JSON Schema (within the supported subset) every canonical value must
	// satisfy.
	Schema any
	// Render projects a validated value to the content the model sees.
	Render func(args, value any) ([]content.Block, error)
	// PresentationMeta optionally projects a validated value to the meta persisted with the
	// result for UI cards. It is computed only for top-level calls.
	PresentationMeta func(args, value any) (any, error)
}

// checkOutput reports the definition-shape error of docs/behaviour.md §3.3 step 1: a definition without
// an output renderer has no way to turn its value into content.
func (d *Definition) checkOutput() error {
	if d.Output.Render == nil {
		return fmt.Errorf("tool \"%s\" must declare output { schema, render, presentationMeta? }", d.Name)
	}
	return nil
}

// checkTimeout reports the error of docs/behaviour.md §3.3 step 3. A zero Timeout means "none declared"
// (Go cannot tell an absent duration from zero); a negative one is rejected.
func (d *Definition) checkTimeout() error {
	if d.Timeout < 0 {
		return fmt.Errorf("tool \"%s\" timeoutMs must be a positive finite number", d.Name)
	}
	return nil
}

// Schema is the model-visible projection of a tool (docs/behaviour.md §3.1).
type Schema struct {
	Name        string
	Description string
	Parameters  any  // a detached jsonv copy of the parameters schema
	Strict      bool // the definition asks for the model API's strict tool mode
}
