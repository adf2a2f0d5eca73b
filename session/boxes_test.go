package session

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"pgregory.net/rapid"
)

// TestDispatchBoxesAsOwned is DispatchBoxes' property: over any sequence of start and
// settle events, ids and names now equal to the last event's and now not, a log records
// for each event exactly what it records given Event (the same bytes, or the same
// refusal), and a valid event's data is handed over, not copied.
func TestDispatchBoxesAsOwned(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var boxes DispatchBoxes
		ids := rapid.SampledFrom([]string{"", "c1", "c2", "c1:code:1", "c1:code:2", "echo", "\xff"})
		for i := range rapid.IntRange(1, 12).Draw(rt, "events") {
			p := CodeDispatch{
				RootCallID:   ids.Draw(rt, "root"),
				ParentCallID: ids.Draw(rt, "parent"),
				SubCallID:    ids.Draw(rt, "sub"),
				Name:         rapid.SampledFrom([]string{"echo", "c1", "", "\xff"}).Draw(rt, "name"),
				Arguments:    genOwnedValue(1).Draw(rt, "arguments"),
				IsError:      rapid.Bool().Draw(rt, "isError"),
				Content:      genBlocks().Draw(rt, "content"),
			}
			var boxed, plain Event
			if rapid.Bool().Draw(rt, "settle") {
				boxed, plain = boxes.SettleEvent(p), p.Event()
			} else {
				start := CodeDispatchStart{RootCallID: p.RootCallID, ParentCallID: p.ParentCallID, SubCallID: p.SubCallID, Name: p.Name, Arguments: p.Arguments}
				boxed, plain = boxes.StartEvent(start), start.Event()
			}
			o, pl, oerr, perr := stampBoth(boxed, plain)
			if (oerr == nil) != (perr == nil) || oerr != nil && oerr.Error() != perr.Error() {
				rt.Fatalf("event %d: boxed error %v, plain error %v", i, oerr, perr)
			}
			if oerr != nil {
				continue
			}
			ob, err1 := EncodeEvent(o)
			pb, err2 := EncodeEvent(pl)
			if err1 != nil || err2 != nil || !bytes.Equal(ob, pb) {
				rt.Fatalf("event %d: boxed %s (%v), plain %s (%v)", i, ob, err1, pb, err2)
			}
			if boxed.owned != nil && o.Data != boxed.Data {
				rt.Fatalf("event %d: a valid boxed event was copied", i)
			}
		}
	})
}

// TestDispatchBoxesSaveAllocations pins the saving for a program's sequential binding
// calls: a call's two events, its start then its settle, make six allocations fewer than
// OwnedEvent makes (only the sub-call id is new, and the settle event reuses it).
func TestDispatchBoxesSaveAllocations(t *testing.T) {
	args := jsonv.NewObject(jsonv.Member{Name: "text", Value: "x"})
	const calls = 100
	starts, settles := make([]CodeDispatchStart, calls+1), make([]CodeDispatch, calls+1)
	for n := range starts {
		sub := fmt.Sprintf("call-1:code:%d", n)
		starts[n] = CodeDispatchStart{RootCallID: "call-1", ParentCallID: "call-1", SubCallID: sub, Name: "echo", Arguments: args}
		settles[n] = CodeDispatch{RootCallID: "call-1", ParentCallID: "call-1", SubCallID: sub, Name: "echo", Arguments: args,
			Content: content.Texts(`{"text":"x"}`)}
	}
	n := 0
	next := func() int { n = n%calls + 1; return n }
	owned := testing.AllocsPerRun(calls, func() {
		i := next()
		starts[i].OwnedEvent()
		settles[i].OwnedEvent()
	})
	var boxes DispatchBoxes
	boxed := testing.AllocsPerRun(calls, func() {
		i := next()
		boxes.StartEvent(starts[i])
		boxes.SettleEvent(settles[i])
	})
	t.Logf("allocations a call's two events: boxed %.1f, owned %.1f", boxed, owned)
	if boxed > owned-6 {
		t.Errorf("allocations a call's two events: boxed %.1f, owned %.1f; want 6 fewer", boxed, owned)
	}
}

// TestDispatchBoxesConcurrent: goroutines building the events of their own calls through
// one DispatchBoxes each get their own ids and name in every event (run it with -race).
func TestDispatchBoxesConcurrent(t *testing.T) {
	var boxes DispatchBoxes
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			root, name := fmt.Sprintf("call-%d", g), fmt.Sprintf("tool%d", g%3)
			for n := range 200 {
				sub := fmt.Sprintf("%s:code:%d", root, n)
				want := fmt.Sprintf(`{"rootCallId":%q,"parentCallId":%q,"subCallId":%q,"name":%q,`, root, root, sub, name)
				for _, e := range []Event{
					boxes.StartEvent(CodeDispatchStart{RootCallID: root, ParentCallID: root, SubCallID: sub, Name: name, Arguments: []any{}}),
					boxes.SettleEvent(CodeDispatch{RootCallID: root, ParentCallID: root, SubCallID: sub, Name: name, Arguments: []any{}}),
				} {
					b, err := jsonv.Marshal(e.Data)
					if err != nil || !bytes.HasPrefix(b, []byte(want)) {
						errs <- fmt.Errorf("goroutine %d, call %d: data %s (%v), want it to start %s", g, n, b, err, want)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
