// Package pgtest gives tests a real PostgreSQL server: a private one started once per test
// binary (initdb into a temporary directory, postgres on a free local port, run as a
// non-root user), or the server DSH_TEST_POSTGRES_URL names. Each test gets a fresh
// database, dropped when the test ends.
//
// A test binary creates one Server with New in TestMain and stops it after m.Run; the
// server starts on the first Database call, so binaries whose selected tests need no
// database start none.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable that points the tests at an existing server (an
// admin URL, e.g. postgres://postgres@127.0.0.1:5432/postgres) instead of a private one.
const EnvURL = "DSH_TEST_POSTGRES_URL"

// startTimeout bounds initdb plus the server's start-up.
const startTimeout = 2 * time.Minute

// Server is a PostgreSQL server for tests. Its methods are safe for concurrent use.
type Server struct {
	once     sync.Once
	startErr error

	admin  string // URL of the maintenance database
	dir    string // the private server's directory ("" for an external server)
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

// New returns a Server that starts on first use.
func New() *Server { return &Server{} }

// Database creates a fresh database for t and returns its URL; the database is dropped
// when t ends. A server that cannot be started fails t with the reason.
func (s *Server) Database(t testing.TB) string {
	t.Helper()
	s.once.Do(func() { s.startErr = s.start() })
	if s.startErr != nil {
		t.Fatalf("pgtest: %v", s.startErr)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "dsh_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(s.admin)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// URL returns the server's maintenance database URL, starting the server if needed.
func (s *Server) URL() (string, error) {
	s.once.Do(func() { s.startErr = s.start() })
	return s.admin, s.startErr
}

func (s *Server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.admin)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// BinDir returns the directory of the newest installed PostgreSQL server binaries, or
// an error naming scripts/test-deps.sh, which installs them.
func BinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	dirs = slices.DeleteFunc(dirs, func(d string) bool {
		_, err1 := os.Stat(filepath.Join(d, "initdb"))
		_, err2 := os.Stat(filepath.Join(d, "postgres"))
		return err1 != nil || err2 != nil
	})
	if len(dirs) == 0 {
		return "", errors.New("no PostgreSQL server binaries (initdb, postgres) under /usr/lib/postgresql/*/bin: run scripts/test-deps.sh, which installs Debian's postgresql package")
	}
	version := func(d string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return n
	}
	slices.SortFunc(dirs, func(a, b string) int { return version(a) - version(b) })
	return dirs[len(dirs)-1], nil
}

// start runs initdb and the server, or adopts DSH_TEST_POSTGRES_URL.
func (s *Server) start() error {
	if u := os.Getenv(EnvURL); u != "" {
		s.admin = u
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		if err := s.exec(ctx, "SELECT 1"); err != nil {
			return fmt.Errorf("the server %s names does not answer: %v", EnvURL, err)
		}
		return nil
	}
	bin, err := BinDir()
	if err != nil {
		return err
	}
	cred, uid, gid, err := serverUser()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "dsh-pgtest-")
	if err != nil {
		return err
	}
	s.dir = dir
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	for _, d := range []string{data, sock} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	if cred != nil {
		// The server runs as the postgres user: it owns its directories, and may reach them.
		if err := os.Chmod(dir, 0o755); err != nil {
			return err
		}
		for _, d := range []string{dir, data, sock} {
			if err := os.Chown(d, uid, gid); err != nil {
				return fmt.Errorf("hand %s to the postgres user: %w", d, err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "dsh", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.log = filepath.Join(dir, "server.log")
	logf, err := os.Create(s.log)
	if err != nil {
		return err
	}
	defer logf.Close()
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", sock,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	s.cmd.Stdout, s.cmd.Stderr, s.cmd.Dir = logf, logf, dir
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	s.exited = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	s.admin = fmt.Sprintf("postgres://dsh@127.0.0.1:%d/postgres?sslmode=disable", port)
	for {
		err := s.exec(ctx, "SELECT 1")
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("postgres exited during start-up: %s", s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("postgres did not accept connections within %s (%v): %s", startTimeout, err, s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// logTail returns the end of the server's log, for error messages.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}

// serverUser returns the credential to run the server with: none when the tests are not
// root, else the postgres user's (the server refuses to run as root).
func serverUser() (*syscall.Credential, int, int, error) {
	if os.Geteuid() != 0 {
		return nil, 0, 0, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, 0, 0, fmt.Errorf("the tests run as root and PostgreSQL will not, but there is no postgres user to run it as (%v): run scripts/test-deps.sh, whose postgresql package creates it", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid, gid, nil
}

// freePort returns a local TCP port nobody listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Stop shuts a private server down (a fast shutdown: SIGINT, then a bounded wait) and
// removes its directory. Stop on a server never started, or an external one, does nothing.
func (s *Server) Stop() error {
	if s.cmd == nil {
		if s.dir != "" {
			return os.RemoveAll(s.dir)
		}
		return nil
	}
	var err error
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.exited
		err = errors.New("postgres did not stop within a minute of SIGINT; killed it")
	}
	if rerr := os.RemoveAll(s.dir); rerr != nil && err == nil {
		err = rerr
	}
	return err
}
