//go:build !unix

package main

import "testing"

// processCPU reports 0 where the process's CPU time is not read; the cpu-ns/event metric
// is then 0 and only the wall-time figures count.
func processCPU(b *testing.B) int64 {
	b.Helper()
	return 0
}

// childrenCPU reports 0 where the children's CPU time is not read.
func childrenCPU(b *testing.B) int64 {
	b.Helper()
	return 0
}
