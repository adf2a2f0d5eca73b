package session

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/google/go-cmp/cmp"
)

const testTime = 1700000000000

func fixedClock() time.Time { return time.UnixMilli(testTime) }

func mustObject(t *testing.T, text string) *jsonv.Object {
	t.Helper()
	v, err := jsonv.ParseString(text)
	if err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	return v.(*jsonv.Object)
}

// TestPayloadBytes pins the exact wire bytes of every event the loop and Code Mode
// append (docs/behaviour.md §9.1).
func TestPayloadBytes(t *testing.T) {
	tests := []struct {
		name string
		ev   Event
		want string
	}{
		{"turn/start", TurnStart{Turn: 1}.Event(),
			`{"type":"turn/start","seq":0,"time":1700000000000,"data":{"turn":1}}`},
		{"turn/end completed", TurnEnd{Turn: 1, Reason: EndReason{Kind: EndCompleted}}.Event(),
			`{"type":"turn/end","seq":0,"time":1700000000000,"data":{"turn":1,"reason":{"kind":"completed"}}}`},
		{"turn/end aborted", TurnEnd{Turn: 2, Reason: EndReason{Kind: EndAborted, Cause: "user"}}.Event(),
			`{"type":"turn/end","seq":0,"time":1700000000000,"data":{"turn":2,"reason":{"kind":"aborted","reason":{"kind":"user"}}}}`},
		{"turn/end aborted by hook", TurnEnd{Turn: 2, Reason: EndReason{Kind: EndAborted, Cause: "hook", CauseReason: "stop"}}.Event(),
			`{"type":"turn/end","seq":0,"time":1700000000000,"data":{"turn":2,"reason":{"kind":"aborted","reason":{"kind":"hook","reason":"stop"}}}}`},
		{"turn/end error", TurnEnd{Turn: 3, Reason: EndReason{Kind: EndError, Error: &Failure{Message: "boom", Code: "UNKNOWN"}}}.Event(),
			`{"type":"turn/end","seq":0,"time":1700000000000,"data":{"turn":3,"reason":{"kind":"error","error":{"message":"boom","code":"UNKNOWN"}}}}`},
		{"turn/end interrupted", TurnEnd{Turn: 0, Reason: EndReason{Kind: EndInterrupted}}.Event(),
			`{"type":"turn/end","seq":0,"time":1700000000000,"data":{"turn":0,"reason":{"kind":"interrupted"}}}`},
		{"step/start", StepStart{Turn: 1, Step: 2}.Event(),
			`{"type":"step/start","seq":0,"time":1700000000000,"data":{"turn":1,"step":2}}`},
		{"step/end", StepEnd{Turn: 1, Step: 2}.Event(),
			`{"type":"step/end","seq":0,"time":1700000000000,"data":{"turn":1,"step":2}}`},
		{"user/message", UserMessage{Message: content.Message{ID: "u1", Content: content.Texts("hi"), Source: &content.Source{Kind: "user"}}}.Event(),
			`{"type":"user/message","seq":0,"time":1700000000000,"data":{"id":"u1","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"hi"}]},"surfaceOp":"append"}`},
		{"user/message from a plugin", UserMessage{Message: content.Message{ID: "u2", Content: content.Texts("note"), Source: &content.Source{Kind: "plugin", Plugin: "reminder", Form: "notice", Summary: "s"}}}.Event(),
			`{"type":"user/message","seq":0,"time":1700000000000,"data":{"id":"u2","role":"user","source":{"kind":"plugin","plugin":"reminder","form":"notice","summary":"s"},"content":[{"type":"text","text":"note"}]},"surfaceOp":"append"}`},
		{"assistant/message", AssistantMessage{Turn: 1, Step: 0, Message: content.Message{ID: "a1", Source: &content.Source{Kind: "model"}, Content: []content.Block{
			content.Reasoning("think"), content.Text("ok"), content.ToolCall("c1", "read", `{"path":"a"}`)}}}.Event(),
			`{"type":"assistant/message","seq":0,"time":1700000000000,"data":{"turn":1,"step":0,"message":{"id":"a1","role":"assistant","source":{"kind":"model"},"content":[{"type":"reasoning","text":"think"},{"type":"text","text":"ok"},{"type":"tool-call","id":"c1","name":"read","arguments":"{\"path\":\"a\"}"}]}},"surfaceOp":"append"}`},
		{"assistant/message usage interrupted", AssistantMessage{Turn: 1, Step: 1, Message: content.Message{ID: "a2", Content: content.Texts("par")},
			Usage: mustObject(t, `{"input":10,"output":2}`), Interrupted: true, SourceEventSeqs: []int64{}}.Event(),
			`{"type":"assistant/message","seq":0,"time":1700000000000,"data":{"turn":1,"step":1,"message":{"id":"a2","role":"assistant","content":[{"type":"text","text":"par"}]},"usage":{"input":10,"output":2},"interrupted":true},"sourceEventSeqs":[],"surfaceOp":"append"}`},
		{"tool/call", ToolCall{Turn: 1, Step: 2, CallID: "c1", Name: "read", Arguments: `{"path": "a"}`}.Event(),
			`{"type":"tool/call","seq":0,"time":1700000000000,"data":{"turn":1,"step":2,"callId":"c1","name":"read","arguments":"{\"path\": \"a\"}"}}`},
		{"tool/call unparsable arguments", ToolCall{Turn: 1, Step: 2, CallID: "c2", Name: "x", Arguments: `{bad`}.Event(),
			`{"type":"tool/call","seq":0,"time":1700000000000,"data":{"turn":1,"step":2,"callId":"c2","name":"x","arguments":"{bad"}}`},
		{"tool/code-dispatch-start", CodeDispatchStart{RootCallID: "r", ParentCallID: "r", SubCallID: "r:code:0", Name: "read", Arguments: mustObject(t, `{"path":"a","n":[1,2]}`)}.Event(),
			`{"type":"tool/code-dispatch-start","seq":0,"time":1700000000000,"data":{"rootCallId":"r","parentCallId":"r","subCallId":"r:code:0","name":"read","arguments":{"path":"a","n":[1,2]}}}`},
		{"tool/code-dispatch", CodeDispatch{RootCallID: "r", ParentCallID: "r", SubCallID: "r:code:0", Name: "read", Arguments: mustObject(t, `{"path":"a"}`), IsError: true, Content: content.Texts("Error: no")}.Event(),
			`{"type":"tool/code-dispatch","seq":0,"time":1700000000000,"data":{"rootCallId":"r","parentCallId":"r","subCallId":"r:code:0","name":"read","arguments":{"path":"a"},"isError":true,"content":[{"type":"text","text":"Error: no"}]}}`},
		{"approval/asked", ApprovalAsked{ID: "q1", ToolName: "bash", CallID: "c1", Reason: "writes"}.Event(),
			`{"type":"approval/asked","seq":0,"time":1700000000000,"data":{"id":"q1","toolName":"bash","callId":"c1","reason":"writes"}}`},
		{"approval/asked minimal", ApprovalAsked{ID: "q1", ToolName: "bash"}.Event(),
			`{"type":"approval/asked","seq":0,"time":1700000000000,"data":{"id":"q1","toolName":"bash"}}`},
		{"approval/decided", ApprovalDecided{ID: "q1", Outcome: ApprovalAllowedOnce}.Event(),
			`{"type":"approval/decided","seq":0,"time":1700000000000,"data":{"id":"q1","outcome":"allowed-once"}}`},
		{"ignorable unknown", Event{Type: "x/custom", Data: mustObject(t, `{"a":1}`), Ignorable: true},
			`{"type":"x/custom","seq":0,"time":1700000000000,"data":{"a":1},"ignorable":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMemory(fixedClock)
			got, err := m.Append(tt.ev)
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			b, err := got.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("bytes:\n got %s\nwant %s", b, tt.want)
			}
			var back Event
			if err := back.UnmarshalJSON(b); err != nil {
				t.Fatalf("UnmarshalJSON: %v", err)
			}
			if !eventsEqual(back, got) {
				t.Errorf("round trip changed the event:\n got %+v\nwant %+v", back, got)
			}
		})
	}
}

func TestToolResultBytes(t *testing.T) {
	m := NewMemory(fixedClock)
	call, err := m.AppendDurable(ToolCall{Turn: 1, Step: 0, CallID: "c1", Name: "read", Arguments: "{}"}.Event())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		r    ToolResult
		want string
	}{
		{"success", ToolResult{Turn: 1, Step: 0, MessageID: "m1", CallID: "c1", Content: content.Texts("ok"), SourceEventSeqs: []int64{call.Seq}},
			`{"type":"tool/result","seq":1,"time":1700000000000,"data":{"turn":1,"step":0,"message":{"id":"m1","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"ok"}],"isError":false}]}},"sourceEventSeqs":[0],"surfaceOp":"append"}`},
		{"coded failure with meta", ToolResult{Turn: 1, Step: 0, MessageID: "m2", CallID: "c1", Content: content.Texts("Error: missing"), IsError: true,
			Error: &ErrorInfo{Name: "FsError", Code: "FS_NOT_FOUND"}, Meta: mustObject(t, `{"path":"a","lines":[1]}`), SourceEventSeqs: []int64{call.Seq}},
			`{"type":"tool/result","seq":1,"time":1700000000000,"data":{"turn":1,"step":0,"message":{"id":"m2","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"Error: missing"}],"isError":true}]},"error":{"name":"FsError","code":"FS_NOT_FOUND"},"meta":{"path":"a","lines":[1]}},"sourceEventSeqs":[0],"surfaceOp":"append"}`},
		{"denial without info", ToolResult{Turn: 1, Step: 0, MessageID: "m3", CallID: "c1", Content: content.Texts("Error: denied"), IsError: true, SourceEventSeqs: []int64{call.Seq}},
			`{"type":"tool/result","seq":1,"time":1700000000000,"data":{"turn":1,"step":0,"message":{"id":"m3","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"Error: denied"}],"isError":true}]}},"sourceEventSeqs":[0],"surfaceOp":"append"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m2 := NewMemory(fixedClock)
			if _, err := m2.Append(call); err != nil {
				t.Fatal(err)
			}
			got, err := m2.Append(tt.r.Event())
			if err != nil {
				t.Fatal(err)
			}
			b, _ := got.MarshalJSON()
			if string(b) != tt.want {
				t.Errorf("bytes:\n got %s\nwant %s", b, tt.want)
			}
			back, err := DecodeToolResult(got)
			if err != nil {
				t.Fatal(err)
			}
			if back.Meta != nil {
				if !jsonv.Equal(back.Meta, tt.r.Meta) {
					t.Errorf("meta = %v", back.Meta)
				}
				back.Meta, tt.r.Meta = nil, nil
			}
			if diff := cmp.Diff(tt.r, back); diff != "" {
				t.Errorf("DecodeToolResult (-want +got):\n%s", diff)
			}
		})
	}
	// An empty message id is minted.
	ev := ToolResult{CallID: "c1", Content: content.Texts("x")}.Event()
	if r, err := DecodeToolResult(ev); err != nil || len(r.MessageID) != 36 {
		t.Errorf("minted message id %q, %v", r.MessageID, err)
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	asst := AssistantMessage{Turn: 2, Step: 3, Message: content.Message{ID: "a", Role: content.RoleAssistant, Source: &content.Source{Kind: "model"},
		Content: []content.Block{content.ToolCall("c", "n", "{}")}}, SourceEventSeqs: []int64{0}}
	gotA, err := DecodeAssistantMessage(asst.Event())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(asst, gotA); diff != "" {
		t.Errorf("assistant (-want +got):\n%s", diff)
	}
	call := ToolCall{Turn: 1, Step: 2, CallID: "c", Name: "n", Arguments: "[]"}
	if got, err := DecodeToolCall(call.Event()); err != nil || got != call {
		t.Errorf("tool/call: %+v, %v", got, err)
	}
	te := TurnEnd{Turn: 4, Reason: EndReason{Kind: EndError, Error: &Failure{Message: "m", Code: "UNKNOWN"}}}
	if got, err := DecodeTurnEnd(te.Event()); err != nil || cmp.Diff(te, got) != "" {
		t.Errorf("turn/end: %+v, %v", got, err)
	}
	ss := StepStart{Turn: 1, Step: 7}
	if got, err := DecodeStepStart(ss.Event()); err != nil || got != ss {
		t.Errorf("step/start: %+v, %v", got, err)
	}
	se := StepEnd{Turn: 1, Step: 7}
	if got, err := DecodeStepEnd(se.Event()); err != nil || got != se {
		t.Errorf("step/end: %+v, %v", got, err)
	}
	ts := TurnStart{Turn: 9}
	if got, err := DecodeTurnStart(ts.Event()); err != nil || got != ts {
		t.Errorf("turn/start: %+v, %v", got, err)
	}
	um := UserMessage{Message: content.Message{ID: "u", Role: content.RoleUser, Content: content.Texts("x"), Source: &content.Source{Kind: "user"}}}
	if got, err := DecodeUserMessage(um.Event()); err != nil || cmp.Diff(um, got) != "" {
		t.Errorf("user/message: %+v, %v", got, err)
	}
	cd := CodeDispatch{RootCallID: "r", ParentCallID: "p", SubCallID: "s", Name: "n", Arguments: "raw", IsError: false, Content: content.Texts("v")}
	if got, err := DecodeCodeDispatch(cd.Event()); err != nil || cmp.Diff(cd, got) != "" {
		t.Errorf("code-dispatch: %+v, %v", got, err)
	}
	cds := CodeDispatchStart{RootCallID: "r", ParentCallID: "p", SubCallID: "s", Name: "n", Arguments: nil}
	if got, err := DecodeCodeDispatchStart(cds.Event()); err != nil || cmp.Diff(cds, got) != "" {
		t.Errorf("code-dispatch-start: %+v, %v", got, err)
	}
	aa := ApprovalAsked{ID: "i", ToolName: "t", Reason: "r"}
	if got, err := DecodeApprovalAsked(aa.Event()); err != nil || got != aa {
		t.Errorf("approval/asked: %+v, %v", got, err)
	}
	for _, ad := range []ApprovalDecided{
		{ID: "i", Outcome: ApprovalRejected},
		{ID: "i", Outcome: ApprovalRejected, Answer: "no-with-feedback", Feedback: "use make clean"},
		{ID: "i", Outcome: ApprovalAllowedOnce, Answer: "always-saved", Rule: "bash(go test ./...)"},
	} {
		if got, err := DecodeApprovalDecided(ad.Event()); err != nil || got != ad {
			t.Errorf("approval/decided: %+v, %v", got, err)
		}
	}
	bad := ApprovalDecided{ID: "i", Outcome: ApprovalRejected}.Event()
	bad.Data.(*jsonv.Object).Set("feedback", 3.0)
	if _, err := DecodeApprovalDecided(bad); err == nil || !strings.Contains(err.Error(), "feedback") {
		t.Errorf("a non-string feedback: %v", err)
	}
	if _, err := DecodeToolCall(ts.Event()); err == nil || !strings.Contains(err.Error(), `is "turn/start", not "tool/call"`) {
		t.Errorf("decoding the wrong type: %v", err)
	}
}

func TestNonJSONData(t *testing.T) {
	m := NewMemory(fixedClock)
	for _, data := range []any{
		func() {},
		make(chan int),
		map[string]any{"f": func() {}},
		[]any{1, struct{ C chan int }{}},
	} {
		_, err := m.Append(ToolResult{CallID: "c", Content: content.Texts("x"), Meta: data}.Event())
		if err == nil || err.Error() != `session event "tool/result" carries non-JSON-serializable data` {
			t.Errorf("Append(meta %T) error = %v", data, err)
		}
		var de *DataError
		if !errors.As(err, &de) || de.Type != TypeToolResult || de.Err == nil {
			t.Errorf("error %v is not a *DataError with a cause", err)
		}
	}
	if m.Len() != 0 {
		t.Errorf("rejected events were logged: %d", m.Len())
	}
}

// eventsEqual compares events, data by JSON value.
func eventsEqual(a, b Event) bool {
	return a.Type == b.Type && a.Seq == b.Seq && a.Time == b.Time && a.SurfaceOp == b.SurfaceOp &&
		a.Ignorable == b.Ignorable && jsonv.Equal(a.Data, b.Data) &&
		(a.SourceEventSeqs == nil) == (b.SourceEventSeqs == nil) && cmp.Equal(a.SourceEventSeqs, b.SourceEventSeqs)
}
