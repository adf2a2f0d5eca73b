//go:build !linux

package approval

import (
	"net"
	"syscall"
)

// errConnRefused is what dialing a socket nobody listens on fails with.
var errConnRefused = syscall.ECONNREFUSED

// withSocketAddr calls fn with path: outside Linux the socket's 0600 mode and its 0700
// directory are what keep other users out.
func withSocketAddr(path string, fn func(addr string) error) error { return fn(path) }

// checkPeer accepts every connection the socket's permissions let through.
func checkPeer(net.Conn) error { return nil }
