package contain

import (
	"iter"
	"testing"

	"github.com/dsh-go/dsh/internal/cputime"
)

// The hand-off floors: what running a function on another goroutine and waiting for it
// costs by each means Go offers, for comparison with BenchmarkRunnerCPU (a new goroutine
// per call whose stack is grown, as the pipeline's contained steps run). They measure
// alternatives; none of them is used by the package. cpu-ns/op includes the work of the
// processor a wake-up makes spin.

// BenchmarkRunnerCPU is BenchmarkRunner with the process's CPU time per call.
func BenchmarkRunnerCPU(b *testing.B) {
	r := NewRunner(func(*int) {})
	var n int
	b.ReportAllocs()
	defer cputime.PerOp(b, "cpu-ns/op", 1)()
	for b.Loop() {
		r.Call(&n)
	}
}

// BenchmarkHandoffParkedGoroutine hands each call to one long-lived goroutine parked on a
// channel: no new goroutine and no stack growth, but both wake-ups go through the scheduler.
func BenchmarkHandoffParkedGoroutine(b *testing.B) {
	jobs := make(chan func())
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		for f := range jobs {
			f()
			done <- struct{}{}
		}
	}()
	defer func() {
		close(jobs)
		<-exited // the goroutine has returned: nothing outlives the benchmark
	}()
	n := 0
	f := func() { n++ }
	b.ReportAllocs()
	defer cputime.PerOp(b, "cpu-ns/op", 1)()
	for b.Loop() {
		jobs <- f
		<-done
	}
}

// BenchmarkHandoffCoroutine hands each call to one long-lived iter.Pull coroutine: a direct
// switch between the two goroutines on the same thread, without the scheduler.
func BenchmarkHandoffCoroutine(b *testing.B) {
	n := 0
	next, stop := iter.Pull(func(yield func(struct{}) bool) {
		for {
			growStack()
			n++
			if !yield(struct{}{}) {
				return
			}
		}
	})
	defer stop()
	b.ReportAllocs()
	defer cputime.PerOp(b, "cpu-ns/op", 1)()
	for b.Loop() {
		next()
	}
}

// BenchmarkHandoffCoroutinePerCall starts a new iter.Pull coroutine for each call.
func BenchmarkHandoffCoroutinePerCall(b *testing.B) {
	n := 0
	b.ReportAllocs()
	defer cputime.PerOp(b, "cpu-ns/op", 1)()
	for b.Loop() {
		next, stop := iter.Pull(func(yield func(struct{}) bool) {
			growStack()
			n++
		})
		next()
		stop()
	}
}

// BenchmarkWorkersCPU is BenchmarkRunnerCPU on Workers: a parked goroutine whose stack is
// already grown, woken by a channel send.
func BenchmarkWorkersCPU(b *testing.B) {
	benchWorkersCPU(b, NewWorkers)
}

// BenchmarkSwitchWorkersCPU is BenchmarkWorkersCPU on switching Workers: the kept goroutine
// is switched to directly, without the scheduler.
func BenchmarkSwitchWorkersCPU(b *testing.B) {
	benchWorkersCPU(b, NewSwitchWorkers)
}

func benchWorkersCPU(b *testing.B, newWorkers func(int) (*Workers, error)) {
	ws, err := newWorkers(1)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	r := NewRunnerOn(ws, func(*int) {})
	var n int
	b.ReportAllocs()
	defer cputime.PerOp(b, "cpu-ns/op", 1)()
	for b.Loop() {
		r.Call(&n)
	}
}
