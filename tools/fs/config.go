package fs

import "fmt"

// Defaults of Config's caps.
const (
	DefaultReadLimit         = 2000             // lines per read, and the largest limit accepted
	DefaultReadMaxLineLength = 2000             // UTF-16 code units per line before truncation
	DefaultReadMaxBytes      = 50 * 1024        // bytes of returned lines per read
	DefaultReadStreamMinSize = 10 * 1024 * 1024 // files this large are streamed
	DefaultDiffBasisMaxBytes = 10 * 1024 * 1024 // write diffs: larger sides get no contextual diff
)

// Config configures the file tools. The zero value of every cap selects its default.
type Config struct {
	// Root is the workspace directory every path is confined to; relative paths are
	// relative to it. Required.
	Root string
	// ReadLimit is the default and the largest number of lines one read returns.
	ReadLimit int
	// ReadMaxLineLength is how many UTF-16 code units of a line read shows before cutting it
	// with "... (line truncated to N chars)".
	ReadMaxLineLength int
	// ReadMaxBytes caps the UTF-8 bytes of the lines one read returns.
	ReadMaxBytes int
	// ReadStreamMinSize is the file size from which read streams the file in chunks instead
	// of reading it in one piece. Either way memory stays bounded by the window.
	ReadStreamMinSize int64
	// DiffBasisMaxBytes bounds the old and new content for which write computes a contextual
	// diff (its value's before is null beyond it).
	DiffBasisMaxBytes int64
	// ReadOnlyRoots are directories outside (or inside) the workspace whose files read may
	// also open, by absolute path, and which write and edit refuse with FS_SANDBOX_DENIED:
	// typically where tools save full outputs (spill files) that their results point the
	// model to. Each must exist; each is its own confining root with the workspace's
	// symbolic-link checks. A path belongs to the deepest root containing it, so a
	// read-only directory nested in the workspace stays read-only and a workspace nested in
	// a read-only directory stays writable.
	ReadOnlyRoots []string
	// Home is the user's dsh home (~/.dsh or $DSH_HOME). write and edit refuse every path
	// in it with FS_PROTECTED_PATH, as they refuse the workspace's .git and .dsh; empty
	// protects no home.
	Home string
	// OpenProtected lists paths inside the protected set that write and edit may change
	// after all, each with everything below it: relative to Root, or absolute. Only the
	// user should set it (dsh takes it from permissions.openProtected in the user's
	// configuration, the environment or a flag, never from a project's file).
	OpenProtected []string
	// NoObservation turns the observation policy off: write and edit then act on the current
	// file without requiring or checking an earlier read.
	NoObservation bool
	// Images, when set, adds the read_image tool, which stores the images it reads there
	// (a session's attachment store) so that the model receives them.
	Images ImageStore
	// ImageMaxBytes caps the size of an image file read_image accepts
	// (DefaultImageMaxBytes when zero).
	ImageMaxBytes int64
	// ImageMaxDimension is the longest side, in pixels, of the image the model receives;
	// larger images are downscaled (DefaultImageMaxDimension when zero).
	ImageMaxDimension int
	// ImageRefusal, when set, makes read_image refuse every call with this reason, e.g.
	// that the model in use takes no image input.
	ImageRefusal string
}

// withDefaults returns c with defaults filled in, or an error naming a negative cap.
func (c Config) withDefaults() (Config, error) {
	ints := []struct {
		name string
		v    *int
		def  int
	}{
		{"ReadLimit", &c.ReadLimit, DefaultReadLimit},
		{"ReadMaxLineLength", &c.ReadMaxLineLength, DefaultReadMaxLineLength},
		{"ReadMaxBytes", &c.ReadMaxBytes, DefaultReadMaxBytes},
		{"ImageMaxDimension", &c.ImageMaxDimension, DefaultImageMaxDimension},
	}
	for _, f := range ints {
		if *f.v < 0 {
			return c, fmt.Errorf("tools/fs: %s must be a positive integer, not %d", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	int64s := []struct {
		name string
		v    *int64
		def  int64
	}{
		{"ReadStreamMinSize", &c.ReadStreamMinSize, DefaultReadStreamMinSize},
		{"DiffBasisMaxBytes", &c.DiffBasisMaxBytes, DefaultDiffBasisMaxBytes},
		{"ImageMaxBytes", &c.ImageMaxBytes, DefaultImageMaxBytes},
	}
	for _, f := range int64s {
		if *f.v < 0 {
			return c, fmt.Errorf("tools/fs: %s must be a positive integer, not %d", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	return c, nil
}
