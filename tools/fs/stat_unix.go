//go:build unix

package fs

import (
	iofs "io/fs"
	"os"
	"syscall"
)

// openReadFlags opens without blocking, so a file swapped for a FIFO between the type check
// and the open cannot hang a read; the open descriptor is then checked to be a regular file.
const openReadFlags = os.O_RDONLY | syscall.O_NONBLOCK

// identityOf returns the device, inode, link count and change time of fi, which came from
// stat on a Unix system.
func identityOf(fi iofs.FileInfo) (dev, ino, nlink uint64, ctime int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 1, 0
	}
	sec, nsec := ctimeOf(st)
	return uint64(st.Dev), uint64(st.Ino), uint64(st.Nlink), sec*1e9 + nsec
}
