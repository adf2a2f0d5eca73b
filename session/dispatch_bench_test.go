package session

import (
	"strconv"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
)

// BenchmarkAppendCodeDispatch appends the two events of one Code Mode sub-call — the
// tool/code-dispatch-start and tool/code-dispatch of an echo — to an in-memory log, as
// every binding call of a run_code program does. event: built with Event, then
// snapshotted and checked by the log; owned: built with OwnedEvent and handed over, as
// codemode's SessionLog and ScopeLogs did before they shared the
// members' values through a DispatchBoxes.
func BenchmarkAppendCodeDispatch(b *testing.B) {
	args := jsonv.NewObject(jsonv.Member{Name: "text", Value: "x"})
	start := CodeDispatchStart{RootCallID: "call-1", ParentCallID: "call-1", SubCallID: "call-1:code:1", Name: "echo", Arguments: args}
	settle := CodeDispatch{RootCallID: "call-1", ParentCallID: "call-1", SubCallID: "call-1:code:1", Name: "echo", Arguments: args,
		Content: content.Texts(`{"text":"x"}`)}
	// boxes: built through one DispatchBoxes, as codemode's logs do, each call with a
	// sub-call id of its own.
	var boxes DispatchBoxes
	starts, settles := make([]CodeDispatchStart, 1000), make([]CodeDispatch, 1000)
	for i := range starts {
		starts[i], settles[i] = start, settle
		starts[i].SubCallID = "call-1:code:" + strconv.Itoa(i+1)
		settles[i].SubCallID = starts[i].SubCallID
	}
	n := 0
	for _, m := range []struct {
		name          string
		start, settle func() Event
	}{
		{"event", start.Event, settle.Event},
		{"owned", start.OwnedEvent, settle.OwnedEvent},
		{"boxes", func() Event { return boxes.StartEvent(starts[n%len(starts)]) }, func() Event { n++; return boxes.SettleEvent(settles[(n-1)%len(settles)]) }},
	} {
		b.Run(m.name, func(b *testing.B) {
			b.ReportAllocs()
			l := NewMemory(nil)
			for i := 0; b.Loop(); i++ {
				if i%1000 == 0 {
					l = NewMemory(nil) // a run's worth of events, not an ever-growing log
				}
				if _, err := l.Append(m.start()); err != nil {
					b.Fatal(err)
				}
				if _, err := l.Append(m.settle()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
