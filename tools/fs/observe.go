package fs

import (
	iofs "io/fs"
	"runtime"
	"sync"
	"weak"

	"github.com/dsh-go/dsh/tool"
)

// version is a file's freshness token: identity and times from stat plus a keyed hash of the
// content (see the package documentation for why both).
type version struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds
	sum          uint64
}

// statVersion returns the metadata part of a version (sum zero).
func statVersion(fi iofs.FileInfo) version {
	dev, ino, _, ctime := identityOf(fi)
	return version{dev: dev, ino: ino, size: fi.Size(), mtime: fi.ModTime().UnixNano(), ctime: ctime}
}

// sameMeta reports whether a and b agree on everything but the content hash.
func (a version) sameMeta(b version) bool {
	a.sum, b.sum = 0, 0
	return a == b
}

// observation is what an owner last saw of a target: present at a version, or absent.
type observation struct {
	present bool
	v       version
}

// observations is the per-owner observed-file state of the observation policy. Owners are
// agent scopes, held weakly so that a collected scope frees its state; calls without an
// agent share the direct owner.
type observations struct {
	mu     sync.Mutex
	owners map[weak.Pointer[tool.Scope]]map[string]observation
	direct map[string]observation
}

func newObservations() *observations {
	return &observations{owners: map[weak.Pointer[tool.Scope]]map[string]observation{}, direct: map[string]observation{}}
}

// get returns what owner last observed of key.
func (o *observations) get(owner *tool.Scope, key string) (observation, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.direct
	if owner != nil {
		m = o.owners[weak.Make(owner)]
	}
	ob, ok := m[key]
	return ob, ok
}

// set records an observation of key by owner.
func (o *observations) set(owner *tool.Scope, key string, ob observation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if owner == nil {
		o.direct[key] = ob
		return
	}
	wp := weak.Make(owner)
	m, ok := o.owners[wp]
	if !ok {
		m = map[string]observation{}
		o.owners[wp] = m
		runtime.AddCleanup(owner, o.drop, wp)
	}
	m[key] = ob
}

// drop forgets the state of a collected owner.
func (o *observations) drop(wp weak.Pointer[tool.Scope]) {
	o.mu.Lock()
	delete(o.owners, wp)
	o.mu.Unlock()
}

// ownerCount reports how many agent owners hold state (for tests).
func (o *observations) ownerCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.owners)
}

// keyLocks serializes mutations of one canonical path, so that a guard check, the read of
// the current content and the atomic replacement form one critical section.
type keyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks key and returns its unlock function.
func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
