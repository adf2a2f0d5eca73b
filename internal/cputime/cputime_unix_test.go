//go:build unix

package cputime

import "testing"

func TestProcessGrowsWithWork(t *testing.T) {
	before, ok := Process()
	if !ok {
		t.Fatal("Process: not reported on a unix")
	}
	if before <= 0 {
		t.Fatalf("Process = %v before any work; a running process has used some CPU", before)
	}
	_ = burn()
	after, ok := Process()
	if !ok {
		t.Fatal("Process: not reported the second time")
	}
	if after <= before {
		t.Fatalf("Process went from %v to %v across a CPU-bound loop; want it to grow", before, after)
	}
}
