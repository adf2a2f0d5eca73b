package session

import (
	"fmt"
	"time"

	"github.com/dsh-go/dsh/jsonv"
)

// Tokens counts the tokens of model calls. The counts are disjoint except Reasoning:
// Input excludes the prompt tokens served from the cache (CachedInput), and Reasoning is
// part of Output, as the servers report them.
type Tokens struct {
	Input       int `json:"inputTokens"`
	CachedInput int `json:"cacheReadTokens"`
	Output      int `json:"outputTokens"`
	Reasoning   int `json:"reasoningTokens"`
}

// Add returns the sum of u and v.
func (u Tokens) Add(v Tokens) Tokens {
	return Tokens{Input: u.Input + v.Input, CachedInput: u.CachedInput + v.CachedInput,
		Output: u.Output + v.Output, Reasoning: u.Reasoning + v.Reasoning}
}

// StepUsage is the usage of one model call, as an assistant/message event records it in
// its "usage" member: {inputTokens, outputTokens, cacheReadTokens?, reasoningTokens?,
// model?}.
type StepUsage struct {
	Turn, Step int
	// Model is the model that answered, "" when the log does not say (older logs).
	Model string
	// Time is when the reply was logged.
	Time time.Time
	Tokens
}

// TurnUsage is the summed usage of one turn's model calls.
type TurnUsage struct {
	Turn int
	Tokens
}

// Usage is the token usage of a session: per model call, per turn and in total.
type Usage struct {
	// Steps are the model calls that reported usage, in log order.
	Steps []StepUsage
	// Turns are the per-turn sums, in turn order; a turn with no reported usage is absent.
	Turns []TurnUsage
	// Total is the sum over every step.
	Total Tokens
}

// UsageOf sums the usage recorded in events (a session's log, in order). Assistant messages
// without usage count nothing; a usage member that is not an object of non-negative
// integer counts is an error naming the event.
func UsageOf(events []Event) (Usage, error) {
	var u Usage
	for _, e := range events {
		if e.Type != TypeAssistantMessage {
			continue
		}
		p, err := DecodeAssistantMessage(e)
		if err != nil {
			return Usage{}, err
		}
		if p.Usage == nil {
			continue
		}
		s, err := stepUsage(p.Usage)
		if err != nil {
			return Usage{}, fmt.Errorf("session: event %d (assistant/message): usage: %w", e.Seq, err)
		}
		s.Turn, s.Step, s.Time = p.Turn, p.Step, time.UnixMilli(e.Time)
		u.Steps = append(u.Steps, s)
		u.Total = u.Total.Add(s.Tokens)
		if n := len(u.Turns); n > 0 && u.Turns[n-1].Turn == s.Turn {
			u.Turns[n-1].Tokens = u.Turns[n-1].Tokens.Add(s.Tokens)
		} else {
			u.Turns = append(u.Turns, TurnUsage{Turn: s.Turn, Tokens: s.Tokens})
		}
	}
	return u, nil
}

// maxStepTokens bounds one count of one model call: far above any model's window, and low
// enough that no session's sums can overflow.
const maxStepTokens = 1e12

// stepUsage decodes a logged usage object.
func stepUsage(v any) (StepUsage, error) {
	o, ok := v.(*jsonv.Object)
	if !ok {
		return StepUsage{}, fmt.Errorf("want an object, got %s", jsonv.KindOf(v))
	}
	var s StepUsage
	counts := []struct {
		name string
		dst  *int
	}{
		{"inputTokens", &s.Input}, {"cacheReadTokens", &s.CachedInput},
		{"outputTokens", &s.Output}, {"reasoningTokens", &s.Reasoning},
	}
	for _, c := range counts {
		m, ok := o.Get(c.name)
		if !ok {
			continue
		}
		f, ok := m.(float64)
		if !ok || f < 0 || f > maxStepTokens || f != float64(int(f)) {
			return StepUsage{}, fmt.Errorf("%s must be an integer from 0 to %g, got %v", c.name, float64(maxStepTokens), m)
		}
		*c.dst = int(f)
	}
	if m, ok := o.Get("model"); ok {
		name, ok := m.(string)
		if !ok {
			return StepUsage{}, fmt.Errorf("model must be a string, got %v", m)
		}
		s.Model = name
	}
	return s, nil
}
