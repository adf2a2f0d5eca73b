package shell

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/tool"
)

// Defaults of the job_output wait.
const (
	DefaultWait    = 30 * time.Second
	DefaultMaxWait = 600 * time.Second
)

// Tools is the shell tool set: bash and the background job controls, sharing one runner
// and one job manager.
type Tools struct {
	Runner    *Runner
	Jobs      *Jobs // nil when background execution is disabled
	Bash      *tool.Definition
	JobOutput *tool.Definition // nil when background execution is disabled
	JobList   *tool.Definition
	JobKill   *tool.Definition
}

// NewTools builds the shell tools for cfg.
func NewTools(cfg Config) (*Tools, error) {
	r, err := NewRunner(cfg)
	if err != nil {
		return nil, err
	}
	t := &Tools{Runner: r}
	if !cfg.DisableBackground {
		t.Jobs = NewJobs(r, cfg.MaxJobs)
		if t.JobOutput, err = newJobOutput(t.Jobs); err != nil {
			return nil, err
		}
		if t.JobList, err = newJobList(t.Jobs); err != nil {
			return nil, err
		}
		if t.JobKill, err = newJobKill(t.Jobs); err != nil {
			return nil, err
		}
	}
	if t.Bash, err = newBash(r, t.Jobs, !cfg.DisableBackground); err != nil {
		return nil, err
	}
	return t, nil
}

// Register registers the tools in scope s. undo unregisters them, kills every background
// job, waiting until they are gone, and closes the runner: call it when the session ends.
func (t *Tools) Register(s *tool.Scope) (undo func(), err error) {
	var undos []func()
	undo = func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
		if t.Jobs != nil {
			t.Jobs.Close()
		}
		t.Runner.Close()
	}
	for _, def := range []*tool.Definition{t.Bash, t.JobOutput, t.JobList, t.JobKill} {
		if def == nil {
			continue
		}
		u, err := s.Register(def)
		if err != nil {
			undo()
			return nil, err
		}
		undos = append(undos, u)
	}
	return undo, nil
}

// Install registers bash, job_output, job_list and job_kill in reg's global layer. undo
// unregisters them and kills every background job.
func Install(reg *tool.Registry, cfg Config) (undo func(), err error) {
	t, err := NewTools(cfg)
	if err != nil {
		return nil, err
	}
	return t.Register(reg.Global())
}

// JobOutputInput is the arguments of job_output.
type JobOutputInput struct {
	JobID     string   `json:"job_id" jsonschema:"The job id returned by bash with run_in_background."`
	Wait      *bool    `json:"wait,omitempty" jsonschema:"Wait until the job ends or the timeout expires. A job still running at the timeout is left running."`
	TimeoutMs *float64 `json:"timeout_ms,omitempty" jsonschema:"How long to wait, in milliseconds (only with wait). Defaults to 30000; capped at 600000."`
}

// JobOutput is the canonical value of job_output.
type JobOutput struct {
	Text string  `json:"text"`
	Job  JobInfo `json:"job"`
}

// JobIDInput is the arguments of job_kill.
type JobIDInput struct {
	JobID  string  `json:"job_id" jsonschema:"The job id returned by bash with run_in_background."`
	Reason *string `json:"reason,omitempty" jsonschema:"Optional short reason for stopping the job."`
}

// JobKillOutput is the canonical value of job_kill.
type JobKillOutput struct {
	Outcome string  `json:"outcome"` // "cancellation-requested" or "already-finished"
	Job     JobInfo `json:"job"`
}

// jobInfoSchema constrains status to the known values; inference cannot express enums.
const jobInfoSchema = `{"type":"object","additionalProperties":false,"required":["id","kind","label","status","startedAt"],"properties":{
 "id":{"type":"string"},"kind":{"type":"string"},"label":{"type":"string"},
 "status":{"type":"string","enum":["running","stopping","completed","killed","failed"]},
 "detail":{"type":"string"},"startedAt":{"type":"integer"},"finishedAt":{"type":"integer"}}}`

func checkJobID(id string) error {
	if id == "" {
		return errors.New(`invalid job_id: expected a non-empty string, got ""`)
	}
	return nil
}

func jobCard(title, kind, raw string) *card.Call {
	c := &card.Call{Card: card.Generic, Title: title, Kind: kind}
	if raw != "" {
		c.RawInput = raw
	}
	return c
}

func newJobOutput(jobs *Jobs) (*tool.Definition, error) {
	out, err := parseSchema(`{"type":"object","additionalProperties":false,"required":["text","job"],"properties":{"text":{"type":"string"},"job":` + jobInfoSchema + `}}`)
	if err != nil {
		return nil, err
	}
	return tool.New("job_output",
		"Read a background job's output: what it printed since the previous read, then a [status: …] line. "+
			"Reading does not block unless wait is set, which waits for the job to end (up to timeout_ms).",
		func(ctx context.Context, call *tool.Call, in JobOutputInput) (JobOutput, error) {
			if err := checkJobID(in.JobID); err != nil {
				return JobOutput{}, err
			}
			if in.Wait != nil && *in.Wait {
				wait := DefaultWait
				if in.TimeoutMs != nil {
					if *in.TimeoutMs <= 0 {
						return JobOutput{}, fmt.Errorf("invalid wait timeout: expected a positive number of milliseconds, got %s", formatMs(*in.TimeoutMs))
					}
					wait = msDuration(*in.TimeoutMs)
				}
				if _, err := jobs.Wait(ctx, call.Agent(), in.JobID, min(wait, DefaultMaxWait)); err != nil {
					return JobOutput{}, err
				}
			}
			text, info, err := jobs.Read(call.Agent(), in.JobID)
			if err != nil {
				return JobOutput{}, err
			}
			return JobOutput{Text: text, Job: info}, nil
		},
		tool.OutputSchema(out),
		tool.Render(func(_ JobOutputInput, o JobOutput) ([]content.Block, error) {
			body := o.Text
			if body == "" {
				body = "(no new output)"
			}
			if !strings.HasSuffix(body, "\n") {
				body += "\n"
			}
			return content.Texts(body + o.Job.StatusLine()), nil
		}),
		tool.CallCard(func(in JobOutputInput) *card.Call {
			return jobCard("Read output from background job "+in.JobID, card.KindRead, in.JobID)
		}),
	)
}

func newJobList(jobs *Jobs) (*tool.Definition, error) {
	out, err := parseSchema(`{"type":"array","items":` + jobInfoSchema + `}`)
	if err != nil {
		return nil, err
	}
	return tool.New("job_list", "List your background jobs, running and finished, with their ids and statuses.",
		func(ctx context.Context, call *tool.Call, _ struct{}) ([]JobInfo, error) {
			list := jobs.List(call.Agent())
			if list == nil {
				list = []JobInfo{}
			}
			return list, nil
		},
		tool.OutputSchema(out),
		tool.Render(func(_ struct{}, list []JobInfo) ([]content.Block, error) {
			if len(list) == 0 {
				return content.Texts("(no background jobs)"), nil
			}
			lines := make([]string, len(list))
			for i, j := range list {
				lines[i] = fmt.Sprintf("%s [%s] %s — %s", j.ID, j.Kind, j.Status, j.Label)
			}
			return content.Texts(strings.Join(lines, "\n")), nil
		}),
		tool.CallCard(func(struct{}) *card.Call { return jobCard("List background jobs", card.KindRead, "") }),
	)
}

func newJobKill(jobs *Jobs) (*tool.Definition, error) {
	out, err := parseSchema(`{"type":"object","additionalProperties":false,"required":["outcome","job"],"properties":{"outcome":{"type":"string","enum":["cancellation-requested","already-finished"]},"job":` + jobInfoSchema + `}}`)
	if err != nil {
		return nil, err
	}
	return tool.New("job_kill",
		"Stop a running background job (its whole process group). Returns at once; the job then ends as killed.",
		func(ctx context.Context, call *tool.Call, in JobIDInput) (JobKillOutput, error) {
			if err := checkJobID(in.JobID); err != nil {
				return JobKillOutput{}, err
			}
			outcome, info, err := jobs.Kill(call.Agent(), in.JobID)
			if err != nil {
				return JobKillOutput{}, err
			}
			return JobKillOutput{Outcome: outcome, Job: info}, nil
		},
		tool.OutputSchema(out),
		tool.Render(func(_ JobIDInput, o JobKillOutput) ([]content.Block, error) {
			if o.Outcome == "already-finished" {
				return content.Texts("job " + o.Job.ID + " had already finished " + o.Job.StatusLine()), nil
			}
			return content.Texts("requested cancellation of job " + o.Job.ID), nil
		}),
		tool.CallCard(func(in JobIDInput) *card.Call {
			return jobCard("Kill background job "+in.JobID, card.KindExecute, in.JobID)
		}),
	)
}

// System-prompt guidance that goes with the tools, for an agent's prompt sections
// (the reference names them "tool:bash" and "tool:jobs", ordered 105 and 106).
const (
	BashGuidance = "Look at the [exit code: N] marker of every bash result and find out why a command failed before going on."
	JobsGuidance = "Keep track of the background jobs you start. You are told when one finishes, so do not poll or sleep waiting for it; work on something else meanwhile. " +
		"Before your final answer, collect the output of every job that still matters with job_output (wait: true only when you cannot go on without it) and stop the ones that no longer matter with job_kill."
)
