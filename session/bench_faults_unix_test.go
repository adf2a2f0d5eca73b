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

// evictionMemory returns n bytes outside the Go heap (an anonymous mapping, filled), for
// benchDeriveCold to read between calls: on the heap they would raise the collector's goal
// and so change how often the calls being measured trigger collections. release unmaps it.
func evictionMemory(n int) (mem []byte, release func(), err error) {
	mem, err = syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	for i := range mem {
		mem[i] = byte(i)
	}
	return mem, func() { syscall.Munmap(mem) }, nil
}
