package coderuntime

import "context"

// callSeqKey is the context key of a binding call's sequence number.
type callSeqKey struct{}

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
	return context.WithValue(ctx, callSeqKey{}, n)
}

// CallSeq returns the sequence number WithCallSeq attached to a binding call's context, and
// false when the backend did not number its calls.
func CallSeq(ctx context.Context) (uint64, bool) {
	n, ok := ctx.Value(callSeqKey{}).(uint64)
	return n, ok
}
