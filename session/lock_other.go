//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package session

import "os"

// lockFile does nothing where advisory file locks are not available: the caller must
// ensure a session has one writer.
func lockFile(*os.File) error { return nil }

// writerHolds reports false: without advisory locks a writer cannot be told apart.
func writerHolds(string) bool { return false }
