package pgtest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Main is the TestMain of a test binary whose only shared server is s: it runs the tests,
// stops s, and, when everything passed, checks that no goroutine leaked. It returns the
// exit code for os.Exit.
func Main(m *testing.M, s *Server, leakOpts ...goleak.Option) int {
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(leakOpts...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}
