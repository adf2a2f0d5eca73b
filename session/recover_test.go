package session

import (
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/google/go-cmp/cmp"
)

// build appends events to a fresh memory log and returns them as logged.
func build(t *testing.T, evs ...Event) []Event {
	t.Helper()
	m := NewMemory(fixedClock)
	for _, e := range evs {
		if _, err := m.Append(e); err != nil {
			t.Fatalf("append %s: %v", e.Type, err)
		}
	}
	return m.Events()
}

func asst(turn, step int, calls ...string) Event {
	m := content.Message{ID: "a", Source: &content.Source{Kind: "model"}, Content: content.Texts("working")}
	for _, c := range calls {
		m.Content = append(m.Content, content.ToolCall(c, "tool", "{}"))
	}
	return AssistantMessage{Turn: turn, Step: step, Message: m}.Event()
}

func result(turn, step int, call string, callSeq int64) Event {
	return ToolResult{Turn: turn, Step: step, MessageID: "r-" + call, CallID: call, Content: content.Texts("ok"), SourceEventSeqs: []int64{callSeq}}.Event()
}

func TestRecoveryEvents(t *testing.T) {
	// seq: 0 turn/start, 1 step/start, 2 user, 3 assistant(c1,c2,c3), 4 tool/call c1,
	// 5 tool/result c1, 6 tool/call c2 — crash: c2 started, c3 never recorded.
	evs := build(t,
		TurnStart{Turn: 1}.Event(),
		StepStart{Turn: 1, Step: 0}.Event(),
		UserMessage{Message: content.Message{ID: "u", Content: content.Texts("go")}}.Event(),
		asst(1, 0, "c1", "c2", "c3"),
		ToolCall{Turn: 1, Step: 0, CallID: "c1", Name: "tool", Arguments: "{}"}.Event(),
		result(1, 0, "c1", 4),
		ToolCall{Turn: 1, Step: 0, CallID: "c2", Name: "tool", Arguments: "{}"}.Event(),
	)
	rec := RecoveryEvents(evs)
	var got []string
	for _, e := range rec {
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	want := []string{
		`{"type":"tool/result","seq":7,"time":1700000000000,"data":{"turn":1,"step":0,"message":{"id":"interrupted-tool-result-c2-7","role":"user","source":{"kind":"tool","callId":"c2"},"content":[{"type":"tool-result","toolCallId":"c2","content":[{"type":"text","text":"The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly."}],"isError":true}]},"error":{"name":"ToolOutcomeUnknownError","code":"TOOL_OUTCOME_UNKNOWN"}},"sourceEventSeqs":[6],"surfaceOp":"append"}`,
		`{"type":"tool/result","seq":8,"time":1700000000000,"data":{"turn":1,"step":0,"message":{"id":"interrupted-tool-result-c3-8","role":"user","source":{"kind":"tool","callId":"c3"},"content":[{"type":"tool-result","toolCallId":"c3","content":[{"type":"text","text":"The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed."}],"isError":true}]},"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}},"surfaceOp":"append"}`,
		`{"type":"step/end","seq":9,"time":1700000000000,"data":{"turn":1,"step":0}}`,
		`{"type":"turn/end","seq":10,"time":1700000000000,"data":{"turn":1,"reason":{"kind":"interrupted"}}}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recovery events (-want +got):\n%s", diff)
	}
	// The closers are valid appends continuing the log.
	m := NewMemory(fixedClock)
	for _, e := range append(evs, rec...) {
		if _, err := m.Append(e); err != nil {
			t.Fatalf("recovery event does not validate: %v", err)
		}
	}
	if RecoveryEvents(m.Events()) != nil {
		t.Error("a recovered log still needs recovery")
	}
}

func TestRecoveryEventsCases(t *testing.T) {
	tests := []struct {
		name string
		evs  []Event
		want []string // types and codes of the closers
	}{
		{"empty log", nil, nil},
		{"balanced turn", []Event{TurnStart{Turn: 0}.Event(), StepStart{}.Event(), asst(0, 0), StepEnd{}.Event(),
			TurnEnd{Reason: EndReason{Kind: EndCompleted}}.Event()}, nil},
		{"turn open without step", []Event{TurnStart{Turn: 2}.Event()}, []string{"turn/end"}},
		{"step open, no calls", []Event{TurnStart{Turn: 0}.Event(), StepStart{Step: 3}.Event()}, []string{"step/end", "turn/end"}},
		{"step closed, turn open", []Event{TurnStart{Turn: 0}.Event(), StepStart{}.Event(), StepEnd{}.Event()}, []string{"turn/end"}},
		{"all calls answered", []Event{TurnStart{}.Event(), StepStart{}.Event(), asst(0, 0, "a"),
			ToolCall{CallID: "a"}.Event(), result(0, 0, "a", 3)}, []string{"step/end", "turn/end"}},
		{"not started only", []Event{TurnStart{}.Event(), StepStart{}.Event(), asst(0, 0, "a", "b")},
			[]string{"tool/result:TOOL_NOT_STARTED:a", "tool/result:TOOL_NOT_STARTED:b", "step/end", "turn/end"}},
		{"earlier step's calls do not leak", []Event{TurnStart{}.Event(), StepStart{}.Event(), asst(0, 0, "old"), StepEnd{}.Event(),
			StepStart{Step: 1}.Event(), asst(0, 1, "new")},
			[]string{"tool/result:TOOL_NOT_STARTED:new", "step/end", "turn/end"}},
		{"earlier turn's calls do not leak", []Event{TurnStart{}.Event(), StepStart{}.Event(), asst(0, 0, "old"),
			TurnEnd{Reason: EndReason{Kind: EndAborted, Cause: "user"}}.Event(), TurnStart{Turn: 1}.Event()},
			[]string{"turn/end"}},
		{"tool/call without request is ignored", []Event{TurnStart{}.Event(), StepStart{}.Event(), ToolCall{CallID: "x"}.Event()},
			[]string{"step/end", "turn/end"}},
		{"log-only events do not matter", []Event{TurnStart{}.Event(), StepStart{}.Event(), asst(0, 0, "a"), ToolCall{CallID: "a"}.Event(),
			CodeDispatchStart{RootCallID: "a", ParentCallID: "a", SubCallID: "a:code:0", Name: "n", Arguments: nil}.Event()},
			[]string{"tool/result:TOOL_OUTCOME_UNKNOWN:a", "step/end", "turn/end"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := build(t, tt.evs...)
			var got []string
			for _, e := range RecoveryEvents(evs) {
				s := e.Type
				if e.Type == TypeToolResult {
					r, err := DecodeToolResult(e)
					if err != nil {
						t.Fatal(err)
					}
					s += ":" + r.Error.Code + ":" + r.CallID
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("closers (-want +got):\n%s", diff)
			}
		})
	}
}
