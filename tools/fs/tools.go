package fs

import (
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"unicode"

	"github.com/dsh-go/dsh/internal/protect"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// Tools is one configured set of the file tools: a workspace, the observation state they
// share and the three definitions. Register the definitions with [Tools.Register] or use
// [Install]; Close releases the workspace when the tools are gone.
type Tools struct {
	cfg   Config
	ws    *Workspace
	ro    []*Workspace  // Config.ReadOnlyRoots
	prot  *protect.Set  // the protected paths write and edit refuse
	obs   *observations // nil with Config.NoObservation
	locks keyLocks
	seed  maphash.Seed
	// editMax bounds the files edit loads (editMaxBytes; lowered by tests).
	editMax int64

	read, write, edit *tool.Definition
	readImage         *tool.Definition // nil without Config.Images
}

// New opens the workspace of cfg and builds the read, write and edit tools.
func New(cfg Config) (*Tools, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ws, err := OpenWorkspace(cfg.Root)
	if err != nil {
		return nil, err
	}
	prot, err := protect.New(protect.Config{Workspace: cfg.Root, Home: cfg.Home, Open: cfg.OpenProtected})
	if err != nil {
		ws.Close()
		return nil, fmt.Errorf("tools/fs: %w", err)
	}
	ro, err := openReadOnlyRoots(cfg.ReadOnlyRoots)
	if err != nil {
		ws.Close()
		return nil, err
	}
	t := &Tools{cfg: cfg, ws: ws, ro: ro, prot: prot, seed: maphash.MakeSeed(), editMax: editMaxBytes}
	if !cfg.NoObservation {
		t.obs = newObservations()
	}
	if t.read, err = t.newRead(); err == nil {
		if t.write, err = t.newWrite(); err == nil {
			t.edit, err = t.newEdit()
		}
	}
	if err == nil && cfg.Images != nil {
		t.readImage, err = t.newReadImage()
	}
	if err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Install builds the file tools for cfg and registers read, write and edit globally on reg.
// undo unregisters them and closes the workspace.
func Install(reg *tool.Registry, cfg Config) (undo func(), err error) {
	t, err := New(cfg)
	if err != nil {
		return nil, err
	}
	unregister, err := t.Register(reg.Global())
	if err != nil {
		t.Close()
		return nil, err
	}
	return func() {
		unregister()
		t.Close()
	}, nil
}

// Register registers read, write and edit on scope; the returned function unregisters
// exactly them. On error nothing stays registered.
func (t *Tools) Register(scope *tool.Scope) (unregister func(), err error) {
	var undos []func()
	undo := func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}
	for _, def := range t.Definitions() {
		u, err := scope.Register(def)
		if err != nil {
			undo()
			return nil, fmt.Errorf("tools/fs: register %s: %w", def.Name, err)
		}
		undos = append(undos, u)
	}
	return undo, nil
}

// Definitions returns the read, write and edit definitions, in that order, then
// read_image when Config.Images is set.
func (t *Tools) Definitions() []*tool.Definition {
	defs := []*tool.Definition{t.read, t.write, t.edit}
	if t.readImage != nil {
		defs = append(defs, t.readImage)
	}
	return defs
}

// ReadImage returns the read_image tool, or nil without Config.Images.
func (t *Tools) ReadImage() *tool.Definition { return t.readImage }

// Read returns the read tool.
func (t *Tools) Read() *tool.Definition { return t.read }

// Protected returns the protected paths write and edit refuse (FS_PROTECTED_PATH): the
// workspace's .git (and what a .git file or link points to), its .dsh and Config.Home,
// absolute and clean; some may not exist yet. Paths opened by Config.OpenProtected are
// still listed; OpenedProtected lists those. A sandbox should mount the protected paths
// that exist read-only.
func (t *Tools) Protected() []string { return t.prot.Paths() }

// OpenedProtected returns Config.OpenProtected made absolute: the exceptions to Protected.
func (t *Tools) OpenedProtected() []string { return t.prot.Opened() }

// Close releases the workspace and the read-only roots. Calls still running fail; later
// calls fail.
func (t *Tools) Close() error {
	errs := []error{t.ws.Close()}
	for _, r := range t.ro {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

// Guidance returns what the system prompt should tell the model about the file tools, one
// paragraph per tool in the order read, write, edit.
func (t *Tools) Guidance() []string {
	g := []string{
		"Inspect text files with the read tool rather than shell commands such as cat. Its lines come numbered; page through long files with offset and limit.",
		"Use the write tool to create a file or to replace all of its content. Read an existing file before overwriting it, and prefer edit for changes to part of a file.",
		"Use the edit tool for targeted changes to an existing text file: it replaces the literal old_string with new_string, which must occur exactly once unless replace_all is true; add surrounding text to make old_string unique. Read the file first unless this session just wrote or edited it.",
	}
	if t.obs == nil {
		g[1] = "Use the write tool to create a file or to replace all of its content; prefer edit for changes to part of a file."
		g[2] = "Use the edit tool for targeted changes to an existing text file: it replaces the literal old_string with new_string, which must occur exactly once unless replace_all is true; add surrounding text to make old_string unique."
	}
	// Protected paths: say so once, so the model does not retry what will always be refused.
	g[1] += " The workspace's .git and .dsh directories (and dsh's own home) are read-only to write and edit; change them only if the user has opened them."
	if len(t.ro) > 0 {
		g[0] += " When a tool result says its full output was saved to a file, read that file with its absolute path; such files can be read but not written or edited."
	}
	return g
}

// observe records what the calling agent saw of target (no-op without the policy, and for
// files of read-only roots, which are never written).
func (t *Tools) observe(call *tool.Call, target Target, ob observation) {
	if t.obs != nil && (target.ws == nil || !target.ws.readOnly) {
		t.obs.set(call.Agent(), target.Rel, ob)
	}
}

// blank reports whether s is empty or only whitespace, as JavaScript's trim sees it.
func blank(s string) bool {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '\uFEFF' }) == ""
}

// errBlankPath is the argument error of an empty file_path.
var errBlankPath = errors.New("file_path must be a non-empty string")

// mustSchema parses a schema literal of this package.
func mustSchema(src string) any {
	v, err := jsonv.ParseString(src)
	if err != nil {
		panic(fmt.Sprintf("tools/fs: bad schema literal: %v", err))
	}
	return v
}

// jsNumber formats f as JavaScript's String(f) does.
func jsNumber(f float64) string {
	b, err := jsonv.Marshal(f)
	if err != nil {
		return fmt.Sprint(f)
	}
	return string(b)
}
