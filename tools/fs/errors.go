package fs

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"syscall"

	"github.com/dsh-go/dsh/tool"
)

// ErrorName is the error class name of every filesystem failure (error.info.name).
const ErrorName = "FsError"

// Filesystem error codes (docs/behaviour.md §5.2). They reach results as error.info.code.
const (
	CodeNotFound         = "FS_NOT_FOUND"
	CodeNotDirectory     = "FS_NOT_DIRECTORY"
	CodeNotText          = "FS_NOT_TEXT"
	CodeNotRegularFile   = "FS_NOT_REGULAR_FILE"
	CodeTooLarge         = "FS_TOO_LARGE"
	CodePermissionDenied = "FS_PERMISSION_DENIED"
	CodeSandboxDenied    = "FS_SANDBOX_DENIED"
	CodeProtectedPath    = "FS_PROTECTED_PATH"
	CodeIOError          = "FS_IO_ERROR"
	CodeStaleVersion     = "FS_STALE_VERSION"
	CodeNotObserved      = "FS_NOT_OBSERVED"
	CodeAmbiguousEdit    = "FS_AMBIGUOUS_EDIT"
	CodeEditNotFound     = "FS_EDIT_NOT_FOUND"
	CodeAborted          = "FS_ABORTED"
)

// fsError returns a coded filesystem error.
func fsError(code, format string, args ...any) *tool.Error {
	return &tool.Error{Name: ErrorName, Code: code, Message: fmt.Sprintf(format, args...)}
}

// remedies are appended to the two guarded-mutation failures at the model boundary: the
// message states the condition, the remedy the only recovery that works.
var remedies = map[string]string{
	CodeStaleVersion: "re-read the file, then retry",
	CodeNotObserved:  "read the file, then retry",
}

// remediate appends the recovery instruction to FS_STALE_VERSION and FS_NOT_OBSERVED
// failures, keeping the code and chaining the original error.
func remediate(err error) error {
	var te *tool.Error
	if !errors.As(err, &te) || te.Name != ErrorName {
		return err
	}
	remedy, ok := remedies[te.Code]
	if !ok {
		return err
	}
	return &tool.Error{Name: ErrorName, Code: te.Code, Message: te.Message + " — " + remedy, Err: te}
}

// ioError maps an operating-system error of op (read, write, edit) on display to a coded
// error: permission problems to FS_PERMISSION_DENIED, a vanished file to FS_NOT_FOUND, a
// workspace escape detected by os.Root to FS_SANDBOX_DENIED, anything else to FS_IO_ERROR.
func ioError(op, display string, err error) error {
	var te *tool.Error
	if errors.As(err, &te) {
		return err
	}
	switch {
	case errors.Is(err, iofs.ErrPermission), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return &tool.Error{Name: ErrorName, Code: CodePermissionDenied, Message: fmt.Sprintf("cannot %s %q: permission denied", op, display), Err: err}
	case errors.Is(err, iofs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return &tool.Error{Name: ErrorName, Code: CodeNotFound, Message: fmt.Sprintf("cannot %s %q: not found", op, display), Err: err}
	case isEscape(err):
		return &tool.Error{Name: ErrorName, Code: CodeSandboxDenied, Message: fmt.Sprintf("cannot %s %q: the path leads outside the workspace", op, display), Err: err}
	}
	return &tool.Error{Name: ErrorName, Code: CodeIOError, Message: fmt.Sprintf("cannot %s %q: %s", op, display, causeText(err)), Err: err}
}

// causeText is the innermost message of an operating-system error, without the operation and
// path a *PathError repeats (the coded message names the path already).
func causeText(err error) string {
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}

// isEscape reports whether err is os.Root's refusal of a path that leaves the root. The
// standard library does not export that error, so it is recognised by its text; Resolve's
// explicit checks refuse every escape first, so this only matters for a concurrent swap.
func isEscape(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}
