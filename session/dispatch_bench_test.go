package session

import (
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
)

// BenchmarkAppendCodeDispatch appends the two events of one Code Mode sub-call — the
// tool/code-dispatch-start and tool/code-dispatch of an echo — to an in-memory log, as
// every binding call of a run_code program does: building, snapshotting and checking them.
func BenchmarkAppendCodeDispatch(b *testing.B) {
	args := jsonv.NewObject(jsonv.Member{Name: "text", Value: "x"})
	start := CodeDispatchStart{RootCallID: "call-1", ParentCallID: "call-1", SubCallID: "call-1:code:1", Name: "echo", Arguments: args}
	settle := CodeDispatch{RootCallID: "call-1", ParentCallID: "call-1", SubCallID: "call-1:code:1", Name: "echo", Arguments: args,
		Content: content.Texts(`{"text":"x"}`)}
	b.ReportAllocs()
	l := NewMemory(nil)
	for i := 0; b.Loop(); i++ {
		if i%1000 == 0 {
			l = NewMemory(nil) // a run's worth of events, not an ever-growing log
		}
		if _, err := l.Append(start.Event()); err != nil {
			b.Fatal(err)
		}
		if _, err := l.Append(settle.Event()); err != nil {
			b.Fatal(err)
		}
	}
}
