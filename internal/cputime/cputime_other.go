//go:build !unix

package cputime

import "time"

// process reports nothing where getrusage does not exist.
func process() (time.Duration, bool) { return 0, false }

// children reports nothing where getrusage does not exist.
func children() (time.Duration, bool) { return 0, false }
