package tool

import (
	"context"
	"fmt"
	"time"

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
	// flatOut is the flat conversion of a typed tool's output type (nil when the type is not
	// flat): Register checks whether the output schema is one every value it builds
	// satisfies (entry.flatOut).
	flatOut *flatCodec
}

// ownedValue marks a canonical value a typed body (built by New) has just built: lossless
// by construction and referenced by nothing else, so the pipeline adopts it without a
// snapshot. Its field is unexported, so nothing outside the package can read or change the
// value it carries; a body that is not New's (a replaced Execute) cannot make one except
// by calling New's Execute, whose value it is.
//
// flat reports a value the flat output conversion built (see flatCodec): an object of
// exactly the output type's fields, or a scalar, of the kinds the type declares. Such a
// value satisfies an output schema of the shape flatCodec.schemaHolds accepts.
type ownedValue struct {
	v    any
	flat bool
}

// own marks v, which a typed body has just built for this call; flat reports that the flat
// output conversion built it. The first value of a call is kept in the call itself, so that
// the mark allocates nothing; a second one (a wrapper that runs the body again) gets a mark
// of its own.
func (c *Call) own(v any, flat bool) *ownedValue {
	if c != nil && c.ownedUsed.CompareAndSwap(false, true) {
		c.owned = ownedValue{v: v, flat: flat}
		return &c.owned
	}
	return &ownedValue{v: v, flat: flat}
}

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
