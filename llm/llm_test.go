package llm_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// record runs f against an assembler and returns the events it emitted.
func record(f func(a *llm.Assembler)) []llm.Event {
	var evs []llm.Event
	f(llm.NewAssembler(func(ev llm.Event) bool { evs = append(evs, ev); return true }))
	return evs
}

// seq replays events (and a final error, if any) as a model stream.
func seq(evs []llm.Event, err error) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
		if err != nil {
			yield(llm.Event{}, err)
		}
	}
}

func TestAssemblerEvents(t *testing.T) {
	tc := func(id, name string) content.Block {
		return content.Block{Type: content.TypeToolCall, ID: id, Name: name}
	}
	tests := []struct {
		name   string
		run    func(a *llm.Assembler)
		reason llm.FinishReason
		want   []llm.Event
	}{
		{
			name: "reasoning then text",
			run: func(a *llm.Assembler) {
				a.Reasoning("")
				a.Reasoning("Let me ")
				a.Reasoning("think.")
				a.Text("Hi")
				a.Reasoning(" More.")
				a.Text("!")
			},
			reason: llm.FinishStop,
			want: []llm.Event{
				{Type: llm.EventBlockStart, Index: 0, Block: content.Block{Type: content.TypeReasoning}},
				{Type: llm.EventReasoningDelta, Index: 0, Text: "Let me "},
				{Type: llm.EventReasoningDelta, Index: 0, Text: "think."},
				{Type: llm.EventBlockStart, Index: 1, Block: content.Block{Type: content.TypeText}},
				{Type: llm.EventTextDelta, Index: 1, Text: "Hi"},
				{Type: llm.EventReasoningDelta, Index: 0, Text: " More."},
				{Type: llm.EventTextDelta, Index: 1, Text: "!"},
				{Type: llm.EventBlockEnd, Index: 0, Block: content.Reasoning("Let me think. More.")},
				{Type: llm.EventBlockEnd, Index: 1, Block: content.Text("Hi!")},
			},
		},
		{
			name: "two interleaved tool calls, id and name only in the first delta",
			run: func(a *llm.Assembler) {
				a.ToolCall(0, "c1", "read", "")
				a.ToolCall(1, "c2", "list", `{"di`)
				a.ToolCall(0, "", "", `{"path":`)
				a.ToolCall(1, "", "", `r":"."}`)
				a.ToolCall(0, "", "", `"a"}`)
			},
			reason: llm.FinishStop, // normalized to tool-calls
			want: []llm.Event{
				{Type: llm.EventBlockStart, Index: 0, Block: tc("c1", "read")},
				{Type: llm.EventBlockStart, Index: 1, Block: tc("c2", "list")},
				{Type: llm.EventToolCallDelta, Index: 1, Text: `{"di`, Block: tc("c2", "list")},
				{Type: llm.EventToolCallDelta, Index: 0, Text: `{"path":`, Block: tc("c1", "read")},
				{Type: llm.EventToolCallDelta, Index: 1, Text: `r":"."}`, Block: tc("c2", "list")},
				{Type: llm.EventToolCallDelta, Index: 0, Text: `"a"}`, Block: tc("c1", "read")},
				{Type: llm.EventBlockEnd, Index: 0, Block: content.ToolCall("c1", "read", `{"path":"a"}`)},
				{Type: llm.EventBlockEnd, Index: 1, Block: content.ToolCall("c2", "list", `{"dir":"."}`)},
			},
		},
		{
			name: "missing ids are synthesized without collisions",
			run: func(a *llm.Assembler) {
				a.Text("x")
				a.ToolCall(7, "", "a", "")
				a.ToolCall(8, "call_1_2", "b", "")
				a.ToolCall(9, "", "", "")
				a.ToolCall(9, "late-id", "c", "{}")
			},
			reason: llm.FinishToolCalls,
			want: []llm.Event{
				{Type: llm.EventBlockStart, Index: 0, Block: content.Block{Type: content.TypeText}},
				{Type: llm.EventTextDelta, Index: 0, Text: "x"},
				{Type: llm.EventBlockStart, Index: 1, Block: tc("", "a")},
				{Type: llm.EventBlockStart, Index: 2, Block: tc("call_1_2", "b")},
				{Type: llm.EventBlockStart, Index: 3, Block: tc("", "")},
				{Type: llm.EventToolCallDelta, Index: 3, Text: "{}", Block: tc("late-id", "c")},
				{Type: llm.EventBlockEnd, Index: 0, Block: content.Text("x")},
				{Type: llm.EventBlockEnd, Index: 1, Block: content.ToolCall("call_1", "a", "")},
				{Type: llm.EventBlockEnd, Index: 2, Block: content.ToolCall("call_1_2", "b", "")},
				{Type: llm.EventBlockEnd, Index: 3, Block: content.ToolCall("late-id", "c", "{}")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp *llm.Response
			evs := record(func(a *llm.Assembler) {
				tt.run(a)
				resp, _ = a.Finish(tt.reason, llm.Usage{OutputTokens: 3}, "m")
			})
			last := evs[len(evs)-1]
			if last.Type != llm.EventFinish || last.Response != resp {
				t.Fatalf("last event = %+v, want the finish event carrying the response", last)
			}
			if diff := cmp.Diff(tt.want, evs[:len(evs)-1]); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			var ends []content.Block
			for _, ev := range tt.want {
				if ev.Type == llm.EventBlockEnd {
					ends = append(ends, ev.Block)
				}
			}
			if diff := cmp.Diff(ends, resp.Message.Content); diff != "" {
				t.Errorf("response content (-want +got):\n%s", diff)
			}
			if resp.Message.Role != content.RoleAssistant || resp.Model != "m" || resp.Usage.OutputTokens != 3 {
				t.Errorf("response = %+v", resp)
			}
		})
	}
}

func TestAssemblerFinishReasonAgreesWithContent(t *testing.T) {
	tests := []struct {
		in, want llm.FinishReason
		calls    bool
	}{
		{llm.FinishStop, llm.FinishStop, false},
		{llm.FinishStop, llm.FinishToolCalls, true},
		{llm.FinishToolCalls, llm.FinishStop, false},
		{llm.FinishToolCalls, llm.FinishToolCalls, true},
		{llm.FinishMaxTokens, llm.FinishMaxTokens, true},
		{llm.FinishMaxTokens, llm.FinishMaxTokens, false},
	}
	for _, tt := range tests {
		a := llm.NewAssembler(func(llm.Event) bool { return true })
		a.Text("t")
		if tt.calls {
			a.ToolCall(0, "c", "n", "{}")
		}
		resp, _ := a.Finish(tt.in, llm.Usage{}, "")
		if resp.FinishReason != tt.want {
			t.Errorf("Finish(%s) with calls=%v: reason %s, want %s", tt.in, tt.calls, resp.FinishReason, tt.want)
		}
	}
}

func TestAssemblerStopsWhenConsumerStops(t *testing.T) {
	n := 0
	a := llm.NewAssembler(func(llm.Event) bool { n++; return n < 2 })
	if a.Text("a") { // block-start is accepted, the delta refused
		t.Error("Text reported true although the consumer refused the delta")
	}
	if a.Text("b") {
		t.Error("Text after the consumer stopped reported true")
	}
	if got := a.Message().Content[0].Text; got != "ab" {
		t.Errorf("text = %q, want the deltas applied even when refused", got)
	}
}

func TestCollect(t *testing.T) {
	var full []llm.Event
	var resp *llm.Response
	full = record(func(a *llm.Assembler) {
		a.Reasoning("why")
		a.Text("hel")
		a.Text("lo")
		a.ToolCall(0, "c1", "read", `{"p":1}`)
		resp, _ = a.Finish(llm.FinishToolCalls, llm.Usage{InputTokens: 1}, "m")
	})
	boom := &llm.Error{Code: llm.CodeStreamClosed, Message: "dropped"}
	partial := content.Message{Role: content.RoleAssistant, Content: []content.Block{
		content.Reasoning("why"), content.Text("hello"), content.ToolCall("c1", "read", `{"p":1}`),
	}}
	tests := []struct {
		name     string
		events   []llm.Event
		err      error
		want     llm.Response
		wantCode string
	}{
		{name: "success", events: full, want: *resp},
		{
			name: "error after deltas keeps the partial message", events: full[:7], err: boom,
			want:     llm.Response{Message: partial, FinishReason: llm.FinishError},
			wantCode: llm.CodeStreamClosed,
		},
		{
			name: "cancellation is aborted", events: full[:2], err: context.Canceled,
			want: llm.Response{Message: content.Message{Role: content.RoleAssistant,
				Content: []content.Block{content.Reasoning("why")}}, FinishReason: llm.FinishAborted},
			wantCode: llm.CodeAborted,
		},
		{
			name: "partial after some blocks ended", events: full[:8], err: boom,
			want:     llm.Response{Message: partial, FinishReason: llm.FinishError},
			wantCode: llm.CodeStreamClosed,
		},
		{
			name: "no finish event", events: full[:len(full)-1],
			want:     llm.Response{Message: partial, FinishReason: llm.FinishError},
			wantCode: llm.CodeMalformedResponse,
		},
		{
			name: "delta for a block that never started", events: []llm.Event{{Type: llm.EventTextDelta, Index: 0, Text: "x"}},
			want:     llm.Response{Message: content.Message{Role: content.RoleAssistant, Content: []content.Block{}}, FinishReason: llm.FinishError},
			wantCode: llm.CodeMalformedResponse,
		},
		{
			name: "blocks out of order", events: []llm.Event{{Type: llm.EventBlockStart, Index: 1}},
			want:     llm.Response{Message: content.Message{Role: content.RoleAssistant, Content: []content.Block{}}, FinishReason: llm.FinishError},
			wantCode: llm.CodeMalformedResponse,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := llm.Collect(seq(tt.events, tt.err))
			if code := llm.CodeOf(err); code != tt.wantCode {
				t.Fatalf("Collect error = %v (code %q), want code %q", err, code, tt.wantCode)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("Collect error = %v, want the stream's error", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResponseAccessors(t *testing.T) {
	r := llm.Response{Message: content.Message{Content: []content.Block{
		content.Reasoning("a"), content.Text("b"), content.ToolCall("1", "x", "{}"),
		content.Text("c"), content.ToolCall("2", "y", "[]"),
	}}}
	if r.Text() != "bc" || r.Reasoning() != "a" {
		t.Errorf("Text %q Reasoning %q", r.Text(), r.Reasoning())
	}
	calls := r.ToolCalls()
	if len(calls) != 2 || calls[0].ID != "1" || calls[1].ID != "2" {
		t.Errorf("ToolCalls = %+v", calls)
	}
}

func TestErrors(t *testing.T) {
	cause := errors.New("socket closed")
	e := &llm.Error{Code: llm.CodeRateLimit, Message: "slow down", Err: cause}
	wrapped := fmt.Errorf("step 3: %w", e)
	var got *llm.Error
	if !errors.As(wrapped, &got) || got.Code != llm.CodeRateLimit || !errors.Is(wrapped, cause) {
		t.Fatalf("errors.As/Is through wrapping failed: %v", wrapped)
	}
	if info := tool.InfoOf(wrapped); info == nil || info.Name != "LLMError" || info.Code != llm.CodeRateLimit {
		t.Errorf("tool.InfoOf = %+v, want {LLMError RATE_LIMIT}", info)
	}
	for code, want := range map[string]bool{
		llm.CodeRateLimit: true, llm.CodeServer: true, llm.CodeTransport: true, llm.CodeTimeout: true,
		llm.CodeStreamClosed: true, llm.CodeEmptyResponse: true,
		llm.CodeAuth: false, llm.CodeUnknownModel: false, llm.CodeMissingAPIKey: false, llm.CodeAborted: false,
		llm.CodeContextWindowExceeded: false, "CONTENT_FILTER": false,
	} {
		if got := (&llm.Error{Code: code}).Retryable(); got != want {
			t.Errorf("Retryable(%s) = %v, want %v", code, got, want)
		}
	}
	for err, want := range map[error]string{
		nil: "", cause: "", context.Canceled: llm.CodeAborted, context.DeadlineExceeded: llm.CodeTimeout,
		fmt.Errorf("x: %w", context.Canceled): llm.CodeAborted, wrapped: llm.CodeRateLimit,
	} {
		if got := llm.CodeOf(err); got != want {
			t.Errorf("CodeOf(%v) = %q, want %q", err, got, want)
		}
	}
}

func TestEventTypeString(t *testing.T) {
	if s := llm.EventToolCallDelta.String(); s != "tool-call-delta" {
		t.Errorf("String = %q", s)
	}
	if s := llm.EventType(99).String(); s != "EventType(99)" {
		t.Errorf("String = %q", s)
	}
}

func TestRequestClone(t *testing.T) {
	temp := 0.5
	r := llm.Request{
		Messages:    []content.Message{{Role: content.RoleUser, Content: content.Texts("hi")}},
		Tools:       []llm.ToolSchema{{Name: "a"}},
		Temperature: &temp,
	}
	c := r.Clone()
	r.Messages[0].Content[0].Text = "changed"
	r.Tools[0].Name = "changed"
	*r.Temperature = 2
	if c.Messages[0].Content[0].Text != "hi" || c.Tools[0].Name != "a" || *c.Temperature != 0.5 {
		t.Errorf("Clone shares storage with the original: %+v", c)
	}
}

// TestAssembleAnySplit checks that however a reply is cut into deltas, and however the
// deltas of different tool calls interleave, collecting the events yields the reply.
func TestAssembleAnySplit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		reasoning := rapid.String().Draw(t, "reasoning")
		text := rapid.String().Draw(t, "text")
		nCalls := rapid.IntRange(0, 4).Draw(t, "calls")
		type call struct {
			id, name string
			pieces   []string
		}
		calls := make([]call, nCalls)
		for i := range calls {
			calls[i] = call{
				id:     fmt.Sprintf("id%d", i),
				name:   rapid.StringMatching(`[a-z_]{1,8}`).Draw(t, "name"),
				pieces: rapid.SliceOf(rapid.String()).Draw(t, "pieces"),
			}
		}
		rs := split(t, reasoning, "r")
		ts := split(t, text, "t")
		// Interleave: pick the next source at random until all are drained; a call's first
		// delta carries its id and name.
		var evs []llm.Event
		var resp *llm.Response
		evs = record(func(a *llm.Assembler) {
			pos := make([]int, nCalls)
			started := make([]bool, nCalls)
			for {
				var live []int
				if len(rs) > 0 {
					live = append(live, -2)
				}
				if len(ts) > 0 {
					live = append(live, -1)
				}
				for i := range calls {
					if !started[i] || pos[i] < len(calls[i].pieces) {
						live = append(live, i)
					}
				}
				if len(live) == 0 {
					break
				}
				switch k := rapid.SampledFrom(live).Draw(t, "next"); k {
				case -2:
					a.Reasoning(rs[0])
					rs = rs[1:]
				case -1:
					a.Text(ts[0])
					ts = ts[1:]
				default:
					c := calls[k]
					if !started[k] {
						started[k] = true
						a.ToolCall(k, c.id, c.name, "")
						continue
					}
					a.ToolCall(k, "", "", c.pieces[pos[k]])
					pos[k]++
				}
			}
			resp, _ = a.Finish(llm.FinishStop, llm.Usage{}, "m")
		})
		got, err := llm.Collect(seq(evs, nil))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(*resp, got); diff != "" {
			t.Fatalf("Collect differs from Finish (-finish +collect):\n%s", diff)
		}
		if got.Reasoning() != reasoning || got.Text() != text {
			t.Fatalf("reasoning %q text %q, want %q %q", got.Reasoning(), got.Text(), reasoning, text)
		}
		callBlocks := got.ToolCalls()
		if len(callBlocks) != nCalls {
			t.Fatalf("%d tool calls, want %d", len(callBlocks), nCalls)
		}
		for i, b := range callBlocks {
			// blocks are numbered in first-seen order; find the call by id
			var c call
			for _, cc := range calls {
				if cc.id == b.ID {
					c = cc
				}
			}
			if b.Name != c.name || b.Arguments != strings.Join(c.pieces, "") {
				t.Fatalf("call %d = %+v, want %s(%q)", i, b, c.name, strings.Join(c.pieces, ""))
			}
		}
		want := llm.FinishStop
		if nCalls > 0 {
			want = llm.FinishToolCalls
		}
		if got.FinishReason != want {
			t.Fatalf("finish %s, want %s", got.FinishReason, want)
		}
	})
}

// split cuts s into random pieces (byte-wise; the assembler must not care about runes).
func split(t *rapid.T, s, label string) []string {
	var out []string
	for len(s) > 0 {
		n := rapid.IntRange(1, len(s)).Draw(t, label)
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}
