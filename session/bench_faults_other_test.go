//go:build !unix

package session

// minorFaults reports that this platform has no page-fault count.
func minorFaults() (int64, bool) { return 0, false }
