package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
	"pgregory.net/rapid"
)

// sampleLog returns the bytes of a small closed session log with three batches.
func sampleLog(t testing.TB, c Compression) []byte {
	s, err := Open(t.TempDir(), Options{Compression: c, Now: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Create(context.Background(), Header{ID: "f", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range append(turnEvents(0), ToolCall{CallID: "c1", Name: "tool", Arguments: "{}"}.Event()) {
		if _, err := l.Append(e); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// FuzzReadLog feeds arbitrary bytes to the log reader: it must never panic, and what it
// accepts must be a valid log that reads back the same from its committed prefix.
func FuzzReadLog(f *testing.F) {
	for _, c := range compressions {
		data := sampleLog(f, c)
		plain := c == CompressionNone
		f.Add(data, plain)
		f.Add(data[:len(data)-3], plain)
		f.Add(data[:len(data)/2], plain)
		f.Add(append(bytes.Clone(data), 0, 0, 0), plain)
		bad := bytes.Clone(data)
		bad[len(bad)/3] ^= 0x10
		f.Add(bad, plain)
	}
	f.Add([]byte{}, false)
	f.Add([]byte("\n"), true)
	f.Add([]byte(`{"type":"session","version":0,"id":"x","createdAt":0,"delegationDepth":0}`+"\n"+`{"type":"turn/start","seq":0,"time":0,"data":{"turn":0}}`+"\n"), true)
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x00, 0x01, 0x00, 0x00}, false)
	f.Fuzz(func(t *testing.T, data []byte, plain bool) {
		c := CompressionZstd
		if plain {
			c = CompressionNone
		}
		h, evs, committed, err := ReadLog(data, c)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *CorruptError", err)
			}
			return
		}
		if committed <= 0 || committed > int64(len(data)) {
			t.Fatalf("committed %d of %d bytes", committed, len(data))
		}
		if err := h.validate(); err != nil {
			t.Fatalf("accepted header %+v: %v", h, err)
		}
		for i := range evs {
			if evs[i].Seq != int64(i) {
				t.Fatalf("event %d has seq %d", i, evs[i].Seq)
			}
			if err := checkEvent(&evs[i]); err != nil {
				t.Fatalf("accepted invalid event %d: %v", i, err)
			}
		}
		_, again, c2, err := ReadLog(data[:committed], c)
		if err != nil || c2 != committed || len(again) != len(evs) {
			t.Fatalf("committed prefix reads back as %d events, %d bytes, %v", len(again), c2, err)
		}
		_ = RecoveryEvents(evs)
		_, _ = DeriveMessages(evs)
	})
}

// FuzzEventJSON checks that an event that unmarshals marshals back to bytes that
// unmarshal to the same event.
func FuzzEventJSON(f *testing.F) {
	for _, e := range append(turnEvents(0), ToolCall{CallID: "c", Arguments: "{}"}.Event(), result(0, 0, "c", 4)) {
		e, _ = snapshotEvent(nil, e)
		b, _ := e.MarshalJSON()
		f.Add(b)
	}
	f.Add([]byte(`{"type":"x","seq":1e400,"time":0,"data":null}`))
	f.Add([]byte(`{"type":"x","seq":0,"time":0,"data":null,"surfaceOp":{"op":"replace"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var e Event
		if err := e.UnmarshalJSON(data); err != nil {
			return
		}
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatalf("marshal of an unmarshalled event: %v", err)
		}
		var back Event
		if err := back.UnmarshalJSON(b); err != nil {
			t.Fatalf("re-unmarshal of %s: %v", b, err)
		}
		if !eventsEqual(e, back) {
			t.Fatalf("round trip changed %+v into %+v", e, back)
		}
	})
}

// TestTruncationProperty: whatever prefix of a log survives, the reader returns a prefix
// of the events that contains every batch completely inside it; a bit flip in any batch
// but the last is reported at that batch's offset (or, in the few frame-header bits the
// content does not depend on, changes nothing).
func TestTruncationProperty(t *testing.T) {
	root := crashRoot(t)
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		c := rapid.SampledFrom(compressions).Draw(rt, "compression")
		dir := root + "/" + string(c)
		s, err := Open(dir, Options{Compression: c, Now: fixedClock, timer: func(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }})
		if err != nil {
			rt.Fatal(err)
		}
		n++
		l, err := s.Create(context.Background(), Header{ID: "p" + strconv.Itoa(n)})
		if err != nil {
			rt.Fatal(err)
		}
		batches := rapid.SliceOfN(rapid.IntRange(1, 5), 1, 6).Draw(rt, "batches")
		var ends []int // events at the end of each batch
		for _, size := range batches {
			for range size {
				text := rapid.StringN(0, 300, -1).Draw(rt, "text")
				e := UserMessage{Message: content.Message{ID: "m", Content: content.Texts(text)}}.Event()
				if _, err := l.Append(e); err != nil {
					rt.Fatal(err)
				}
			}
			if err := l.Flush(); err != nil {
				rt.Fatal(err)
			}
			ends = append(ends, l.Len())
		}
		all := l.Events()
		if err := l.Close(); err != nil {
			rt.Fatal(err)
		}
		data, err := os.ReadFile(l.Path())
		if err != nil {
			rt.Fatal(err)
		}
		starts := records(t, data, c)
		// The byte range of each batch: one frame, or the lines of its events.
		var lo, hi []int
		at := func(k int) int { // start of record k, or the end of the file
			if k < len(starts) {
				return starts[k]
			}
			return len(data)
		}
		for i, e := range ends {
			if c == CompressionZstd {
				lo, hi = append(lo, at(i+1)), append(hi, at(i+2))
				continue
			}
			prev := 0
			if i > 0 {
				prev = ends[i-1]
			}
			lo, hi = append(lo, at(prev+1)), append(hi, at(e+1))
		}
		cut := rapid.IntRange(starts[1], len(data)).Draw(rt, "cut")
		_, evs, committed, err := ReadLog(data[:cut], c)
		if err != nil {
			rt.Fatalf("cut at %d: %v", cut, err)
		}
		// Every batch that ends at or before the cut is there.
		want := 0
		for i, e := range ends {
			if hi[i] <= cut {
				want = e
			}
		}
		if len(evs) < want || len(evs) > len(all) || committed > int64(cut) {
			rt.Fatalf("cut at %d: %d events (want ≥ %d of %d), committed %d", cut, len(evs), want, len(all), committed)
		}
		for i := range evs {
			if !eventsEqual(evs[i], all[i]) {
				rt.Fatalf("cut at %d: event %d differs", cut, i)
			}
		}
		if c != CompressionZstd || len(ends) < 2 {
			return
		}
		// A flipped bit in a batch that is not the last one is corruption at its offset.
		k := rapid.IntRange(0, len(ends)-2).Draw(rt, "frame")
		pos := rapid.IntRange(lo[k], hi[k]-1).Draw(rt, "pos")
		bit := rapid.IntRange(0, 7).Draw(rt, "bit")
		bad := bytes.Clone(data)
		bad[pos] ^= 1 << bit
		_, got, _, err := ReadLog(bad, c)
		if err == nil {
			// A few frame-header bits (the window size) do not affect the content,
			// which the checksum covers; such a flip must leave the events intact.
			if len(got) != len(all) {
				rt.Fatalf("flip at %d (frame %d at %d) went unnoticed and lost events", pos, k, lo[k])
			}
			for i := range got {
				if !eventsEqual(got[i], all[i]) {
					rt.Fatalf("flip at %d (frame %d at %d) went unnoticed and changed event %d", pos, k, lo[k], i)
				}
			}
			return
		}
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Offset != int64(lo[k]) {
			rt.Fatalf("flip at %d (frame %d at %d): %v", pos, k, lo[k], err)
		}
	})
}
