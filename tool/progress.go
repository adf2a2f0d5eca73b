package tool

import "context"

// Progress receives the live output of running calls — a command's output as it is
// written — so that a user interface can show it before the call ends. callID names the
// call (a Code Mode sub-call's own id); chunk is raw bytes, possibly partial lines, which
// the receiver must not keep. It is called from the tool's goroutines and must return
// quickly; it must be safe for concurrent use.
type Progress func(callID, stream string, chunk []byte)

type progressKey struct{}

// WithProgress returns a context carrying p: tools that stream output (bash) send it to p
// while a call made with this context runs.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// ProgressFrom returns the Progress of ctx, or nil.
func ProgressFrom(ctx context.Context) Progress {
	p, _ := ctx.Value(progressKey{}).(Progress)
	return p
}
