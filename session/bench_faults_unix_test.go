//go:build unix

package session

import (
	"syscall"
	"time"
)

// minorFaults returns the process's minor page faults so far (pages the kernel mapped
// in, zero-filled, on first touch) and the CPU time it has spent in the kernel, and whether
// the platform reports them.
func minorFaults() (faults int64, sys time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, false
	}
	return int64(ru.Minflt), time.Duration(ru.Stime.Nano()), true
}
