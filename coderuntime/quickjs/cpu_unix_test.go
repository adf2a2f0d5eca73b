//go:build unix

package quickjs

import (
	"syscall"
	"testing"
)

// rusageCPU returns the user+system CPU time of this process and of its reaped children,
// in nanoseconds.
func rusageCPU(b *testing.B) (self, children int64) {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	self = ru.Utime.Nano() + ru.Stime.Nano()
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return self, ru.Utime.Nano() + ru.Stime.Nano()
}
