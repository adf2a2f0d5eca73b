//go:build !unix

package session

import "time"

// minorFaults reports that this platform has no page-fault count.
func minorFaults() (faults int64, sys time.Duration, ok bool) { return 0, 0, false }
