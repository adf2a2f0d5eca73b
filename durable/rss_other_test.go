//go:build !linux

package durable_test

// maxRSSKB is unknown on this platform.
func maxRSSKB() int64 { return -1 }
