//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package session

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on an open log, so that two writers (two
// processes, or two resumes in one process) never append to the same session. Closing the
// file releases it.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("session: log %q is already open for writing: %w", f.Name(), ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("session: lock %q: %w", f.Name(), err)
	}
	return nil
}

// writerHolds reports whether another open file holds the writer's lock on the log at
// path: a dsh process has the session open for appending.
func writerHolds(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true
	}
	if err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return false
}
