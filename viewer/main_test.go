package viewer_test

import (
	"os"
	"testing"

	"github.com/dsh-go/dsh/internal/pgtest"
)

// pg is the PostgreSQL server of the tests over session/pgstore, started on first use.
var pg = pgtest.New()

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, pg)) }
