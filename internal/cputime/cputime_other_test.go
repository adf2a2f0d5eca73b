//go:build !unix

package cputime

import "testing"

func TestProcessNotReported(t *testing.T) {
	_ = burn()
	if d, ok := Process(); ok || d != 0 {
		t.Fatalf("Process = %v, %v where the platform has no source; want 0, false", d, ok)
	}
}
