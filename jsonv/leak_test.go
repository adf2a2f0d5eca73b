package jsonv

import (
	"testing"

	"go.uber.org/goleak"
)

// verifyNoLeaks runs the tests and fails if any goroutine outlives them.
func verifyNoLeaks(m *testing.M) { goleak.VerifyTestMain(m) }
