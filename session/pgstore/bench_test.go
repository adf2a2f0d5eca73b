package pgstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/session/pgstore"
)

// benchEvent is a typical small event: a tool call with its arguments.
func benchEvent(i int) session.Event {
	return session.ToolCall{Turn: 1, Step: i, CallID: fmt.Sprintf("call-%d", i), Name: "read", Arguments: `{"file_path":"src/main.go","offset":120,"limit":80}`}.Event()
}

func benchStore(b *testing.B) session.Writer {
	s, err := pgstore.Open(b.Context(), pg.Database(b), pgstore.Options{WriteBatchMaxDelay: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	w, err := s.Create(b.Context(), session.Header{ID: "bench", Cwd: "/bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	return w
}

// BenchmarkAppendDurable: every event is its own transaction, committed (and so fsynced
// by the server) before AppendDurable returns — how the agent loop writes a tool/call.
func BenchmarkAppendDurable(b *testing.B) {
	w := benchStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := w.AppendDurable(benchEvent(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAppendBatched: live appends written 100 to a transaction, as the background
// writer coalesces the events of a busy turn.
func BenchmarkAppendBatched(b *testing.B) {
	w := benchStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := w.Append(benchEvent(i)); err != nil {
			b.Fatal(err)
		}
		if i%100 == 99 {
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
