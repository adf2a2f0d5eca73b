package approval_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/policy/rules"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

func echoTool(name string, runs *atomic.Int32) *tool.Definition {
	return &tool.Definition{
		Name:        name,
		Description: "tool " + name,
		Parameters:  jsonv.NewObject(jsonv.Member{Name: "type", Value: "object"}),
		Output: tool.Output{Schema: &jsonv.Object{}, Render: func(_, v any) ([]content.Block, error) {
			return content.Texts(v.(string)), nil
		}},
		Execute: func(context.Context, *tool.Call) (any, error) {
			runs.Add(1)
			return "ran", nil
		},
	}
}

// fixture is a registry with bash and mcp__x__y, rules asking for "bash(git push*)" and
// every mcp tool, an approval service and a session log inside an open turn.
type fixture struct {
	t     *testing.T
	reg   *tool.Registry
	agent *tool.Scope
	log   *session.Memory
	svc   *approval.Service
	runs  atomic.Int32
	asked atomic.Int32
}

func newFixture(t *testing.T, cfg approval.Config, prompt func(ctx context.Context, q approval.Question) (approval.Reply, error)) *fixture {
	t.Helper()
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, reg: reg, log: session.NewMemory(nil)}
	for _, name := range []string{"bash", "mcp__x__y"} {
		if _, err := reg.Register(echoTool(name, &f.runs)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rules.Install(reg.Global(), rules.Config{Ask: []string{"bash(git push*)", "mcp__*"}, Workspace: "/ws"}); err != nil {
		t.Fatal(err)
	}
	if prompt != nil {
		cfg.Prompter = approval.PrompterFunc(func(ctx context.Context, q approval.Question) (approval.Reply, error) {
			f.asked.Add(1)
			return prompt(ctx, q)
		})
	}
	if cfg.Auditor == nil {
		cfg.Auditor = approval.NewSessionAuditor(f.log)
	}
	f.svc, err = approval.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg.SetApprover(f.svc)
	f.agent = reg.NewScope("agent", nil)
	t.Cleanup(f.agent.Close)
	if _, err := f.log.Append(session.TurnStart{Turn: 0}.Event()); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) run(ctx context.Context, name, args string) *tool.Result {
	return f.reg.Execute(ctx, tool.Input{CallID: "call-1", Name: name, Args: tool.ParseArguments(args), Agent: f.agent})
}

func (f *fixture) push() *tool.Result {
	return f.run(context.Background(), "bash", `{"command":"git push origin main"}`)
}

// events returns the approval events of the log as "type data" lines.
func (f *fixture) events() []string {
	var out []string
	for _, e := range f.log.Events() {
		if strings.HasPrefix(e.Type, "approval/") {
			b, err := jsonv.Marshal(e.Data)
			if err != nil {
				f.t.Fatal(err)
			}
			out = append(out, e.Type+" "+string(b))
		}
	}
	return out
}

func reply(outcome tool.ApprovalOutcome) func(context.Context, approval.Question) (approval.Reply, error) {
	return func(context.Context, approval.Question) (approval.Reply, error) {
		return approval.Reply{Outcome: outcome}, nil
	}
}

const reason = `tool \"bash\" requires approval by permission rule \"bash(git push*)\"`

// TestOutcomes pins the result and the audit events of each outcome.
func TestOutcomes(t *testing.T) {
	denial := func(msg string) string {
		return `{"isError":true,"error":{"message":"` + msg + `"},"content":[{"type":"text","text":"Error: ` + msg + `"}]}`
	}
	tests := []struct {
		name    string
		cfg     approval.Config
		prompt  func(context.Context, approval.Question) (approval.Reply, error)
		want    string
		outcome string // the outcome and, after a comma, the answer member of the event
		asked   int32
	}{
		{"allowed once", approval.Config{}, reply(tool.ApprovalAllowedOnce), `{"isError":false,"content":[{"type":"text","text":"ran"}],"value":"ran"}`, `allowed-once","answer":"yes`, 1},
		{"rejected", approval.Config{}, reply(tool.ApprovalRejected), denial(`the user rejected tool \"bash\"`), `rejected","answer":"no`, 1},
		{"rejected with feedback", approval.Config{}, func(context.Context, approval.Question) (approval.Reply, error) {
			return approval.Reply{Outcome: tool.ApprovalRejected, Feedback: " push to a branch instead "}, nil
		}, denial(`the user rejected tool \"bash\": push to a branch instead`), `rejected","answer":"no-with-feedback","feedback":"push to a branch instead`, 1},
		{"policy auto: allowed without asking", approval.Config{Policy: approval.PolicyAuto}, reply(tool.ApprovalRejected), `{"isError":false,"content":[{"type":"text","text":"ran"}],"value":"ran"}`, `allowed-once","answer":"auto`, 0},
		{"unavailable", approval.Config{}, reply(tool.ApprovalUnavailable), denial(`tool \"bash\" requires approval, but no approval channel is available`), "unavailable", 1},
		{"no prompter: non-interactive", approval.Config{}, nil, denial(`tool \"bash\" requires approval, but no approval channel is available`), "unavailable", 0},
		{"prompter fails: unavailable", approval.Config{}, func(context.Context, approval.Question) (approval.Reply, error) {
			return approval.Reply{}, errors.New("tty gone")
		}, denial(`tool \"bash\" requires approval, but no approval channel is available`), "unavailable", 1},
		{"prompter panics: unavailable", approval.Config{}, func(context.Context, approval.Question) (approval.Reply, error) {
			panic("boom")
		}, denial(`tool \"bash\" requires approval, but no approval channel is available`), "unavailable", 1},
		{"unknown answer: unavailable", approval.Config{}, reply("maybe"), denial(`tool \"bash\" requires approval, but no approval channel is available`), "unavailable", 1},
		{"prompter says cancelled", approval.Config{}, reply(tool.ApprovalCancelled), denial(`approval for tool \"bash\" was cancelled`), "cancelled", 1},
		{"policy never: rejected without asking", approval.Config{Policy: approval.PolicyNever}, reply(tool.ApprovalAllowedOnce), denial(`the user rejected tool \"bash\"`), `rejected","answer":"never`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.cfg, tt.prompt)
			res := f.push()
			got, _ := res.MarshalJSON()
			if string(got) != tt.want {
				t.Errorf("result\n got %s\nwant %s", got, tt.want)
			}
			if f.asked.Load() != tt.asked {
				t.Errorf("prompter asked %d times, want %d", f.asked.Load(), tt.asked)
			}
			evs := f.events()
			if len(evs) != 2 {
				t.Fatalf("events %q", evs)
			}
			asked, _ := session.DecodeApprovalAsked(f.log.Events()[1])
			wantAsked := `approval/asked {"id":"` + asked.ID + `","toolName":"bash","callId":"call-1","reason":"` + reason + `"}`
			wantDecided := `approval/decided {"id":"` + asked.ID + `","outcome":"` + tt.outcome + `"}`
			if diff := cmp.Diff([]string{wantAsked, wantDecided}, evs); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if len(asked.ID) != 36 {
				t.Errorf("question id %q is not a UUID", asked.ID)
			}
		})
	}
}

// TestQuestion checks what the prompter is told.
func TestQuestion(t *testing.T) {
	var got approval.Question
	f := newFixture(t, approval.Config{}, func(_ context.Context, q approval.Question) (approval.Reply, error) {
		got = q
		return approval.Reply{Outcome: tool.ApprovalRejected}, nil
	})
	f.push()
	if got.ToolName != "bash" || got.CallID != "call-1" || got.Agent != f.agent || got.Reason != `tool "bash" requires approval by permission rule "bash(git push*)"` {
		t.Errorf("question %+v", got)
	}
	if got.Argument != (rules.Argument{Name: "command", Kind: rules.KindCommand, Value: "git push origin main"}) || !got.Remembers() {
		t.Errorf("argument %+v", got.Argument)
	}
	if b, _ := jsonv.Marshal(got.Args); string(b) != `{"command":"git push origin main"}` {
		t.Errorf("args %s", b)
	}
}

// TestAlways checks an "always" answer covers the same tool and primary argument for the
// rest of the session, and only those.
func TestAlways(t *testing.T) {
	var answers []approval.Reply
	var mu sync.Mutex
	f := newFixture(t, approval.Config{}, func(context.Context, approval.Question) (approval.Reply, error) {
		mu.Lock()
		defer mu.Unlock()
		r := answers[0]
		answers = answers[1:]
		return r, nil
	})
	answers = []approval.Reply{
		{Outcome: tool.ApprovalAllowedOnce, Always: true}, // git push origin main, always
		{Outcome: tool.ApprovalRejected},                  // git push --force: a different command
		{Outcome: tool.ApprovalAllowedOnce, Always: true}, // mcp__x__y: remembered by name
		{Outcome: tool.ApprovalRejected, Always: true},    // Always without a grant means nothing
	}
	ctx := context.Background()
	for i := range 3 {
		if res := f.push(); res.IsError {
			t.Fatalf("push %d: %+v", i, res.Error)
		}
	}
	if f.asked.Load() != 1 {
		t.Fatalf("asked %d times for the same command", f.asked.Load())
	}
	if res := f.run(ctx, "bash", `{"command":"git push --force"}`); !res.IsError {
		t.Error("a different command was allowed")
	}
	f.run(ctx, "mcp__x__y", `{"a":1}`)
	if res := f.run(ctx, "mcp__x__y", `{"a":2}`); res.IsError {
		t.Errorf("mcp tool remembered by name: %+v", res.Error)
	}
	if f.asked.Load() != 3 {
		t.Errorf("asked %d times, want 3", f.asked.Load())
	}
	if diff := cmp.Diff([]string{"bash command: git push origin main", "mcp__x__y"}, f.svc.Remembered()); diff != "" {
		t.Errorf("remembered (-want +got):\n%s", diff)
	}
	// Every remembered call is still audited, as allowed-once.
	var outcomes []string
	for _, e := range f.log.Events() {
		if e.Type == session.TypeApprovalDecided {
			d, _ := session.DecodeApprovalDecided(e)
			outcomes = append(outcomes, d.Outcome)
		}
	}
	if diff := cmp.Diff([]string{"allowed-once", "allowed-once", "allowed-once", "rejected", "allowed-once", "allowed-once"}, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	f.svc.Forget()
	if len(f.svc.Remembered()) != 0 {
		t.Error("Forget kept grants")
	}
	if res := f.push(); !res.IsError || f.asked.Load() != 4 {
		t.Errorf("after Forget: asked %d, result %+v", f.asked.Load(), res)
	}
}

// TestCancelWhileAsking pins docs/behaviour.md §6: the caller cancels while the question is open; the
// answer is cancelled and the call ends ABORTED_BEFORE_DISPATCH, body not run.
func TestCancelWhileAsking(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiting := make(chan struct{})
	f := newFixture(t, approval.Config{}, func(ctx context.Context, _ approval.Question) (approval.Reply, error) {
		close(waiting)
		<-ctx.Done()
		// A prompter that answers anyway after the cancellation is overruled.
		return approval.Reply{Outcome: tool.ApprovalAllowedOnce}, nil
	})
	done := make(chan *tool.Result, 1)
	go func() { done <- f.run(ctx, "bash", `{"command":"git push"}`) }()
	testwait.Recv(t, waiting, "a value on waiting")
	cancel()
	res := testwait.Recv(t, done, "a value on done")
	if res.Error == nil || res.Error.Info == nil || res.Error.Info.Code != tool.CodeAbortedBeforeDispatch || f.runs.Load() != 0 {
		t.Errorf("result %+v, body runs %d", res, f.runs.Load())
	}
	evs := f.events()
	if len(evs) != 2 || !strings.HasSuffix(evs[1], `"outcome":"cancelled"}`) {
		t.Errorf("events %q", evs)
	}
}

// TestAuditFailures checks a decision that cannot be recorded fails the call.
func TestAuditFailures(t *testing.T) {
	t.Run("outside a turn", func(t *testing.T) {
		f := newFixture(t, approval.Config{}, reply(tool.ApprovalAllowedOnce))
		if _, err := f.log.Append(session.TurnEnd{Turn: 0, Reason: session.EndReason{Kind: session.EndCompleted}}.Event()); err != nil {
			t.Fatal(err)
		}
		res := f.push()
		if !res.IsError || !strings.Contains(res.Error.Message, "cannot ask outside an open turn") || f.asked.Load() != 0 || f.runs.Load() != 0 {
			t.Errorf("result %+v, asked %d", res.Error, f.asked.Load())
		}
		if len(f.events()) != 0 {
			t.Errorf("events %q", f.events())
		}
	})
	t.Run("decided fails", func(t *testing.T) {
		f := newFixture(t, approval.Config{Auditor: failingAuditor{decided: errors.New("disk full")}}, reply(tool.ApprovalAllowedOnce))
		res := f.push()
		want := `approval: recording the allowed-once answer about tool "bash": disk full`
		if !res.IsError || res.Error.Message != want || f.runs.Load() != 0 {
			t.Errorf("result %+v", res.Error)
		}
	})
	t.Run("asked fails", func(t *testing.T) {
		f := newFixture(t, approval.Config{Auditor: failingAuditor{asked: errors.New("disk full")}}, reply(tool.ApprovalAllowedOnce))
		res := f.push()
		if !res.IsError || res.Error.Message != `approval: recording the question about tool "bash": disk full` || f.asked.Load() != 0 {
			t.Errorf("result %+v", res.Error)
		}
	})
	t.Run("no log for the agent", func(t *testing.T) {
		f := newFixture(t, approval.Config{Auditor: approval.NewSessionAuditorFunc(func(*tool.Scope) session.Log { return nil })}, reply(tool.ApprovalAllowedOnce))
		if res := f.push(); !res.IsError || !strings.Contains(res.Error.Message, `no session log for agent "agent"`) {
			t.Errorf("result %+v", res.Error)
		}
	})
}

type failingAuditor struct{ asked, decided error }

func (a failingAuditor) Asked(approval.Question) error                      { return a.asked }
func (a failingAuditor) Decided(approval.Question, approval.Decision) error { return a.decided }

// TestConcurrentQuestions checks parallel calls are each asked and audited in pairs.
func TestConcurrentQuestions(t *testing.T) {
	f := newFixture(t, approval.Config{}, reply(tool.ApprovalAllowedOnce))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			f.run(context.Background(), "bash", fmt.Sprintf(`{"command":"git push %d"}`, i))
		})
	}
	wg.Wait()
	if f.runs.Load() != 8 || f.asked.Load() != 8 {
		t.Errorf("runs %d asked %d", f.runs.Load(), f.asked.Load())
	}
	ids := map[string]int{}
	for _, e := range f.log.Events() {
		switch e.Type {
		case session.TypeApprovalAsked:
			a, _ := session.DecodeApprovalAsked(e)
			ids[a.ID]++
		case session.TypeApprovalDecided:
			d, _ := session.DecodeApprovalDecided(e)
			if ids[d.ID] != 1 {
				t.Errorf("decided %s without its question", d.ID)
			}
			ids[d.ID]++
		}
	}
	if len(ids) != 8 {
		t.Errorf("%d questions", len(ids))
	}
}

func TestConfig(t *testing.T) {
	if err := (approval.Config{Policy: "sometimes"}).Validate(); err == nil || err.Error() != `approval policy must be one of "ask", "never" or "auto" (got "sometimes")` {
		t.Errorf("Validate: %v", err)
	}
	for _, p := range []string{"", "ask", "never", "auto"} {
		if err := (approval.Config{Policy: p}).Validate(); err != nil {
			t.Errorf("Validate(%q): %v", p, err)
		}
	}
	if s, _ := approval.New(approval.Config{}); s.Policy() != "ask" {
		t.Errorf("default policy %q", s.Policy())
	}
	var c approval.Config
	if err := yaml.Unmarshal([]byte("policy: never"), &c); err != nil || c.Policy != "never" {
		t.Errorf("yaml: %+v %v", c, err)
	}
	if err := yaml.Unmarshal([]byte("polcy: never"), &c); err == nil || err.Error() != `approval: unknown config key "polcy" (line 1)` {
		t.Errorf("misspelt key: %v", err)
	}
	reg, _ := tool.NewRegistry(tool.Config{})
	if _, err := approval.Install(reg, approval.Config{Policy: "x"}); err == nil {
		t.Error("Install with a bad policy succeeded")
	}
	if _, err := approval.Install(nil, approval.Config{}); err == nil {
		t.Error("Install(nil) succeeded")
	}
	undo, err := approval.Install(reg, approval.Config{Policy: approval.PolicyNever})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	if _, err := reg.Register(echoTool("t", &runs)); err != nil {
		t.Fatal(err)
	}
	reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		return tool.Ask(""), nil
	})
	agent := reg.NewScope("a", nil)
	defer agent.Close()
	run := func() string {
		return reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}, Agent: agent}).Error.Message
	}
	if got := run(); got != `the user rejected tool "t"` {
		t.Errorf("installed: %q", got)
	}
	undo()
	if got := run(); got != `tool "t" requires approval (not yet supported)` {
		t.Errorf("after undo: %q", got)
	}
}
