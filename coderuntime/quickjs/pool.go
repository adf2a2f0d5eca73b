package quickjs

import "sync"

// MaxPool is the largest Config.Pool: how many started workers a runtime may keep idle.
const MaxPool = 16

// workerProcess is a worker subprocess as the pool and the runs see it.
type workerProcess interface {
	process
	// reaped is closed once the process was reaped; its exit status is then waiting in
	// exited, which reaped does not consume.
	reaped() <-chan struct{}
	// startRun marks the moment the worker is given its run: CPU time spent before it is
	// not charged to the run.
	startRun()
	// id is the process id.
	id() int
	// watchReady starts reading ahead the worker's first line and returns a channel closed
	// when that read is over; ready then reports whether it was the ready frame.
	watchReady() <-chan struct{}
	ready() bool
}

// pool keeps up to size worker processes started ahead of demand, each used for exactly
// one run. A run takes the oldest idle worker (which may still be starting up: its start
// frame waits in the pipe), and refill starts a replacement once that run has settled;
// when none is idle the run starts its own, so a burst larger than the pool still runs at
// once. A worker that dies while idle is reaped and replaced, up to size times in a row (a
// worker command that cannot start is not retried without end; the next take starts
// over). close kills the idle workers; wait returns once every process the pool started
// is reaped and every goroutine it started has returned.
type pool struct {
	size  int
	start func() (workerProcess, error)

	mu       sync.Mutex
	idle     []*idleWorker // oldest first
	starting int           // replacements being started
	deaths   int           // idle workers that died since the last take
	closed   bool
	changed  chan struct{} // closed and replaced whenever idle or starting changes
	wg       sync.WaitGroup
}

// idleWorker is a started worker waiting for its run.
type idleWorker struct {
	p     workerProcess
	taken chan struct{}   // closed when a run takes the worker or the pool closes
	read  <-chan struct{} // closed when the worker announced it had prepared (or its output ended)
}

func newPool(size int, start func() (workerProcess, error)) *pool {
	pl := &pool{size: size, start: start, changed: make(chan struct{})}
	pl.mu.Lock()
	pl.fillLocked()
	pl.mu.Unlock()
	return pl
}

// take returns a started worker that is still alive, or nil when none is idle. It starts
// no replacement: the run calls refill once it has settled.
func (pl *pool) take() workerProcess {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.deaths = 0
	var p workerProcess
	for p == nil && len(pl.idle) > 0 {
		w := pl.idle[0]
		pl.idle = pl.idle[1:]
		close(w.taken)
		select {
		case <-w.p.reaped():
			// Died before its watcher removed it: its status was collected; skip it.
		default:
			p = w.p
		}
	}
	pl.notifyLocked()
	return p
}

// refill starts workers in the background until idle and starting ones make up the pool's
// size again. A run calls it once it has settled, so that a replacement's start-up (exec,
// the Go runtime, a QuickJS VM: far more CPU than a small program) does not compete with the
// run it replaces a worker for.
func (pl *pool) refill() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.fillLocked()
	pl.notifyLocked()
}

// notifyLocked wakes everyone waiting for a change of the pool's state.
func (pl *pool) notifyLocked() {
	close(pl.changed)
	pl.changed = make(chan struct{})
}

// fillLocked starts workers until idle and starting ones make up the pool's size.
func (pl *pool) fillLocked() {
	for !pl.closed && pl.deaths <= pl.size && len(pl.idle)+pl.starting < pl.size {
		pl.starting++
		pl.wg.Add(1)
		go pl.startOne()
	}
}

// startOne starts one worker and makes it idle, or kills it at once if the pool closed
// meanwhile. A worker that cannot be started is not retried here: the run that next needs
// one starts its own and reports why it failed.
func (pl *pool) startOne() {
	defer pl.wg.Done()
	p, err := pl.start()
	pl.mu.Lock()
	pl.starting--
	if err != nil {
		pl.deaths = pl.size + 1 // stop filling until the next take
		pl.notifyLocked()
		pl.mu.Unlock()
		return
	}
	if pl.closed {
		pl.notifyLocked()
		pl.mu.Unlock()
		p.kill()
		<-p.reaped()
		return
	}
	w := &idleWorker{p: p, taken: make(chan struct{}), read: p.watchReady()}
	pl.idle = append(pl.idle, w)
	pl.notifyLocked()
	pl.wg.Add(1)
	go pl.watch(w)
	pl.mu.Unlock()
}

// watch removes w from the pool if it dies while idle, and starts a replacement.
func (pl *pool) watch(w *idleWorker) {
	defer pl.wg.Done()
	select {
	case <-w.taken:
	case <-w.p.reaped():
		pl.mu.Lock()
		for i, x := range pl.idle {
			if x == w {
				pl.idle = append(pl.idle[:i], pl.idle[i+1:]...)
				close(w.taken)
				pl.deaths++
				pl.fillLocked()
				pl.notifyLocked()
				break
			}
		}
		pl.mu.Unlock()
	}
}

// close stops filling the pool and kills its idle workers; wait waits for them.
func (pl *pool) close() {
	pl.mu.Lock()
	pl.closed = true
	idle := pl.idle
	pl.idle = nil
	for _, w := range idle {
		close(w.taken)
	}
	pl.notifyLocked()
	pl.mu.Unlock()
	for _, w := range idle {
		w.p.kill()
		pl.wg.Add(1)
		go func() {
			defer pl.wg.Done()
			<-w.p.reaped()
			<-w.read
		}()
	}
}

// wait returns once every worker the pool started and did not hand to a run is reaped.
func (pl *pool) wait() { pl.wg.Wait() }

// waitReady waits until the oldest idle worker has prepared, or stop is closed, and
// reports whether it has (for benchmarks and tests). It reports false at once when no
// worker is idle or starting.
func (pl *pool) waitReady(stop <-chan struct{}) bool {
	for {
		pl.mu.Lock()
		var w *idleWorker
		if len(pl.idle) > 0 {
			w = pl.idle[0]
		}
		starting, changed := pl.starting, pl.changed
		pl.mu.Unlock()
		if w == nil {
			if starting == 0 {
				return false
			}
			select {
			case <-changed:
				continue
			case <-stop:
				return false
			}
		}
		select {
		case <-w.read:
			return w.p.ready()
		case <-w.taken:
		case <-stop:
			return false
		}
	}
}

// quiet waits until no worker is starting and reports the idle workers' process ids,
// oldest first, or nil when stop is closed first (for tests).
func (pl *pool) quiet(stop <-chan struct{}) []int {
	for {
		pl.mu.Lock()
		starting, changed := pl.starting, pl.changed
		ids := make([]int, len(pl.idle))
		for i, w := range pl.idle {
			ids[i] = w.p.id()
		}
		pl.mu.Unlock()
		if starting == 0 {
			return ids
		}
		select {
		case <-changed:
		case <-stop:
			return nil
		}
	}
}

// idleIDs returns the process ids of the idle workers, oldest first (for tests).
func (pl *pool) idleIDs() []int {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	ids := make([]int, len(pl.idle))
	for i, w := range pl.idle {
		ids[i] = w.p.id()
	}
	return ids
}
