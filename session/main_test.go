package session

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// crashChildEnv makes the test binary act as the crash-test writer (see crash_test.go).
const crashChildEnv = "DSH_SESSION_CRASH_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		os.Exit(crashChild())
	}
	goleak.VerifyTestMain(m)
}
