package durable_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/internal/pgtest"
	"github.com/dsh-go/dsh/internal/temporaltest"
)

// server is the Temporal dev server of the end-to-end tests, started on first use.
var server temporaltest.Shared

// pg is the PostgreSQL server of the benchmarks whose session logs live in PostgreSQL,
// started on first use.
var pg = pgtest.New()

func TestMain(m *testing.M) {
	code := m.Run()
	if err := server.Stop(); err != nil && code == 0 {
		code = 1
	}
	if err := pg.Stop(); err != nil {
		os.Stderr.WriteString("pgtest: " + err.Error() + "\n")
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
