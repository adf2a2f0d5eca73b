package cputime

import (
	"crypto/sha256"
	"testing"
)

// burn does a fixed amount of work on this goroutine (a few milliseconds of CPU).
func burn() [32]byte {
	sum := sha256.Sum256(nil)
	for range 200_000 {
		sum = sha256.Sum256(sum[:])
	}
	return sum
}

func BenchmarkPerOp(b *testing.B) {
	defer PerOp(b, "cpu-ns/op", 1)()
	sum := sha256.Sum256(nil)
	for b.Loop() {
		sum = sha256.Sum256(sum[:])
	}
}
