package session

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/jsonv"
)

// sameEvent reports whether a and b are the same event: equal fields and equal payloads.
func sameEvent(a, b Event) bool {
	da, db := a.Data, b.Data
	a.Data, b.Data = nil, nil
	return reflect.DeepEqual(a, b) && jsonv.Equal(da, db)
}

// TestEventArenaParseEventMatches parses the lines of several turns through one
// EventArena and through ParseEvent: the events are equal, and so are the lines they
// encode back to.
func TestEventArenaParseEventMatches(t *testing.T) {
	var a EventArena
	seq := int64(0)
	for turn := range 3 {
		for _, st := range crashTurn(turn) {
			e, err := Stamp(st.e, seq, 1_700_000_000_000+seq)
			if err != nil {
				t.Fatalf("turn %d: Stamp: %v", turn, err)
			}
			seq++
			line, err := EncodeEvent(e)
			if err != nil {
				t.Fatalf("seq %d: EncodeEvent: %v", e.Seq, err)
			}
			want, err := ParseEvent(line)
			if err != nil {
				t.Fatalf("seq %d: ParseEvent: %v", e.Seq, err)
			}
			got, err := a.ParseEvent(line)
			if err != nil {
				t.Fatalf("seq %d: EventArena.ParseEvent: %v", e.Seq, err)
			}
			if !sameEvent(got, want) {
				t.Fatalf("seq %d: EventArena.ParseEvent = %+v, ParseEvent = %+v", e.Seq, got, want)
			}
			again, err := EncodeEvent(got)
			if err != nil || string(again) != string(line) {
				t.Fatalf("seq %d: re-encoded %q (%v), want %q", e.Seq, again, err, line)
			}
		}
	}
}

// TestEventArenaParseEventErrors: a line ParseEvent refuses, the arena refuses with the
// same error, and the arena still parses the next good line.
func TestEventArenaParseEventErrors(t *testing.T) {
	e, err := Stamp(crashTurn(0)[2].e, 2, 42) // the user message
	if err != nil {
		t.Fatal(err)
	}
	good, err := EncodeEvent(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, line, wantSub string
	}{
		{"not JSON", `{"type":`, "unparsable event line"},
		{"not an object", `[1,2]`, ""},
		{"unknown required type", strings.Replace(string(good), `"user/message"`, `"user/unknown"`, 1), ""},
		{"payload of the wrong shape", strings.Replace(string(good), `"role":"user"`, `"role":7`, 1), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a EventArena
			_, want := ParseEvent([]byte(tc.line))
			if want == nil {
				t.Fatalf("ParseEvent(%q) succeeded; the case needs a refused line", tc.line)
			}
			_, got := a.ParseEvent([]byte(tc.line))
			if got == nil || got.Error() != want.Error() {
				t.Fatalf("EventArena.ParseEvent(%q) = %v, want %v", tc.line, got, want)
			}
			if !strings.Contains(got.Error(), tc.wantSub) {
				t.Fatalf("error %q does not say %q", got, tc.wantSub)
			}
			e, err := a.ParseEvent(good)
			if err != nil || e.Type != TypeUserMessage {
				t.Fatalf("the next good line: %+v, %v", e, err)
			}
		})
	}
}

// TestEventArenaStampMatches stamps events through one EventArena and through Stamp:
// equal events, and the same error for an event Stamp refuses.
func TestEventArenaStampMatches(t *testing.T) {
	var a EventArena
	for i, st := range crashTurn(0) {
		want, err := Stamp(st.e, int64(i), 42)
		if err != nil {
			t.Fatalf("event %d: Stamp: %v", i, err)
		}
		got, err := a.Stamp(st.e, int64(i), 42)
		if err != nil {
			t.Fatalf("event %d: EventArena.Stamp: %v", i, err)
		}
		if !sameEvent(got, want) {
			t.Fatalf("event %d: EventArena.Stamp = %+v, Stamp = %+v", i, got, want)
		}
	}
	bad := Event{Type: TypeUserMessage, Data: jsonv.NewObject(jsonv.Member{Name: "message", Value: 7.0}), SurfaceOp: SurfaceAppend}
	_, want := Stamp(bad, 0, 42)
	_, got := a.Stamp(bad, 0, 42)
	if want == nil || got == nil || got.Error() != want.Error() {
		t.Fatalf("EventArena.Stamp of a bad event = %v, Stamp = %v; want the same error", got, want)
	}
}

// FuzzEventArenaParseEvent parses the lines of arbitrary input through one EventArena (so
// that every payload has neighbours in it) and through ParseEvent: each line gives equal
// events or the same error either way.
func FuzzEventArenaParseEvent(f *testing.F) {
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
	f.Add([]byte("{\"type\":\n[1]\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var a EventArena
		for line := range bytes.Lines(data) {
			line = bytes.TrimSuffix(line, []byte("\n"))
			want, wantErr := ParseEvent(line)
			got, err := a.ParseEvent(line)
			switch {
			case (err == nil) != (wantErr == nil):
				t.Fatalf("line %q: EventArena.ParseEvent error %v, ParseEvent error %v", line, err, wantErr)
			case err != nil && err.Error() != wantErr.Error():
				t.Fatalf("line %q: EventArena.ParseEvent error %q, ParseEvent error %q", line, err, wantErr)
			case err == nil && !sameEvent(got, want):
				t.Fatalf("line %q: EventArena.ParseEvent = %+v, ParseEvent = %+v", line, got, want)
			}
		}
	})
}
