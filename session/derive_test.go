package session

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"unsafe"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
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
		if rapid.Bool().Draw(rt, "handBuilt") {
			evs = withoutKept(evs) // every message derived from its payload
		}
		want, got := deriveAsReference(rt, evs)
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

// TestDeriveMessagesAcrossChunks checks, on random logs long enough to fill many block
// chunks and source slabs (messages of up to twice a chunk's blocks, so that some start a
// chunk of their own and others leave a chunk's tail unused), that the derivation yields
// exactly the reference's messages, that every message's content ends where its capacity
// does (an append reallocates rather than overwrite the next message) and that no two
// messages share a source.
func TestDeriveMessagesAcrossChunks(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 100).Draw(rt, "n")
		m := NewMemory(fixedClock)
		for i := range n {
			id := strconv.Itoa(i)
			var e Event
			switch rapid.IntRange(0, 3).Draw(rt, "kind") {
			case 0:
				e = UserMessage{Message: content.Message{ID: "u" + id, Source: &content.Source{Kind: "user"}, Content: content.Texts(id)}}.Event()
			case 1:
				msg := content.Message{ID: "a" + id, Source: &content.Source{Kind: "model"}}
				for k := range rapid.IntRange(0, 2*maxBlockChunk+1).Draw(rt, "blocks") {
					msg.Content = append(msg.Content, content.ToolCall("c"+id+"-"+strconv.Itoa(k), "read", `{}`))
				}
				e = AssistantMessage{Message: msg}.Event()
			case 2:
				e = ToolResult{MessageID: "r" + id, CallID: "c" + id, Content: content.Texts(id)}.Event()
			default:
				e = ToolCall{CallID: "c" + id, Name: "read", Arguments: `{}`}.Event()
			}
			if _, err := m.Append(e); err != nil {
				rt.Fatalf("append %s: %v", e.Type, err)
			}
		}
		evs := m.Events()
		if rapid.Bool().Draw(rt, "handBuilt") {
			evs = withoutKept(evs) // the blocks carved out of chunks
		}
		_, got := deriveAsReference(rt, evs)
		sources := make(map[*content.Source]int)
		for i, msg := range got {
			if cap(msg.Content) != len(msg.Content) {
				rt.Fatalf("message %d: content of %d blocks has capacity %d", i, len(msg.Content), cap(msg.Content))
			}
			if msg.Source == nil {
				continue
			}
			if j, ok := sources[msg.Source]; ok {
				rt.Fatalf("messages %d and %d share a source", j, i)
			}
			sources[msg.Source] = i
		}
	})
}

// surfaceSamples returns one well-formed event of each surface type, with every kind of
// block the derivation decodes directly or hands to content.FromValue.
func surfaceSamples() []Event {
	img := content.Block{Type: content.TypeImage, Image: &content.ImageRef{AttachmentID: "att", MediaType: "image/png", Bytes: 3, Width: 1, Height: 1, Name: "p.png"}}
	custom := content.Block{Type: "x-custom", Extra: jsonv.NewObject(jsonv.Member{Name: "n", Value: 1.0})}
	nested := content.ToolResult("inner", []content.Block{content.Text("t"), img}, true)
	return []Event{
		UserMessage{Message: content.Message{ID: "u", Source: &content.Source{Kind: "plugin", Plugin: "p", Form: "notice", Summary: "s"}, Content: []content.Block{content.Text("hi"), img, custom}}}.Event(),
		AssistantMessage{Turn: 1, Step: 2, Interrupted: true, Usage: map[string]any{"output": 3}, Message: content.Message{ID: "a", Source: &content.Source{Kind: "model"}, Content: []content.Block{
			content.Reasoning("think"), content.Text("say"), content.ToolCall("c1", "read", `{"path":"a"}`), nested}}}.Event(),
		AssistantMessage{Message: content.Message{ID: "empty"}, Usage: map[string]any{"output": 0}}.Event(),
		ToolResult{Turn: 1, Step: 2, MessageID: "r", CallID: "c1", Content: []content.Block{content.Text("out"), img, nested}, IsError: true,
			Error: &ErrorInfo{Name: "E", Code: "C"}, Meta: map[string]any{"k": "v"}}.Event(),
		ToolResult{MessageID: "r2", CallID: "c2", Content: []content.Block{}}.Event(),
	}
}

// damagePalette holds the values a damage writes over a member or an element.
var damagePalette = []any{nil, true, false, 0.0, 1.5, -1.0, "", "x", "tool", "text", "user",
	"tool-result", &jsonv.Object{}, []any{}, (*jsonv.Object)(nil)}

// damageSlot is a place in a JSON tree: a member of an object or an element of an array.
type damageSlot struct {
	obj  *jsonv.Object
	name string
	arr  []any
	i    int
}

// damageSlots lists every member and element of the tree v, depth first.
func damageSlots(v any) []damageSlot {
	var slots []damageSlot
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case *jsonv.Object:
			for _, m := range x.Members() {
				slots = append(slots, damageSlot{obj: x, name: m.Name})
				walk(m.Value)
			}
		case []any:
			for i, e := range x {
				slots = append(slots, damageSlot{arr: x, i: i})
				walk(e)
			}
		}
	}
	walk(v)
	return slots
}

// damage changes the tree at s in place: op 0 deletes a member, op 1 renames it, and
// op 2+k overwrites the member or element with damagePalette[k].
func damage(s damageSlot, op int) {
	switch {
	case s.obj != nil && op == 0:
		s.obj.Delete(s.name)
	case s.obj != nil && op == 1:
		v, _ := s.obj.Get(s.name)
		s.obj.Delete(s.name)
		s.obj.Set(s.name+"_", v)
	case s.obj != nil:
		s.obj.Set(s.name, damagePalette[op-2])
	case op >= 2:
		s.arr[s.i] = damagePalette[op-2]
	}
}

// checkDerivesLikeReference fails unless DeriveMessages fails exactly when the reference
// does, with the decoder's error prefixed by the seq of the first bad event, and otherwise
// yields the reference's messages.
func checkDerivesLikeReference(t interface{ Fatalf(string, ...any) }, evs []Event) {
	want, refErr := deriveReference(evs)
	got, err := DeriveMessages(evs)
	if refErr != nil {
		seq := int64(-1)
		for i := range evs {
			if _, err := deriveReference(evs[i : i+1]); err != nil {
				seq = evs[i].Seq
				break
			}
		}
		if w := fmt.Sprintf("session: derive messages: seq %d: %v", seq, refErr); err == nil || err.Error() != w {
			t.Fatalf("DeriveMessages error = %v, want %s", err, w)
		}
		return
	}
	if err != nil {
		t.Fatalf("DeriveMessages failed where the reference derives: %v", err)
	}
	if len(want) == 0 {
		want = nil // DeriveMessages returns nil for an empty history
	}
	if diff := cmp.Diff(want, got, equalObjects); diff != "" {
		t.Fatalf("DeriveMessages differs from the reference (-want +got):\n%s", diff)
	}
}

// TestDeriveMessagesEveryDamage damages each member and element of each sample payload in
// each way, one at a time, and checks DeriveMessages against the reference.
func TestDeriveMessagesEveryDamage(t *testing.T) {
	for si, sample := range surfaceSamples() {
		for slot := range len(damageSlots(sample.Data)) {
			for op := range 2 + len(damagePalette) {
				e := sample
				e.Seq = 3
				e.Data = jsonv.Clone(sample.Data)
				damage(damageSlots(e.Data)[slot], op)
				ok := UserMessage{Message: content.Message{ID: "first", Content: content.Texts("fine")}}.Event()
				ok.Seq = 2
				t.Run(fmt.Sprintf("%d/%s/%d/%d", si, e.Type, slot, op), func(t *testing.T) {
					checkDerivesLikeReference(t, []Event{ok, e})
					checkStampLikeDecoder(t, e)
				})
			}
		}
	}
}

// TestDeriveMessagesMalformed checks, on random logs of surface events whose payloads may
// be damaged anywhere, several times (as a hand-built slice may hold them; a Log refuses
// them), that DeriveMessages behaves as the reference.
func TestDeriveMessagesMalformed(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		samples := surfaceSamples()
		n := rapid.IntRange(1, 8).Draw(rt, "n")
		evs := make([]Event, n)
		for i := range evs {
			e := samples[rapid.IntRange(0, len(samples)-1).Draw(rt, "sample")]
			e.Data = jsonv.Clone(e.Data)
			e.Seq = int64(i)
			for range rapid.IntRange(0, 3).Draw(rt, "damages") {
				slots := damageSlots(e.Data)
				if len(slots) == 0 {
					break
				}
				// Drawn from either end: rapid favours small numbers.
				k := rapid.IntRange(0, len(slots)-1).Draw(rt, "slot")
				if rapid.Bool().Draw(rt, "fromEnd") {
					k = len(slots) - 1 - k
				}
				damage(slots[k], rapid.IntRange(0, 1+len(damagePalette)).Draw(rt, "op"))
			}
			evs[i] = e
			checkStampLikeDecoder(rt, e)
		}
		checkDerivesLikeReference(rt, evs)
	})
}

// checkStampLikeDecoder checks that a log accepts a surface event exactly when the event's
// decoder does, with the decoder's error, and that the message it keeps for an accepted one
// is the one the reference derives.
func checkStampLikeDecoder(t interface{ Fatalf(string, ...any) }, e Event) {
	_, decErr := decodeSurface(&e)
	stamped, err := Stamp(e, e.Seq, 0)
	switch {
	case decErr != nil && (err == nil || err.Error() != decErr.Error()):
		t.Fatalf("Stamp error = %v, want the decoder's: %v", err, decErr)
	case decErr == nil && err != nil:
		t.Fatalf("Stamp refused an event the decoder accepts: %v", err)
	case err != nil:
		return
	case stamped.derived == nil:
		t.Fatalf("Stamp kept no message for %s", e.Type)
	}
	checkDerivesLikeReference(t, []Event{stamped})
}

// TestDeriveMessagesKept checks the messages a log keeps for its surface events, on every
// way events reach a log (appended, loaded from a file, parsed into an arena by a store):
// each surface event keeps one, and DeriveMessages returns what it derives from the
// payloads; from the second call on it returns the same shared history without
// allocating, a prefix of the events gets a prefix of it, and appending to the result or
// to a message's content changes nothing shared.
func TestDeriveMessagesKept(t *testing.T) {
	appended := build(t, surfaceSamples()...)
	data, err := EncodeHeader(Header{ID: "kept", Cwd: "/"})
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, '\n')
	var arena EventArena
	var parsed []Event
	for i := range appended {
		line, err := EncodeEvent(appended[i])
		if err != nil {
			t.Fatal(err)
		}
		data = append(append(data, line...), '\n')
		e, err := arena.ParseEvent(line)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, e)
	}
	_, loaded, _, err := ReadLog(data, CompressionNone)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		evs  []Event
	}{{"appended", appended}, {"loaded", loaded}, {"arena", parsed}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, e := range tc.evs {
				if k := surfaceOf(&e); k != kindNone && e.derived.of(&e, k) == nil {
					t.Errorf("seq %d (%s) keeps no message", e.Seq, e.Type)
				}
			}
			got, want := deriveLikePayloads(t, tc.evs)
			again, _ := DeriveMessages(tc.evs)
			if &again[0] != &got[0] || len(again) != len(got) || cap(got) != len(got) {
				t.Errorf("a second derivation does not share the first's history (len %d cap %d)", len(got), cap(got))
			}
			prefix, _ := DeriveMessages(tc.evs[:1])
			if len(prefix) != 1 || &prefix[0] != &got[0] || cap(prefix) != 1 {
				t.Errorf("a prefix of the events derives %d messages, not the history's first", len(prefix))
			}
			_ = append(got, content.Message{ID: "appended"})
			_ = append(got[0].Content, content.Text("appended"))
			if diff := cmp.Diff(want, again, equalObjects); diff != "" {
				t.Errorf("appending to a derivation changed the history:\n%s", diff)
			}
			if allocs := testing.AllocsPerRun(20, func() { DeriveMessages(tc.evs) }); allocs != 0 {
				t.Errorf("DeriveMessages over a placed history allocates %v times a call, want 0", allocs)
			}
		})
	}
}

// TestDeriveMessagesSharedHistory checks, on random sequences of appends to two logs and
// derivations over their events (all of one log's, a prefix, a suffix, with a hand-built
// event in the middle, or a prefix of one log followed by the other's events), that every
// derivation equals the one from the payloads, that appending to a result changes nothing
// shared, and that no later append or derivation changes a result already returned.
func TestDeriveMessagesSharedHistory(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		logs := []*Memory{NewMemory(fixedClock), NewMemory(fixedClock)}
		type returned struct{ got, want []content.Message }
		var results []returned
		for i := range rapid.IntRange(1, 60).Draw(rt, "ops") {
			id := strconv.Itoa(i)
			switch rapid.IntRange(0, 5).Draw(rt, "op") {
			case 0, 1:
				var e Event
				switch rapid.IntRange(0, 3).Draw(rt, "kind") {
				case 0:
					e = UserMessage{Message: content.Message{ID: "u" + id, Content: content.Texts(id)}}.Event()
				case 1:
					msg := content.Message{ID: "a" + id}
					if rapid.Bool().Draw(rt, "nonempty") {
						msg.Content = []content.Block{content.ToolCall("c"+id, "read", `{}`)}
					}
					e = AssistantMessage{Message: msg}.Event()
				case 2:
					e = ToolResult{MessageID: "r" + id, CallID: "c" + id, Content: content.Texts(id)}.Event()
				default:
					e = StepStart{Step: i}.Event()
				}
				if _, err := logs[rapid.IntRange(0, 1).Draw(rt, "log")].Append(e); err != nil {
					rt.Fatalf("append %s: %v", e.Type, err)
				}
				continue
			}
			evs := logs[0].Events()
			switch rapid.IntRange(0, 4).Draw(rt, "selection") {
			case 0:
				evs = evs[:rapid.IntRange(0, len(evs)).Draw(rt, "prefix")]
			case 1:
				evs = evs[rapid.IntRange(0, len(evs)).Draw(rt, "suffix"):]
			case 2:
				if len(evs) > 0 {
					evs = slices.Clone(evs)
					k := rapid.IntRange(0, len(evs)-1).Draw(rt, "handBuilt")
					evs[k].derived = nil
				}
			case 3:
				prefix := evs[:rapid.IntRange(0, len(evs)).Draw(rt, "prefix")]
				evs = append(slices.Clone(prefix), logs[1].Events()...)
			}
			got, want := deriveLikePayloads(rt, evs)
			if cap(got) != len(got) {
				rt.Fatalf("a result of %d messages has capacity %d", len(got), cap(got))
			}
			_ = append(got, content.Message{ID: "scribble"})
			results = append(results, returned{got, content.CloneMessages(want)})
		}
		for i, r := range results {
			if diff := cmp.Diff(r.want, r.got); diff != "" {
				rt.Fatalf("result %d changed after it was returned:\n%s", i, diff)
			}
		}
	})
}

// TestDeriveMessagesConcurrent derives from one log's events in many goroutines while the
// log grows (run it with -race), the first derivations among them: every derivation, over a
// snapshot of the events or a prefix of one, equals the one from the payloads, and
// afterwards the log's events still share one history.
func TestDeriveMessagesConcurrent(t *testing.T) {
	m := NewMemory(fixedClock)
	appendTurn := func(i int) {
		id := strconv.Itoa(i)
		for _, e := range []Event{
			UserMessage{Message: content.Message{ID: "u" + id, Content: content.Texts(id)}}.Event(),
			AssistantMessage{Message: content.Message{ID: "a" + id, Content: []content.Block{content.ToolCall("c"+id, "read", `{}`)}}}.Event(),
			ToolResult{MessageID: "r" + id, CallID: "c" + id, Content: content.Texts(id)}.Event(),
		} {
			if _, err := m.Append(e); err != nil {
				t.Error(err)
			}
		}
	}
	for i := range 20 {
		appendTurn(i)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 20; i < 60; i++ {
			appendTurn(i)
		}
	})
	for g := range 8 {
		wg.Go(func() {
			for k := range 40 {
				evs := m.Events()
				if (g+k)%2 == 1 {
					evs = evs[:len(evs)*(k+1)/41]
				}
				want, err := DeriveMessages(withoutKept(evs))
				if err != nil {
					t.Error(err)
					return
				}
				got, err := DeriveMessages(evs)
				if err != nil {
					t.Error(err)
					return
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("goroutine %d, derivation %d (-payloads +got):\n%s", g, k, diff)
					return
				}
			}
		})
	}
	wg.Wait()
	evs := m.Events()
	if _, err := DeriveMessages(evs); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(10, func() { DeriveMessages(evs) }); allocs != 0 {
		t.Errorf("after the concurrent derivations the log derives with %v allocations a call, want 0", allocs)
	}
}

// TestDeriveMessagesChangedEvents checks that a kept message is used only for the event it
// was derived for: a copy of a log's event whose Data or Type was changed is derived from
// what it holds now, as the reference derives it (or fails as the reference fails).
func TestDeriveMessagesChangedEvents(t *testing.T) {
	base := build(t, surfaceSamples()...)
	other := UserMessage{Message: content.Message{ID: "other", Content: content.Texts("changed")}}.Event()
	for _, tc := range []struct {
		name   string
		change func(e *Event)
	}{
		{"data replaced", func(e *Event) {
			if e.Type == TypeUserMessage {
				e.Data = other.Data
			}
		}},
		{"data cloned", func(e *Event) { e.Data = jsonv.Clone(e.Data) }},
		{"tool result typed as a user message", func(e *Event) {
			if e.Type == TypeToolResult {
				e.Type = TypeUserMessage
			}
		}},
		{"assistant message typed as a tool result", func(e *Event) {
			if e.Type == TypeAssistantMessage {
				e.Type = TypeToolResult
			}
		}},
		{"data of another kind", func(e *Event) {
			if e.Type == TypeToolResult {
				e.Data = other.Data
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := slices.Clone(base)
			for i := range evs {
				tc.change(&evs[i])
			}
			checkDerivesLikeReference(t, evs)
		})
	}
	evs := slices.Clone(base)
	evs[0].Data = other.Data
	got, err := DeriveMessages(evs)
	if err != nil || len(got) == 0 || got[0].ID != "other" {
		t.Errorf("after replacing the first event's data, DeriveMessages = %v, %v; want the message \"other\" first", got, err)
	}
}

// equalObjects compares the Extra members of blocks of unknown types as JSON values.
var equalObjects = cmp.Comparer(func(a, b *jsonv.Object) bool { return jsonv.Equal(a, b) })

// TestDeriveMessagesErrors pins the message of each kind of malformed surface payload.
func TestDeriveMessagesErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    Event
		want string
	}{
		{"data not an object", Event{Type: TypeToolResult, Data: "x"},
			`session: derive messages: seq 7: session event "tool/result": data must be an object, got string`},
		{"user without content", Event{Type: TypeUserMessage, Data: jsonv.NewObject(
			jsonv.Member{Name: "id", Value: "u"}, jsonv.Member{Name: "role", Value: "user"})},
			`session: derive messages: seq 7: session event "user/message": message has no "content"`},
		{"assistant with a bad step", Event{Type: TypeAssistantMessage, Data: jsonv.NewObject(
			jsonv.Member{Name: "turn", Value: 0.0}, jsonv.Member{Name: "step", Value: -1.0})},
			`session: derive messages: seq 7: session event "assistant/message": "step" must be a non-negative integer`},
		{"tool result for another call", func() Event {
			e := ToolResult{MessageID: "r", CallID: "c1", Content: content.Texts("x")}.Event()
			o := jsonv.Clone(e.Data).(*jsonv.Object)
			m, _ := o.Get("message")
			src, _ := m.(*jsonv.Object).Get("source")
			src.(*jsonv.Object).Set("callId", "c2")
			e.Data = o
			return e
		}(), `session: derive messages: seq 7: session event "tool/result": message has mismatched tool call ids`},
		{"block without text", Event{Type: TypeUserMessage, Data: jsonv.NewObject(
			jsonv.Member{Name: "id", Value: "u"}, jsonv.Member{Name: "role", Value: "user"},
			jsonv.Member{Name: "content", Value: []any{jsonv.NewObject(jsonv.Member{Name: "type", Value: "text"})}})},
			`session: derive messages: seq 7: session event "user/message": message has invalid content: content[0]: text block: "text" must be a string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.e.Seq, tc.e.SurfaceOp = 7, SurfaceAppend
			ok := UserMessage{Message: content.Message{ID: "first", Content: content.Texts("fine")}}.Event()
			_, err := DeriveMessages([]Event{ok, tc.e})
			if err == nil || err.Error() != tc.want {
				t.Errorf("DeriveMessages error = %v\nwant %s", err, tc.want)
			}
		})
	}
}

// FuzzDeriveMessages derives the history of logs read from arbitrary event lines (parsed
// as a loaded log parses them, but without the payload checks a Log applies, as a
// hand-built slice may skip them) and checks DeriveMessages against the reference.
func FuzzDeriveMessages(f *testing.F) {
	var all []byte
	for i, e := range surfaceSamples() {
		e, err := Stamp(e, int64(i), 0)
		if err != nil {
			f.Fatal(err)
		}
		line, err := EncodeEvent(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line)
		all = append(append(all, line...), '\n')
	}
	f.Add(all)
	f.Fuzz(func(t *testing.T, data []byte) {
		var evs []Event
		for line := range bytes.Lines(data) {
			e, err := parseEventLine(nil, bytes.TrimSuffix(line, []byte("\n")))
			if err != nil {
				continue
			}
			evs = append(evs, e)
		}
		checkDerivesLikeReference(t, evs)
	})
}

// TestParsedEventInternsTypes checks that a parsed event's type and surfaceOp are the
// package's constants rather than copies, for every type dsh writes, and that other types
// and values come through unchanged.
func TestParsedEventInternsTypes(t *testing.T) {
	for _, typ := range []string{TypeTurnStart, TypeTurnEnd, TypeStepStart, TypeStepEnd, TypeUserMessage,
		TypeAssistantChunk, TypeAssistantMessage, TypeToolCall, TypeToolResult, TypeCodeDispatchStart,
		TypeCodeDispatch, TypeApprovalAsked, TypeApprovalDecided, TypeTodoWrite, TypeRequestHeader,
		TypeRequestContext, TypeEndSeed} {
		e, err := parseEventLine(nil, []byte(`{"type":"`+typ+`","seq":0,"time":0,"data":{},"surfaceOp":"append"}`))
		if err != nil {
			t.Fatal(err)
		}
		if e.Type != typ || unsafe.StringData(e.Type) != unsafe.StringData(typ) {
			t.Errorf("type %q: parsed as a copy", typ)
		}
		if unsafe.StringData(e.SurfaceOp) != unsafe.StringData(SurfaceAppend) {
			t.Errorf("type %q: surfaceOp parsed as a copy", typ)
		}
	}
	e, err := parseEventLine(nil, []byte(`{"type":"x/new","seq":0,"time":0,"data":{},"surfaceOp":"replace","ignorable":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.Type != "x/new" || e.SurfaceOp != "replace" {
		t.Errorf("parsed %q, %q; want x/new, replace", e.Type, e.SurfaceOp)
	}
}

// TestWarmUpDerive pins when BenchmarkDeriveMessages' warm-up stops: after
// warmUpCollections collections, after maxCalls calls, or at the first error, and never
// before one call.
func TestWarmUpDerive(t *testing.T) {
	errBad := errors.New("bad log")
	collect := func([]Event) ([]content.Message, error) { runtime.GC(); return nil, nil }
	idle := func([]Event) ([]content.Message, error) { return nil, nil }
	failing := func([]Event) ([]content.Message, error) { return nil, errBad }
	for _, c := range []struct {
		name     string
		derive   func([]Event) ([]content.Message, error)
		maxCalls int
		check    func(t *testing.T, calls int, gcs uint64, err error)
	}{
		{"stops after the collections", collect, maxWarmUpCalls, func(t *testing.T, calls int, gcs uint64, err error) {
			if err != nil || calls < 1 || calls > warmUpCollections || gcs < warmUpCollections {
				t.Errorf("calls %d, collections %d, err %v; want 1..%d calls and at least %d collections", calls, gcs, err, warmUpCollections, warmUpCollections)
			}
		}},
		{"at least one call", idle, 0, func(t *testing.T, calls int, gcs uint64, err error) {
			if err != nil || calls != 1 {
				t.Errorf("calls %d, err %v; want exactly 1 call", calls, err)
			}
		}},
		{"stops at maxCalls", idle, 5, func(t *testing.T, calls int, gcs uint64, err error) {
			// Only collections started elsewhere could stop it earlier.
			if err != nil || (calls != 5 && gcs < warmUpCollections) {
				t.Errorf("calls %d, collections %d, err %v; want 5 calls", calls, gcs, err)
			}
		}},
		{"stops at an error", failing, maxWarmUpCalls, func(t *testing.T, calls int, gcs uint64, err error) {
			if !errors.Is(err, errBad) || calls != 0 {
				t.Errorf("calls %d, err %v; want 0 calls and %v", calls, err, errBad)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls, gcs, err := warmUpDerive(nil, c.derive, c.maxCalls)
			c.check(t, calls, gcs, err)
		})
	}
}

// deriveAsReference derives evs with DeriveMessages and with deriveReference, fails rt
// unless both succeed with the same messages, and returns both results.
func deriveAsReference(rt *rapid.T, evs []Event) (want, got []content.Message) {
	want, err := deriveReference(evs)
	if err != nil {
		rt.Fatal(err)
	}
	got, err = DeriveMessages(evs)
	if err != nil {
		rt.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		rt.Fatalf("DeriveMessages differs from the reference (-want +got):\n%s", diff)
	}
	return want, got
}

// TestWriteFloorMatchesDerive pins BenchmarkDeriveMessages' write floor to what it stands
// for: over a log of whole crash-test turns without its kept messages (the payload path)
// it returns as many messages as DeriveMessages,
// each of the same shape (role, source, block types and nesting), allocated alike.
func TestWriteFloorMatchesDerive(t *testing.T) {
	var evs []Event
	for turn := range 4 {
		for _, st := range crashTurn(turn) {
			evs = append(evs, st.e)
		}
	}
	m := NewMemory(nil)
	for _, e := range evs {
		if _, err := m.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	evs = withoutKept(m.Events())
	want, err := DeriveMessages(evs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := writeFloor(t, evs)(evs)
	if err != nil {
		t.Fatal(err)
	}
	type shape struct {
		Role   content.Role
		Source bool
		Blocks string
	}
	var blocks func([]content.Block) string
	blocks = func(bs []content.Block) string {
		s := "["
		for _, b := range bs {
			s += b.Type + blocks(b.Content) + " "
		}
		return s + "]"
	}
	shapes := func(ms []content.Message) []shape {
		var out []shape
		for _, m := range ms {
			out = append(out, shape{m.Role, m.Source != nil, blocks(m.Content)})
		}
		return out
	}
	if diff := cmp.Diff(shapes(want), shapes(got)); diff != "" {
		t.Errorf("the write floor's messages differ in shape from DeriveMessages' (-derive +floor):\n%s", diff)
	}
	floor := writeFloor(t, evs)
	derive := testing.AllocsPerRun(10, func() { DeriveMessages(evs) })
	if fl := testing.AllocsPerRun(10, func() { floor(evs) }); fl != derive {
		t.Errorf("a call allocates %v times in the write floor, %v in DeriveMessages", fl, derive)
	}
}

// TestDeriveMessagesSelectionsKeepTheLogShared checks that derivations over selections of
// logs' events (a suffix, a prefix of one log joined to another log) made before a log's
// own first derivation do not keep that log from sharing one history: afterwards each
// log's events still derive without allocating.
func TestDeriveMessagesSelectionsKeepTheLogShared(t *testing.T) {
	a, b := build(t, surfaceSamples()...), build(t, surfaceSamples()...)
	for _, sel := range [][]Event{a[2:], append(slices.Clone(a[:2]), b...)} {
		deriveLikePayloads(t, sel)
	}
	for name, evs := range map[string][]Event{"a": a, "b": b} {
		if _, err := DeriveMessages(evs); err != nil {
			t.Fatal(err)
		}
		if allocs := testing.AllocsPerRun(10, func() { DeriveMessages(evs) }); allocs != 0 {
			t.Errorf("log %s derives with %v allocations a call after the selections, want 0", name, allocs)
		}
	}
}

// deriveLikePayloads derives evs and checks that the result equals the derivation from
// their payloads (the events without their kept messages); it returns both.
func deriveLikePayloads(t interface{ Fatalf(string, ...any) }, evs []Event) (got, want []content.Message) {
	want, err := DeriveMessages(withoutKept(evs))
	if err != nil {
		t.Fatalf("derive from the payloads: %v", err)
	}
	got, err = DeriveMessages(evs)
	if err != nil {
		t.Fatalf("DeriveMessages: %v", err)
	}
	if diff := cmp.Diff(want, got, equalObjects); diff != "" {
		t.Fatalf("DeriveMessages differs from the derivation from payloads (-payloads +got):\n%s", diff)
	}
	return got, want
}
