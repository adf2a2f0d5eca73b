//go:build !unix

package fs

import (
	iofs "io/fs"
	"os"
)

// openReadFlags opens for reading; platforms without O_NONBLOCK have no FIFOs to fear.
const openReadFlags = os.O_RDONLY

// identityOf returns no identity: outside Unix the version relies on size, modification time
// and the content hash, and hard links are not detected.
func identityOf(iofs.FileInfo) (dev, ino, nlink uint64, ctime int64) { return 0, 0, 1, 0 }
