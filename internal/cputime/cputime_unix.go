//go:build unix

package cputime

import (
	"syscall"
	"time"
)

func process() (time.Duration, bool) { return usage(syscall.RUSAGE_SELF) }

func children() (time.Duration, bool) { return usage(syscall.RUSAGE_CHILDREN) }

func usage(who int) (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
