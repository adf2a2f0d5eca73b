package shell

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Containment: how the runner makes sure nothing a command started outlives its call, or
// the process that runs the runner.
//
//   - Each command runs in its own process group, and its direct child gets SIGKILL as a
//     parent-death signal (see spawn for the thread this is tied to).
//   - The runner's process is a child subreaper: a descendant whose parent exits (a double
//     fork, "setsid cmd &", "nohup cmd &") is re-parented to it rather than to init, so it
//     can still be found, killed and reaped when the call ends.
//   - A command's descendants are found by three marks, any of which is enough: its process
//     group, its own cgroup (where cgroup v2 is writable) and a variable in its environment
//     (markerVar) that children inherit. Leaving the group (setsid) keeps the other two;
//     only a process that both leaves the cgroup (which needs write access to another one)
//     and scrubs its environment can hide, and the bwrap sandbox's PID namespace closes even
//     that.
//   - A guard process (a tiny /bin/sh script) holds the read end of a pipe whose write end
//     only the runner holds. When the runner's process dies in any way, SIGKILL included,
//     the pipe reaches end of file and the guard kills every command cgroup, every
//     registered process group and every process carrying the runner's marker.
//   - Resource limits: pids.max and memory.max of the command's cgroup where those cgroup
//     controllers are available, otherwise RLIMIT_NPROC and RLIMIT_AS set by the shell
//     before it runs the command.

// markerVar is the environment variable that marks every process a command starts. Its
// value is "<runner id>-<command number>".
const markerVar = "DSH_SHELL_RUN"

// startTime returns the start time of process pid, or 0 when it cannot be read.
func startTime(pid int) uint64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	e, _ := parseStatFull(data)
	return e.start
}

// becomeSubreaper makes this process a child subreaper. It is idempotent.
func becomeSubreaper() error { return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// procEntry is one process of the process table.
type procEntry struct {
	pid, ppid, pgrp int
	state           byte
	start           uint64 // start time, in clock ticks since boot
}

func (e procEntry) live() bool { return e.state != 'Z' && e.state != 'X' }

// parseStatFull reads pid, state, ppid, process group and start time from /proc/<pid>/stat:
// "pid (comm) state ppid pgrp ... starttime ...", where comm may contain spaces and
// parentheses. A line too short to hold the start time leaves it 0.
func parseStatFull(data []byte) (procEntry, bool) {
	open := bytes.IndexByte(data, ' ')
	i := bytes.LastIndexByte(data, ')')
	if open < 0 || i < open {
		return procEntry{}, false
	}
	pid, err := strconv.Atoi(string(data[:open]))
	if err != nil {
		return procEntry{}, false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return procEntry{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return procEntry{}, false
	}
	e := procEntry{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0]}
	if len(f) > 19 {
		e.start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	}
	return e, true
}

// readProc returns the process table. ok is false when /proc cannot be read.
func readProc() (entries []procEntry, ok bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, false
	}
	var buf [1024]byte // a stat line is about 300 bytes
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		fd, err := unix.Open("/proc/"+n+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		k, err := unix.Read(fd, buf[:])
		unix.Close(fd)
		if err != nil || k <= 0 {
			continue
		}
		if e, ok := parseStatFull(buf[:k]); ok {
			entries = append(entries, e)
		}
	}
	return entries, true
}

// hasMarker reports whether process pid's environment holds marker ("NAME=value").
func hasMarker(pid int, marker string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for kv := range bytes.SplitSeq(data, []byte{0}) {
		if string(kv) == marker {
			return true
		}
	}
	return false
}

// family identifies the processes of one command: its process group, its cgroup and its
// environment marker.
type family struct {
	leader int // the command's own process, reaped by os/exec
	pgid   int
	marker string
	cg     *cgroup // nil without cgroups
	start  uint64  // the leader's start time: no descendant started earlier

	mu   sync.Mutex
	seen map[int]uint64 // every process once found to be a member: pid → start time
}

// member reports whether e belongs to the command. inCg is the cgroup's member list.
func (f *family) member(e procEntry, inCg map[int]bool) bool {
	if e.pid == os.Getpid() {
		return false
	}
	if e.pgrp == f.pgid || inCg[e.pid] {
		return true
	}
	f.mu.Lock()
	start, seen := f.seen[e.pid]
	f.mu.Unlock()
	if seen && start == e.start {
		// The same process (a recycled pid starts later): a zombie no longer shows its
		// environment, nor does a process on its way out that has left its cgroup.
		return true
	}
	// Only a process started after the command can descend from it; reading the
	// environment of the others would cost most of a scan.
	return e.live() && e.start >= f.start && hasMarker(e.pid, f.marker)
}

// members scans the process table for the command's processes: those alive, and zombies
// this process must reap. ok is false when /proc cannot be read.
func (f *family) members() (live []int, zombies []int, ok bool) {
	entries, ok := readProc()
	if !ok {
		return nil, nil, false
	}
	var inCg map[int]bool
	if f.cg != nil {
		inCg = f.cg.procs()
	}
	self := os.Getpid()
	for _, e := range entries {
		if !f.member(e, inCg) {
			continue
		}
		f.mu.Lock()
		if f.seen == nil {
			f.seen = map[int]uint64{}
		}
		f.seen[e.pid] = e.start
		f.mu.Unlock()
		switch {
		case e.live():
			live = append(live, e.pid)
		case e.ppid == self && e.pid != f.leader:
			zombies = append(zombies, e.pid)
		}
	}
	if f.cg != nil {
		// A zombie is no longer listed in cgroup.procs but still names its cgroup: one
		// that left the group and exited before any scan is found that way.
		for _, e := range entries {
			if !e.live() && e.ppid == self && e.pid != f.leader && !slices.Contains(zombies, e.pid) && f.cg.named(e.pid) {
				zombies = append(zombies, e.pid)
			}
		}
	}
	return live, zombies, true
}

// alive reports whether any process of the command is alive. With a cgroup, an empty cgroup
// and an empty process group settle it without scanning the process table, unless members
// were found before: a process leaves its cgroup early on its way out, before it is a
// zombie this process can reap, so those are watched until they are. When /proc cannot be
// read it falls back to the process group alone.
func (f *family) alive() bool {
	f.mu.Lock()
	seen := len(f.seen) > 0
	f.mu.Unlock()
	if !seen && f.cg != nil && !f.cg.populated() && errors.Is(syscall.Kill(-f.pgid, 0), syscall.ESRCH) {
		return false
	}
	live, _, ok := f.members()
	if !ok {
		err := syscall.Kill(-f.pgid, 0)
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	return len(live) > 0 || (f.cg == nil && f.undecided())
}

// undecided reports whether an orphan of this process, or a child of one of the command's
// processes, shows an empty environment: a process caught in the middle of an exec (a
// "setsid cmd" the command started, whose shell has exited) cannot be told from a
// stranger yet, so without a cgroup the command counts as still running until the next
// scan can tell. A child os/exec started itself (this process holds its pidfd, as for
// Code Mode workers, which run with an empty environment) is never the command's.
func (f *family) undecided() bool {
	entries, ok := readProc()
	if !ok {
		return false
	}
	self := os.Getpid()
	var held map[int]bool
	for _, e := range entries {
		if !e.live() || e.start < f.start || e.pid == self || e.pgrp == f.pgid {
			continue
		}
		f.mu.Lock()
		_, parentSeen := f.seen[e.ppid]
		f.mu.Unlock()
		if e.ppid != self && !parentSeen {
			continue
		}
		data, err := os.ReadFile("/proc/" + strconv.Itoa(e.pid) + "/environ")
		if err != nil || len(data) > 0 {
			continue
		}
		if e.ppid == self {
			if held == nil {
				if held, ok = heldPidfds(); !ok {
					return false
				}
			}
			if held[e.pid] {
				continue
			}
		}
		return true
	}
	return false
}

// signal sends sig to the whole command: the process group, every other live member
// (through a pidfd, re-checked after opening so a recycled pid is never hit) and, for
// SIGKILL, the cgroup.
func (f *family) signal(sig syscall.Signal) {
	_ = syscall.Kill(-f.pgid, sig)
	if sig == syscall.SIGKILL && f.cg != nil {
		f.cg.kill()
	}
	live, _, _ := f.members()
	for _, pid := range live {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		if f.stillMember(pid) {
			_ = unix.PidfdSendSignal(fd, sig, nil, 0)
		}
		unix.Close(fd)
	}
}

// stillMember re-reads pid's entry and checks it still belongs to the command.
func (f *family) stillMember(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	e, ok := parseStatFull(data)
	if !ok {
		return false
	}
	var inCg map[int]bool
	if f.cg != nil {
		inCg = f.cg.procs()
	}
	return f.member(e, inCg)
}

// reap collects the exit status of the command's zombies that were re-parented to this
// process. The command's own process is left to os/exec.
func (f *family) reap() {
	// Peek (WNOWAIT) whether this process has an unreaped child at all: usually it has
	// none, and the scan of the process table is skipped.
	// (Linux leaves the siginfo zeroed when no child is waiting, SIGCHLD in it otherwise.)
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil || info.Signo == 0 {
		return
	}
	_, zombies, _ := f.members()
	for _, pid := range zombies {
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	}
}

// Orphans: being a child subreaper is a state of the whole process, so every orphan among
// its descendants is re-parented to it: one that escaped containment (see
// TestScrubbedEscapeNeedsCgroup) and dies later, or a grandchild of a process some other
// package started. Nobody would ever wait for such a zombie, so the runner reaps them when
// a command settles and when it closes. It must not reap a child that os/exec started and
// will wait for itself: those are told apart by the pidfd os/exec holds for each child it
// started, from the fork until the child is waited for. Where this process holds no pidfd
// for the runner's own guard process, the distinction cannot be made and orphans are left
// alone.

// heldPidfds returns the processes this process holds a pidfd of. ok is false when the file
// descriptor table cannot be read.
func heldPidfds() (pids map[int]bool, ok bool) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return nil, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, false
	}
	pids = map[int]bool{}
	for _, n := range names {
		link, err := os.Readlink("/proc/self/fd/" + n)
		if err != nil || !strings.Contains(link, "pidfd") {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + n)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "Pid:"); ok {
				if pid, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && pid > 0 {
					pids[pid] = true
				}
			}
		}
	}
	return pids, true
}

// pidfdsTell reports whether this process's pidfds tell the children os/exec waits for
// apart from orphans: it holds one for child, a live child os/exec started.
func pidfdsTell(child int) bool {
	held, ok := heldPidfds()
	return ok && held[child]
}

// reapOrphans reaps this process's zombie children for which it holds no pidfd: orphans
// re-parented to it, which nobody else waits for. Call it only where pidfdsTell holds.
func reapOrphans() {
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil || info.Signo == 0 {
		return
	}
	// The zombies first, the pidfds second: a child os/exec starts after the pidfd scan
	// cannot be among zombies found before it.
	entries, ok := readProc()
	if !ok {
		return
	}
	self := os.Getpid()
	var zombies []int
	for _, e := range entries {
		if e.ppid == self && !e.live() {
			zombies = append(zombies, e.pid)
		}
	}
	if len(zombies) == 0 {
		return
	}
	held, ok := heldPidfds()
	if !ok {
		return
	}
	for _, pid := range zombies {
		if !held[pid] {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		}
	}
}

// limits are the resource limits of one command; a value <= 0 means none.
type limits struct {
	procs  int
	memory int64
}

// cgroups is the runner's own cgroup v2 directory, under which each command gets one.
type cgroups struct {
	dir    string // absolute
	rel    string // relative to the hierarchy's mount point, starting with "/"
	pids   bool   // the pids controller is enabled for the commands' cgroups
	memory bool   // the memory controller is enabled for the commands' cgroups
	next   atomic.Int64
}

// cgroup is one command's cgroup.
type cgroup struct {
	dir string
	rel string // dir relative to the hierarchy's mount point, as /proc/PID/cgroup names it
	fd  int    // an open descriptor of dir, for CLONE_INTO_CGROUP
}

// named reports whether /proc/PID/cgroup places pid in cg.
func (cg *cgroup) named(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p == cg.rel
		}
	}
	return false
}

// openCgroups creates the runner's cgroup under parent, a directory of a cgroup v2
// hierarchy; empty parent means the cgroup this process is in. It fails when cgroup v2 is
// not mounted or not writable.
func openCgroups(parent, name string) (*cgroups, error) {
	dir, rel, err := cgroupDir(parent, name)
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup v2 directory %s is not writable: %w", filepath.Dir(dir), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("cgroup %s has no cgroup.kill (kernel older than 5.14?): %w", dir, err)
	}
	c := &cgroups{dir: dir, rel: rel}
	avail, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	for _, ctl := range strings.Fields(string(avail)) {
		if ctl != "pids" && ctl != "memory" {
			continue
		}
		if os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+ctl), 0) == nil {
			c.pids = c.pids || ctl == "pids"
			c.memory = c.memory || ctl == "memory"
		}
	}
	return c, nil
}

// cgroupDir returns where openCgroups would create the runner's cgroup, absolute and
// relative to the hierarchy's mount point, without creating it.
func cgroupDir(parent, name string) (dir, rel string, err error) {
	if parent == "" {
		if parent, err = ownCgroup(); err != nil {
			return "", "", err
		}
	}
	mount, err := cgroup2Mount()
	if err != nil {
		return "", "", err
	}
	dir = filepath.Join(parent, name)
	r, err := filepath.Rel(mount, dir)
	if err != nil || !inside(mount, dir) {
		return "", "", fmt.Errorf("cgroup directory %s is not in the cgroup v2 hierarchy mounted at %s", dir, mount)
	}
	return dir, "/" + r, nil
}

// ownCgroup returns the directory of the cgroup v2 this process belongs to.
func ownCgroup() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("cannot read /proc/self/cgroup: %w", err)
	}
	var rel string
	found := false
	for line := range strings.SplitSeq(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel, found = p, true
		}
	}
	if !found {
		return "", errors.New("this process is in no cgroup v2 hierarchy")
	}
	mount, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	return filepath.Join(mount, rel), nil
}

// cgroup2Mount finds where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup on a pure
// v2 system, /sys/fs/cgroup/unified on a hybrid one).
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("cannot read /proc/self/mountinfo: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "id parent major:minor root mountpoint options... - fstype source superoptions"
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		fields := strings.Fields(pre)
		if len(fields) >= 5 && fields[3] == "/" {
			return unescapeMount(fields[4]), nil
		}
	}
	return "", errors.New("cgroup v2 is not mounted")
}

// unescapeMount undoes the octal escapes of a mountinfo path ("\040" for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// create makes a cgroup for one command, with lim applied where the controllers allow.
func (c *cgroups) create(lim limits) (*cgroup, error) {
	dir := filepath.Join(c.dir, "cmd-"+strconv.FormatInt(c.next.Add(1), 10))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	cg := &cgroup{dir: dir, rel: path.Join(c.rel, filepath.Base(dir)), fd: -1}
	if c.pids && lim.procs > 0 {
		if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(lim.procs)), 0); err != nil {
			cg.remove()
			return nil, fmt.Errorf("set pids.max of %s: %w", dir, err)
		}
	}
	if c.memory && lim.memory > 0 {
		if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(strconv.FormatInt(lim.memory, 10)), 0); err != nil {
			cg.remove()
			return nil, fmt.Errorf("set memory.max of %s: %w", dir, err)
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		cg.remove()
		return nil, fmt.Errorf("open cgroup %s: %w", dir, err)
	}
	cg.fd = fd
	return cg, nil
}

// procs returns the pids in the cgroup.
func (cg *cgroup) procs() map[int]bool {
	data, err := os.ReadFile(filepath.Join(cg.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	out := map[int]bool{}
	for f := range strings.FieldsSeq(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out[pid] = true
		}
	}
	return out
}

// populated reports whether a live process is in the cgroup (zombies do not count). It
// says true when cgroup.events cannot be read, so a caller looks closer.
func (cg *cgroup) populated() bool {
	data, err := os.ReadFile(filepath.Join(cg.dir, "cgroup.events"))
	return err != nil || !strings.Contains(string(data), "populated 0")
}

// kill sends SIGKILL to every process in the cgroup.
func (cg *cgroup) kill() { _ = os.WriteFile(filepath.Join(cg.dir, "cgroup.kill"), []byte("1"), 0) }

// remove closes the descriptor and removes the (empty) cgroup.
func (cg *cgroup) remove() {
	if cg.fd >= 0 {
		unix.Close(cg.fd)
		cg.fd = -1
	}
	_ = os.Remove(cg.dir)
}

// guardScript is run by /bin/sh as the guard. $1 is the runner's cgroup directory (may be
// empty) and $2 the runner's marker prefix. It reads "+PGID" and "-PGID" lines to know the
// live process groups; at end of file (the runner's process is gone, or the runner closed)
// it kills what is left and removes the cgroups.
const guardScript = `trap '' HUP INT PIPE
pgs=
while IFS= read -r l; do
  case $l in
    +*) pgs="$pgs ${l#+}" ;;
    -*) n=; for p in $pgs; do [ "$p" = "${l#-}" ] || n="$n $p"; done; pgs=$n ;;
  esac
done
[ -n "$1" ] && echo 1 > "$1/cgroup.kill" 2>/dev/null
for p in $pgs; do kill -KILL -"$p" 2>/dev/null; done
for e in $(grep -lsz "^$2" /proc/[0-9]*/environ); do d=${e%/environ}; kill -KILL "${d#/proc/}" 2>/dev/null; done
if [ -n "$1" ]; then
  i=0
  while grep -q '^populated 1' "$1/cgroup.events" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
  for d in "$1"/*/; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
  rmdir "$1" 2>/dev/null
fi
exit 0
`

// guard is the process that kills a runner's commands once the runner can no longer do
// it itself.
type guard struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	pipe *os.File // write end; closing it releases the guard
}

// startGuard starts the guard for the given cgroup directory (may be empty) and marker
// prefix. The guard runs in its own process group with no parent-death signal, ignoring
// terminal signals, so that it outlives the runner's process by design.
func startGuard(cgDir, markerPrefix string) (*guard, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", guardScript, "dsh-shell-guard", cgDir, markerPrefix)
	cmd.Stdin = r
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("start the shell guard: %w", err)
	}
	return &guard{cmd: cmd, pipe: w}, nil
}

// track tells the guard about a process group that started (add) or ended.
func (g *guard) track(pgid int, add bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pipe == nil {
		return
	}
	op := "-"
	if add {
		op = "+"
	}
	_, _ = g.pipe.WriteString(op + strconv.Itoa(pgid) + "\n")
}

// pid returns the guard's process id.
func (g *guard) pid() int { return g.cmd.Process.Pid }

// close releases the guard, which kills whatever is left, and waits for it.
func (g *guard) close() {
	g.mu.Lock()
	p := g.pipe
	g.pipe = nil
	g.mu.Unlock()
	if p == nil {
		return
	}
	p.Close()
	_ = g.cmd.Wait()
}

// newRunnerID returns a random id naming a runner's cgroup and marker.
func newRunnerID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
}

// limitPrefix returns the shell code that applies lim, to be put in front of the command on
// its first line (so that the command's line numbers stay as they are, and no second
// shell is started), or "" when nothing is to be set by rlimit. If the limits cannot be
// set the command does not run (exit status 126). procFlag is the shell's ulimit option
// for RLIMIT_NPROC ("-u" in bash, "-p" in dash).
func limitPrefix(lim limits, procFlag string) string {
	var parts []string
	if lim.procs > 0 {
		parts = append(parts, "ulimit "+procFlag+" "+strconv.Itoa(lim.procs))
	}
	if lim.memory > 0 {
		parts = append(parts, "ulimit -v "+strconv.FormatInt(lim.memory/1024, 10))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, " && ") + ` || { echo "dsh: cannot apply the resource limits" >&2; exit 126; }; `
}

// capToHard lowers want to this process's hard limit of resource res, since an
// unprivileged shell cannot raise it; <= 0 stays "no limit".
func capToHard(res int, want int64) int64 {
	if want <= 0 {
		return want
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(res, &rl); err == nil && rl.Max != unix.RLIM_INFINITY && int64(rl.Max) < want {
		return int64(rl.Max)
	}
	return want
}

// procLimitFlag finds the shell's ulimit option for the number of processes: "-u" where
// it works (bash, zsh, ksh), else "-p" (dash).
func procLimitFlag(shell string) string {
	if exec.Command(shell, "-c", "ulimit -u").Run() == nil {
		return "-u"
	}
	return "-p"
}
