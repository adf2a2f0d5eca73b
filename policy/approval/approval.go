// Package approval is dsh's approval service: it answers the "ask" decisions of the
// pre-execute hooks (permission rules, for example) by asking a person, and records every
// question and answer for the session log (docs/behaviour.md §7).
//
// A Service implements tool.Approver. For each question it
//
//  1. tells the Auditor the question was asked (the approval/asked log event);
//  2. decides: a cancelled context is "cancelled"; the policy "never" rejects without
//     asking; a call covered by an earlier "always" answer is allowed without asking;
//     otherwise the Prompter answers. A Prompter that fails, panics or answers outside the
//     vocabulary counts as "unavailable" (fail closed), and an answer that arrives after the
//     context was cancelled is discarded ("cancelled");
//  3. tells the Auditor the outcome (the approval/decided log event), and returns it.
//
// The pipeline turns the outcome into the call's fate: "allowed-once" lets it run (the
// guards still apply), "rejected" fails it with `the user rejected tool "<name>"`,
// "cancelled" with `approval for tool "<name>" was cancelled` and "unavailable" with
// `tool "<name>" requires approval, but no approval channel is available` — the answer a
// model gets in CI or behind a pipe, where NonInteractive is the prompter.
//
// The Terminal prompter asks on a terminal: y (yes, this once), n (no) or a (always: this
// tool with this primary argument — the same command, the same file — for the rest of the
// session; a tool without a primary argument, such as an MCP tool, is remembered by name).
// ForStdio picks Terminal when standard input and output are terminals and NonInteractive
// otherwise.
package approval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/dsh/policy/rules"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// Approval policies.
const (
	// PolicyAsk puts every question to the prompter (the default).
	PolicyAsk = "ask"
	// PolicyNever rejects every question without asking: the deterministic stance for
	// unattended runs.
	PolicyNever = "never"
)

// Config configures the approval service.
type Config struct {
	// Policy is "ask" (the default when empty) or "never".
	Policy string `yaml:"policy"`
	// Prompter answers the questions; nil means NonInteractive (every question is
	// unavailable).
	Prompter Prompter `yaml:"-"`
	// Auditor records questions and outcomes; nil records nothing.
	Auditor Auditor `yaml:"-"`
}

// Validate reports an unknown policy with the reference's message.
func (c Config) Validate() error {
	switch c.Policy {
	case "", PolicyAsk, PolicyNever:
		return nil
	}
	return fmt.Errorf(`approval policy must be one of "ask" or "never" (got %q)`, c.Policy)
}

// UnmarshalYAML decodes the configuration, rejecting unknown keys.
func (c *Config) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(node.Content); i += 2 {
			if k := node.Content[i].Value; k != "policy" {
				return fmt.Errorf("approval: unknown config key %q (line %d)", k, node.Content[i].Line)
			}
		}
	}
	var raw struct {
		Policy string `yaml:"policy"`
	}
	if err := node.Decode(&raw); err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	c.Policy = raw.Policy
	return nil
}

// Question is one approval question, as the prompter and the auditor see it.
type Question struct {
	// ID pairs the approval/asked and approval/decided events of this question.
	ID string
	// Agent is the scope of the agent whose call asks.
	Agent *tool.Scope
	// ToolName and CallID identify the call.
	ToolName, CallID string
	// Reason is why the call needs approval ("" when the asker gave none).
	Reason string
	// Argument is the call's primary argument (the command, the file, …; see package
	// rules), which an "always" answer remembers together with the tool name.
	Argument rules.Argument
	// Args is a copy of the call's arguments (a jsonv value).
	Args any
}

// Remembers reports whether an "always" answer to q covers only calls with the same primary
// argument (true), or every call of the tool (false: the tool has no primary argument).
func (q Question) Remembers() bool { return q.Argument.Name != "arguments" }

// key is what an "always" answer remembers.
func (q Question) key() string {
	if !q.Remembers() {
		return q.ToolName
	}
	return q.ToolName + "\x00" + q.Argument.Name + "\x00" + q.Argument.Value
}

// Reply is a prompter's answer. Always asks the service to allow the same call (tool and
// primary argument) without asking for the rest of the session; it only counts with
// ApprovalAllowedOnce.
type Reply struct {
	Outcome tool.ApprovalOutcome
	Always  bool
}

// Prompter puts a question to whoever can answer it. Prompt should return promptly with
// ApprovalCancelled when ctx is cancelled; an error counts as ApprovalUnavailable.
// Implementations must be safe for concurrent use (calls of one step may ask at once).
type Prompter interface {
	Prompt(ctx context.Context, q Question) (Reply, error)
}

// PrompterFunc adapts a function to Prompter.
type PrompterFunc func(ctx context.Context, q Question) (Reply, error)

// Prompt calls f.
func (f PrompterFunc) Prompt(ctx context.Context, q Question) (Reply, error) { return f(ctx, q) }

// NonInteractive returns the prompter of a run without a person to ask (CI, pipes): every
// question is ApprovalUnavailable, so the call is denied with a reason the model can read.
func NonInteractive() Prompter {
	return PrompterFunc(func(context.Context, Question) (Reply, error) {
		return Reply{Outcome: tool.ApprovalUnavailable}, nil
	})
}

// Auditor records approval questions and their outcomes, as the approval/asked and
// approval/decided events of the session log. An error from either method fails the call
// (a decision that cannot be recorded is not made).
type Auditor interface {
	Asked(q Question) error
	Decided(q Question, outcome tool.ApprovalOutcome) error
}

// Service is the approval service of one session. It is safe for concurrent use.
type Service struct {
	policy   string
	prompter Prompter
	auditor  Auditor

	mu     sync.Mutex
	always map[string]bool
}

// New validates cfg and returns the service.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{policy: cfg.Policy, prompter: cfg.Prompter, auditor: cfg.Auditor, always: map[string]bool{}}
	if s.policy == "" {
		s.policy = PolicyAsk
	}
	if s.prompter == nil {
		s.prompter = NonInteractive()
	}
	return s, nil
}

// Install validates cfg and makes a new service reg's approval service. The returned
// function uninstalls it.
func Install(reg *tool.Registry, cfg Config) (undo func(), err error) {
	if reg == nil {
		return nil, errors.New("approval: Install needs a registry")
	}
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return reg.SetApprover(s), nil
}

// Policy returns the service's policy, "ask" or "never".
func (s *Service) Policy() string { return s.policy }

// Approve answers one "ask" (tool.Approver).
func (s *Service) Approve(ctx context.Context, req tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
	q := Question{ID: session.NewMessageID(), Agent: req.Agent, ToolName: req.ToolName, CallID: req.CallID, Reason: req.Reason}
	if req.Exec != nil {
		if args, ok := req.Exec.Args(); ok {
			q.Args = args
		}
	}
	q.Argument = rules.PrimaryArgument(q.ToolName, q.Args)
	if s.auditor != nil {
		if err := s.auditor.Asked(q); err != nil {
			return "", fmt.Errorf("approval: recording the question about tool %q: %w", q.ToolName, err)
		}
	}
	outcome := s.decide(ctx, q)
	if s.auditor != nil {
		if err := s.auditor.Decided(q, outcome); err != nil {
			return "", fmt.Errorf("approval: recording the %s answer about tool %q: %w", outcome, q.ToolName, err)
		}
	}
	return outcome, nil
}

// decide produces the outcome of one question (step 2 of the package documentation).
func (s *Service) decide(ctx context.Context, q Question) tool.ApprovalOutcome {
	if ctx.Err() != nil {
		return tool.ApprovalCancelled
	}
	if s.policy == PolicyNever {
		return tool.ApprovalRejected
	}
	key := q.key()
	s.mu.Lock()
	remembered := s.always[key]
	s.mu.Unlock()
	if remembered {
		return tool.ApprovalAllowedOnce
	}
	reply, err := s.prompt(ctx, q)
	switch {
	case ctx.Err() != nil:
		return tool.ApprovalCancelled // a late answer is discarded
	case err != nil:
		return tool.ApprovalUnavailable
	}
	switch reply.Outcome {
	case tool.ApprovalAllowedOnce:
		if reply.Always {
			s.mu.Lock()
			s.always[key] = true
			s.mu.Unlock()
		}
		return reply.Outcome
	case tool.ApprovalRejected, tool.ApprovalCancelled, tool.ApprovalUnavailable:
		return reply.Outcome
	default:
		return tool.ApprovalUnavailable
	}
}

// prompt calls the prompter, turning a panic into an error.
func (s *Service) prompt(ctx context.Context, q Question) (r Reply, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = Reply{}, fmt.Errorf("approval prompter panicked: %v", p)
		}
	}()
	return s.prompter.Prompt(ctx, q)
}

// Remembered returns the "always" grants of the session, as "<tool>" or
// "<tool> <argument>: <value>", sorted.
func (s *Service) Remembered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.always))
	for k := range s.always {
		out = append(out, k)
	}
	slices.Sort(out)
	for i, k := range out {
		if name, rest, ok := strings.Cut(k, "\x00"); ok {
			arg, value, _ := strings.Cut(rest, "\x00")
			out[i] = name + " " + arg + ": " + value
		}
	}
	return out
}

// Forget drops every "always" grant.
func (s *Service) Forget() {
	s.mu.Lock()
	clear(s.always)
	s.mu.Unlock()
}
