package approval

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// errConnRefused is what dialing a socket nobody listens on fails with.
var errConnRefused = syscall.ECONNREFUSED

// maxSocketPath is the longest path a unix socket address takes (sun_path less its NUL).
const maxSocketPath = 107

// withSocketAddr calls fn with an address for the socket at path. A path too long for a
// socket address (deep session directories are) is reached through the directory's file
// descriptor, /proc/self/fd/N/name, which the kernel resolves like the path itself.
func withSocketAddr(path string, fn func(addr string) error) error {
	if len(path) <= maxSocketPath {
		return fn(path)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	addr := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path))
	if len(addr) > maxSocketPath {
		return fmt.Errorf("socket name %q is too long", filepath.Base(path))
	}
	return fn(addr)
}

// checkPeer refuses a connection from another user (root may answer any session).
func checkPeer(conn net.Conn) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("not a unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("reading the peer's credentials: %w", cerr)
	}
	if me := uint32(os.Getuid()); cred.Uid != me && cred.Uid != 0 {
		return fmt.Errorf("user %d may not answer the questions of user %d's session", cred.Uid, me)
	}
	return nil
}
