package rules_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/policy/rules"
	"github.com/dsh-go/dsh/tool"
)

// bashTool is a tool named bash that counts its runs.
func bashTool(runs *atomic.Int32) *tool.Definition {
	return &tool.Definition{
		Name:        "bash",
		Description: "runs a command",
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

type pipeline struct {
	reg  *tool.Registry
	runs atomic.Int32
}

func newPipeline(t *testing.T, cfg rules.Config) *pipeline {
	t.Helper()
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	p := &pipeline{reg: reg}
	if _, err := reg.Register(bashTool(&p.runs)); err != nil {
		t.Fatal(err)
	}
	if cfg.Workspace == "" {
		cfg.Workspace = "/ws"
	}
	if _, err := rules.Install(reg.Global(), cfg); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *pipeline) run(command string, agent *tool.Scope) *tool.Result {
	args := jsonv.NewObject(jsonv.Member{Name: "command", Value: command})
	return p.reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "bash", Args: args, Agent: agent})
}

func resultJSON(t *testing.T, r *tool.Result) string {
	t.Helper()
	b, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func allowAll() tool.Approver {
	return tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
		return tool.ApprovalAllowedOnce, nil
	})
}

var standard = rules.Config{
	Allow: []string{"bash(git status*)"},
	Ask:   []string{"bash(git push*)"},
	Deny:  []string{"bash(rm *)"},
}

// laterHook returns a pre-execute hook with a fixed verdict (nil: delegate).
func laterHook(d *tool.PreDecision) tool.PreExecuteFunc {
	return func(_ context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		if d == nil {
			return next()
		}
		return *d, nil
	}
}

func ptr(d tool.PreDecision) *tool.PreDecision { return &d }

// TestPipeline pins the results of the rules through a real registry.
func TestPipeline(t *testing.T) {
	const (
		ran      = `{"isError":false,"content":[{"type":"text","text":"ran"}],"value":"ran"}`
		denied   = `{"isError":true,"error":{"message":"tool \"bash\" is denied by permission rule \"bash(rm *)\"","info":{"name":"PermissionDeniedError","code":"PERMISSION_DENIED"}},"content":[{"type":"text","text":"Error: tool \"bash\" is denied by permission rule \"bash(rm *)\""}]}`
		askNoSvc = `{"isError":true,"error":{"message":"tool \"bash\" requires approval by permission rule \"bash(git push*)\""},"content":[{"type":"text","text":"Error: tool \"bash\" requires approval by permission rule \"bash(git push*)\""}]}`
		later    = `{"isError":true,"error":{"message":"later says no"},"content":[{"type":"text","text":"Error: later says no"}]}`
	)
	tests := []struct {
		name     string
		command  string
		hook     *tool.PreDecision // a later hook's verdict (nil: none registered)
		approver tool.Approver
		agent    bool
		want     string
		runs     int32
	}{
		{name: "deny", command: "rm -rf x", want: denied},
		{name: "deny inside a compound command", command: "git status && rm -rf x", want: denied},
		{name: "ask without an approval service", command: "git push", want: askNoSvc},
		{name: "ask approved", command: "git push", approver: allowAll(), agent: true, want: ran, runs: 1},
		{name: "ask rejected", command: "git push", agent: true, approver: tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
			return tool.ApprovalRejected, nil
		}), want: `{"isError":true,"error":{"message":"the user rejected tool \"bash\""},"content":[{"type":"text","text":"Error: the user rejected tool \"bash\""}]}`},
		{name: "allow", command: "git status", want: ran, runs: 1},
		{name: "allow turns a later ask into allow", command: "git status", hook: ptr(tool.Ask("later asks")), want: ran, runs: 1},
		{name: "allow keeps a later deny", command: "git status", hook: ptr(tool.Deny("later says no")), want: later},
		{name: "ask keeps a later deny", command: "git push", hook: ptr(tool.Deny("later says no")), approver: allowAll(), agent: true, want: later},
		{name: "no opinion: a later ask decides", command: "whoami", hook: ptr(tool.Ask("")), want: `{"isError":true,"error":{"message":"tool \"bash\" requires approval (not yet supported)"},"content":[{"type":"text","text":"Error: tool \"bash\" requires approval (not yet supported)"}]}`},
		{name: "no opinion: a later deny decides", command: "whoami", hook: ptr(tool.Deny("later says no")), want: later},
		{name: "no opinion and no hook: runs", command: "whoami", want: ran, runs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPipeline(t, standard)
			if tt.hook != nil {
				p.reg.OnPreExecute(laterHook(tt.hook))
			}
			if tt.approver != nil {
				p.reg.SetApprover(tt.approver)
			}
			var agent *tool.Scope
			if tt.agent {
				agent = p.reg.NewScope("agent", nil)
				defer agent.Close()
			}
			if got := resultJSON(t, p.run(tt.command, agent)); got != tt.want {
				t.Errorf("result\n got %s\nwant %s", got, tt.want)
			}
			if got := p.runs.Load(); got != tt.runs {
				t.Errorf("body ran %d times, want %d", got, tt.runs)
			}
		})
	}
}

// TestDenyCannotBeUndone checks the guard: hooks that run before the rules' hook (registered
// later with Prepend) and force allow, or an approval that grants, still lose to a deny rule.
func TestDenyCannotBeUndone(t *testing.T) {
	const want = `{"isError":true,"error":{"message":"tool \"bash\" is denied by permission rule \"bash(rm *)\"","info":{"name":"PermissionDeniedError","code":"PERMISSION_DENIED"}},"content":[{"type":"text","text":"Error: tool \"bash\" is denied by permission rule \"bash(rm *)\""}]}`
	t.Run("a later hook in front force-allows", func(t *testing.T) {
		p := newPipeline(t, standard)
		var consulted atomic.Bool
		p.reg.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			consulted.Store(true)
			return tool.Allow(), nil // never calls next: the rules' hook does not run
		}, tool.Prepend())
		if got := resultJSON(t, p.run("rm -rf /", nil)); got != want {
			t.Errorf("got %s", got)
		}
		if !consulted.Load() || p.runs.Load() != 0 {
			t.Errorf("force-allow hook consulted %v, body runs %d", consulted.Load(), p.runs.Load())
		}
	})
	t.Run("a hook in front asks and the approval grants", func(t *testing.T) {
		p := newPipeline(t, standard)
		p.reg.OnPreExecute(laterHook(ptr(tool.Ask("please"))), tool.Prepend())
		p.reg.SetApprover(allowAll())
		agent := p.reg.NewScope("agent", nil)
		defer agent.Close()
		if got := resultJSON(t, p.run("rm -rf /", agent)); got != want {
			t.Errorf("got %s", got)
		}
		if p.runs.Load() != 0 {
			t.Errorf("body ran")
		}
	})
}

// TestScopedRules checks rules installed on an agent scope govern only that agent (and its
// children), and undo removes both the hook and the guard.
func TestScopedRules(t *testing.T) {
	reg, _ := tool.NewRegistry(tool.Config{})
	var runs atomic.Int32
	if _, err := reg.Register(bashTool(&runs)); err != nil {
		t.Fatal(err)
	}
	strict := reg.NewScope("strict", nil)
	defer strict.Close()
	child := reg.NewScope("child", strict)
	defer child.Close()
	free := reg.NewScope("free", nil)
	defer free.Close()
	undo, err := rules.Install(strict, rules.Config{Deny: []string{"bash"}, Workspace: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(agent *tool.Scope) bool {
		return !reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "bash", Args: js(t, `{"command":"ls"}`), Agent: agent}).IsError
	}
	if run(strict) || run(child) || !run(free) || !run(nil) {
		t.Errorf("strict %v child %v free %v direct %v", run(strict), run(child), run(free), run(nil))
	}
	undo()
	if !run(strict) || !run(child) {
		t.Error("rules still active after undo")
	}
	if _, err := rules.Install(nil, rules.Config{}); err == nil {
		t.Error("Install(nil) succeeded")
	}
	if _, err := rules.Install(reg.Global(), rules.Config{Deny: []string{"bash("}}); err == nil {
		t.Error("Install with a bad pattern succeeded")
	}
}
