//go:build linux

package durable_test

import "syscall"

// maxRSSKB is the process's peak resident set in KiB, as the kernel counts it.
func maxRSSKB() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Maxrss
}
