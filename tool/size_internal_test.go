package tool

import (
	"testing"
	"unsafe"
)

// TestCallStorageSizes pins the sizes of what every call allocates, each at the largest
// size of the allocator's class it is meant to fit: a field added to them moves the
// bare call to a larger class, which costs every call allocation and collection time.
func TestCallStorageSizes(t *testing.T) {
	tests := []struct {
		name      string
		size, max uintptr
	}{
		{"Invocation (the bare call)", unsafe.Sizeof(Invocation{}), 320},
		{"invocationWithHooks (a call on a registry with per-call hooks)", unsafe.Sizeof(invocationWithHooks{}), 704},
		{"renderedResult (a result with its one default-rendered block)", unsafe.Sizeof(renderedResult{}), 240},
	}
	for _, tt := range tests {
		if tt.size > tt.max {
			t.Errorf("%s is %d bytes, want at most %d", tt.name, tt.size, tt.max)
		}
	}
}
