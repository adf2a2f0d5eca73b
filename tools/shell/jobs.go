package shell

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dsh-go/dsh/tool"
)

// Job statuses.
const (
	StatusRunning   = "running"
	StatusStopping  = "stopping" // cancellation requested, not yet ended
	StatusCompleted = "completed"
	StatusKilled    = "killed"
	StatusFailed    = "failed"
)

// JobInfo is a snapshot of a background job, as the job tools return it.
type JobInfo struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	Label      string `json:"label"`
	Status     string `json:"status"`
	Detail     string `json:"detail,omitzero"`     // e.g. "exit code: 0", "signal: SIGTERM"
	StartedAt  int64  `json:"startedAt"`           // Unix milliseconds
	FinishedAt int64  `json:"finishedAt,omitzero"` // Unix milliseconds; absent while running
}

// Terminal reports whether the job has ended.
func (j JobInfo) Terminal() bool {
	return j.Status == StatusCompleted || j.Status == StatusKilled || j.Status == StatusFailed
}

// StatusLine is the bracketed status the job tools end their text with.
func (j JobInfo) StatusLine() string {
	if j.Detail != "" {
		return "[status: " + j.Status + ", " + j.Detail + "]"
	}
	return "[status: " + j.Status + "]"
}

// CompletionNotice is the message that tells an owner a job it started has finished.
func CompletionNotice(j JobInfo) string {
	return fmt.Sprintf("background job %s (%s: %s) finished %s. Read its output with job_output.", j.ID, j.Kind, j.Label, j.StatusLine())
}

// Jobs owns the background commands of a session. Every job belongs to the agent scope
// that started it (nil for direct calls, open to every caller); Close, or CloseOwner for
// one agent, kills them and waits until they are gone.
type Jobs struct {
	runner *Runner
	max    int

	mu        sync.Mutex
	jobs      map[string]*job
	counter   int
	closed    bool
	listeners []*listener
	watchers  sync.WaitGroup
}

type listener struct {
	fn func(JobInfo, *tool.Scope)
}

type job struct {
	info     JobInfo
	owner    *tool.Scope
	proc     *Process
	reported bool          // a read, wait or kill already told the owner how it ended
	settled  chan struct{} // closed once info is terminal
}

// NewJobs returns a job manager that starts commands with r, allowing maxPerOwner running
// jobs per owner (0: DefaultMaxJobs).
func NewJobs(r *Runner, maxPerOwner int) *Jobs {
	if maxPerOwner <= 0 {
		maxPerOwner = DefaultMaxJobs
	}
	return &Jobs{runner: r, max: maxPerOwner, jobs: map[string]*job{}}
}

// OnDone registers fn to be called when a job ends that no read, wait or kill has already
// reported, with the job's owner; an agent uses it to deliver CompletionNotice. remove
// unregisters fn.
func (js *Jobs) OnDone(fn func(JobInfo, *tool.Scope)) (remove func()) {
	l := &listener{fn: fn}
	js.mu.Lock()
	js.listeners = append(js.listeners, l)
	js.mu.Unlock()
	return func() {
		js.mu.Lock()
		js.listeners = slices.DeleteFunc(js.listeners, func(x *listener) bool { return x == l })
		js.mu.Unlock()
	}
}

// Start starts a command in the background for owner and returns its job id ("bash-1", …).
func (js *Jobs) Start(owner *tool.Scope, label string, req Request) (string, error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.closed {
		return "", errors.New("background jobs are unavailable: the session has ended")
	}
	active := 0
	for _, j := range js.jobs {
		if j.owner == owner && !j.info.Terminal() {
			active++
		}
	}
	if active >= js.max {
		return "", fmt.Errorf("background job limit reached for this owner (limit: %d); use job_kill to stop an unneeded job, wait for it to finish, then retry", js.max)
	}
	proc, err := js.runner.Start(req)
	if err != nil {
		return "", err
	}
	js.counter++
	j := &job{
		info:    JobInfo{ID: fmt.Sprintf("bash-%d", js.counter), Kind: "bash", Label: label, Status: StatusRunning, StartedAt: time.Now().UnixMilli()},
		owner:   owner,
		proc:    proc,
		settled: make(chan struct{}),
	}
	js.jobs[j.info.ID] = j
	js.watchers.Add(1)
	go js.watch(j)
	return j.info.ID, nil
}

// watch settles a job when its process ends and notifies the listeners.
func (js *Jobs) watch(j *job) {
	defer js.watchers.Done()
	<-j.proc.Done()
	code, signal, killed := j.proc.Exit()
	js.mu.Lock()
	switch {
	case killed && signal != "":
		j.info.Status, j.info.Detail = StatusKilled, "signal: "+signal
	case killed:
		j.info.Status, j.info.Detail = StatusKilled, "killed before exit"
	default:
		c := 0
		if code != nil {
			c = *code
		}
		j.info.Status, j.info.Detail = StatusCompleted, fmt.Sprintf("exit code: %d", c)
	}
	j.info.FinishedAt = time.Now().UnixMilli()
	close(j.settled)
	info, owner := j.info, j.owner
	notify := !j.reported && !js.closed
	listeners := slices.Clone(js.listeners)
	js.mu.Unlock()
	if notify {
		for _, l := range listeners {
			callListener(l.fn, info, owner)
		}
	}
}

// callListener runs a completion listener, containing a panic.
func callListener(fn func(JobInfo, *tool.Scope), info JobInfo, owner *tool.Scope) {
	defer func() { _ = recover() }()
	fn(info, owner)
}

// lookup returns the job id if caller may see it.
func (js *Jobs) lookupLocked(id string, caller *tool.Scope) (*job, error) {
	j := js.jobs[id]
	if j == nil {
		return nil, fmt.Errorf("unknown job %s", id)
	}
	if j.owner != nil && j.owner != caller {
		return nil, fmt.Errorf("job %s belongs to another session", id)
	}
	return j, nil
}

// List returns the jobs caller may see (its own and unowned ones), oldest first.
func (js *Jobs) List(caller *tool.Scope) []JobInfo {
	js.mu.Lock()
	defer js.mu.Unlock()
	var out []JobInfo
	for _, j := range js.jobs {
		if j.owner == nil || j.owner == caller {
			out = append(out, j.info)
		}
	}
	slices.SortFunc(out, func(a, b JobInfo) int { return compareIDs(a.ID, b.ID) })
	return out
}

// compareIDs orders "bash-N" ids by N.
func compareIDs(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Read returns the output job id produced since the previous Read, and its state. Reading
// an ended job reports its end.
func (js *Jobs) Read(caller *tool.Scope, id string) (string, JobInfo, error) {
	js.mu.Lock()
	j, err := js.lookupLocked(id, caller)
	if err != nil {
		js.mu.Unlock()
		return "", JobInfo{}, err
	}
	// The state is taken before the output: when it says the job ended, the output read
	// after it is complete.
	info := j.info
	if info.Terminal() {
		j.reported = true
	}
	js.mu.Unlock()
	return j.proc.Read(), info, nil
}

// Wait waits up to timeout for job id to end and returns its state; a job still running
// when the timeout expires is returned as it is. Cancelling ctx abandons the wait.
func (js *Jobs) Wait(ctx context.Context, caller *tool.Scope, id string, timeout time.Duration) (JobInfo, error) {
	js.mu.Lock()
	j, err := js.lookupLocked(id, caller)
	js.mu.Unlock()
	if err != nil {
		return JobInfo{}, err
	}
	if timeout <= 0 {
		return JobInfo{}, fmt.Errorf("invalid wait timeout: expected a positive number of milliseconds, got %s", formatMs(float64(timeout)/float64(time.Millisecond)))
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-j.settled:
	case <-timer.C:
	case <-ctx.Done():
		return JobInfo{}, errors.New("wait aborted")
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	if j.info.Terminal() {
		j.reported = true
	}
	return j.info, nil
}

// Kill requests that job id stop. It returns "cancellation-requested", or
// "already-finished" when the job had ended, and the job's state.
func (js *Jobs) Kill(caller *tool.Scope, id string) (string, JobInfo, error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j, err := js.lookupLocked(id, caller)
	if err != nil {
		return "", JobInfo{}, err
	}
	j.reported = true
	if j.info.Terminal() {
		return "already-finished", j.info, nil
	}
	j.proc.Kill()
	j.info.Status = StatusStopping
	return "cancellation-requested", j.info, nil
}

// CloseOwner kills the jobs of owner (when its session ends), waits until they are gone
// and forgets them.
func (js *Jobs) CloseOwner(owner *tool.Scope) {
	js.stop(func(j *job) bool { return j.owner == owner }, false)
}

// Close kills every job, waits until they are all gone and refuses new ones. It is
// idempotent and always returns nil.
func (js *Jobs) Close() error {
	js.stop(func(*job) bool { return true }, true)
	js.watchers.Wait()
	return nil
}

func (js *Jobs) stop(match func(*job) bool, closing bool) {
	js.mu.Lock()
	if closing {
		js.closed = true
	}
	var victims []*job
	for _, j := range js.jobs {
		if match(j) {
			victims = append(victims, j)
			j.reported = true // nobody is left to be told
			if !j.info.Terminal() {
				j.proc.Kill()
				j.info.Status = StatusStopping
			}
		}
	}
	js.mu.Unlock()
	for _, j := range victims {
		<-j.settled
	}
	js.mu.Lock()
	for _, j := range victims {
		delete(js.jobs, j.info.ID)
	}
	js.mu.Unlock()
}
