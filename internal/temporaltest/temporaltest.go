// Package temporaltest gives tests a real Temporal dev server: the one named by
// DSH_TEST_TEMPORAL_ADDR, or the temporal CLI built by scripts/test-deps.sh started on free
// ports once per test binary and stopped when the tests end.
package temporaltest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Version is the temporal CLI version scripts/temporal.sh installs.
const Version = "v1.5.1"

// EnvAddr names the environment variable with the address of a running server to use.
const EnvAddr = "DSH_TEST_TEMPORAL_ADDR"

// Binary returns the path of the cached temporal CLI.
func Binary() (string, error) {
	dir := os.Getenv("XDG_CACHE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("temporaltest: no cache directory: %w", err)
		}
		dir = filepath.Join(home, ".cache")
	}
	return filepath.Join(dir, "dsh-test", "temporal-"+Version, "temporal"), nil
}

// Server is a dev server this package started.
type Server struct {
	Addr string
	cmd  *exec.Cmd
	dir  string
	done chan error
}

// Start starts a dev server on free loopback ports with its database in a new temporary
// directory and waits until it accepts connections or ctx ends.
func Start(ctx context.Context) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("temporaltest: the temporal CLI %s is missing (%v); run scripts/test-deps.sh", bin, err)
	}
	dir, err := os.MkdirTemp("", "dsh-temporal-*")
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(4)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	cmd := exec.Command(bin, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", strconv.Itoa(ports[0]), "--ui-port", strconv.Itoa(ports[1]),
		"--http-port", strconv.Itoa(ports[2]), "--metrics-port", strconv.Itoa(ports[3]),
		"--db-filename", filepath.Join(dir, "temporal.db"), "--log-level", "error")
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("temporaltest: start %s: %w", bin, err)
	}
	logf.Close()
	s := &Server{Addr: addr, cmd: cmd, dir: dir, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case err := <-s.done:
			s.done <- err
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			s.Stop()
			return nil, fmt.Errorf("temporaltest: the dev server exited (%v): %s", err, log)
		case <-ctx.Done():
			s.Stop()
			return nil, fmt.Errorf("temporaltest: the dev server did not listen on %s: %w", addr, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop ends the server (its whole process group) and removes its files.
func (s *Server) Stop() error {
	var err error
	if s.cmd.Process != nil {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	}
	return errors.Join(err, os.RemoveAll(s.dir))
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("temporaltest: free port: %w", err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// Shared is one server for a test binary, started on first use.
type Shared struct {
	once   sync.Once
	server *Server
	addr   string
	err    error
}

// Addr returns the server's address, starting it on first use. A server that cannot be
// started fails the test, naming what is missing.
func (sh *Shared) Addr(t testing.TB) string {
	t.Helper()
	sh.once.Do(func() {
		if a := os.Getenv(EnvAddr); a != "" {
			sh.addr = a
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		sh.server, sh.err = Start(ctx)
		if sh.err == nil {
			sh.addr = sh.server.Addr
		}
	})
	if sh.err != nil {
		t.Fatal(sh.err)
	}
	return sh.addr
}

// Stop stops the server if this Shared started one.
func (sh *Shared) Stop() error {
	if sh.server == nil {
		return nil
	}
	return sh.server.Stop()
}
