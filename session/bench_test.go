package session

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/cputime"
	"github.com/dsh-go/dsh/jsonv"
)

func benchStore(b *testing.B, opts Options) *FileLog {
	b.Helper()
	s, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	l, err := s.Create(context.Background(), Header{ID: "bench", Cwd: "/bench"})
	if err != nil {
		b.Fatal(err)
	}
	return l.(*FileLog)
}

// BenchmarkAppendDurable measures durable appends: every op is one event written as its
// own zstd frame and fsynced, the path every tool/call takes.
func BenchmarkAppendDurable(b *testing.B) {
	for _, c := range compressions {
		b.Run(string(c), func(b *testing.B) {
			l := benchStore(b, Options{Compression: c})
			defer l.Close()
			e := ToolCall{Turn: 1, Step: 2, CallID: "call_123", Name: "read", Arguments: `{"path":"src/main.go"}`}.Event()
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				if _, err := l.AppendDurable(e); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// BenchmarkAppendLive measures live appends, which the writer goroutine coalesces into
// one frame and one fsync per 200 ms.
func BenchmarkAppendLive(b *testing.B) {
	l := benchStore(b, Options{})
	e := crashTurn(0)[8].e // a tool/code-dispatch with 200 bytes of content
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := l.Append(e); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkAppendBatch measures a realistic step: a batch of events appended live and
// made durable by one flush (one frame, one fsync).
func BenchmarkAppendBatch(b *testing.B) {
	for _, size := range []int{14, 140} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			l := benchStore(b, Options{})
			defer l.Close()
			var evs []Event
			for t := 0; len(evs) < size; t++ {
				for _, st := range crashTurn(t) {
					evs = append(evs, st.e)
				}
			}
			evs = evs[:size]
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				for _, e := range evs {
					if _, err := l.Append(e); err != nil {
						b.Fatal(err)
					}
				}
				if err := l.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*size)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// BenchmarkLoad10k loads a 10,000-event session. B/op is the garbage of one load;
// retained-B is the heap one idle loaded session holds.
func BenchmarkLoad10k(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	l, err := s.Create(context.Background(), Header{ID: "big", Cwd: "/bench"})
	if err != nil {
		b.Fatal(err)
	}
	for t := 0; l.Len() < 10000; t++ {
		for _, st := range crashTurn(t) {
			if _, err := l.Append(st.e); err != nil {
				b.Fatal(err)
			}
		}
		if err := l.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Load(ctx, "big"); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ld, err := s.Load(ctx, "big")
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "retained-B")
	b.ReportMetric(float64(len(ld.Events)), "events")
	runtime.KeepAlive(ld)
}

// BenchmarkDeriveMessages rebuilds the model history of logs of 10k, 100k and 1M events;
// the time per event should stay flat across the sizes.
//
// The log is the one a live session builds: events appended to a Memory log as the agent
// appends them (their payloads built by the event constructors), each surface event
// keeping the message its check derived. derive is DeriveMessages over those events, what
// the agent loop pays each step; derive-loaded the same over the events as a session
// store's load gives them back (each line parsed by ReadLog, the payloads one after the
// other in the load's arena): what a resumed session pays; derive-cold is derive as an
// agent calls it, once a step with other work between the calls: the processor's caches
// are emptied before each call (see benchDeriveCold); derive-step appends a turn to the
// log before each call, so that each call places that turn's messages (see
// benchDeriveStep). scan and scan-cold are their floor:
// reading each event's type and surface marker, as any derivation from a slice of events
// must (see scanEvents).
//
// payloads is DeriveMessages over the same events without their kept messages (as a slice
// built by hand holds them), so that every message is derived from its payload; reference
// is the straightforward one-pass derivation that path replaced (deriveReference). The
// floors under the payload path: walk only reads every node of every surface payload,
// without decoding or allocating anything (walk-loaded over the loaded log, walk-cold with
// the caches emptied, beside payloads-cold); stream reads as many bytes as the live log
// holds in one forward stream (see benchStream); write returns the payload path's result
// as fresh memory without reading any payload (see writeFloor). payloads-nogc is a
// breakdown, not a cost anyone pays: the payload path with the collector off during each
// call (and run between calls, untimed), so that the collections a call's allocation
// triggers over the live log are left out.
//
// Besides wall and CPU time per event it reports what the memory system charges: gcs/op,
// the garbage collections a call triggers (each marks the whole live log; the runtime's
// own estimate of the collector's CPU time is an overestimate that grows with the
// machine's load, so it is not reported), and faults/op, the minor page faults of one call
// (fresh memory the kernel zero-fills on first touch), with sys-ns/event, the CPU time
// the process spent in the kernel (where those faults are served). log-B/event and
// log-objects/event are the live heap the log itself holds, kept messages included,
// measured when it is built.
//
// The timed calls run at the heap's steady state, what every call of a long session pays:
// after a forced collection, untimed calls run until two collections have completed
// during them (derivations only: the walk allocates nothing, one untimed call warms it),
// so that the heap has grown to the size it cycles through and its pages are mapped.
// With a single warm-up call, the timed calls also paid for growing the heap from the log
// alone to that size (fresh pages the kernel faults in: at 100k events and 30 calls, half
// of their faults and a third of their CPU time), a one-time cost that 300 calls at 10k
// amortize and 30 calls at 100k do not. The sizes want different -benchtime values for
// comparable total work (scripts/bench-compare.sh runs each size on its own: 300x / 30x /
// 10x).
func BenchmarkDeriveMessages(b *testing.B) {
	impls := []struct {
		name   string
		loaded bool
		// handBuilt runs over the live log's events without their kept messages, as a
		// slice built by hand holds them: DeriveMessages derives every message from its
		// payload.
		handBuilt bool
		derive    func([]Event) ([]content.Message, error)
		// allocates marks the derivations, which warm up to the heap's steady state.
		allocates bool
		// cold empties the caches before each call (benchDeriveCold).
		cold bool
	}{
		{"derive", false, false, DeriveMessages, true, false},
		{"derive-loaded", true, false, DeriveMessages, true, false},
		{"derive-cold", false, false, DeriveMessages, true, true},
		{"derive-step", false, false, DeriveMessages, true, false},
		{"scan", false, false, scanEvents, false, false},
		{"scan-cold", false, false, scanEvents, false, true},
		{"payloads", false, true, DeriveMessages, true, false},
		{"reference", false, false, deriveReference, true, false},
		{"walk", false, false, walkSurface, false, false},
		{"walk-loaded", true, false, walkSurface, false, false},
		{"payloads-nogc", false, true, nil, true, false},
		{"stream", false, false, nil, false, false},
		{"write", false, true, nil, true, false},
		{"payloads-cold", false, true, DeriveMessages, true, true},
		{"walk-cold", false, false, walkSurface, false, true},
	}
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		var live, loaded, handBuilt []Event
		var liveLog *Memory // live's log, which derive-step grows
		var liveSize, loadedSize heapSize
		for _, impl := range impls {
			b.Run(impl.name+"/"+strconv.Itoa(n/1000)+"k", func(b *testing.B) {
				if live == nil {
					liveSize = measureHeap(func() {
						liveLog = deriveBenchLog(b, n)
						live = liveLog.Events()
					})
				}
				evs, size := live, liveSize
				switch {
				case impl.loaded:
					if loaded == nil {
						loadedSize = measureHeap(func() { loaded = deriveBenchLoaded(b, live) })
					}
					evs, size = loaded, loadedSize
				case impl.handBuilt:
					if handBuilt == nil {
						handBuilt = withoutKept(live)
					}
					evs = handBuilt
				}
				switch impl.name {
				case "derive-step":
					benchDeriveStep(b, n, liveLog)
					return
				case "stream":
					benchStream(b, n, size)
					return
				case "write":
					benchDerive(b, n, evs, writeFloor(b, evs), true)
					return
				}
				if impl.cold {
					benchDeriveCold(b, n, evs, impl.derive, impl.allocates)
					return
				}
				if impl.derive == nil {
					benchDeriveNoGC(b, n, evs) // payloads-nogc
					return
				}
				benchDerive(b, n, evs, impl.derive, impl.allocates)
				// What the log itself holds (kept messages included), for the layout's share of the cost: its heap
				// bytes and objects an event (the loaded log's include its arena).
				b.ReportMetric(float64(size.bytes)/float64(n), "log-B/event")
				b.ReportMetric(float64(size.objects)/float64(n), "log-objects/event")
			})
		}
	}
}

// benchStream is the floor of reading as many bytes as the live log holds (size) in one
// forward stream: a byte of every 8 of one contiguous buffer, so every cache line once. It
// shows what the log's size alone would cost at each size if its payloads were laid out to
// be read in order, against walk, which reads them where they are.
func benchStream(b *testing.B, n int, size heapSize) {
	b.Helper()
	buf := make([]byte, max(size.bytes, 8))
	for i := range buf {
		buf[i] = byte(i)
	}
	var sum uint64
	start := time.Now()
	for b.Loop() {
		for i := 0; i < len(buf); i += 8 {
			sum += uint64(buf[i])
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/float64(n), "ns/event")
	b.ReportMetric(float64(size.bytes)/float64(n), "log-B/event")
	if sum == 0 {
		b.Fatal("read nothing") // also keeps the loop from being optimized away
	}
}

// withoutKept returns a copy of events without the messages a log keeps for its surface
// events: events as a slice built by hand holds them.
func withoutKept(events []Event) []Event {
	out := slices.Clone(events)
	for i := range out {
		out[i].derived = nil
	}
	return out
}

// writeFloor returns a function that builds what DeriveMessages returns for hand-built
// events (withoutKept of a log of whole crash-test turns) without reading a payload: the same number of messages, each
// a copy of the matching message of the first turn (every turn has the same shape: the
// same blocks, sources and chunks), through the same chunked allocation. It reads only the
// events' own fields, as DeriveMessages' counting pass does. TestWriteFloorMatchesDerive
// checks that the two return messages of the same shape.
func writeFloor(tb testing.TB, events []Event) func([]Event) ([]content.Message, error) {
	tb.Helper()
	templates, err := DeriveMessages(events[:min(crashTurnEvents, len(events))])
	if err != nil || len(templates) == 0 {
		tb.Fatalf("the first turn derives %d messages (%v)", len(templates), err)
	}
	return func(events []Event) ([]content.Message, error) {
		surface := 0
		for i := range events {
			if onSurface(&events[i]) {
				surface++
			}
		}
		d := newDeriver(surface)
		out := make([]content.Message, surface)
		for k := range out {
			m, dst := &templates[k%len(templates)], &out[k]
			dst.ID, dst.Role = m.ID, m.Role
			if m.Source != nil {
				src := d.source()
				src.Kind, src.CallID = m.Source.Kind, m.Source.CallID
				dst.Source = src
			}
			dst.Content = d.copyBlocks(m.Content)
		}
		return out, nil
	}
}

// copyBlocks copies a list of text, tool-call and tool-result blocks into the deriver's
// chunks, field by field as the deriver fills them.
func (d *deriver) copyBlocks(src []content.Block) []content.Block {
	out := d.take(len(src))
	for i := range src {
		s, dst := &src[i], &out[i]
		dst.Type, dst.Text, dst.ID, dst.Name, dst.Arguments = s.Type, s.Text, s.ID, s.Name, s.Arguments
		dst.ToolCallID, dst.IsError = s.ToolCallID, s.IsError
		if s.Content != nil {
			dst.Content = d.copyBlocks(s.Content)
		}
	}
	return out
}

// evictBytes is how much memory benchDeriveCold reads between calls: more than any
// processor's last-level cache holds. It lies outside the Go heap (evictionMemory).
const evictBytes = 256 << 20

// benchDeriveCold runs derive over evs (a log of n events) as an agent calls
// DeriveMessages, once a step: between two calls, untimed, it reads evictBytes of other
// memory, as a step's model response, tool runs and appends leave the caches holding other
// data than the log. Back to back (benchDerive), a log small enough for the caches is read
// from them on every call; here every size is read from memory. Warm-up as benchDerive.
// The collector runs as the calls' allocations trigger it; a collection still marking when
// a call ends goes on while the next eviction runs, as it would while an agent waits for
// the model.
func benchDeriveCold(b *testing.B, n int, evs []Event, derive func([]Event) ([]content.Message, error), allocates bool) {
	b.Helper()
	evict, release, err := evictionMemory(evictBytes)
	if err != nil {
		b.Fatalf("memory to empty the caches with: %v", err)
	}
	defer release()
	runtime.GC()
	if _, _, err := warmUpDerive(evs, derive, warmUpLimit(allocates)); err != nil {
		b.Fatal(err)
	}
	var sum byte
	gc0 := gcCycles()
	timeEachCall(b, n, derive, func() []Event {
		for i := 0; i < len(evict); i += 64 {
			sum += evict[i]
		}
		return evs
	})
	b.ReportMetric(float64(gcCycles()-gc0)/float64(b.N), "gcs/op")
	runtime.KeepAlive(sum) // the eviction's reads are used, so they are not optimized away
}

// heapSize is how much live heap something holds: bytes and objects.
type heapSize struct{ bytes, objects int64 }

// measureHeap runs build and returns the live heap it added, measured after collections
// before and after (what build returns must be kept reachable by build's caller).
func measureHeap(build func()) heapSize {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return heapSize{bytes: int64(after.HeapAlloc) - int64(before.HeapAlloc), objects: int64(after.HeapObjects) - int64(before.HeapObjects)}
}

// benchDerive runs derive over evs (a log of n events) as BenchmarkDeriveMessages
// describes: untimed warm-up calls up to the heap's steady state, then the timed calls,
// reporting wall and CPU time an event, the collections and the page faults of a call.
func benchDerive(b *testing.B, n int, evs []Event, derive func([]Event) ([]content.Message, error), allocates bool) {
	b.Helper()
	// Neither building the log nor the previous sub-benchmark's garbage is charged to
	// this one's CPU time by a collection still running.
	runtime.GC()
	warmCalls, warmGCs, err := warmUpDerive(evs, derive, warmUpLimit(allocates))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	reportCPU := cputime.PerOp(b, "cpu-ns/event", n)
	gc0 := gcCycles()
	faults0, sys0, faultsOK := minorFaults()
	start := time.Now()
	for b.Loop() {
		if _, err := derive(evs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/float64(n), "ns/event")
	// CPU time (the process's, garbage collection included) per event is far less
	// sensitive than wall time to other work on a shared machine.
	reportCPU()
	b.ReportMetric(float64(gcCycles()-gc0)/float64(b.N), "gcs/op")
	if faults1, sys1, ok := minorFaults(); ok && faultsOK {
		b.ReportMetric(float64(faults1-faults0)/float64(b.N), "faults/op")
		b.ReportMetric(float64(sys1-sys0)/float64(b.N)/float64(n), "sys-ns/event")
	}
	// After the loop: the loop's start clears the metrics reported before it.
	b.ReportMetric(float64(warmCalls), "warmup-calls")
	b.ReportMetric(float64(warmGCs), "warmup-gcs")
}

// warmUpCollections and maxWarmUpCalls bound benchDerive's warm-up of a derivation: it
// stops once warmUpCollections collections have completed during its calls, or after
// maxWarmUpCalls calls. The walk, which allocates nothing, warms up with one call.
const (
	warmUpCollections = 2
	maxWarmUpCalls    = 64
)

// warmUpLimit is the most untimed calls warmUpDerive makes: maxWarmUpCalls for a
// derivation that allocates, one for the walk, which allocates nothing.
func warmUpLimit(allocates bool) int {
	if allocates {
		return maxWarmUpCalls
	}
	return 1
}

// warmUpDerive calls derive over evs, untimed, at least once and until the heap has
// reached its steady state: warmUpCollections collections completed during the calls, or
// maxCalls calls. It returns the calls it made and the collections completed during them.
func warmUpDerive(evs []Event, derive func([]Event) ([]content.Message, error), maxCalls int) (calls int, gcs uint64, err error) {
	gc0 := gcCycles()
	for calls == 0 || (calls < maxCalls && gcCycles()-gc0 < warmUpCollections) {
		if _, err := derive(evs); err != nil {
			return calls, gcCycles() - gc0, err
		}
		calls++
	}
	return calls, gcCycles() - gc0, nil
}

// benchDeriveNoGC runs DeriveMessages over evs with the collector off during each call and
// a collection between calls, outside the timer and outside the CPU time it reports.
func benchDeriveNoGC(b *testing.B, n int, evs []Event) {
	b.Helper()
	if _, err := DeriveMessages(evs); err != nil { // the warm-up call
		b.Fatal(err)
	}
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	b.ReportAllocs()
	var cpu, wall time.Duration
	faults0, _, faultsOK := minorFaults()
	for b.Loop() {
		c0, cpuOK := cputime.Process()
		t0 := time.Now()
		if _, err := DeriveMessages(evs); err != nil {
			b.Fatal(err)
		}
		wall += time.Since(t0)
		c1, _ := cputime.Process()
		if !cpuOK {
			b.Fatal("this platform does not report the process's CPU time")
		}
		cpu += c1 - c0
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
	}
	b.ReportMetric(float64(wall.Nanoseconds())/float64(b.N)/float64(n), "ns/event")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/event")
	if faults1, _, ok := minorFaults(); ok && faultsOK {
		b.ReportMetric(float64(faults1-faults0)/float64(b.N), "faults/op")
	}
}

// gcCycles returns the number of garbage collections completed so far.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// deriveBenchLog builds a log of n events (or a few more) out of whole crash-test turns.
func deriveBenchLog(b *testing.B, n int) *Memory {
	b.Helper()
	m := NewMemory(nil)
	for t := 0; m.Len() < n; t++ {
		appendCrashTurn(b, m, t)
	}
	return m
}

// appendCrashTurn appends crash-test turn t to m.
func appendCrashTurn(b *testing.B, m *Memory, t int) {
	b.Helper()
	for _, st := range crashTurn(t) {
		if _, err := m.Append(st.e); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDeriveStep times DeriveMessages as the agent loop calls it, once a step over a log
// that grew since the last call: before each call, untimed, one more turn (crashTurnEvents
// events) is appended to m, a log of about n events, so each call derives the new turn's
// messages and shares the rest. It runs after derive, whose calls placed the history of
// m's first events.
func benchDeriveStep(b *testing.B, n int, m *Memory) {
	b.Helper()
	runtime.GC()
	b.ReportAllocs() // the timed calls' only: the appends run with the timer stopped
	t := m.Len() / crashTurnEvents
	timeEachCall(b, n, DeriveMessages, func() []Event {
		appendCrashTurn(b, m, t)
		t++
		return m.Events()
	})
}

// timeEachCall runs b's loop: before each call, with the timer stopped, prepare returns the
// events to derive from; then one call of derive over them. It reports the calls' own wall
// time per event of a log of n events (ns/op also counts the timer's stops and starts).
func timeEachCall(b *testing.B, n int, derive func([]Event) ([]content.Message, error), prepare func() []Event) {
	b.Helper()
	var wall time.Duration
	for b.Loop() {
		b.StopTimer()
		evs := prepare()
		b.StartTimer()
		t0 := time.Now()
		if _, err := derive(evs); err != nil {
			b.Fatal(err)
		}
		wall += time.Since(t0)
	}
	b.ReportMetric(float64(wall.Nanoseconds())/float64(b.N)/float64(n), "ns/event")
}

// deriveBenchLoaded returns events as a session store's load gives them back: written as
// an uncompressed log and read with ReadLog, which parses every line into one arena.
func deriveBenchLoaded(b *testing.B, events []Event) []Event {
	b.Helper()
	data, err := EncodeHeader(Header{ID: "bench", Cwd: "/bench"})
	if err != nil {
		b.Fatal(err)
	}
	data = append(data, '\n')
	for _, e := range events {
		if data, err = appendEventJSON(data, &e); err != nil {
			b.Fatal(err)
		}
		data = append(data, '\n')
	}
	_, loaded, _, err := ReadLog(data, CompressionNone)
	if err != nil {
		b.Fatal(err)
	}
	if len(loaded) != len(events) {
		b.Fatalf("loaded %d events of %d", len(loaded), len(events))
	}
	return loaded
}

// scanEvents reads what DeriveMessages reads of every event to find the surface ones (its
// type and surface marker), derives nothing and allocates nothing: the floor of any
// derivation from a slice of events.
func scanEvents(events []Event) ([]content.Message, error) {
	n := 0
	for i := range events {
		if onSurface(&events[i]) {
			n++
		}
	}
	runtime.KeepAlive(n) // the count is used, so the reads are not optimized away
	return nil, nil
}

// walkSurface reads every node of every surface payload in events (a string's header, not
// its bytes) and derives nothing: the memory traffic any derivation must pay.
func walkSurface(events []Event) ([]content.Message, error) {
	n := 0
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case *jsonv.Object:
			for _, m := range x.Members() {
				n += len(m.Name)
				walk(m.Value)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			n += len(x)
		}
	}
	for i := range events {
		switch e := &events[i]; e.Type {
		case TypeUserMessage, TypeAssistantMessage, TypeToolResult:
			if e.SurfaceOp == SurfaceAppend {
				walk(e.Data)
			}
		}
	}
	if n == 0 && len(events) > 0 {
		return nil, errors.New("walk: no surface payload")
	}
	return nil, nil
}
