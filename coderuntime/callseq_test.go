package coderuntime_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dsh-go/dsh/coderuntime"
)

func TestCallSeq(t *testing.T) {
	type key struct{}
	base := context.WithValue(context.Background(), key{}, "kept")
	if n, ok := coderuntime.CallSeq(base); ok || n != 0 {
		t.Errorf("CallSeq(no seq) = %d, %v; want 0, false", n, ok)
	}
	tests := []uint64{0, 1, 41, ^uint64(0)}
	for _, want := range tests {
		ctx := coderuntime.WithCallSeq(base, want)
		if n, ok := coderuntime.CallSeq(ctx); !ok || n != want {
			t.Errorf("CallSeq(WithCallSeq(%d)) = %d, %v", want, n, ok)
		}
		if ctx.Value(key{}) != "kept" {
			t.Errorf("WithCallSeq(%d) lost the parent's values", want)
		}
		// The innermost number wins.
		if n, _ := coderuntime.CallSeq(coderuntime.WithCallSeq(ctx, want+1)); n != want+1 {
			t.Errorf("nested WithCallSeq = %d, want %d", n, want+1)
		}
	}
}

func ExampleCallSeq() {
	// A backend numbers the binding calls of a run in program order…
	ctx := coderuntime.WithCallSeq(context.Background(), 2)
	// …and a Func learns where its call stands.
	if n, ok := coderuntime.CallSeq(ctx); ok {
		fmt.Println("call number", n)
	}
	// Output: call number 2
}

func TestCallSeqCancellation(t *testing.T) {
	parent, cancel := context.WithCancelCause(context.Background())
	ctx := coderuntime.WithCallSeq(parent, 7)
	cause := errors.New("settled")
	cancel(cause)
	<-ctx.Done()
	if ctx.Err() != context.Canceled || context.Cause(ctx) != cause {
		t.Errorf("Err %v, Cause %v; want the parent's", ctx.Err(), context.Cause(ctx))
	}
	// A context derived from it still finds the number.
	child, stop := context.WithCancel(ctx)
	defer stop()
	if n, ok := coderuntime.CallSeq(child); !ok || n != 7 {
		t.Errorf("CallSeq(child) = %d, %v", n, ok)
	}
}

func BenchmarkWithCallSeq(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	var n uint64
	for b.Loop() {
		m, _ := coderuntime.CallSeq(coderuntime.WithCallSeq(ctx, n+1000))
		n = m - 999
	}
}
