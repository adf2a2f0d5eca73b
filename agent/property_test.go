package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
	"pgregory.net/rapid"
)

// TestLoopProperties runs random turns through the whole loop — random mixes of parallel,
// exclusive, failing, denied, unknown and malformed calls, random pool sizes and step
// limits, and a cancellation at a random tool body — and checks the log's invariants:
// every tool/call has exactly one tool/result citing it; each step's results are the
// assistant message's calls, in model order; boundaries nest (one turn/end per turn/start,
// step/start and step/end alternate); a cancelled turn ends "aborted", and no call whose
// body ran is answered ABORTED_BEFORE_DISPATCH.
func TestLoopProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := newFixture(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var bodies atomic.Int32
		var ran sync.Map                                       // call ids whose tick body ran
		cancelAt := rapid.IntRange(0, 12).Draw(rt, "cancelAt") // 0: never
		tick := func(ctx context.Context, call *tool.Call, in textArgs) (string, error) {
			ran.Store(call.CallID(), true)
			if int(bodies.Add(1)) == cancelAt {
				cancel()
			}
			if in.Text == "fail" {
				return "", tool.NewError("TickError", "TICK_FAILED", "tick failed")
			}
			return "tick " + in.Text, nil
		}
		unreg, err := f.reg.Register(tool.Must(tool.New("tick", "Tick.", tick,
			tool.ConcurrencySafeIf(func(in textArgs) bool { return in.Text != "solo" }))))
		if err != nil {
			rt.Fatal(err)
		}
		defer unreg()
		remove := f.reg.OnPreExecute(func(ctx context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			if args, ok := exec.Args(); ok {
				if o, ok := args.(interface{ Get(string) (any, bool) }); ok {
					if v, _ := o.Get("text"); v == "deny" {
						return tool.Deny("denied by the test"), nil
					}
				}
			}
			return next()
		})
		defer remove()

		steps := rapid.IntRange(1, 4).Draw(rt, "steps")
		var replies []script.Reply
		id := 0
		for range steps {
			n := rapid.IntRange(1, 6).Draw(rt, "calls")
			var calls []script.ToolCall
			for range n {
				id++
				kind := rapid.SampledFrom([]string{"tick", "tick", "tick:solo", "tick:fail", "tick:deny", "echo", "excl", "note", "nope", "bad"}).Draw(rt, "kind")
				c := script.ToolCall{ID: fmt.Sprintf("c%d", id), Name: "tick", Arguments: fmt.Sprintf(`{"text":"%d"}`, id)}
				switch kind {
				case "tick:solo", "tick:fail", "tick:deny":
					c.Arguments = fmt.Sprintf(`{"text":%q}`, kind[5:])
				case "echo", "excl", "note":
					c.Name = kind
				case "nope":
					c.Name = "nope"
				case "bad":
					c.Arguments = `{"text":`
				}
				calls = append(calls, c)
			}
			replies = append(replies, script.Reply{ToolCalls: calls})
		}
		replies = append(replies, script.Reply{Text: "done"})
		a, _ := f.agent(t, replies, Config{
			MaxParallelToolCalls: rapid.IntRange(1, 4).Draw(rt, "pool"),
			MaxSteps:             rapid.IntRange(1, 6).Draw(rt, "maxSteps"),
		})
		res, err := a.Run(ctx, "go")
		aborted := ctx.Err() != nil
		if aborted != (err != nil) {
			rt.Fatalf("aborted %v but err = %v", aborted, err)
		}
		events := a.Log().Events()
		checkPairs(rt, events)
		checkNesting(rt, events)
		codes := checkStepOrder(rt, events, aborted)
		for id, code := range codes {
			if _, ok := ran.Load(id); ok && code == tool.CodeAbortedBeforeDispatch {
				rt.Fatalf("call %s ran but was answered %s", id, code)
			}
		}
		if aborted && res.Reason.Kind != session.EndAborted {
			rt.Fatalf("cancelled turn ended %q", res.Reason.Kind)
		}
		if !aborted && res.Reason.Kind != session.EndCompleted && res.Reason.Kind != EndMaxSteps {
			rt.Fatalf("turn ended %+v", res.Reason)
		}
		if _, err := session.DeriveMessages(events); err != nil {
			rt.Fatal(err)
		}
	})
}

// checkNesting checks that boundaries nest: one turn, alternating step/start and step/end.
func checkNesting(rt *rapid.T, events []session.Event) {
	var bounds []string
	for _, e := range events {
		switch e.Type {
		case session.TypeTurnStart, session.TypeTurnEnd, session.TypeStepStart, session.TypeStepEnd:
			bounds = append(bounds, e.Type)
		}
	}
	if len(bounds) < 2 || bounds[0] != session.TypeTurnStart || bounds[len(bounds)-1] != session.TypeTurnEnd {
		rt.Fatalf("boundaries = %v", bounds)
	}
	for i, b := range bounds[1 : len(bounds)-1] {
		want := session.TypeStepStart
		if i%2 == 1 {
			want = session.TypeStepEnd
		}
		if b != want {
			rt.Fatalf("boundaries = %v", bounds)
		}
	}
}

// checkStepOrder checks that each step's tool/call and tool/result events name exactly the
// assistant message's calls in model order, and that no call of a turn that was not
// cancelled is answered ABORTED_BEFORE_DISPATCH. It returns the error codes by call id.
func checkStepOrder(rt *rapid.T, events []session.Event, aborted bool) map[string]string {
	var want, calls, results []string
	codes := map[string]string{}
	flush := func() {
		if want == nil {
			return
		}
		if !slices.Equal(calls, want) || !slices.Equal(results, want) {
			rt.Fatalf("step calls %v, results %v, want %v", calls, results, want)
		}
		want, calls, results = nil, nil, nil
	}
	for _, e := range events {
		switch e.Type {
		case session.TypeAssistantMessage:
			p, _ := session.DecodeAssistantMessage(e)
			for _, b := range p.Message.Content {
				if b.Type == content.TypeToolCall {
					want = append(want, b.ID)
				}
			}
		case session.TypeToolCall:
			p, _ := session.DecodeToolCall(e)
			calls = append(calls, p.CallID)
		case session.TypeToolResult:
			p, _ := session.DecodeToolResult(e)
			results = append(results, p.CallID)
			if p.Error != nil {
				codes[p.CallID] = p.Error.Code
			}
		case session.TypeStepEnd:
			flush()
		}
	}
	flush()
	if !aborted {
		for id, code := range codes {
			if code == tool.CodeAbortedBeforeDispatch {
				rt.Fatalf("call %s aborted in a turn that was not cancelled", id)
			}
		}
	}
	return codes
}
