package fs

import (
	"bytes"
	"context"
	"errors"
	"hash/maphash"
	"io"
	iofs "io/fs"
	"math/rand/v2"
	"os"
	"path"
	"strconv"
	"syscall"
)

// chunkSize is the read size of streamed files.
const chunkSize = 1 << 20

// errAbsent reports that a target does not exist.
var errAbsent = errors.New("absent")

// openFile opens target for reading without following it anywhere its root does not allow,
// and returns the open file with its stat. A missing file (or a missing parent) is
// errAbsent; other failures are coded errors for op on target.Path.
func (t *Tools) openFile(op string, target Target) (*os.File, iofs.FileInfo, error) {
	root, display := t.ws.root, target.Path
	if target.ws != nil {
		root = target.ws.root
	}
	f, err := root.OpenFile(target.Rel, openReadFlags, 0)
	if err != nil {
		switch {
		case errors.Is(err, iofs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			return nil, nil, errAbsent
		case errors.Is(err, syscall.ENXIO), errors.Is(err, syscall.EOPNOTSUPP):
			return nil, nil, fsError(CodeNotRegularFile, "cannot %s %q: not a regular file", op, display)
		}
		return nil, nil, ioError(op, display, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, ioError(op, display, err)
	}
	return f, fi, nil
}

// readAll reads f to the end and returns the hash of everything it read. It also returns the
// content when it is at most keep bytes long and, with dropBinary, holds no NUL byte;
// otherwise data is nil (hashing goes on, memory does not grow). sawNUL reports a NUL byte
// anywhere. Cancellation between chunks fails with FS_ABORTED.
func (t *Tools) readAll(ctx context.Context, op, display string, f *os.File, sizeHint, keep int64, dropBinary bool) (data []byte, sum uint64, sawNUL bool, err error) {
	var h maphash.Hash
	h.SetSeed(t.seed)
	keeping := keep >= 0
	if keeping {
		data = make([]byte, 0, min(max(sizeHint, 0), keep, 1<<30)+1)
	}
	buf := make([]byte, chunkSize)
	for {
		if ctx.Err() != nil {
			return nil, 0, false, fsError(CodeAborted, "%s aborted", op)
		}
		n, rerr := f.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			h.Write(chunk)
			if !sawNUL && bytes.IndexByte(chunk, 0) >= 0 {
				sawNUL = true
				if dropBinary {
					keeping, data = false, nil
				}
			}
			if keeping {
				if int64(len(data)+n) > keep {
					keeping, data = false, nil
				} else {
					data = append(data, chunk...)
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, 0, false, ioError(op, display, rerr)
		}
	}
	return data, h.Sum64(), sawNUL, nil
}

// sumOf returns the content hash of data.
func (t *Tools) sumOf(data []byte) uint64 {
	return maphash.Bytes(t.seed, data)
}

// writeAtomic publishes data at rel: it writes a temporary file in the same directory,
// syncs it, gives it perm (for a replaced file; a new file gets 0666 less the umask), and
// renames it over rel. With noClobber it publishes with a hard link instead, which fails if
// rel appeared meanwhile (FS_NOT_OBSERVED). Missing parent directories are created. It returns
// the stat of the published file (nil if it vanished at once).
func (t *Tools) writeAtomic(ctx context.Context, op, display, rel string, data []byte, perm iofs.FileMode, replace, noClobber bool) (iofs.FileInfo, error) {
	if ctx.Err() != nil {
		return nil, fsError(CodeAborted, "%s aborted", op)
	}
	root := t.ws.root
	dir := path.Dir(rel)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o777); err != nil {
			if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EEXIST) {
				return nil, fsError(CodeNotFound, "cannot resolve %q: a parent path segment is not a directory", display)
			}
			return nil, ioError(op, display, err)
		}
	}
	createPerm := iofs.FileMode(0o666)
	if replace {
		createPerm = 0o600 // widened to perm only once the content is complete
	}
	var tmp string
	var f *os.File
	for range 10 {
		tmp = path.Join(dir, ".dsh-"+strconv.FormatUint(rand.Uint64(), 36)+".tmp")
		var err error
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, createPerm)
		if err == nil {
			break
		}
		if !errors.Is(err, iofs.ErrExist) {
			return nil, ioError(op, display, err)
		}
	}
	if f == nil {
		return nil, fsError(CodeIOError, "cannot %s %q: no free temporary file name", op, display)
	}
	published := false
	defer func() {
		if !published {
			root.Remove(tmp)
		}
	}()
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err == nil && replace {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, ioError(op, display, err)
	}
	if ctx.Err() != nil {
		return nil, fsError(CodeAborted, "%s aborted", op)
	}
	if noClobber {
		if err := root.Link(tmp, rel); err != nil {
			if fi, lerr := root.Lstat(rel); lerr == nil {
				if !fi.Mode().IsRegular() {
					return nil, fsError(CodeNotRegularFile, "cannot %s %q: not a regular file", op, display)
				}
				return nil, fsError(CodeNotObserved, "cannot overwrite existing %q without reading it first", display)
			}
			if errors.Is(err, iofs.ErrExist) {
				return nil, fsError(CodeNotObserved, "cannot overwrite existing %q without reading it first", display)
			}
			return nil, ioError(op, display, err)
		}
		published = true
		root.Remove(tmp)
	} else {
		if err := root.Rename(tmp, rel); err != nil {
			return nil, ioError(op, display, err)
		}
		published = true
	}
	fi, err := root.Stat(rel)
	if err != nil {
		return nil, nil // replaced or removed at once: the next guarded mutation fails stale
	}
	return fi, nil
}
