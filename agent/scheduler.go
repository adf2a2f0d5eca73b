package agent

import (
	"context"
	"fmt"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/tool"
)

// PlannedCall is one tool call of an assistant message, in model order (docs/behaviour.md §8.1).
type PlannedCall struct {
	ID      string // the model's call id
	Name    string // the requested tool name
	RawArgs string // the argument text exactly as the model emitted it
}

// Committer records the batch as it commits. The scheduler calls it from one goroutine, in
// model order: CallStarted immediately before a call is prepared, CallFinished when its
// result commits. An error from either is a scheduler failure (docs/behaviour.md §8.5): no new call
// starts, started dispatches drain, and the batch returns the first error.
type Committer interface {
	// CallStarted records the durable tool/call of c and returns its log sequence number.
	CallStarted(c PlannedCall) (seq int64, err error)
	// CallFinished records the tool/result of c, citing callSeq. res carries the call's
	// additional contexts and concludesTurn mark; the agent loop accepts the contexts into
	// its inbox here, at commit time (they are also collected in Batch.Contexts). For a
	// call that never started, res is tool.AbortedBeforeDispatch().
	CallFinished(c PlannedCall, callSeq int64, res *tool.Result) error
}

// Batch is the outcome of executing one assistant message's tool calls.
type Batch struct {
	// Contexts are the accepted additional contexts in model order, then each result's own
	// order; they go to the next step's inbox.
	Contexts []content.Message
	// ConcludesTurn reports that a committed result asked to end the turn.
	ConcludesTurn bool
	// Aborted reports that cancellation stopped the batch; unstarted calls were given
	// ABORTED_BEFORE_DISPATCH results.
	Aborted bool
}

// Scheduler runs batches of tool calls through a registry: exclusive calls are barriers,
// concurrency-safe calls share a bounded rolling pool, and every call's tool/call, policy,
// tool/result and contexts commit in model order while only dispatch overlaps.
type Scheduler struct {
	reg         *tool.Registry
	maxParallel int
}

// NewScheduler returns a scheduler with at most maxParallel concurrent dispatches.
func NewScheduler(reg *tool.Registry, maxParallel int) (*Scheduler, error) {
	if maxParallel < 1 {
		return nil, fmt.Errorf("maxParallelToolCalls must be a positive integer")
	}
	return &Scheduler{reg: reg, maxParallel: maxParallel}, nil
}

// Run executes calls for agent under ctx (docs/behaviour.md §8.2–§8.5). It returns when every started
// call has finished and committed; it never leaves a dispatch running.
func (s *Scheduler) Run(ctx context.Context, agent *tool.Scope, calls []PlannedCall, c Committer) (Batch, error) {
	b := &batch{s: s, ctx: ctx, agent: agent, calls: calls, c: c, inputs: make([]tool.Input, len(calls))}
	for i, pc := range calls {
		b.inputs[i] = tool.Input{CallID: pc.ID, Name: pc.Name, Args: s.reg.ParseArguments(pc.RawArgs), OwnArgs: true, Agent: agent}
	}
	next := 0
	for next < len(calls) {
		mode := s.reg.ExecutionMode(b.inputs[next])
		end := next + 1
		if mode == tool.Parallel {
			end = len(calls)
		}
		consumed, aborted, err := b.runGroup(next, end, mode)
		if err != nil {
			return b.out, err
		}
		next += consumed
		if aborted {
			b.out.Aborted = true
			for i := next; i < len(calls); i++ {
				if err := b.synthetic(i); err != nil {
					return b.out, err
				}
			}
			return b.out, nil
		}
	}
	return b.out, nil
}

type batch struct {
	s      *Scheduler
	ctx    context.Context
	agent  *tool.Scope
	calls  []PlannedCall
	inputs []tool.Input
	c      Committer
	out    Batch
}

type slot struct {
	inv    *tool.Invocation
	seq    int64
	filled bool
}

// runGroup runs calls[from:to] as one pool (an exclusive group is a pool of one) and
// reports how many calls it started.
func (b *batch) runGroup(from, to int, mode tool.ExecMode) (consumed int, aborted bool, err error) {
	n := to - from
	slots := make([]slot, n)
	done := make(chan int, n)
	started, committed, inFlight := 0, 0, 0
	stop := false // a later call is no longer parallel: end the group there
	aborted = b.ctx.Err() != nil
	var failure error

	commitReady := func() {
		for failure == nil && committed < started && slots[committed].filled {
			sl := &slots[committed]
			res := sl.inv.Finalize()
			if err := b.c.CallFinished(b.calls[from+committed], sl.seq, res); err != nil {
				failure = err
				return
			}
			b.out.Contexts = append(b.out.Contexts, res.AdditionalContexts...)
			if res.ConcludesTurn {
				b.out.ConcludesTurn = true
			}
			committed++
		}
	}
	fill := func() {
		for failure == nil && !aborted && !stop && started < n && inFlight < b.s.maxParallel {
			i := started
			if mode == tool.Parallel && i > 0 && b.s.reg.ExecutionMode(b.inputs[from+i]) != tool.Parallel {
				stop = true
				return
			}
			seq, err := b.c.CallStarted(b.calls[from+i])
			if err != nil {
				failure = err
				return
			}
			inv := b.s.reg.Prepare(b.ctx, b.inputs[from+i])
			slots[i] = slot{inv: inv, seq: seq}
			started++
			if inv.NeedsDispatch() {
				inFlight++
				go func() {
					inv.Dispatch()
					done <- i
				}()
			} else {
				slots[i].filled = true
			}
			commitReady()
			if b.ctx.Err() != nil {
				aborted = true
			}
		}
	}

	fill()
	for inFlight > 0 {
		i := <-done
		inFlight--
		slots[i].filled = true
		commitReady()
		if b.ctx.Err() != nil {
			aborted = true
		}
		fill()
	}
	// Everything started has settled; commit what is left in order.
	commitReady()
	if failure != nil {
		return started, aborted, failure
	}
	if aborted {
		for i := started; i < n; i++ {
			if err := b.synthetic(from + i); err != nil {
				return n, true, err
			}
		}
		return n, true, nil
	}
	return started, false, nil
}

// synthetic appends the tool/call + ABORTED_BEFORE_DISPATCH pair of a call that never
// started (docs/behaviour.md §8.4).
func (b *batch) synthetic(i int) error {
	seq, err := b.c.CallStarted(b.calls[i])
	if err != nil {
		return err
	}
	return b.c.CallFinished(b.calls[i], seq, tool.AbortedBeforeDispatch())
}
