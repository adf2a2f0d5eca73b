//go:build !unix

package session

import (
	"errors"
	"time"
)

// minorFaults reports that this platform has no page-fault count.
func minorFaults() (faults int64, sys time.Duration, ok bool) { return 0, 0, false }

// evictionMemory reports that this platform has no memory outside the Go heap for
// benchDeriveCold.
func evictionMemory(n int) (mem []byte, release func(), err error) {
	return nil, nil, errors.New("no anonymous mappings on this platform")
}
