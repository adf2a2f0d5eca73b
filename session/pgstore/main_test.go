package pgstore_test

import (
	"os"
	"testing"

	"github.com/dsh-go/dsh/internal/pgtest"
)

// pg is this test binary's PostgreSQL server, started on first use.
var pg = pgtest.New()

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, pg)) }
