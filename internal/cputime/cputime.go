// Package cputime measures the CPU time the process uses, for benchmarks that report it
// beside wall time: CPU time per operation moves far less than wall time when other work
// shares the machine, which is how dsh's benchmark figures are usually taken.
package cputime

import (
	"testing"
	"time"
)

// PerOp starts measuring the process's CPU time (user and system, garbage collection and
// every goroutine included, child processes not) and returns a function that, called after
// the benchmark loop, reports it per iteration divided by per as the metric unit (for
// example "cpu-ns/op" with per 1, or "cpu-ns/event" with per the events in one iteration).
// Where the platform does not report the process's CPU time, nothing is reported.
func PerOp(b *testing.B, unit string, per int) func() {
	b.Helper()
	return perOp(b, unit, per, Process, "the process's CPU time")
}

// ChildrenPerOp is PerOp for the CPU time of the process's child processes that have
// ended and been waited for meanwhile (Code Mode workers, for instance), which Process
// leaves out.
func ChildrenPerOp(b *testing.B, unit string, per int) func() {
	b.Helper()
	return perOp(b, unit, per, Children, "child processes' CPU time")
}

// perOp reads the clock now and returns the function that reports its advance per
// iteration divided by per; what names what the clock measures, for the platforms
// without it.
func perOp(b *testing.B, unit string, per int, clock func() (time.Duration, bool), what string) func() {
	start, ok := clock()
	return func() {
		b.Helper()
		end, ok2 := clock()
		if !ok || !ok2 {
			b.Logf("%s not reported: this platform does not report %s", unit, what)
			return
		}
		b.ReportMetric(float64(end-start)/float64(b.N)/float64(max(per, 1)), unit)
	}
}

// Children returns the CPU time, user plus system, of the process's children that have
// ended and been waited for; ok is false where the platform does not report it.
func Children() (d time.Duration, ok bool) { return children() }

// Process returns the CPU time, user plus system, the process has used so far; ok is false
// where the platform does not report it.
func Process() (d time.Duration, ok bool) { return process() }
