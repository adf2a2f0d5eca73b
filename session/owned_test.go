package session

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"pgregory.net/rapid"
)

// genOwnedValue generates jsonv values as a lane's argument snapshot holds them, now and
// then with an invalid member (a NaN, a string or name that is not UTF-8, a duplicate
// name, a nil container, a Go map) that the log must refuse or copy as before.
func genOwnedValue(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		kinds := 6
		if depth > 0 {
			kinds = 8
		}
		switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
		case 0:
			return nil
		case 1:
			return rapid.Bool().Draw(t, "bool")
		case 2:
			return rapid.SampledFrom([]float64{0, 1, -2.5, 1e300, math.NaN(), math.Copysign(0, -1)}).Draw(t, "number")
		case 3:
			return rapid.SampledFrom([]string{"", "x", "é", "\xff"}).Draw(t, "string")
		case 4:
			return rapid.SampledFrom([]any{map[string]any{"a": 1.0}, []string{"s"}, (*jsonv.Object)(nil), []any(nil)}).Draw(t, "odd")
		case 5:
			return rapid.String().Draw(t, "text")
		case 6:
			n := rapid.IntRange(0, 3).Draw(t, "len")
			a := make([]any, n)
			for i := range a {
				a[i] = genOwnedValue(depth-1).Draw(t, "elem")
			}
			return a
		}
		n := rapid.IntRange(0, 4).Draw(t, "members")
		o := &jsonv.Object{}
		for range n {
			name := rapid.SampledFrom([]string{"a", "b", "text", "\xfe"}).Draw(t, "name")
			if rapid.IntRange(0, 9).Draw(t, "dup") == 0 {
				o = jsonv.NewObjectCopy(append(o.Members(), jsonv.Member{Name: name, Value: 1.0}))
			}
			o.Set(name, genOwnedValue(depth-1).Draw(t, "value"))
		}
		return o
	})
}

func genBlocks() *rapid.Generator[[]content.Block] {
	return rapid.Custom(func(t *rapid.T) []content.Block {
		n := rapid.IntRange(0, 3).Draw(t, "blocks")
		bs := make([]content.Block, n)
		for i := range bs {
			switch rapid.IntRange(0, 3).Draw(t, "blockKind") {
			case 0:
				bs[i] = content.Block{Type: content.TypeText, Text: rapid.SampledFrom([]string{"", "hi", "\xff"}).Draw(t, "text")}
			case 1:
				bs[i] = content.Block{Type: content.TypeReasoning, Text: rapid.String().Draw(t, "reasoning")}
			case 2:
				bs[i] = content.Block{Type: "x-custom", Extra: jsonv.NewObject(jsonv.Member{Name: "k", Value: []any{"v"}})}
			default:
				bs[i] = content.Block{Type: content.TypeImage, Image: &content.ImageRef{AttachmentID: "a1", MediaType: "image/png", Bytes: 3, Width: 1, Height: 1}}
			}
		}
		return bs
	})
}

// stampBoth appends e (an OwnedEvent) and plain (Event of the same payload) to two memory
// logs with the same clock and returns what each returned.
func stampBoth(owned, plain Event) (o, p Event, oerr, perr error) {
	clock := func() Memory { return Memory{now: fixedClock} }
	lo, lp := clock(), clock()
	o, oerr = lo.Append(owned)
	p, perr = lp.Append(plain)
	return o, p, oerr, perr
}

// TestOwnedEventAsStamped is the handed-over events' property: for any payload, a log
// given OwnedEvent records exactly what it records given Event — the same event bytes, or
// the same refusal — and when the data was handed over, nothing of the caller's but the
// arguments is in it.
func TestOwnedEventAsStamped(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		args := genOwnedValue(2).Draw(rt, "arguments")
		ids := rapid.SampledFrom([]string{"", "c1", "c1:code:7", "\xff"})
		p := CodeDispatch{
			RootCallID:   ids.Draw(rt, "root"),
			ParentCallID: ids.Draw(rt, "parent"),
			SubCallID:    ids.Draw(rt, "sub"),
			Name:         rapid.SampledFrom([]string{"echo", "", "\xff"}).Draw(rt, "name"),
			Arguments:    args,
			IsError:      rapid.Bool().Draw(rt, "isError"),
			Content:      genBlocks().Draw(rt, "content"),
		}
		start := CodeDispatchStart{RootCallID: p.RootCallID, ParentCallID: p.ParentCallID, SubCallID: p.SubCallID, Name: p.Name, Arguments: args}
		for _, c := range []struct {
			name         string
			owned, plain Event
		}{
			{"start", start.OwnedEvent(), start.Event()},
			{"settle", p.OwnedEvent(), p.Event()},
		} {
			o, pl, oerr, perr := stampBoth(c.owned, c.plain)
			if (oerr == nil) != (perr == nil) || oerr != nil && oerr.Error() != perr.Error() {
				rt.Fatalf("%s: owned error %v, plain error %v", c.name, oerr, perr)
			}
			if oerr != nil {
				continue
			}
			ob, err1 := EncodeEvent(o)
			pb, err2 := EncodeEvent(pl)
			if err1 != nil || err2 != nil || !bytes.Equal(ob, pb) {
				rt.Fatalf("%s: owned %s (%v), plain %s (%v)", c.name, ob, err1, pb, err2)
			}
			if c.owned.owned != nil && o.Data != c.owned.Data {
				rt.Fatalf("%s: a valid owned event was copied", c.name)
			}
			if o.owned != nil {
				rt.Fatalf("%s: the logged event still carries its ownership mark", c.name)
			}
		}
	})
}

// TestOwnedEventHandsOver pins what is and is not shared: the log keeps the handed-over
// data itself (no copy), the arguments included, while the content is built afresh, so
// that changing the caller's blocks afterwards changes nothing logged.
func TestOwnedEventHandsOver(t *testing.T) {
	args := jsonv.NewObject(jsonv.Member{Name: "text", Value: "x"})
	blocks := content.Texts("before")
	p := CodeDispatch{RootCallID: "c1", ParentCallID: "c1", SubCallID: "c1:code:1", Name: "echo", Arguments: args, Content: blocks}
	l := NewMemory(fixedClock)
	e := p.OwnedEvent()
	got, err := l.Append(e)
	if err != nil {
		t.Fatal(err)
	}
	if got.Data != e.Data {
		t.Fatal("the log copied the handed-over data")
	}
	if a, _ := got.Data.(*jsonv.Object).Get("arguments"); a != any(args) {
		t.Fatal("the log copied the handed-over arguments")
	}
	blocks[0].Text = "after"
	want := `{"type":"tool/code-dispatch","seq":0,"time":` + jsonNumber(fixedClock().UnixMilli()) +
		`,"data":{"rootCallId":"c1","parentCallId":"c1","subCallId":"c1:code:1","name":"echo","arguments":{"text":"x"},"isError":false,"content":[{"type":"text","text":"before"}]}}`
	if b, _ := EncodeEvent(l.Events()[0]); string(b) != want {
		t.Fatalf("logged %s\nwant   %s", b, want)
	}

	// A plain event is still copied.
	plain, err := l.Append(p.Event())
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := plain.Data.(*jsonv.Object).Get("arguments"); a == any(args) {
		t.Fatal("a plain event's arguments were not copied")
	}
}

func jsonNumber(n int64) string {
	b, _ := jsonv.Marshal(float64(n))
	return string(b)
}

// TestOwnedEventChanged: an owned event whose type or data was replaced after it was built
// is no longer handed over; the log copies and checks it like any event.
func TestOwnedEventChanged(t *testing.T) {
	args := jsonv.NewObject(jsonv.Member{Name: "text", Value: "x"})
	start := CodeDispatchStart{RootCallID: "c1", ParentCallID: "c1", SubCallID: "c1:code:1", Name: "echo", Arguments: args}
	settle := CodeDispatch{RootCallID: "c1", ParentCallID: "c1", SubCallID: "c1:code:1", Name: "echo", Arguments: args, Content: content.Texts("x")}
	tests := []struct {
		name    string
		event   func() Event
		wantErr string // empty: appended, with a copy of the data
	}{
		{"start retyped as settle", func() Event { e := start.OwnedEvent(); e.Type = TypeCodeDispatch; return e }, `"isError" must be a boolean`},
		{"settle retyped as start", func() Event { e := settle.OwnedEvent(); e.Type = TypeCodeDispatchStart; return e }, ""},
		{"settle retyped as a tool call", func() Event { e := settle.OwnedEvent(); e.Type = TypeToolCall; return e }, `session event "tool/call"`},
		{"data replaced", func() Event {
			e := start.OwnedEvent()
			e.Data = map[string]any{"rootCallId": "c1", "parentCallId": "c1", "subCallId": "s", "name": "n", "arguments": 1}
			return e
		}, ""},
		{"data replaced by a non-JSON value", func() Event { e := start.OwnedEvent(); e.Data = make(chan int); return e }, "non-JSON-serializable"},
		{"surface operation added", func() Event { e := start.OwnedEvent(); e.SurfaceOp = SurfaceAppend; return e }, "cannot carry surfaceOp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.event()
			got, err := NewMemory(fixedClock).Append(e)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Data == e.Data {
				t.Fatal("a changed owned event was kept without a copy")
			}
		})
	}
}

// TestOwnedEventRefusals: what the log refuses given Event it refuses given OwnedEvent,
// with the same error.
func TestOwnedEventRefusals(t *testing.T) {
	good := jsonv.NewObject(jsonv.Member{Name: "text", Value: "x"})
	tests := []struct {
		name string
		p    CodeDispatchStart
		want string
	}{
		{"empty sub-call id", CodeDispatchStart{RootCallID: "c1", ParentCallID: "c1", Name: "echo", Arguments: good}, `"subCallId" must be a non-empty string`},
		{"name not UTF-8", CodeDispatchStart{RootCallID: "c1", ParentCallID: "c1", SubCallID: "s", Name: "\xff", Arguments: good}, "non-JSON-serializable"},
		{"NaN argument", CodeDispatchStart{RootCallID: "c1", ParentCallID: "c1", SubCallID: "s", Name: "echo",
			Arguments: jsonv.NewObject(jsonv.Member{Name: "n", Value: math.NaN()})}, "non-JSON-serializable"},
		{"channel argument", CodeDispatchStart{RootCallID: "c1", ParentCallID: "c1", SubCallID: "s", Name: "echo", Arguments: []any{make(chan int)}}, "non-JSON-serializable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, oerr := NewMemory(fixedClock).Append(tc.p.OwnedEvent())
			_, perr := NewMemory(fixedClock).Append(tc.p.Event())
			if oerr == nil || perr == nil || oerr.Error() != perr.Error() || !strings.Contains(oerr.Error(), tc.want) {
				t.Fatalf("owned error %v, plain error %v, want both containing %q", oerr, perr, tc.want)
			}
			var de *DataError
			if errors.As(perr, &de) != errors.As(oerr, &de) {
				t.Fatalf("owned error %T, plain error %T", oerr, perr)
			}
		})
	}
}
