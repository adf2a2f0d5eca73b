package codemode_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/coderuntime/quickjs"
)

// The test binary doubles as the QuickJS worker of the end-to-end tests.
func TestMain(m *testing.M) {
	if quickjs.IsWorker(os.Args[1:]) {
		os.Exit(quickjs.WorkerMain())
	}
	goleak.VerifyTestMain(m)
}
