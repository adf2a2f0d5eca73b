package durable_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/internal/temporaltest"
)

// server is the Temporal dev server of the end-to-end tests, started on first use.
var server temporaltest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	if err := server.Stop(); err != nil && code == 0 {
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
			goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
			goleak.IgnoreAnyFunction("go.temporal.io/sdk/internal.(*sharedWorkerPoller).Run")); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
