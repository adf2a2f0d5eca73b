//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package viewer

import (
	"errors"
	"os"
	"syscall"
)

// locked reports whether another open file holds the session log's writer lock: a dsh
// process is running the session and appending to it.
func locked(path string) bool {
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
