package session

import (
	"context"
	"os"
	"testing"
)

// TestReopenCutsATornTail: FileStore.Reopen cuts a torn final batch off the file, as Resume
// does, but records no recovery events: the open turn stays open, the log continues at
// the last intact event, and its owner's appends land there.
func TestReopenCutsATornTail(t *testing.T) {
	for _, c := range compressions {
		t.Run(string(c), func(t *testing.T) {
			evs := turnEvents(3)
			evs[3] = asst(3, 0, "c1", "c2")
			s, path, _ := writeLog(t, c, evs,
				[]Event{ToolCall{Turn: 3, CallID: "c1", Name: "tool", Arguments: "{}"}.Event()},
				[]Event{result(3, 0, "c1", 4)},
			)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// Tear the last batch (c1's result).
			starts := records(t, data, c)
			cut := starts[len(starts)-1] + (len(data)-starts[len(starts)-1])/2
			if c == CompressionNone {
				cut = len(data) - 5
			}
			if err := os.WriteFile(path, data[:cut], 0o600); err != nil {
				t.Fatal(err)
			}
			ld, err := s.Load(context.Background(), "t")
			if err != nil {
				t.Fatal(err)
			}
			intact := len(ld.Events) - ld.Recovered
			if ld.TornBytes == 0 || ld.Recovered == 0 {
				t.Fatalf("the set-up left no torn tail or no open turn: torn %d, recovered %d", ld.TornBytes, ld.Recovered)
			}
			l, err := s.Reopen(context.Background(), "t")
			if err != nil {
				t.Fatal(err)
			}
			if l.Len() != intact || l.Durable() != intact {
				t.Fatalf("reopened at Len %d Durable %d, want the %d intact events", l.Len(), l.Durable(), intact)
			}
			// The owner closes the call and the turn itself.
			r := result(3, 0, "c1", 4)
			out, err := l.AppendDurable(r)
			if err != nil {
				t.Fatal(err)
			}
			if out.Seq != int64(intact) {
				t.Fatalf("the result landed at seq %d, want %d", out.Seq, intact)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			again, err := s.Load(context.Background(), "t")
			if err != nil {
				t.Fatal(err)
			}
			if again.TornBytes != 0 || len(again.Events)-again.Recovered != intact+1 {
				t.Fatalf("after Reopen: torn %d, %d events on disk, want 0 and %d", again.TornBytes, len(again.Events)-again.Recovered, intact+1)
			}
			for _, e := range again.Events[:intact+1] {
				if res, err := DecodeToolResult(e); err == nil && res.Error != nil {
					t.Fatalf("a recovery result was written: %+v", res)
				}
			}
		})
	}
}
