package durable

import "time"

// WaitForLease sets how long h pauses between two attempts to take a held session, and a
// function called before each pause.
func WaitForLease(h *Host, pause time.Duration, waiting func()) {
	h.leaseWait, h.waiting = pause, waiting
}
