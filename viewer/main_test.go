package viewer_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/dsh-go/dsh/internal/pgtest"
	"go.uber.org/goleak"
)

// pg is the PostgreSQL server of the tests over session/pgstore, started on first use.
var pg = pgtest.New()

func TestMain(m *testing.M) {
	code := m.Run()
	if err := pg.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
