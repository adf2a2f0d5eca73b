//go:build unix

package main

import (
	"syscall"
	"testing"
)

// processCPU is the user+system CPU time the process has used so far, in nanoseconds.
func processCPU(b *testing.B) int64 {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// childrenCPU is the user+system CPU time of the process's children that have been reaped
// so far (Code Mode workers), in nanoseconds.
func childrenCPU(b *testing.B) int64 {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
