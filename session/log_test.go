package session

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
)

func TestMemoryAssignsSeqAndTime(t *testing.T) {
	clock := int64(0)
	m := NewMemory(func() time.Time { clock += 5; return time.UnixMilli(clock) })
	for i := range 3 {
		e, err := m.Append(Event{Type: TypeTurnStart, Seq: 99, Time: 99, Data: mustObject(t, `{"turn":0}`)})
		if err != nil {
			t.Fatal(err)
		}
		if e.Seq != int64(i) || e.Time != int64(5*(i+1)) {
			t.Errorf("event %d: seq %d time %d", i, e.Seq, e.Time)
		}
	}
	if m.Len() != 3 || len(m.Events()) != 3 {
		t.Errorf("Len %d, Events %d", m.Len(), len(m.Events()))
	}
}

func TestMemorySnapshotsData(t *testing.T) {
	m := NewMemory(fixedClock)
	data := map[string]any{"turn": 1, "step": 2, "callId": "c", "name": "n", "arguments": "{}"}
	e, err := m.Append(Event{Type: TypeToolCall, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	data["callId"] = "mutated"
	got, _ := DecodeToolCall(m.Events()[0])
	if got.CallID != "c" {
		t.Errorf("caller's mutation reached the log: %q", got.CallID)
	}
	if _, ok := e.Data.(*jsonv.Object); !ok {
		t.Errorf("data was not snapshotted into a *jsonv.Object: %T", e.Data)
	}
	seqs := []int64{0}
	r, err := m.Append(ToolResult{CallID: "c", Content: content.Texts("x"), SourceEventSeqs: seqs}.Event())
	if err != nil {
		t.Fatal(err)
	}
	seqs[0] = 42
	if r.SourceEventSeqs[0] != 0 || m.Events()[1].SourceEventSeqs[0] != 0 {
		t.Error("caller's sourceEventSeqs slice is shared with the log")
	}
	// Events returns a clipped slice: appending to it cannot write into the log.
	evs := m.Events()
	_ = append(evs, Event{Type: "x"})
	if _, err := m.Append(TurnStart{}.Event()); err != nil {
		t.Fatal(err)
	}
	if m.Events()[2].Type != TypeTurnStart {
		t.Error("appending to an Events snapshot changed the log")
	}
}

func TestAppendValidation(t *testing.T) {
	tests := []struct {
		name    string
		prior   []Event
		ev      Event
		wantErr string
	}{
		{"empty type", nil, Event{Data: nil}, "empty type"},
		{"unknown type", nil, Event{Type: "x/new", Data: nil}, `session event type "x/new" is unknown to this dsh and not marked ignorable`},
		{"surfaceOp on log-only", nil, Event{Type: TypeToolCall, Data: ToolCall{CallID: "c"}.Event().Data, SurfaceOp: "append"},
			`session event "tool/call" is not surface-eligible and cannot carry surfaceOp`},
		{"sources on log-only", []Event{TurnStart{}.Event()}, Event{Type: TypeTurnStart, Data: mustObject(t, `{"turn":1}`), SourceEventSeqs: []int64{0}},
			`session event "turn/start" is not surface-eligible and cannot carry sourceEventSeqs`},
		{"surface without op", nil, Event{Type: TypeUserMessage, Data: UserMessage{Message: content.Message{ID: "u", Content: content.Texts("x")}}.Event().Data},
			`session event "user/message" is surface-eligible and requires a surfaceOp marker`},
		{"replace op", nil, Event{Type: TypeUserMessage, Data: UserMessage{Message: content.Message{ID: "u"}}.Event().Data, SurfaceOp: "replace"},
			`unsupported surfaceOp "replace"`},
		{"empty sources", nil, ToolResult{CallID: "c", SourceEventSeqs: []int64{}}.Event(),
			"sourceEventSeqs must not be empty except on assistant/message"},
		{"future source", []Event{TurnStart{}.Event()}, ToolResult{CallID: "c", SourceEventSeqs: []int64{1}}.Event(),
			"sourceEventSeqs must reference earlier events: 1 >= current seq 1"},
		{"duplicate sources", []Event{TurnStart{}.Event(), TurnStart{}.Event()}, ToolResult{CallID: "c", SourceEventSeqs: []int64{0, 0}}.Event(),
			"sourceEventSeqs must not contain duplicates"},
		{"negative source", nil, ToolResult{CallID: "c", SourceEventSeqs: []int64{-1}}.Event(),
			"non-negative"},
		{"tool/call without callId", nil, ToolCall{Name: "n"}.Event(),
			`session event "tool/call": "callId" must be a non-empty string`},
		{"tool/call data not an object", nil, Event{Type: TypeToolCall, Data: "x"},
			`session event "tool/call": data must be an object, got string`},
		{"turn/start negative", nil, Event{Type: TypeTurnStart, Data: mustObject(t, `{"turn":-1}`)},
			`"turn" must be a non-negative integer`},
		{"turn/start fractional", nil, Event{Type: TypeTurnStart, Data: mustObject(t, `{"turn":1.5}`)},
			`"turn" must be a non-negative integer`},
		{"turn/end without reason", nil, Event{Type: TypeTurnEnd, Data: mustObject(t, `{"turn":1}`)},
			`"reason" must be an object`},
		{"user/message wrong role", nil, Event{Type: TypeUserMessage, SurfaceOp: "append", Data: mustObject(t, `{"id":"u","role":"assistant","content":[]}`)},
			`message must have role "user"`},
		{"user/message without id", nil, Event{Type: TypeUserMessage, SurfaceOp: "append", Data: mustObject(t, `{"id":"","role":"user","content":[]}`)},
			`"id" must be a non-empty string`},
		{"tool/result mismatched ids", nil, Event{Type: TypeToolResult, SurfaceOp: "append", Data: mustObject(t,
			`{"turn":0,"step":0,"message":{"id":"m","role":"user","source":{"kind":"tool","callId":"a"},"content":[{"type":"tool-result","toolCallId":"b","content":[]}]}}`)},
			"mismatched tool call ids"},
		{"tool/result two blocks", nil, Event{Type: TypeToolResult, SurfaceOp: "append", Data: mustObject(t,
			`{"turn":0,"step":0,"message":{"id":"m","role":"user","source":{"kind":"tool","callId":"a"},"content":[{"type":"text","text":"x"}]}}`)},
			"one tool-result block"},
		{"tool/result not from a tool", nil, Event{Type: TypeToolResult, SurfaceOp: "append", Data: mustObject(t,
			`{"turn":0,"step":0,"message":{"id":"m","role":"user","source":{"kind":"user"},"content":[]}}`)},
			"tool source"},
		{"assistant/message bad block", nil, Event{Type: TypeAssistantMessage, SurfaceOp: "append", Data: mustObject(t,
			`{"turn":0,"step":0,"message":{"id":"m","role":"assistant","content":[{"type":"tool-call","id":"c"}]}}`)},
			`"name" must be a string`},
		{"code-dispatch without isError", nil, Event{Type: TypeCodeDispatch, Data: mustObject(t,
			`{"rootCallId":"r","parentCallId":"p","subCallId":"s","name":"n","arguments":{},"content":[]}`)},
			`"isError" must be a boolean`},
		{"approval/decided without outcome", nil, Event{Type: TypeApprovalDecided, Data: mustObject(t, `{"id":"q"}`)},
			`"outcome" must be a non-empty string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMemory(fixedClock)
			for _, p := range tt.prior {
				if _, err := m.Append(p); err != nil {
					t.Fatalf("prior event: %v", err)
				}
			}
			_, err := m.Append(tt.ev)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Append error = %v, want it to contain %q", err, tt.wantErr)
			}
			if m.Len() != len(tt.prior) {
				t.Errorf("a rejected event was logged")
			}
		})
	}
}

func TestAppendAccepts(t *testing.T) {
	m := NewMemory(fixedClock)
	for _, e := range []Event{
		{Type: TypeTodoWrite, Data: mustObject(t, `{"todos":[]}`)},
		{Type: TypeRequestHeader, Data: mustObject(t, `{"header":{},"reason":"initial"}`)},
		{Type: "plugin/thing", Data: []any{1.0}, Ignorable: true},
		{Type: TypeAssistantMessage, SurfaceOp: "append", SourceEventSeqs: []int64{}, Data: AssistantMessage{Message: content.Message{ID: "a"}}.Event().Data},
		{Type: TypeEndSeed, Data: jsonv.NewObject()},
	} {
		if _, err := m.Append(e); err != nil {
			t.Errorf("Append(%s): %v", e.Type, err)
		}
	}
}

func TestMemoryClose(t *testing.T) {
	m := NewMemory(nil)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Append(TurnStart{}.Event()); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v", err)
	}
	if _, err := m.AppendDurable(TurnStart{}.Event()); !errors.Is(err, ErrClosed) {
		t.Errorf("AppendDurable after Close: %v", err)
	}
	if err := m.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestMemoryConcurrentAppends(t *testing.T) {
	m := NewMemory(nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if _, err := m.Append(TurnStart{}.Event()); err != nil {
					t.Error(err)
				}
				_ = m.Events()
			}
		})
	}
	wg.Wait()
	for i, e := range m.Events() {
		if e.Seq != int64(i) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	if m.Len() != 400 {
		t.Errorf("Len = %d", m.Len())
	}
}

var _ Log = (*Memory)(nil)
var _ Log = (*FileLog)(nil)
