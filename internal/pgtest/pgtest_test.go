package pgtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

var srv = New()

func TestMain(m *testing.M) {
	code := m.Run()
	if err := srv.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if srv.dir != "" {
		if _, err := os.Stat(srv.dir); err == nil {
			fmt.Fprintf(os.Stderr, "Stop left %s behind\n", srv.dir)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// TestDatabase: each test gets its own working database, dropped when the test ends, on a
// server that does not run as root.
func TestDatabase(t *testing.T) {
	var first string
	t.Run("a", func(t *testing.T) {
		first = srv.Database(t)
		conn, err := pgx.Connect(t.Context(), first)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(t.Context(), "CREATE TABLE x (y int); INSERT INTO x VALUES (1)"); err != nil {
			t.Fatal(err)
		}
	})
	second := srv.Database(t)
	if second == first {
		t.Fatalf("two tests got the same database %s", first)
	}
	admin, err := srv.URL()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	name := first[strings.LastIndexByte(first, '/')+1:]
	var n int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil || n != 0 {
		t.Errorf("the first test's database %s is still there (%d, %v)", name, n, err)
	}
	if srv.cmd != nil {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", srv.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && f[1] == "0" {
				t.Errorf("postgres runs as root: %s", line)
			}
		}
	}
}
