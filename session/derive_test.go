package session

import (
	"strconv"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

func TestDeriveMessages(t *testing.T) {
	user := content.Message{ID: "u1", Role: content.RoleUser, Source: &content.Source{Kind: "user"}, Content: content.Texts("read a and b")}
	a := content.Message{ID: "a1", Role: content.RoleAssistant, Source: &content.Source{Kind: "model"}, Content: []content.Block{
		content.ToolCall("c1", "read", `{"path":"a"}`), content.ToolCall("c2", "run_code", `{}`)}}
	ctx := content.Message{ID: "u2", Role: content.RoleUser, Source: &content.Source{Kind: "plugin", Plugin: "reminder"}, Content: content.Texts("note")}
	evs := build(t,
		TurnStart{Turn: 0}.Event(),
		StepStart{}.Event(),
		UserMessage{Message: user}.Event(),
		AssistantMessage{Message: a}.Event(),
		ToolCall{CallID: "c1", Name: "read", Arguments: `{"path":"a"}`}.Event(),
		ToolCall{CallID: "c2", Name: "run_code", Arguments: `{}`}.Event(),
		CodeDispatchStart{RootCallID: "c2", ParentCallID: "c2", SubCallID: "c2:code:0", Name: "read", Arguments: nil}.Event(),
		CodeDispatch{RootCallID: "c2", ParentCallID: "c2", SubCallID: "c2:code:0", Name: "read", Arguments: nil, Content: content.Texts("inner")}.Event(),
		ToolResult{MessageID: "r1", CallID: "c1", Content: content.Texts("A"), SourceEventSeqs: []int64{4}}.Event(),
		ToolResult{MessageID: "r2", CallID: "c2", Content: content.Texts("boom"), IsError: true, Error: &ErrorInfo{"CodeRunFailedError", "CODE_RUN_FAILED"}, SourceEventSeqs: []int64{5}}.Event(),
		ApprovalAsked{ID: "q", ToolName: "bash"}.Event(),
		StepEnd{}.Event(),
		StepStart{Step: 1}.Event(),
		UserMessage{Message: ctx}.Event(),
		AssistantMessage{Step: 1, Message: content.Message{ID: "empty"}, Usage: map[string]any{"output": 0}}.Event(), // usage only
		AssistantMessage{Step: 1, Message: content.Message{ID: "a2", Content: content.Texts("done")}}.Event(),
		StepEnd{Step: 1}.Event(),
		TurnEnd{Reason: EndReason{Kind: EndCompleted}}.Event(),
	)
	got, err := DeriveMessages(evs)
	if err != nil {
		t.Fatal(err)
	}
	want := []content.Message{
		user,
		a,
		{ID: "r1", Role: content.RoleUser, Source: &content.Source{Kind: "tool", CallID: "c1"}, Content: []content.Block{content.ToolResult("c1", content.Texts("A"), false)}},
		{ID: "r2", Role: content.RoleUser, Source: &content.Source{Kind: "tool", CallID: "c2"}, Content: []content.Block{content.ToolResult("c2", content.Texts("boom"), true)}},
		ctx,
		{ID: "a2", Role: content.RoleAssistant, Content: content.Texts("done")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DeriveMessages (-want +got):\n%s", diff)
	}
}

func TestDeriveMessagesIgnoresOffSurface(t *testing.T) {
	// A surface-type event without surfaceOp cannot be appended, but a hand-built slice
	// may hold one: it is not on the surface and derives nothing.
	e := UserMessage{Message: content.Message{ID: "u", Content: content.Texts("x")}}.Event()
	e.SurfaceOp = ""
	got, err := DeriveMessages([]Event{e})
	if err != nil || len(got) != 0 {
		t.Errorf("DeriveMessages = %v, %v; want nothing", got, err)
	}
	bad := Event{Type: TypeToolResult, SurfaceOp: SurfaceAppend, Data: "x"}
	if _, err := DeriveMessages([]Event{bad}); err == nil {
		t.Error("DeriveMessages accepted a malformed tool/result")
	}
}

func TestDeriveMessagesAfterRecovery(t *testing.T) {
	evs := build(t,
		TurnStart{}.Event(), StepStart{}.Event(),
		UserMessage{Message: content.Message{ID: "u", Content: content.Texts("x")}}.Event(),
		asst(0, 0, "c1", "c2"),
		ToolCall{CallID: "c1"}.Event(),
	)
	msgs, err := DeriveMessages(append(evs, RecoveryEvents(evs)...))
	if err != nil {
		t.Fatal(err)
	}
	// user, assistant, two results answering both requested calls in request order.
	if len(msgs) != 4 {
		t.Fatalf("got %d messages", len(msgs))
	}
	for i, id := range []string{"c1", "c2"} {
		b := msgs[2+i].Content[0]
		if b.Type != content.TypeToolResult || b.ToolCallID != id || !b.IsError {
			t.Errorf("message %d = %+v, want an error result for %s", 2+i, b, id)
		}
	}
}

// deriveReference is the straightforward derivation DeriveMessages must agree with: one
// pass, decoding every surface message and growing the result one message at a time.
func deriveReference(events []Event) ([]content.Message, error) {
	var out []content.Message
	for _, e := range events {
		if e.SurfaceOp != SurfaceAppend {
			continue
		}
		switch e.Type {
		case TypeUserMessage:
			p, err := DecodeUserMessage(e)
			if err != nil {
				return nil, err
			}
			out = append(out, p.Message)
		case TypeAssistantMessage:
			p, err := DecodeAssistantMessage(e)
			if err != nil {
				return nil, err
			}
			if len(p.Message.Content) > 0 {
				out = append(out, p.Message)
			}
		case TypeToolResult:
			p, err := DecodeToolResult(e)
			if err != nil {
				return nil, err
			}
			out = append(out, content.Message{
				ID: p.MessageID, Role: content.RoleUser,
				Source:  &content.Source{Kind: "tool", CallID: p.CallID},
				Content: []content.Block{content.ToolResult(p.CallID, p.Content, p.IsError)},
			})
		}
	}
	return out, nil
}

// TestDeriveMessagesMatchesReference checks, on random logs of surface and log-only events,
// that the presized derivation yields exactly the messages of the reference, and that
// appending to one derived message's content leaves every other message unchanged.
func TestDeriveMessagesMatchesReference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 40).Draw(rt, "n")
		m := NewMemory(fixedClock)
		for i := range n {
			id := strconv.Itoa(i)
			text := rapid.StringMatching(`[a-z ]{0,8}`).Draw(rt, "text")
			var e Event
			switch rapid.IntRange(0, 4).Draw(rt, "kind") {
			case 0:
				e = UserMessage{Message: content.Message{ID: "u" + id, Source: &content.Source{Kind: "user"}, Content: content.Texts(text)}}.Event()
			case 1:
				msg := content.Message{ID: "a" + id, Source: &content.Source{Kind: "model"}}
				if rapid.Bool().Draw(rt, "nonempty") {
					msg.Content = append(content.Texts(text), content.ToolCall("c"+id, "read", `{}`))
				}
				e = AssistantMessage{Message: msg}.Event()
			case 2:
				e = ToolResult{MessageID: "r" + id, CallID: "c" + id, Content: content.Texts(text), IsError: rapid.Bool().Draw(rt, "isError")}.Event()
			case 3:
				e = ToolCall{CallID: "c" + id, Name: "read", Arguments: `{}`}.Event()
			default:
				e = StepStart{Step: i}.Event()
			}
			if _, err := m.Append(e); err != nil {
				rt.Fatalf("append %s: %v", e.Type, err)
			}
		}
		evs := m.Events()
		want, err := deriveReference(evs)
		if err != nil {
			rt.Fatal(err)
		}
		got, err := DeriveMessages(evs)
		if err != nil {
			rt.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			rt.Fatalf("DeriveMessages differs from the reference (-want +got):\n%s", diff)
		}
		if len(got) < 2 {
			return
		}
		before := cmp.Diff(want[1:], got[1:])
		got[0].Content = append(got[0].Content, content.Text("appended"))
		if after := cmp.Diff(want[1:], got[1:]); after != before {
			rt.Fatalf("appending to message 0 changed later messages:\n%s", after)
		}
	})
}
