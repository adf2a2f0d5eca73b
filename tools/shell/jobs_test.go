package shell

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// startJob starts a background command and returns its job id.
func startJob(t *testing.T, reg *tool.Registry, agent *tool.Scope, command string) string {
	t.Helper()
	res := callCtx(context.Background(), reg, agent, "bash", bashArgs(command, `"run_in_background":true`))
	if res.IsError {
		t.Fatalf("start %q: %s", command, text(t, res))
	}
	var o BashOutput
	if err := jsonv.Decode(res.Value, &o); err != nil || o.Kind != "background" {
		t.Fatalf("value %v: %v", res.Value, err)
	}
	if got, want := text(t, res), "started background job "+o.JobID; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	return o.JobID
}

func TestJobLifecycle(t *testing.T) {
	reg, _ := setup(t, Config{})
	gate := filepath.Join(t.TempDir(), "gate")
	id := startJob(t, reg, nil, "echo first; while [ ! -e "+gate+" ]; do sleep 0.01; done; echo second; echo oops >&2; exit 3")
	if id != "bash-1" {
		t.Errorf("id = %q", id)
	}
	// The first read returns what was printed so far; the job is running.
	var got string
	testwait.Until(t, "the job's first line", func() bool {
		got = text(t, call(t, reg, "job_output", `{"job_id":"bash-1"}`))
		return strings.HasPrefix(got, "first")
	})
	if got != "first\n[status: running]" {
		t.Fatalf("first read = %q", got)
	}
	if got := text(t, call(t, reg, "job_output", `{"job_id":"bash-1"}`)); got != "(no new output)\n[status: running]" {
		t.Errorf("second read = %q", got)
	}
	if err := writeFile(gate); err != nil {
		t.Fatal(err)
	}
	res := call(t, reg, "job_output", `{"job_id":"bash-1","wait":true,"timeout_ms":20000}`)
	if got, want := text(t, res), "second\n[stderr]\noops\n[status: completed, exit code: 3]"; got != want {
		t.Errorf("final read = %q, want %q", got, want)
	}
	var out JobOutput
	if err := jsonv.Decode(res.Value, &out); err != nil {
		t.Fatal(err)
	}
	if out.Job.ID != "bash-1" || out.Job.Kind != "bash" || out.Job.Status != StatusCompleted || out.Job.StartedAt == 0 || out.Job.FinishedAt < out.Job.StartedAt ||
		!strings.HasPrefix(out.Job.Label, "echo first;") {
		t.Errorf("job = %+v", out.Job)
	}
	if got := text(t, call(t, reg, "job_list", `{}`)); !strings.HasPrefix(got, "bash-1 [bash] completed — echo first;") {
		t.Errorf("job_list = %q", got)
	}
	if got := text(t, call(t, reg, "job_kill", `{"job_id":"bash-1"}`)); got != "job bash-1 had already finished [status: completed, exit code: 3]" {
		t.Errorf("job_kill = %q", got)
	}
}

func writeFile(p string) error { return os.WriteFile(p, []byte("x"), 0o644) }

func TestJobKill(t *testing.T) {
	reg, _ := setup(t, Config{})
	pidFile, pidLine := signalFifo(t)
	sleep := uniqueSleep(t)
	startJob(t, reg, nil, "echo $$ > "+pidFile+"; sleep "+sleep+" & sleep "+sleep)
	pgid := atoi(t, pidLine())
	res := call(t, reg, "job_kill", `{"job_id":"bash-1","reason":"not needed"}`)
	if got := text(t, res); got != "requested cancellation of job bash-1" {
		t.Errorf("job_kill = %q", got)
	}
	var k JobKillOutput
	if err := jsonv.Decode(res.Value, &k); err != nil || k.Outcome != "cancellation-requested" || k.Job.Status != StatusStopping {
		t.Errorf("value = %+v (%v)", k, err)
	}
	got := text(t, call(t, reg, "job_output", `{"job_id":"bash-1","wait":true}`))
	if got != "(no new output)\n[status: killed, signal: SIGTERM]" {
		t.Errorf("after kill: %q", got)
	}
	assertGroupGone(t, pgid)
	assertNoProcess(t, sleep)
}

func TestJobWaitTimeout(t *testing.T) {
	reg, _ := setup(t, Config{})
	startJob(t, reg, nil, "sleep "+uniqueSleep(t))
	got := text(t, call(t, reg, "job_output", `{"job_id":"bash-1","wait":true,"timeout_ms":50}`))
	if got != "(no new output)\n[status: running]" {
		t.Errorf("timed-out wait = %q", got)
	}
	res := call(t, reg, "job_output", `{"job_id":"bash-1","wait":true,"timeout_ms":-1}`)
	if text(t, res) != "Error: invalid wait timeout: expected a positive number of milliseconds, got -1" {
		t.Errorf("bad timeout = %q", text(t, res))
	}
}

func TestJobErrors(t *testing.T) {
	reg, _ := setup(t, Config{MaxJobs: 1})
	a := reg.NewScope("agent-a", nil)
	b := reg.NewScope("agent-b", nil)
	startJob(t, reg, a, "sleep "+uniqueSleep(t))
	tests := []struct {
		agent      *tool.Scope
		name, args string
		want       string
	}{
		{b, "job_output", `{"job_id":"bash-1"}`, "Error: job bash-1 belongs to another session"},
		{nil, "job_kill", `{"job_id":"bash-1"}`, "Error: job bash-1 belongs to another session"},
		{a, "job_output", `{"job_id":"bash-9"}`, "Error: unknown job bash-9"},
		{a, "job_output", `{"job_id":""}`, `Error: invalid job_id: expected a non-empty string, got ""`},
		{a, "job_kill", `{"job_id":""}`, `Error: invalid job_id: expected a non-empty string, got ""`},
		{a, "bash", bashArgs("sleep 1", `"run_in_background":true`),
			"Error: background job limit reached for this owner (limit: 1); use job_kill to stop an unneeded job, wait for it to finish, then retry"},
		{b, "job_list", `{}`, "(no background jobs)"},
	}
	for _, tt := range tests {
		res := callCtx(context.Background(), reg, tt.agent, tt.name, tt.args)
		if got := text(t, res); got != tt.want {
			t.Errorf("%s %s: %q, want %q", tt.name, tt.args, got, tt.want)
		}
	}
	// Another owner has its own budget.
	startJob(t, reg, b, "true")
}

func TestJobLossyRead(t *testing.T) {
	spill := t.TempDir()
	reg, _ := setup(t, Config{MaxOutputBytes: 100, SpillDir: spill})
	startJob(t, reg, nil, "seq 1 1000")
	res := call(t, reg, "job_output", `{"job_id":"bash-1","wait":true}`)
	got := text(t, res)
	var out JobOutput
	if err := jsonv.Decode(res.Value, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "\n1000\n[some output was dropped from memory; full output: "+spill+"/") ||
		!strings.HasSuffix(got, "-stdout.log]\n[status: completed, exit code: 0]") {
		t.Errorf("lossy read = %q", got)
	}
}

// TestJobsCloseKillsEverything is the end of a session: every job is killed and waited for,
// and no new job starts.
func TestJobsCloseKillsEverything(t *testing.T) {
	reg, tools := setup(t, Config{})
	a := reg.NewScope("agent-a", nil)
	sleep := uniqueSleep(t)
	var pgids []int
	for _, agent := range []*tool.Scope{nil, a, a} {
		pidFile, pidLine := signalFifo(t)
		startJob(t, reg, agent, "echo $$ > "+pidFile+"; trap '' TERM; sleep "+sleep+" & sleep "+sleep)
		pgids = append(pgids, atoi(t, pidLine()))
	}
	tools.Jobs.CloseOwner(a)
	assertGroupGone(t, pgids[1])
	assertGroupGone(t, pgids[2])
	if list := tools.Jobs.List(a); len(list) != 1 || list[0].ID != "bash-1" {
		t.Errorf("after CloseOwner: %+v", list)
	}
	if err := tools.Jobs.Close(); err != nil {
		t.Fatal(err)
	}
	assertGroupGone(t, pgids[0])
	assertNoProcess(t, sleep)
	res := call(t, reg, "bash", bashArgs("true", `"run_in_background":true`))
	if text(t, res) != "Error: background jobs are unavailable: the session has ended" {
		t.Errorf("start after Close: %q", text(t, res))
	}
	if err := tools.Jobs.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestJobCompletionNotice(t *testing.T) {
	reg, tools := setup(t, Config{})
	a := reg.NewScope("agent-a", nil)
	var mu sync.Mutex
	var notices []string
	done := make(chan struct{}, 4)
	remove := tools.Jobs.OnDone(func(j JobInfo, owner *tool.Scope) {
		mu.Lock()
		notices = append(notices, owner.Name()+": "+CompletionNotice(j))
		mu.Unlock()
		done <- struct{}{}
	})
	defer remove()
	startJob(t, reg, a, "exit 0")
	testwait.Recv(t, done, "the first job's completion notice")
	// A job whose end was already reported by job_kill gets no notice.
	gate, gateLine := signalFifo(t)
	startJob(t, reg, a, "echo $$ > "+gate+"; sleep "+uniqueSleep(t))
	gateLine()
	callCtx(context.Background(), reg, a, "job_kill", `{"job_id":"bash-2"}`)
	callCtx(context.Background(), reg, a, "job_output", `{"job_id":"bash-2","wait":true}`)
	mu.Lock()
	defer mu.Unlock()
	want := "agent-a: background job bash-1 (bash: exit 0) finished [status: completed, exit code: 0]. Read its output with job_output."
	if len(notices) != 1 || notices[0] != want {
		t.Errorf("notices = %q", notices)
	}
}

func TestJobCards(t *testing.T) {
	reg, _ := setup(t, Config{})
	tests := []struct {
		name, args string
		want       *card.Call
	}{
		{"job_output", `{"job_id":"bash-2"}`, &card.Call{Card: card.Generic, Title: "Read output from background job bash-2", Kind: card.KindRead, RawInput: "bash-2"}},
		{"job_list", `{}`, &card.Call{Card: card.Generic, Title: "List background jobs", Kind: card.KindRead}},
		{"job_kill", `{"job_id":"bash-2"}`, &card.Call{Card: card.Generic, Title: "Kill background job bash-2", Kind: card.KindExecute, RawInput: "bash-2"}},
	}
	for _, tt := range tests {
		got := reg.Get(tt.name, nil).PresentCall(tool.ParseArguments(tt.args))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s card (-want +got):\n%s", tt.name, diff)
		}
	}
}
