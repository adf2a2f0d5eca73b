package shell

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/schema"
	"github.com/dsh-go/dsh/tool"
)

// BashInput is the arguments of the bash tool.
type BashInput struct {
	Command         string   `json:"command" jsonschema:"The bash command to run."`
	Description     string   `json:"description" jsonschema:"What the command does, in five to ten words of active voice, shown to the user (e.g. \"List files in the current directory\", \"Run the unit tests\")."`
	TimeoutMs       *float64 `json:"timeoutMs,omitempty" jsonschema:"Timeout in milliseconds. The command is killed when it expires; the default and the upper bound are configured by the host."`
	Workdir         *string  `json:"workdir,omitempty" jsonschema:"Working directory for this command, relative to the workspace. Defaults to the workspace root."`
	RunInBackground *bool    `json:"run_in_background,omitempty" jsonschema:"Run in the background and return a job id at once; read its output with job_output and stop it with job_kill. No timeout applies."`
}

// Foreground is the outcome of a command the bash tool ran to completion.
type Foreground struct {
	ExitCode  *int         `json:"exitCode"` // null when a signal ended the command
	Signal    *string      `json:"signal"`   // null on a normal exit
	TimedOut  bool         `json:"timedOut"`
	Aborted   bool         `json:"aborted"`
	TimeoutMs float64      `json:"timeoutMs"`
	Stdout    Stream       `json:"stdout"`
	Stderr    Stream       `json:"stderr"`
	Sandbox   *SandboxInfo `json:"sandbox,omitzero"`
}

// BashOutput is the canonical value of the bash tool: {kind: "foreground", …} with the
// Foreground fields, or {kind: "background", jobId}.
type BashOutput struct {
	Kind       string // "foreground" or "background"
	JobID      string // background only
	Foreground        // foreground only
}

// MarshalJSON encodes the variant selected by Kind.
func (o BashOutput) MarshalJSON() ([]byte, error) {
	if o.Kind == "background" {
		return json.Marshal(struct {
			Kind  string `json:"kind"`
			JobID string `json:"jobId"`
		}{o.Kind, o.JobID})
	}
	return json.Marshal(struct {
		Kind string `json:"kind"`
		Foreground
	}{o.Kind, o.Foreground})
}

// UnmarshalJSON decodes either variant.
func (o *BashOutput) UnmarshalJSON(data []byte) error {
	var v struct {
		Kind  string `json:"kind"`
		JobID string `json:"jobId"`
		Foreground
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*o = BashOutput{Kind: v.Kind, JobID: v.JobID, Foreground: v.Foreground}
	return nil
}

// bashOutputSchema is the explicit output schema: a oneOf of the two variants, which
// inference from BashOutput cannot express.
const bashOutputSchema = `{"oneOf":[
 {"type":"object","additionalProperties":false,"required":["kind","jobId"],"properties":{
  "kind":{"type":"string","const":"background"},"jobId":{"type":"string"}}},
 {"type":"object","additionalProperties":false,
  "required":["kind","exitCode","signal","timedOut","aborted","timeoutMs","stdout","stderr"],
  "properties":{
  "kind":{"type":"string","const":"foreground"},
  "exitCode":{"oneOf":[{"type":"integer"},{"type":"null"}]},
  "signal":{"oneOf":[{"type":"string"},{"type":"null"}]},
  "timedOut":{"type":"boolean"},"aborted":{"type":"boolean"},"timeoutMs":{"type":"number"},
  "stdout":{"$ref":"stream"},"stderr":{"$ref":"stream"},
  "sandbox":{"type":"object","additionalProperties":false,"required":["mode","denied"],"properties":{
   "mode":{"type":"string"},"denied":{"type":"boolean"},"enforcement":{"type":"string"}}}}}]}`

const streamSchema = `{"type":"object","additionalProperties":false,"required":["text","truncated"],"properties":{
 "text":{"type":"string"},"truncated":{"type":"boolean"},"spillPath":{"type":"string"}}}`

func outputSchema() (any, error) {
	return jsonv.ParseString(strings.ReplaceAll(bashOutputSchema, `{"$ref":"stream"}`, streamSchema))
}

// inputSchema is the inferred argument schema, without run_in_background when background
// execution is disabled.
func inputSchema(background bool) (any, error) {
	s, err := schema.For[BashInput]()
	if err != nil {
		return nil, err
	}
	raw := jsonv.Clone(s.Raw())
	if !background {
		if o, ok := raw.(*jsonv.Object); ok {
			if props, ok := o.Get("properties"); ok {
				if p, ok := props.(*jsonv.Object); ok {
					p.Delete("run_in_background")
				}
			}
		}
	}
	return raw, nil
}

type bashTool struct {
	runner     *Runner
	jobs       *Jobs
	background bool
}

func newBash(r *Runner, jobs *Jobs, background bool) (*tool.Definition, error) {
	b := &bashTool{runner: r, jobs: jobs, background: background && jobs != nil}
	in, err := inputSchema(b.background)
	if err != nil {
		return nil, err
	}
	out, err := outputSchema()
	if err != nil {
		return nil, err
	}
	desc := "Run a bash command (bash -c) in the workspace and return its output. " +
		"Every call starts a fresh shell: no working directory, variables or functions carry over, so pass workdir rather than using cd. " +
		"stderr follows stdout in a [stderr] section; a non-zero exit is reported as [exit code: N], a signal as [killed by signal: NAME] and an expired timeout as [timed out after Nms]. " +
		"Long output keeps its end; the complete output is saved to a file whose path is given. " +
		"A command is stopped with everything it started when it times out."
	if r.sandbox == SandboxBwrap {
		desc += " Commands run in a sandbox: only the workspace and /tmp are writable and there is no network; a blocked write is reported as [sandbox: file access denied under " + sandboxMode + " mode] — a policy decision, not a bug to work around."
		if names := r.protectedNames(); len(names) > 0 {
			desc += " Inside the workspace these stay read-only: " + strings.Join(names, ", ") + "."
		}
	}
	if b.background {
		desc += " For long-running commands set run_in_background: the call returns a job id at once; read the output with job_output and stop the job with job_kill."
	} else {
		desc += " Background execution is not available here: a command must finish within its timeout."
	}
	return tool.New("bash", desc, b.run,
		tool.InputSchema(in),
		tool.OutputSchema(out),
		tool.Render(func(_ BashInput, o BashOutput) ([]content.Block, error) {
			if o.Kind == "background" {
				return content.Texts("started background job " + o.JobID), nil
			}
			return content.Texts(renderForeground(&o.Foreground)), nil
		}),
		tool.CallCard(presentBashCall),
		tool.ResultCard(presentBashResult),
	)
}

func (in BashInput) background() bool { return in.RunInBackground != nil && *in.RunInBackground }

// validate checks what the schema cannot express.
func (in BashInput) validate() error {
	if strings.TrimSpace(in.Command) == "" {
		return errors.New("invalid command: expected a non-empty string")
	}
	if strings.TrimSpace(in.Description) == "" {
		return errors.New("invalid description: expected a non-empty string")
	}
	if in.TimeoutMs != nil && (*in.TimeoutMs <= 0 || math.IsInf(*in.TimeoutMs, 0) || math.IsNaN(*in.TimeoutMs)) {
		return fmt.Errorf("invalid timeoutMs: expected a positive number, got %s", formatMs(*in.TimeoutMs))
	}
	return nil
}

// abortError is the failure of a call cancelled while its command ran.
func abortError() error {
	return &tool.Error{Name: "AbortError", Code: tool.CodeAborted, Message: "tool call aborted"}
}

func (b *bashTool) run(ctx context.Context, call *tool.Call, in BashInput) (BashOutput, error) {
	if err := in.validate(); err != nil {
		return BashOutput{}, err
	}
	dir := ""
	if in.Workdir != nil {
		dir = *in.Workdir
	}
	workdir, err := b.runner.Workdir(dir)
	if err != nil {
		return BashOutput{}, err
	}
	req := Request{Command: in.Command, Workdir: workdir}
	if in.background() {
		if !b.background {
			return BashOutput{}, errors.New("run_in_background is disabled for this deployment")
		}
		if ctx.Err() != nil {
			return BashOutput{}, abortError()
		}
		id, err := b.jobs.Start(call.Agent(), in.Command, req)
		if err != nil {
			return BashOutput{}, err
		}
		return BashOutput{Kind: "background", JobID: id}, nil
	}
	if in.TimeoutMs != nil {
		req.Timeout = msDuration(*in.TimeoutMs)
	}
	if progress := tool.ProgressFrom(ctx); progress != nil {
		id := call.CallID()
		req.Output = func(stream string, p []byte) { progress(id, stream, p) }
	}
	res, err := b.runner.Run(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return BashOutput{}, abortError()
		}
		return BashOutput{}, err
	}
	if res.Aborted {
		return BashOutput{}, abortedWithOutput(res)
	}
	if err := b.runner.runnerFailure(res); err != nil {
		return BashOutput{}, err
	}
	// The effective timeout, min(requested or default, cap), in the caller's unit.
	timeoutMs := float64(res.Timeout) / float64(time.Millisecond)
	if in.TimeoutMs != nil {
		timeoutMs = min(*in.TimeoutMs, float64(b.runner.maxTimeout)/float64(time.Millisecond))
	}
	out := BashOutput{Kind: "foreground", Foreground: Foreground{
		ExitCode:  res.ExitCode,
		TimedOut:  res.TimedOut,
		Aborted:   res.Aborted,
		TimeoutMs: timeoutMs,
		Stdout:    res.Stdout,
		Stderr:    res.Stderr,
		Sandbox:   res.Sandbox,
	}}
	if res.Signal != "" {
		s := res.Signal
		out.Signal = &s
	}
	return out, nil
}

// abortedWithOutput is the abort error of a cancelled foreground command, carrying the
// output it wrote before it was stopped and a cancelled marker, so the model (and the
// person who pressed Ctrl-C) keep what it had done.
func abortedWithOutput(res *RunResult) error {
	e := abortError().(*tool.Error)
	var b strings.Builder
	for _, s := range []struct {
		name string
		st   Stream
	}{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
		if s.st.Text == "" {
			continue
		}
		b.WriteString("\n" + s.name)
		if s.st.Truncated {
			b.WriteString(" (the end")
			if s.st.SpillPath != "" {
				b.WriteString("; all of it in " + s.st.SpillPath)
			}
			b.WriteString(")")
		}
		b.WriteString(" so far:\n" + strings.TrimRight(s.st.Text, "\n"))
	}
	if b.Len() > 0 {
		e.Message += b.String() + "\n[cancelled: the command was stopped]"
	}
	return e
}

// msDuration converts milliseconds to a duration, saturating.
func msDuration(ms float64) time.Duration {
	if ms >= float64(math.MaxInt64)/float64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// presentBashCall shows a foreground command as a terminal and a background start as a
// generic card.
func presentBashCall(in BashInput) *card.Call {
	if in.background() {
		return &card.Call{Card: card.Generic, Title: in.Command, Kind: card.KindExecute, RawInput: in.Command,
			Content: content.Texts(in.Description)}
	}
	c := &card.Call{Card: card.Terminal, Title: in.Command, Description: in.Description}
	if in.Workdir != nil {
		c.Cwd = *in.Workdir
	}
	return c
}

// presentBashResult shows finished foreground output as a terminal with the exit status
// recovered from the durable text; background starts and failures are fenced console text.
func presentBashResult(in BashInput, res card.ToolResult) *card.Result {
	if len(res.Content) != 1 || res.Content[0].Type != content.TypeText {
		return nil
	}
	raw := res.Content[0].Text
	if in.background() || res.IsError {
		return &card.Result{Card: card.Generic, Content: content.Texts("```console\n" + strings.TrimRight(raw, "\n") + "\n```")}
	}
	st := ParseExitStatus(raw)
	r := &card.Result{Card: card.Terminal, Output: st.Body}
	if st.Signal != "" {
		r.Signal = st.Signal
	} else {
		code := st.ExitCode
		r.ExitCode = &code
	}
	return r
}

// parseSchema parses a JSON schema literal into a jsonv value.
func parseSchema(s string) (any, error) { return jsonv.ParseString(s) }
