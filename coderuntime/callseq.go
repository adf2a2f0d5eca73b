package coderuntime

import "context"

// callSeqKey is the context key of a binding call's sequence number.
type callSeqKey struct{}

// seqCtx carries a call's sequence number; it costs one allocation where context.WithValue
// would cost two (the number is boxed).
type seqCtx struct {
	context.Context
	n uint64
}

// Value returns the context itself for callSeqKey and defers to the parent otherwise.
func (c *seqCtx) Value(key any) any {
	if _, ok := key.(callSeqKey); ok {
		return c
	}
	return c.Context.Value(key)
}

// WithCallSeq returns a child of ctx that carries n as the sequence number of a binding
// call. Backends use it to tell a Func where its call stands in the program's order.
//
// The contract, for every backend that sets it: within one Run, the calls that invoke a
// Func are numbered densely from 0, in the order the program made them (for a backend that
// runs binding calls concurrently, the order in which the host received them from the
// program). Only calls that reach a Func are numbered; a call the backend refuses itself,
// such as one to an unknown name, takes no number. Every number handed out is passed to a
// Func invocation, so a consumer may wait for number k-1 before acting on number k, as long
// as it also stops waiting when the call's context is done.
func WithCallSeq(ctx context.Context, n uint64) context.Context {
	return &seqCtx{Context: ctx, n: n}
}

// CallSeq returns the sequence number WithCallSeq attached to a binding call's context, and
// false when the backend did not number its calls.
func CallSeq(ctx context.Context) (uint64, bool) {
	if c, ok := ctx.Value(callSeqKey{}).(*seqCtx); ok {
		return c.n, true
	}
	return 0, false
}
