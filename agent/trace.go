package agent

import "context"

// TurnTracer wraps each turn in a trace, for tracing. Install one through Config.Tracer.
type TurnTracer interface {
	// StartTurn is called as a turn starts, after its turn/start is logged. The context it
	// returns becomes the turn's context — model requests and tool calls run under it — and
	// must be derived from ctx without changing its cancellation. end is called once with
	// how the turn ended.
	StartTurn(ctx context.Context, t TurnInfo) (_ context.Context, end func(TurnResult, error))
}

// TurnInfo identifies a turn as it starts.
type TurnInfo struct {
	// Turn is the turn's number in the session (from 1).
	Turn int
	// Model and Provider name the agent's model (llm.Model's Name and Provider).
	Model, Provider string
}

// traceTurn starts the turn's trace when a tracer is installed; end is then never nil.
func (a *Agent) traceTurn(ctx context.Context, turn int) (context.Context, func(TurnResult, error)) {
	if a.cfg.Tracer == nil {
		return ctx, nil
	}
	tctx, end := a.cfg.Tracer.StartTurn(ctx, TurnInfo{Turn: turn, Model: a.model.Name(), Provider: a.model.Provider()})
	if tctx == nil {
		tctx = ctx
	}
	if end == nil {
		end = func(TurnResult, error) {}
	}
	return tctx, end
}
