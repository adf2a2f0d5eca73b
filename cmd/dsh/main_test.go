package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/coderuntime/quickjs"
	"go.uber.org/goleak"
)

// The test binary doubles as dsh's Code Mode worker: the runtime re-executes the current
// executable in its hidden mode, exactly as the real binary's main dispatches it.
func TestMain(m *testing.M) {
	if quickjs.IsWorker(os.Args[1:]) {
		os.Exit(quickjs.WorkerMain())
	}
	// The tests run this binary as dsh itself (for example as an MCP server of dsh, or to
	// be killed), with main's signal handling.
	if os.Getenv("DSH_TEST_AS_DSH") == "1" {
		os.Exit(mainArgs(os.Args[1:]))
	}
	// The tests run first; the PostgreSQL and Temporal servers they started stop before the
	// leak check.
	code := stopsTemporal{m}.Run()
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
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// sandbox is one test's world: a workspace (the working directory) and a dsh home.
type sandbox struct {
	t    *testing.T
	ws   string
	home string
	env  map[string]string
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(t.TempDir(), "dsh-home")
	return &sandbox{t: t, ws: ws, home: home, env: map[string]string{"DSH_HOME": home}}
}

// write creates a file in the workspace.
func (s *sandbox) write(name, text string) {
	s.t.Helper()
	p := filepath.Join(s.ws, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// result is one dsh invocation's outcome.
type result struct {
	code           int
	stdout, stderr string
}

// dsh runs one dsh command line in-process, in the sandbox.
func (s *sandbox) dsh(args ...string) result {
	s.t.Helper()
	return s.dshCtx(context.Background(), args...)
}

func (s *sandbox) dshCtx(ctx context.Context, args ...string) result {
	s.t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, cwd: s.ws, getenv: func(k string) string { return s.env[k] }}
	code := run(ctx, e, args)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// want checks the exit status, reporting the streams on failure.
func (r result) want(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	return r
}

var sessionLine = regexp.MustCompile(`session (\d{8}T\d{6}Z-[0-9a-f]{8}) · log (\S+)`)

// sessionID returns the id of the session a run or demo reported on stderr.
func sessionID(t *testing.T, stderr string) (id, path string) {
	t.Helper()
	m := sessionLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no session line in:\n%s", stderr)
	}
	return m[1], m[2]
}

// mustContain checks that s holds every one of wants.
func mustContain(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

// stopsTemporal runs the tests, then stops the Temporal dev server if one was started, so
// that neither it nor its goroutines outlive the tests.
type stopsTemporal struct{ m *testing.M }

func (s stopsTemporal) Run() int {
	code := s.m.Run()
	if err := temporalServer.Stop(); err != nil {
		os.Stderr.WriteString("stop the Temporal dev server: " + err.Error() + "\n")
		if code == 0 {
			code = 1
		}
	}
	return code
}
