package approval

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecodeAnswer feeds arbitrary lines to the approval socket's answer reader: it never
// panics, and an answer it accepts is valid and encodes back to the same answer.
func FuzzDecodeAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"callId":"call_1","decision":"yes"}`,
		`{"callId":"call_1","decision":"no","reason":"run the tests first"}`,
		`{"callId":"","decision":"yes"}`,
		`{"callId":"c","decision":"yes","reason":"x"}`,
		`{"callId":"c","decision":"maybe"}`,
		`{"callId":"c","decision":"yes","always":true}`,
		`{"callId":"c","decision":"yes"} {"callId":"d","decision":"no"}`,
		`[1,2]`, `null`, ``, "\x00",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		a, err := decodeAnswer(line)
		if err != nil {
			if a != (ChannelAnswer{}) {
				t.Fatalf("an error with a partial answer %+v", a)
			}
			return
		}
		if err := a.Check(); err != nil {
			t.Fatalf("accepted an invalid answer %+v: %v", a, err)
		}
		if strings.TrimSpace(a.CallID) == "" {
			t.Fatalf("accepted an empty call id")
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeAnswer(b)
		if err != nil || again != a {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, a)
		}
	})
}
