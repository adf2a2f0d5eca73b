package tool

import (
	"sync"
	"sync/atomic"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/ids"
	"github.com/dsh-go/dsh/jsonv"
)

// Input is one requested tool call, as the caller (the agent loop, Code Mode, a CLI, an MCP
// server) hands it to the registry. The caller's cancellation is the context passed with it.
type Input struct {
	CallID     string // the model's call id (or a synthetic id for nested calls); required
	RootCallID string // the root model call owning this call tree; defaults to CallID
	Name       string // the requested tool name
	Args       any    // the parsed arguments: a jsonv value, a Go value that snapshots to one, or the raw text when it did not parse
	Agent      *Scope // the scope the call runs for; nil for direct programmatic calls, which an "ask" cannot reach the approver for (see Registry.SetApprover)
	Parent     *Token // the enclosing execution's token, for Code Mode sub-calls
	// OwnArgs hands Args over to the pipeline: set it only for a value ParseArguments or
	// Registry.ParseArguments has just returned and that nothing else holds or will change
	// (as the agent loop's scheduler does). Prepare then takes that value as the call's
	// snapshot instead of deep-copying it. A value that is not plain parsed JSON is still
	// copied and checked; with OwnArgs false (the default) Args is always copied.
	OwnArgs bool
}

// Token is an opaque, identity-comparable handle of one execution. It never crosses the
// model, the log or a worker boundary; Code Mode passes it as Input.Parent of sub-calls.
type Token struct{ _ byte }

// Execution is the immutable identity of one call as hooks, guards and listeners see it.
// Its accessors return copies, so no stage can change what another stage sees.
type Execution struct {
	callID, rootCallID, name string
	args                     any // the lossless snapshot; nil with argsOK false when it failed
	argsOK                   bool
	agent                    *Scope
	parent                   *Token
	token                    *Token
}

// CallID returns the call id.
func (e *Execution) CallID() string { return e.callID }

// RootCallID returns the id of the root model call of this call tree.
func (e *Execution) RootCallID() string { return e.rootCallID }

// Name returns the requested tool name.
func (e *Execution) Name() string { return e.name }

// Agent returns the scope the call runs for, or nil for a direct call.
func (e *Execution) Agent() *Scope { return e.agent }

// Parent returns the token of the enclosing execution, or nil for a top-level call.
func (e *Execution) Parent() *Token { return e.parent }

// Token returns this execution's opaque token.
func (e *Execution) Token() *Token { return e.token }

// Args returns a private deep copy of the arguments snapshot, and false when the arguments
// were not lossless JSON (the call then failed before any policy ran).
func (e *Execution) Args() (any, bool) {
	if !e.argsOK {
		return nil, false
	}
	return jsonv.Clone(e.args), true
}

// AppendCanonicalArgs appends the canonical JSON of the arguments (jsonv.Canonical: compact,
// every object's members sorted) to dst and reports whether they were lossless. Unlike
// encoding what Args returns, it makes no copy of the arguments first: a policy that keys
// calls by their arguments pays only for the encoding.
func (e *Execution) AppendCanonicalArgs(dst []byte) ([]byte, bool) {
	if !e.argsOK {
		return dst, false
	}
	out, err := jsonv.AppendCanonical(dst, e.args)
	if err != nil {
		return dst, false
	}
	return out, true
}

// ArgsJSON returns the arguments encoded as compact JSON ("" when they were not lossless).
func (e *Execution) ArgsJSON() string {
	if !e.argsOK {
		return ""
	}
	b, err := jsonv.Marshal(e.args)
	if err != nil {
		return ""
	}
	return string(b)
}

// Call is the view a tool body receives: the execution identity plus the two things a body
// may do besides returning its value.
type Call struct {
	*Execution
	mu        sync.Mutex
	deferred  []content.Message
	concluded bool

	// owned holds the first value a typed body built for this call (see Call.own), and
	// ownedUsed reports that it is taken.
	owned     ownedValue
	ownedUsed atomic.Bool
}

// DeferContext appends a user-role message to this call's result as an additional context.
// It is never injected immediately; it survives a later error or cancellation of the call.
// An empty ID is filled in, the role is forced to user, and a nil Source becomes
// {kind: "tool", callId: <this call>}.
func (c *Call) DeferContext(m content.Message) {
	m = m.Clone()
	m.Role = content.RoleUser
	if m.ID == "" {
		m.ID = ids.New("msg_")
	}
	if m.Source == nil {
		m.Source = &content.Source{Kind: "tool", CallID: c.callID}
	}
	c.mu.Lock()
	c.deferred = append(c.deferred, m)
	c.mu.Unlock()
}

// ConcludeTurn marks the call so that a successful result ends the agent's turn.
func (c *Call) ConcludeTurn() {
	c.mu.Lock()
	c.concluded = true
	c.mu.Unlock()
}

func (c *Call) state() ([]content.Message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deferred, c.concluded
}
