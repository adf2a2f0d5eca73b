package openai

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

type sseEvent struct{ Event, Data string }

// readAll parses r to the end and returns its events and the terminal error.
func readAll(r io.Reader) ([]sseEvent, error) {
	s := newSSEReader(r)
	var out []sseEvent
	for {
		ev, data, err := s.next()
		if err != nil {
			return out, err
		}
		out = append(out, sseEvent{string(ev), string(data)})
	}
}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []sseEvent
		err  error
	}{
		{"empty", "", nil, io.EOF},
		{"one event", "data: {}\n\n", []sseEvent{{"", "{}"}}, io.EOF},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []sseEvent{{"", "a"}, {"", "b"}}, io.EOF},
		{"lone CR", "data: a\r\rdata: b\r\r", []sseEvent{{"", "a"}, {"", "b"}}, io.EOF},
		{"mixed endings", "data: a\r\ndata: b\n\r", []sseEvent{{"", "a\nb"}}, io.EOF},
		{"multi-line data", "data: a\ndata:b\ndata:  c\n\n", []sseEvent{{"", "a\nb\n c"}}, io.EOF},
		{"comments and unknown fields", ": ping\nid: 7\nretry: 10\nfoo\ndata: x\n\n: bye\n", []sseEvent{{"", "x"}}, io.EOF},
		{"event name", "event: error\ndata: {\"e\":1}\n\ndata: y\n\n", []sseEvent{{"error", `{"e":1}`}, {"", "y"}}, io.EOF},
		{"field without colon", "data\n\n", []sseEvent{{"", ""}}, io.EOF},
		{"colons in the value", "data: a:b: c\n\n", []sseEvent{{"", "a:b: c"}}, io.EOF},
		{"blank lines without data", "\n\n\nevent: x\n\ndata: z\n\n", []sseEvent{{"", "z"}}, io.EOF},
		{"byte-order mark", "\xEF\xBB\xBFdata: a\n\n", []sseEvent{{"", "a"}}, io.EOF},
		{"no blank line at the end", "data: a\n\ndata: [DONE]\n", []sseEvent{{"", "a"}}, errTruncatedEvent},
		{"cut inside a line", "data: a\n\ndata: [DO", []sseEvent{{"", "a"}}, errTruncatedEvent},
		{"CR at the very end", "data: a\r\r", []sseEvent{{"", "a"}}, io.EOF},
		{"trailing comment only", "data: a\n\n: x", []sseEvent{{"", "a"}}, errTruncatedEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range map[string]io.Reader{
				"whole":    strings.NewReader(tt.in),
				"one byte": iotest.OneByteReader(strings.NewReader(tt.in)),
			} {
				got, err := readAll(r)
				if !errors.Is(err, tt.err) {
					t.Errorf("error = %v, want %v", err, tt.err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestSSEReaderLongLine(t *testing.T) {
	_, err := readAll(strings.NewReader("data: " + strings.Repeat("x", maxLine+1) + "\n\n"))
	if err == nil || errors.Is(err, io.EOF) {
		t.Errorf("error = %v, want a too-long error", err)
	}
}

func TestSSEReaderPassesReadErrors(t *testing.T) {
	boom := errors.New("boom")
	_, err := readAll(io.MultiReader(strings.NewReader("data: a\n\n"), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) {
		t.Errorf("error = %v, want the reader's", err)
	}
}

// chunkedReader returns its data in the given read sizes.
type chunkedReader struct {
	data  []byte
	sizes []int
}

func (r *chunkedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.sizes) > 0 {
		n = min(n, r.sizes[0])
		r.sizes = r.sizes[1:]
	}
	n = copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// TestSSERoundTrip encodes random events with random line endings, comments and ignored
// fields, reads them back in random read sizes, and expects the same events.
func TestSSERoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lineText := rapid.StringMatching(`[^\r\n]*`)
		events := rapid.SliceOf(rapid.Custom(func(t *rapid.T) sseEvent {
			lines := rapid.SliceOfN(lineText, 1, 4).Draw(t, "lines")
			name := rapid.SampledFrom([]string{"", "", "message", "error"}).Draw(t, "event")
			return sseEvent{name, strings.Join(lines, "\n")}
		})).Draw(t, "events")
		// One line-ending style per stream: a lone CR followed by an LF-terminated blank line
		// would read as one CRLF, so real encoders do not mix them that way.
		style := rapid.SampledFrom([]string{"\n", "\r\n", "\r"}).Draw(t, "eol")
		eol := func() string { return style }
		var b bytes.Buffer
		if rapid.Bool().Draw(t, "bom") {
			b.WriteString("\xEF\xBB\xBF")
		}
		for _, ev := range events {
			if rapid.Bool().Draw(t, "comment") {
				b.WriteString(": " + lineText.Draw(t, "comment text") + eol())
			}
			if ev.Event != "" {
				b.WriteString("event: " + ev.Event + eol())
			}
			for _, line := range strings.Split(ev.Data, "\n") {
				sep := rapid.SampledFrom([]string{":", ": "}).Draw(t, "sep")
				if sep == ":" && strings.HasPrefix(line, " ") {
					sep = ": " // a leading space would be eaten otherwise
				}
				b.WriteString("data" + sep + line + eol())
			}
			if rapid.Bool().Draw(t, "id") {
				b.WriteString("id: 1" + eol())
			}
			b.WriteString(eol())
		}
		data := b.Bytes()
		sizes := rapid.SliceOf(rapid.IntRange(1, 16)).Draw(t, "read sizes")
		got, err := readAll(&chunkedReader{data: data, sizes: sizes})
		if !errors.Is(err, io.EOF) {
			t.Fatalf("error = %v for %q", err, data)
		}
		if diff := cmp.Diff(events, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("events (-want +got):\n%s\ninput %q", diff, data)
		}
	})
}

// FuzzSSEReader checks that parsing never panics and does not depend on how the bytes are
// split into reads.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: {}\n\n", "data: a\r\n\r\n", "data: a\r\rdata: b\r\r", ": c\nevent: error\ndata: x\ndata: y\n\n",
		"\xEF\xBB\xBFdata: [DONE]\n\n", "data: cut", "data\n\n\r", "\r\n\r\n\n\r",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, errWhole := readAll(bytes.NewReader(in))
		bytewise, errBytes := readAll(iotest.OneByteReader(bytes.NewReader(in)))
		if !cmp.Equal(whole, bytewise) || !errors.Is(errBytes, errWhole) {
			t.Fatalf("whole: %q %v\nbyte-wise: %q %v", whole, errWhole, bytewise, errBytes)
		}
		for _, ev := range whole {
			if strings.ContainsAny(ev.Data, "\r") || strings.ContainsAny(ev.Event, "\r\n") {
				t.Fatalf("line ending left in %q", ev)
			}
		}
	})
}
