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
// The Terminal prompter asks on a terminal and shows what the call would do: the diff of an
// edit, the content of a write, a command with its working directory, the arguments of any
// other tool. The answers are y (yes, this once), n (no), f (no, and tell the model why: the
// typed text is appended to the rejection the model reads), a (always: this tool with this
// primary argument — the same command, the same file — for the rest of the session; a tool
// without a primary argument, such as an MCP tool, is remembered by name) and s (always, and
// save it as an allow rule in the user's configuration file, see AddAllowRule). ForStdio
// picks Terminal when standard input and output are terminals and NonInteractive otherwise.
//
// Presets (see Preset) map the usual approval modes onto these questions: read-only asks
// before anything but reading, auto-edit lets file edits through and asks before commands,
// full-auto answers every question "yes" itself.
package approval

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/dsh/card"
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
	// PolicyAuto allows every question without asking (the full-auto preset): deny rules
	// and guards still refuse what they refuse, since they do not ask.
	PolicyAuto = "auto"
)

// Answers, as the approval/decided log event records them.
const (
	AnswerYes           = "yes"              // allowed this once
	AnswerAlwaysSession = "always-session"   // allowed, and remembered for the session
	AnswerAlwaysSaved   = "always-saved"     // allowed, remembered and saved as an allow rule
	AnswerRemembered    = "remembered"       // allowed by an earlier "always" answer
	AnswerAuto          = "auto"             // allowed by PolicyAuto without asking
	AnswerNo            = "no"               // rejected
	AnswerNoFeedback    = "no-with-feedback" // rejected, with a message for the model
	AnswerNever         = "never"            // rejected by PolicyNever without asking
)

// Config configures the approval service.
type Config struct {
	// Policy is "ask" (the default when empty) or "never".
	Policy string `yaml:"policy"`
	// Prompter answers the questions; nil means NonInteractive (every question is
	// unavailable).
	Prompter Prompter `yaml:"-"`
	// Cards, when set, returns the pending card of a call (its diff, content or command),
	// which the prompter shows with the question; nil cards show the arguments.
	Cards func(agent *tool.Scope, name string, args any) *card.Call `yaml:"-"`
	// Workdir is the directory commands run in by default, shown with a command.
	Workdir string `yaml:"-"`
	// Auditor records questions and outcomes; nil records nothing.
	Auditor Auditor `yaml:"-"`
}

// Validate reports an unknown policy with the reference's message.
func (c Config) Validate() error {
	switch c.Policy {
	case "", PolicyAsk, PolicyNever, PolicyAuto:
		return nil
	}
	return fmt.Errorf(`approval policy must be one of "ask", "never" or "auto" (got %q)`, c.Policy)
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
	// Card is the call's pending card (Config.Cards), nil when none was available.
	Card *card.Call
	// Workdir is the directory a command runs in when its arguments name none.
	Workdir string
}

// AllowRule returns the permission rule an "always, save it" answer adds: the tool and its
// primary argument ("bash(go test ./...)", "edit(/abs/path/a.go)"), or the tool name alone
// when it has no primary argument. ok is false when no rule can say exactly this call: an
// argument containing "*" (a wildcard in rules) or a parenthesis-free empty value.
func (q Question) AllowRule() (rule string, ok bool) {
	if !q.Remembers() {
		return q.ToolName, true
	}
	v := q.Argument.Value
	if v == "" || strings.Contains(v, "*") || strings.ContainsAny(v, "\n\r") {
		return "", false
	}
	if q.Argument.Kind == rules.KindPath && !filepath.IsAbs(v) {
		if q.Workdir == "" {
			return "", false
		}
		v = filepath.Join(q.Workdir, v)
	}
	return q.ToolName + "(" + v + ")", true
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
// ApprovalAllowedOnce. Saved is the allow rule the prompter saved to the user's
// configuration with it (recorded in the log). Feedback is the person's message for the
// model with ApprovalRejected.
type Reply struct {
	Outcome  tool.ApprovalOutcome
	Always   bool
	Saved    string
	Feedback string
}

// Decision is the outcome of one question with the exact answer that produced it.
type Decision struct {
	Outcome  tool.ApprovalOutcome
	Answer   string // one of the Answer* constants; "" for cancelled and unavailable
	Feedback string // the person's message for the model, with AnswerNoFeedback
	Rule     string // the allow rule saved, with AnswerAlwaysSaved
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
	Decided(q Question, d Decision) error
}

// Service is the approval service of one session. It is safe for concurrent use.
type Service struct {
	policy   string
	prompter Prompter
	auditor  Auditor
	cards    func(agent *tool.Scope, name string, args any) *card.Call
	workdir  string

	mu     sync.Mutex
	always map[string]bool
}

// New validates cfg and returns the service.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{policy: cfg.Policy, prompter: cfg.Prompter, auditor: cfg.Auditor, cards: cfg.Cards, workdir: cfg.Workdir, always: map[string]bool{}}
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

// Policy returns the service's policy, "ask", "never" or "auto".
func (s *Service) Policy() string { return s.policy }

// Approve answers one "ask" (tool.Approver).
func (s *Service) Approve(ctx context.Context, req tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
	out, _, err := s.ApproveWithFeedback(ctx, req)
	return out, err
}

// ApproveWithFeedback answers one "ask" with the person's message for the model when they
// rejected the call with one (tool.FeedbackApprover).
func (s *Service) ApproveWithFeedback(ctx context.Context, req tool.ApprovalRequest) (tool.ApprovalOutcome, string, error) {
	q := Question{ID: session.NewMessageID(), Agent: req.Agent, ToolName: req.ToolName, CallID: req.CallID, Reason: req.Reason, Workdir: s.workdir}
	if req.Exec != nil {
		if args, ok := req.Exec.Args(); ok {
			q.Args = args
		}
	}
	q.Argument = rules.PrimaryArgument(q.ToolName, q.Args)
	if s.cards != nil {
		q.Card = s.card(q)
	}
	if s.auditor != nil {
		if err := s.auditor.Asked(q); err != nil {
			return "", "", fmt.Errorf("approval: recording the question about tool %q: %w", q.ToolName, err)
		}
	}
	d := s.decide(ctx, q)
	if s.auditor != nil {
		if err := s.auditor.Decided(q, d); err != nil {
			return "", "", fmt.Errorf("approval: recording the %s answer about tool %q: %w", d.Outcome, q.ToolName, err)
		}
	}
	return d.Outcome, d.Feedback, nil
}

// card returns the call's pending card, nil when the card function fails or panics.
func (s *Service) card(q Question) (c *card.Call) {
	defer func() {
		if recover() != nil {
			c = nil
		}
	}()
	return s.cards(q.Agent, q.ToolName, q.Args)
}

// decide produces the outcome of one question (step 2 of the package documentation).
func (s *Service) decide(ctx context.Context, q Question) Decision {
	if ctx.Err() != nil {
		return Decision{Outcome: tool.ApprovalCancelled}
	}
	switch s.policy {
	case PolicyNever:
		return Decision{Outcome: tool.ApprovalRejected, Answer: AnswerNever}
	case PolicyAuto:
		return Decision{Outcome: tool.ApprovalAllowedOnce, Answer: AnswerAuto}
	}
	key := q.key()
	s.mu.Lock()
	remembered := s.always[key]
	s.mu.Unlock()
	if remembered {
		return Decision{Outcome: tool.ApprovalAllowedOnce, Answer: AnswerRemembered}
	}
	reply, err := s.prompt(ctx, q)
	switch {
	case ctx.Err() != nil:
		return Decision{Outcome: tool.ApprovalCancelled} // a late answer is discarded
	case err != nil:
		return Decision{Outcome: tool.ApprovalUnavailable}
	}
	switch reply.Outcome {
	case tool.ApprovalAllowedOnce:
		d := Decision{Outcome: reply.Outcome, Answer: AnswerYes}
		if reply.Always {
			s.mu.Lock()
			s.always[key] = true
			s.mu.Unlock()
			d.Answer = AnswerAlwaysSession
			if reply.Saved != "" {
				d.Answer, d.Rule = AnswerAlwaysSaved, reply.Saved
			}
		}
		return d
	case tool.ApprovalRejected:
		if fb := strings.TrimSpace(reply.Feedback); fb != "" {
			return Decision{Outcome: reply.Outcome, Answer: AnswerNoFeedback, Feedback: fb}
		}
		return Decision{Outcome: reply.Outcome, Answer: AnswerNo}
	case tool.ApprovalCancelled, tool.ApprovalUnavailable:
		return Decision{Outcome: reply.Outcome}
	default:
		return Decision{Outcome: tool.ApprovalUnavailable}
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
