//go:build !linux

package quickjs

import (
	"errors"
	"io"
	"os"
)

// startProcess is unavailable: worker processes rely on Linux process controls (parent
// death signal, RLIMIT_DATA, /proc accounting). Use Config.InProcess elsewhere.
func startProcess(argv []string, stderr io.Writer, onSpawn func(int)) (workerProcess, error) {
	return nil, errors.New("worker processes are only supported on Linux; use InProcess")
}

func setDataLimit(n int64) error { return errors.ErrUnsupported }

// workerInput and workerOutput are the worker process's standard input and output.
func workerInput() io.Reader { return os.Stdin }

func workerOutput() io.Writer { return os.Stdout }
