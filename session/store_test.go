package session

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/zstd"
)

// manualTimer replaces the batch timer: the test sees each armed timer and fires it.
type manualTimer struct {
	armed  chan chan time.Time
	delays chan time.Duration
	done   chan error
}

func newManualTimer() *manualTimer {
	return &manualTimer{armed: make(chan chan time.Time, 16), delays: make(chan time.Duration, 16), done: make(chan error, 16)}
}

func (m *manualTimer) options(c Compression) Options {
	return Options{
		Compression: c,
		Now:         fixedClock,
		timer: func(d time.Duration) (<-chan time.Time, func()) {
			ch := make(chan time.Time, 1)
			m.delays <- d
			m.armed <- ch
			return ch, func() {}
		},
		batchDone: func(err error) { m.done <- err },
	}
}

// fire waits for the writer to arm its timer, fires it and waits for the batch.
func (m *manualTimer) fire(t *testing.T) {
	t.Helper()
	ch := testwait.Recv(t, m.armed, "the writer to arm its batch timer")
	ch <- time.Time{}
	if err := testwait.Recv(t, m.done, "the timer-driven batch"); err != nil {
		t.Fatalf("live batch: %v", err)
	}
}

var compressions = []Compression{CompressionZstd, CompressionNone}

// records splits a log file into its records (frames or lines) and returns their start
// offsets.
func records(t *testing.T, data []byte, c Compression) []int {
	t.Helper()
	var starts []int
	for off := 0; off < len(data); {
		starts = append(starts, off)
		if c == CompressionNone {
			i := bytes.IndexByte(data[off:], '\n')
			if i < 0 {
				break
			}
			off += i + 1
			continue
		}
		end, err := scanFrame(data, off)
		if err != nil {
			t.Fatalf("frame at %d: %v", off, err)
		}
		off = end
	}
	return starts
}

func openStore(t *testing.T, opts Options) *FileStore {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "sessions"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// turnEvents is a small complete turn with two tool calls.
func turnEvents(turn int) []Event {
	return []Event{
		TurnStart{Turn: turn}.Event(),
		StepStart{Turn: turn}.Event(),
		UserMessage{Message: content.Message{ID: "u", Source: &content.Source{Kind: "user"}, Content: content.Texts("hello")}}.Event(),
		asst(turn, 0, "c1", "c2"),
	}
}

func TestStoreRoundTrip(t *testing.T) {
	for _, c := range compressions {
		t.Run(string(c), func(t *testing.T) {
			s := openStore(t, Options{Compression: c, Now: fixedClock})
			l, err := s.Create(context.Background(), Header{ID: "s1", Cwd: "/work/proj", DelegationDepth: 1, AgentPreset: "p"})
			if err != nil {
				t.Fatal(err)
			}
			var want []Event
			add := func(e Event, durable bool) Event {
				t.Helper()
				var got Event
				var err error
				if durable {
					got, err = l.AppendDurable(e)
				} else {
					got, err = l.Append(e)
				}
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, got)
				return got
			}
			for _, e := range turnEvents(0) {
				add(e, false)
			}
			call := add(ToolCall{CallID: "c1", Name: "tool", Arguments: "{}"}.Event(), true)
			add(result(0, 0, "c1", call.Seq), false)
			call = add(ToolCall{CallID: "c2", Name: "tool", Arguments: "{}"}.Event(), true)
			add(result(0, 0, "c2", call.Seq), false)
			add(StepEnd{}.Event(), false)
			add(TurnEnd{Reason: EndReason{Kind: EndCompleted}}.Event(), false)
			// Invalid events are refused by a FileLog as by Memory, and not logged.
			if _, err := l.AppendDurable(Event{Type: TypeTodoWrite, Data: func() {}}); err == nil ||
				err.Error() != `session event "todo/write" carries non-JSON-serializable data` {
				t.Errorf("AppendDurable of non-JSON data = %v", err)
			}
			if _, err := l.Append(Event{Type: "no/such"}); err == nil {
				t.Error("Append of an unknown type succeeded")
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			wantPath := filepath.Join(s.Root(), "--work-proj--", "s1", c.fileName())
			if l.Path() != wantPath {
				t.Errorf("Path = %q, want %q", l.Path(), wantPath)
			}
			fi, err := os.Stat(wantPath)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("log mode %v, want 0600", fi.Mode().Perm())
			}
			ld, err := s.Load(context.Background(), "s1")
			if err != nil {
				t.Fatal(err)
			}
			if ld.Recovered != 0 || ld.TornBytes != 0 || ld.Path != wantPath {
				t.Errorf("Loaded = recovered %d torn %d path %q", ld.Recovered, ld.TornBytes, ld.Path)
			}
			wantHeader := Header{ID: "s1", CreatedAt: testTime, Cwd: "/work/proj", DelegationDepth: 1, AgentPreset: "p"}
			if ld.Header != wantHeader {
				t.Errorf("header = %+v, want %+v", ld.Header, wantHeader)
			}
			if len(ld.Events) != len(want) {
				t.Fatalf("loaded %d events, want %d", len(ld.Events), len(want))
			}
			for i := range want {
				if !eventsEqual(ld.Events[i], want[i]) {
					t.Errorf("event %d:\n got %+v\nwant %+v", i, ld.Events[i], want[i])
				}
			}
			// No temporary files are left behind.
			entries, _ := os.ReadDir(filepath.Dir(wantPath))
			if len(entries) != 1 {
				t.Errorf("session directory holds %d entries, want only the log", len(entries))
			}
		})
	}
}

func TestHeaderLineBytes(t *testing.T) {
	s := openStore(t, Options{Compression: CompressionNone, Now: fixedClock})
	l, err := s.Create(context.Background(), Header{ID: "h", Cwd: "/p", ParentSession: "par", SeedLength: 3, Origin: "subagent", DelegationDepth: 2, AgentPreset: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendDurable(TurnStart{}.Event()); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"session","version":0,"id":"h","createdAt":1700000000000,"cwd":"/p","parentSession":"par","seedLength":3,"origin":"subagent","delegationDepth":2,"agentPreset":"x"}` + "\n" +
		`{"type":"turn/start","seq":0,"time":1700000000000,"data":{"turn":0}}` + "\n"
	if string(data) != want {
		t.Errorf("file:\n%s\nwant:\n%s", data, want)
	}
	// A minimal header keeps delegationDepth.
	l2, _ := s.Create(context.Background(), Header{ID: "m"})
	if _, err := l2.AppendDurable(TurnStart{}.Event()); err != nil {
		t.Fatal(err)
	}
	l2.Close()
	data, _ = os.ReadFile(l2.Path())
	if line, _, _ := bytes.Cut(data, []byte("\n")); string(line) != `{"type":"session","version":0,"id":"m","createdAt":1700000000000,"delegationDepth":0}` {
		t.Errorf("minimal header %s", line)
	}
	if !strings.Contains(l2.Path(), filepath.Join("_no-cwd", "m")) {
		t.Errorf("session without cwd at %q", l2.Path())
	}
}

func TestLiveBatching(t *testing.T) {
	for _, c := range compressions {
		t.Run(string(c), func(t *testing.T) {
			mt := newManualTimer()
			s := openStore(t, mt.options(c))
			l, err := s.Create(context.Background(), Header{ID: "b"})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			for _, e := range turnEvents(0) {
				if _, err := l.Append(e); err != nil {
					t.Fatal(err)
				}
			}
			if d := <-mt.delays; d != DefaultWriteBatchMaxDelay {
				t.Errorf("batch delay %v, want %v", d, DefaultWriteBatchMaxDelay)
			}
			// Nothing is written before the batch is due: the file does not exist yet.
			if _, err := os.Stat(l.Path()); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("log exists before the first batch: %v", err)
			}
			if l.Durable() != 0 {
				t.Fatalf("Durable = %d before the batch", l.Durable())
			}
			mt.fire(t)
			if l.Durable() != 4 {
				t.Fatalf("Durable = %d after the batch, want 4", l.Durable())
			}
			data, _ := os.ReadFile(l.Path())
			if n := len(records(t, data, c)); c == CompressionZstd && n != 2 {
				t.Errorf("%d frames after one batch, want header + 1", n)
			}
			// Two more live events, then a durable one: all three go out as one batch.
			call, _ := l.Append(ToolCall{CallID: "c1", Name: "tool", Arguments: "{}"}.Event())
			if _, err := l.Append(result(0, 0, "c1", call.Seq)); err != nil {
				t.Fatal(err)
			}
			<-mt.delays // the writer armed a timer for them
			if l.Durable() != 4 {
				t.Fatalf("live events became durable without a batch: %d", l.Durable())
			}
			if _, err := l.AppendDurable(ToolCall{CallID: "c2", Name: "tool", Arguments: "{}"}.Event()); err != nil {
				t.Fatal(err)
			}
			if l.Durable() != 7 {
				t.Fatalf("Durable = %d after a durable append, want 7", l.Durable())
			}
			data, _ = os.ReadFile(l.Path())
			if c == CompressionZstd {
				if n := len(records(t, data, c)); n != 3 {
					t.Errorf("%d frames, want header + 2 batches", n)
				}
			}
			_, evs, _, err := ReadLog(data, c)
			if err != nil || len(evs) != 7 {
				t.Fatalf("on disk: %d events, %v", len(evs), err)
			}
			// The timer armed for the earlier live events now finds nothing to write.
			mt.fire(t)
			after, _ := os.ReadFile(l.Path())
			if !bytes.Equal(after, data) {
				t.Error("an empty batch changed the file")
			}
		})
	}
}

func TestFlushAndClose(t *testing.T) {
	mt := newManualTimer()
	s := openStore(t, mt.options(CompressionZstd))
	l, err := s.Create(context.Background(), Header{ID: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(TurnStart{}.Event()); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if l.Durable() != 1 {
		t.Errorf("Durable after Flush = %d", l.Durable())
	}
	if _, err := l.Append(StepStart{}.Event()); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := l.Append(TurnStart{}.Event()); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v", err)
	}
	if _, err := l.AppendDurable(TurnStart{}.Event()); !errors.Is(err, ErrClosed) {
		t.Errorf("AppendDurable after Close: %v", err)
	}
	if err := l.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close: %v", err)
	}
	ld, err := s.Load(context.Background(), "f")
	if err != nil {
		t.Fatal(err)
	}
	// Close wrote the pending step/start; recovery closes the open turn in memory.
	if n := len(ld.Events) - ld.Recovered; n != 2 {
		t.Errorf("%d events on disk, want 2", n)
	}
	if ld.Recovered != 2 {
		t.Errorf("Recovered = %d, want step/end + turn/end", ld.Recovered)
	}
	// A session closed before its first batch leaves nothing on disk.
	empty, _ := s.Create(context.Background(), Header{ID: "never"})
	if err := empty.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(context.Background(), "never"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load of an empty session: %v", err)
	}
}

// TestZstdCompatibility checks that the file is a plain concatenation of standard zstd
// frames whose content is the JSONL text, with a stock stream decoder and with `zstd -dc`
// (a missing zstd tool fails the test).
func TestZstdCompatibility(t *testing.T) {
	s := openStore(t, Options{Now: fixedClock})
	l, err := s.Create(context.Background(), Header{ID: "z"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	hl, _ := (&Header{ID: "z", CreatedAt: testTime}).line()
	lines = append(lines, string(hl))
	for i, e := range append(turnEvents(0), StepEnd{}.Event(), TurnEnd{Reason: EndReason{Kind: EndCompleted}}.Event()) {
		got, err := l.AppendDurable(e) // one frame per event
		if err != nil {
			t.Fatal(err)
		}
		b, _ := got.MarshalJSON()
		lines = append(lines, string(b)+"\n")
		_ = i
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	want := strings.Join(lines, "")
	data, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(records(t, data, CompressionZstd)); n != 7 {
		t.Errorf("%d frames, want 7", n)
	}
	dec, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(dec)
	dec.Close()
	if err != nil {
		t.Fatalf("stream decoder: %v", err)
	}
	if string(got) != want {
		t.Errorf("stream decoder output:\n%s\nwant:\n%s", got, want)
	}
	bin, err := exec.LookPath("zstd")
	if err != nil {
		t.Fatal("the zstd tool is not installed, so the log is unchecked against the reference decompressor: run scripts/test-deps.sh (it installs the Debian package zstd)")
	}
	out, err := exec.Command(bin, "-dc", l.Path()).Output()
	if err != nil {
		t.Fatalf("zstd -dc: %v", err)
	}
	if string(out) != want {
		t.Errorf("zstd -dc output:\n%s\nwant:\n%s", out, want)
	}
}

// writeLog creates a closed session "t" whose file has the header and one record per
// batch; it returns the store, the path and the events.
func writeLog(t *testing.T, c Compression, batches ...[]Event) (*FileStore, string, []Event) {
	t.Helper()
	s := openStore(t, Options{Compression: c, Now: fixedClock})
	l, err := s.Create(context.Background(), Header{ID: "t", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		for _, e := range b {
			if _, err := l.Append(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	evs := l.Events()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return s, l.Path(), evs
}

func TestTornTail(t *testing.T) {
	for _, c := range compressions {
		t.Run(string(c), func(t *testing.T) {
			s, path, evs := writeLog(t, c, turnEvents(0)[:2], turnEvents(0)[2:3], turnEvents(0)[3:])
			data, _ := os.ReadFile(path)
			starts := records(t, data, c)
			last := starts[len(starts)-1]
			for cut := last + 1; cut < len(data); cut++ {
				if err := os.WriteFile(path, data[:cut], 0o600); err != nil {
					t.Fatal(err)
				}
				ld, err := s.Load(context.Background(), "t")
				if err != nil {
					t.Fatalf("cut at %d: %v", cut, err)
				}
				if got := len(ld.Events) - ld.Recovered; got != len(evs)-1 {
					t.Fatalf("cut at %d: %d events, want %d", cut, got, len(evs)-1)
				}
				if ld.TornBytes != int64(cut-last) {
					t.Fatalf("cut at %d: TornBytes %d, want %d", cut, ld.TornBytes, cut-last)
				}
			}
			// Garbage after the last record is a torn tail too.
			for _, junk := range [][]byte{make([]byte, 100), []byte("{\"type\":"), {0x28, 0xb5, 0x2f, 0xfd, 0x24}} {
				os.WriteFile(path, append(bytes.Clone(data), junk...), 0o600)
				ld, err := s.Load(context.Background(), "t")
				if err != nil {
					t.Fatalf("junk %q: %v", junk, err)
				}
				if len(ld.Events)-ld.Recovered != len(evs) || ld.TornBytes != int64(len(junk)) {
					t.Errorf("junk %q: %d events, torn %d", junk, len(ld.Events)-ld.Recovered, ld.TornBytes)
				}
			}
		})
	}
}

func TestMidFileCorruption(t *testing.T) {
	for _, c := range compressions {
		t.Run(string(c), func(t *testing.T) {
			s, path, _ := writeLog(t, c, turnEvents(0)[:2], turnEvents(0)[2:3], turnEvents(0)[3:])
			data, _ := os.ReadFile(path)
			starts := records(t, data, c)
			damaged := starts[1] // the first event batch; an intact batch follows
			bad := bytes.Clone(data)
			if c == CompressionNone {
				bad[damaged] = 'x' // the line no longer parses
			} else {
				bad[damaged+12] ^= 0x40 // checksum or structure fails
			}
			os.WriteFile(path, bad, 0o600)
			_, err := s.Load(context.Background(), "t")
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Load = %v, want a *CorruptError", err)
			}
			if ce.Path != path || ce.Offset != int64(damaged) {
				t.Errorf("CorruptError path %q offset %d, want %q %d", ce.Path, ce.Offset, path, damaged)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "byte") {
				t.Errorf("error %q does not name the file and offset", err)
			}
			if _, err := s.Resume(context.Background(), "t"); !errors.As(err, &ce) {
				t.Errorf("Resume of a corrupt log = %v", err)
			}
			// A damaged header is always fatal.
			bad = bytes.Clone(data)
			bad[2] ^= 0x01
			os.WriteFile(path, bad, 0o600)
			if _, err := s.Load(context.Background(), "t"); !errors.As(err, &ce) || ce.Offset != 0 {
				t.Errorf("Load with a damaged header = %v", err)
			}
		})
	}
}

// TestIntactInvalidRecord: a checksum-valid final frame holding an invalid event is a
// writer fault, not a torn write; it is reported, not dropped.
func TestIntactInvalidRecord(t *testing.T) {
	enc, _ := newEncoder()
	defer enc.Close()
	hl, _ := (&Header{ID: "x"}).line()
	good := []byte(`{"type":"turn/start","seq":0,"time":1,"data":{"turn":0}}` + "\n")
	tests := []struct {
		name, last string
	}{
		{"seq gap", `{"type":"turn/end","seq":5,"time":1,"data":{"turn":0,"reason":{"kind":"completed"}}}` + "\n"},
		{"unknown required type", `{"type":"future/thing","seq":1,"time":1,"data":{}}` + "\n"},
		{"bad payload", `{"type":"tool/call","seq":1,"time":1,"data":{}}` + "\n"},
		{"unparsable line", `{"type":` + "\n"},
		{"missing newline", `{"type":"step/start","seq":1,"time":1,"data":{"turn":0,"step":0}}`},
		{"replace surfaceOp", `{"type":"user/message","seq":1,"time":1,"data":{},"surfaceOp":{"op":"replace","start":0,"end":0}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := enc.EncodeAll(hl, nil)
			data = enc.EncodeAll(good, data)
			off := len(data)
			data = enc.EncodeAll([]byte(tt.last), data)
			_, _, _, err := ReadLog(data, CompressionZstd)
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Offset != int64(off) {
				t.Errorf("ReadLog = %v, want a *CorruptError at %d", err, off)
			}
		})
	}
	// An unknown type marked ignorable loads.
	data := enc.EncodeAll(hl, nil)
	data = enc.EncodeAll([]byte(`{"type":"future/thing","seq":0,"time":1,"data":{},"ignorable":true}`+"\n"), data)
	if _, evs, _, err := ReadLog(data, CompressionZstd); err != nil || len(evs) != 1 {
		t.Errorf("ignorable unknown event: %d events, %v", len(evs), err)
	}
}

func TestHeaderValidation(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"future version", `{"type":"session","version":1,"id":"x","createdAt":1,"delegationDepth":0}`, "format version 1"},
		{"not a header", `{"type":"turn/start","seq":0,"time":1,"data":{"turn":0}}`, "not a session header"},
		{"missing id", `{"type":"session","version":0,"createdAt":1,"delegationDepth":0}`, `lacks "id"`},
		{"negative depth", `{"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":-1}`, "delegationDepth"},
		{"bad origin", `{"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":0,"origin":"fork"}`, "origin"},
		{"retired fields", `{"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":0,"sandboxMode":"x"}`, "retired"},
		{"not JSON", `{"type":"session",`, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, err := ReadLog([]byte(tt.line+"\n"), CompressionNone)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadLog = %v, want %q", err, tt.want)
			}
		})
	}
	for _, data := range []string{"", "no newline"} {
		if _, _, _, err := ReadLog([]byte(data), CompressionNone); err == nil {
			t.Errorf("ReadLog(%q) succeeded", data)
		}
		if _, _, _, err := ReadLog([]byte(data), CompressionZstd); err == nil {
			t.Errorf("ReadLog(%q, zstd) succeeded", data)
		}
	}
}

func TestResume(t *testing.T) {
	for _, c := range compressions {
		t.Run(string(c), func(t *testing.T) {
			// The state a crash leaves: c1 finished, c2 recorded as started, c3 never.
			evs := turnEvents(3)
			evs[3] = asst(3, 0, "c1", "c2", "c3")
			s, path, written := writeLog(t, c, evs,
				[]Event{ToolCall{Turn: 3, CallID: "c1", Name: "tool", Arguments: "{}"}.Event()},
				[]Event{result(3, 0, "c1", 4), ToolCall{Turn: 3, CallID: "c2", Name: "tool", Arguments: "{}"}.Event()},
			)
			data, _ := os.ReadFile(path)
			// Tear the last batch in half as well: c2's tool/call is lost with it.
			starts := records(t, data, c)
			cut := starts[len(starts)-1] + (len(data)-starts[len(starts)-1])/2
			if c == CompressionNone {
				cut = len(data) - 5 // tear the final line only
			}
			os.WriteFile(path, data[:cut], 0o600)

			ld, err := s.Load(context.Background(), "t")
			if err != nil {
				t.Fatal(err)
			}
			l, err := s.Resume(context.Background(), "t")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(len(ld.Events), l.Len()); diff != "" {
				t.Errorf("Resume and Load disagree on the length: %s", diff)
			}
			for i, e := range l.Events() {
				if !eventsEqual(e, ld.Events[i]) {
					t.Errorf("event %d: resumed %+v, loaded %+v", i, e, ld.Events[i])
				}
			}
			if l.Durable() != l.Len() {
				t.Errorf("recovery events are not durable: %d of %d", l.Durable(), l.Len())
			}
			// Continue the session in a new turn.
			for _, e := range turnEvents(4) {
				if _, err := l.Append(e); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			again, err := s.Load(context.Background(), "t")
			if err != nil {
				t.Fatal(err)
			}
			if again.TornBytes != 0 {
				t.Errorf("the torn tail was not cut: %d bytes", again.TornBytes)
			}
			n := len(ld.Events) + 4
			if len(again.Events)-again.Recovered != n {
				t.Fatalf("%d events after resume, want %d", len(again.Events)-again.Recovered, n)
			}
			// Recovery wrote results for the open calls in request order, then the closers.
			var codes []string
			for _, e := range again.Events[5:len(ld.Events)] {
				if r, err := DecodeToolResult(e); err == nil && r.Error != nil {
					codes = append(codes, r.CallID+":"+r.Error.Code)
				} else {
					codes = append(codes, e.Type)
				}
			}
			// zstd: the whole last batch (c1's result and c2's call) was torn away.
			wantCodes := []string{"c1:TOOL_OUTCOME_UNKNOWN", "c2:TOOL_NOT_STARTED", "c3:TOOL_NOT_STARTED", TypeStepEnd, TypeTurnEnd}
			if c == CompressionNone {
				// Only c2's tool/call line was torn.
				wantCodes = []string{TypeToolResult, "c2:TOOL_NOT_STARTED", "c3:TOOL_NOT_STARTED", TypeStepEnd, TypeTurnEnd}
			}
			if diff := cmp.Diff(wantCodes, codes); diff != "" {
				t.Errorf("recovered tail (-want +got):\n%s", diff)
			}
			if len(written) != 7 {
				t.Fatalf("wrote %d events", len(written))
			}
			msgs, err := DeriveMessages(again.Events)
			if err != nil {
				t.Fatal(err)
			}
			// Turn 3: user, assistant, three results; turn 4 (left open, recovered in
			// memory by this Load): user, assistant, two not-started results.
			if len(msgs) != 5+4 || again.Recovered != 4 {
				t.Errorf("%d derived messages (want 9), %d recovered (want 4)", len(msgs), again.Recovered)
			}
		})
	}
}

func TestSecondWriterRefused(t *testing.T) {
	s, _, _ := writeLog(t, CompressionZstd, turnEvents(0))
	l, err := s.Resume(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l2, err := s.Resume(context.Background(), "t"); err == nil || !strings.Contains(err.Error(), "already open for writing") {
		if l2 != nil {
			l2.Close()
		}
		t.Errorf("second Resume = %v", err)
	}
	// Reading is still allowed.
	if _, err := s.Load(context.Background(), "t"); err != nil {
		t.Errorf("Load while a writer is open: %v", err)
	}
}

func TestCreateRefusesExisting(t *testing.T) {
	s, _, _ := writeLog(t, CompressionZstd, turnEvents(0))
	for _, cwd := range []string{"/w", "/elsewhere", ""} {
		if l, err := s.Create(context.Background(), Header{ID: "t", Cwd: cwd}); err == nil {
			l.Close()
			t.Errorf("Create of an existing id with cwd %q succeeded", cwd)
		}
	}
	// Two creates racing for one id: the second materialization fails without damage.
	a, err := s.Create(context.Background(), Header{ID: "race"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Create(context.Background(), Header{ID: "race"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AppendDurable(TurnStart{}.Event()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AppendDurable(TurnStart{Turn: 7}.Event()); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second materialization = %v", err)
	}
	a.Close()
	b.Close()
	ld, err := s.Load(context.Background(), "race")
	if err != nil || len(ld.Events) != 2 {
		t.Fatalf("Load after the race: %v", err)
	}
	if ts, _ := DecodeTurnStart(ld.Events[0]); ts.Turn != 0 {
		t.Errorf("the losing writer overwrote the log")
	}
	if _, err := s.Create(context.Background(), Header{ID: "x", Origin: "fork"}); err == nil {
		t.Error("Create accepted an invalid header")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Create(ctx, Header{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Create with a cancelled context: %v", err)
	}
}

func TestCreateFillsIDAndTime(t *testing.T) {
	s := openStore(t, Options{Now: fixedClock})
	l, err := s.Create(context.Background(), Header{Version: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h := l.Header()
	if !strings.HasPrefix(h.ID, "20231114T221320Z-") || h.CreatedAt != testTime || h.Version != 0 {
		t.Errorf("header %+v", h)
	}
}

func TestEncodingMismatch(t *testing.T) {
	s, _, _ := writeLog(t, CompressionZstd, turnEvents(0))
	if _, err := Open(s.Root(), Options{Compression: CompressionNone}); err == nil || !strings.Contains(err.Error(), "other encoding") {
		t.Errorf("Open with the other encoding = %v", err)
	}
	if _, err := Open(s.Root(), Options{Compression: "lz4"}); err == nil {
		t.Error("Open accepted an unknown compression")
	}
	// A plain log appearing next to the zstd one after Open.
	dir := filepath.Join(s.Root(), "--w--", "t")
	os.WriteFile(filepath.Join(dir, "session.jsonl"), []byte("{}\n"), 0o600)
	if _, err := s.Load(context.Background(), "t"); err == nil || !strings.Contains(err.Error(), "other encoding") {
		t.Errorf("Load with both encodings present = %v", err)
	}
	if _, err := s.List(context.Background()); err == nil {
		t.Error("List with both encodings present succeeded")
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o600)
	if _, err := Open(file, Options{}); err == nil {
		t.Error("Open accepted a file as root")
	}
}

func TestLoadErrors(t *testing.T) {
	s, path, _ := writeLog(t, CompressionZstd, turnEvents(0))
	if _, err := s.Load(context.Background(), "missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load of a missing session: %v", err)
	}
	if _, err := s.Resume(context.Background(), "missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resume of a missing session: %v", err)
	}
	if _, err := s.Load(context.Background(), ""); err == nil {
		t.Error("Load of an empty id succeeded")
	}
	// A log copied under another id is refused: its header names another file.
	other := filepath.Join(s.Root(), "--w--", "u", "session.jsonl.zstd")
	os.MkdirAll(filepath.Dir(other), 0o700)
	data, _ := os.ReadFile(path)
	os.WriteFile(other, data, 0o600)
	if _, err := s.Load(context.Background(), "u"); err == nil || !strings.Contains(err.Error(), `requested id "u"`) {
		t.Errorf("Load of a copied log = %v", err)
	}
	os.Remove(other)
	// A log moved to another project directory is refused too.
	moved := filepath.Join(s.Root(), "--v--", "t", "session.jsonl.zstd")
	os.MkdirAll(filepath.Dir(moved), 0o700)
	os.Rename(path, moved)
	if _, err := s.Load(context.Background(), "t"); err == nil || !strings.Contains(err.Error(), "identify") {
		t.Errorf("Load of a moved log = %v", err)
	}
	// The same id in two project directories is ambiguous.
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, data, 0o600)
	if _, err := s.Load(context.Background(), "t"); err == nil || !strings.Contains(err.Error(), "several project directories") {
		t.Errorf("Load of a duplicated id = %v", err)
	}
}

func TestList(t *testing.T) {
	now := int64(1000)
	s := openStore(t, Options{Now: func() time.Time { now += 1000; return time.UnixMilli(now) }})
	for _, h := range []Header{{ID: "b", Cwd: "/p/one"}, {ID: "a", Cwd: "/p/two"}, {ID: "c"}} {
		l, err := s.Create(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendDurable(TurnStart{}.Event()); err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	// One session never written, one with a damaged header.
	unwritten, _ := s.Create(context.Background(), Header{ID: "d"})
	unwritten.Close()
	badPath := filepath.Join(s.Root(), "_no-cwd", "e", "session.jsonl.zstd")
	os.MkdirAll(filepath.Dir(badPath), 0o700)
	os.WriteFile(badPath, []byte("not zstd"), 0o600)

	infos, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range infos {
		if in.Err != nil {
			got = append(got, "error:"+filepath.Base(filepath.Dir(in.Path)))
			continue
		}
		got = append(got, in.Header.ID+"@"+in.Header.Cwd)
		if fi, _ := os.Stat(in.Path); fi.Size() != in.Size || in.Size == 0 {
			t.Errorf("%s: size %d", in.Header.ID, in.Size)
		}
	}
	want := []string{"error:e", "b@/p/one", "a@/p/two", "c@"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	empty, _ := Open(filepath.Join(t.TempDir(), "none"), Options{})
	if infos, err := empty.List(context.Background()); err != nil || len(infos) != 0 {
		t.Errorf("List of a missing root = %v, %v", infos, err)
	}
	plain := openStore(t, Options{Compression: CompressionNone})
	l, _ := plain.Create(context.Background(), Header{ID: "p"})
	l.AppendDurable(TurnStart{}.Event())
	l.Close()
	if infos, err := plain.List(context.Background()); err != nil || len(infos) != 1 || infos[0].Header.ID != "p" {
		t.Errorf("List of a plain store = %+v, %v", infos, err)
	}
}

func TestWriteFailureBreaksLog(t *testing.T) {
	s := openStore(t, Options{})
	w, err := s.Create(context.Background(), Header{ID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	l := w.(*FileLog)
	if _, err := l.AppendDurable(TurnStart{}.Event()); err != nil {
		t.Fatal(err)
	}
	// Pull the file out from under the log: the write and the undo both fail.
	l.writeMu.Lock()
	l.f.Close()
	l.writeMu.Unlock()
	if _, err := l.AppendDurable(StepStart{}.Event()); err == nil {
		t.Fatal("AppendDurable on a closed file succeeded")
	}
	if err := l.Flush(); err == nil || !strings.Contains(err.Error(), "unusable") {
		t.Errorf("Flush after a failed undo = %v", err)
	}
	if l.Durable() != 1 || l.Len() != 2 {
		t.Errorf("Durable %d Len %d", l.Durable(), l.Len())
	}
	l.writeMu.Lock()
	l.f = nil
	l.writeMu.Unlock()
	if err := l.Close(); err == nil {
		t.Error("Close flushed into a broken log without error")
	}
}

func TestConcurrentAppends(t *testing.T) {
	s := openStore(t, Options{WriteBatchMaxDelay: time.Millisecond})
	l, err := s.Create(context.Background(), Header{ID: "cc"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 25 {
				var err error
				if (g+i)%5 == 0 {
					_, err = l.AppendDurable(TurnStart{Turn: g}.Event())
				} else {
					_, err = l.Append(TurnStart{Turn: g}.Event())
				}
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ld, err := s.Load(context.Background(), "cc")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ld.Events) - ld.Recovered; n != 100 {
		t.Errorf("%d events on disk, want 100", n)
	}
}
